// SPDX-License-Identifier: Apache-2.0
#pragma once

/// rowsoftmax version: major * 10000 + minor * 100 + patch.
#define ROWSOFTMAX_VERSION 100
#define ROWSOFTMAX_VERSION_MAJOR 0
#define ROWSOFTMAX_VERSION_MINOR 1
#define ROWSOFTMAX_VERSION_PATCH 0
