// SPDX-License-Identifier: Apache-2.0
// rowsoftmax: row-wise softmax forward and backward for float, __half and __nv_bfloat16.
// The only header users include.
#pragma once

#include "plan.hpp"
#include "softmax.cuh"
#include "version.hpp"
