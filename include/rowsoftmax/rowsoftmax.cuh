// SPDX-License-Identifier: Apache-2.0
// rowsoftmax: row-wise softmax and log-softmax, forward and backward, plain and fused, for
// float, __half and __nv_bfloat16.
// The only header users include.
#pragma once

#include "fused.cuh"
#include "options.hpp"
#include "plan.hpp"
#include "softmax.cuh"
#include "version.hpp"
