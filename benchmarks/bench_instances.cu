// SPDX-License-Identifier: Apache-2.0
// The benchmark's one instantiating unit where the tests are not built (otherwise the tests'
// warnings_tu.cu is linked instead): every plain launcher and the plain ops' kernels, once.
#include <rowsoftmax/instantiate.cuh>
