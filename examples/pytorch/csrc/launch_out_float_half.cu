// SPDX-License-Identifier: Apache-2.0
#include "launch_impl.cuh"

ROWSOFTMAX_EXT_INSTANTIATE_OUT(float, __half);
