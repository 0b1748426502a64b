// SPDX-License-Identifier: Apache-2.0
#pragma once

/// rowsoftmax version: major * 10000 + minor * 100 + patch.
#define ROWSOFTMAX_VERSION 100
#define ROWSOFTMAX_VERSION_MAJOR 0  ///< major version: incompatible API changes
#define ROWSOFTMAX_VERSION_MINOR 1  ///< minor version: additions
#define ROWSOFTMAX_VERSION_PATCH 0  ///< patch version: fixes
