// SPDX-License-Identifier: Apache-2.0
// The kernels, one file a tier under kernels/, written once for every op (ops.cuh) and
// configuration (plan.hpp's kernel_configs):
//   resident.cuh  resident_kernel: rows held in registers, one CTA or a cluster's CTAs a row
//   tiled.cuh     tiled_kernel: short contiguous rows through a shared-memory tile
//   streaming.cuh streaming_kernel: rows in tiles, two passes around one exchange
//   split.cuh     split_kernel: a row's tiles over many CTAs that meet through a workspace
//   staged.cuh    staged_kernel, staged_split_kernel: forward rows in shared memory (sm_90)
//   held_back.cuh held_back_kernel: row 0's windows under a workspace in the output
// and the pieces they share: kernel_shape.cuh, cluster_grid.cuh, stash.cuh, tile_share.cuh,
// workspace_meeting.cuh, staged_share.cuh.
#pragma once

#include "kernels/cluster_grid.cuh"
#include "kernels/held_back.cuh"
#include "kernels/kernel_shape.cuh"
#include "kernels/resident.cuh"
#include "kernels/split.cuh"
#include "kernels/staged.cuh"
#include "kernels/streaming.cuh"
#include "kernels/tiled.cuh"
