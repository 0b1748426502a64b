// SPDX-License-Identifier: Apache-2.0
// Compile once: include this header in exactly one .cu of a program whose other units include
// <rowsoftmax/extern.cuh>. It defines every launcher, plan query and workspace explanation for
// float, __half and __nv_bfloat16 (explicit instantiation definitions), and so compiles all the
// kernels, once. One unit only: the standard allows one explicit instantiation definition of each
// function per program (linkers merge a second, but it compiles the kernels again).
// See docs/compile-once.md.
#pragma once

#include "extern.cuh"

ROWSOFTMAX_DETAIL_INSTANCES(template, float);
ROWSOFTMAX_DETAIL_INSTANCES(template, __half);
ROWSOFTMAX_DETAIL_INSTANCES(template, __nv_bfloat16);
