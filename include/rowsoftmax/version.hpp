// SPDX-License-Identifier: Apache-2.0
// The version's one source: the top-level CMakeLists.txt reads the three numbers below into
// project(VERSION), the package's version file and the PyTorch extension's setup.py.
#pragma once

#define ROWSOFTMAX_VERSION_MAJOR 0  ///< major version: incompatible API changes
#define ROWSOFTMAX_VERSION_MINOR 1  ///< minor version: additions
#define ROWSOFTMAX_VERSION_PATCH 0  ///< patch version: fixes

/// rowsoftmax version: major * 10000 + minor * 100 + patch.
#define ROWSOFTMAX_VERSION \
  (ROWSOFTMAX_VERSION_MAJOR * 10000 + ROWSOFTMAX_VERSION_MINOR * 100 + ROWSOFTMAX_VERSION_PATCH)
