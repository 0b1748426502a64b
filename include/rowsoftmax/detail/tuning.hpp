// SPDX-License-Identifier: Apache-2.0
// Host-only: the planner's thresholds, one record per architecture. Each field is a rule the
// planner applies, its value the one measured best on that architecture; the evidence is in the
// tuning log (docs/tuning.md), under the heading each field names.
#pragma once

#include <cstdint>

namespace rowsoftmax::detail {

/// A fraction num / den.
struct ratio {
  std::int64_t num;
  std::int64_t den;
};

/// Rows of `ctas` 32 KB staged CTAs whose last holds at most `last_at_most` of its slots.
struct nearly_empty_last_cta {
  std::int64_t ctas;
  ratio last_at_most;
};

/// The planner's thresholds for one architecture.
struct planner_tuning {
  // Short rows (tuning log, short rows).
  /// Misaligned 16-bit rows of at most 16 vectors take the short-row configurations too (else
  /// one row a thread): a ragged window in every row ran them slower.
  bool short_rows_for_misaligned_16bit;

  // One CTA a row (tuning log, one-CTA register rows).
  /// A launch is "few rows" where it comes to at most this many CTAs an SM in the CTAs a row
  /// takes: forward rows of the widest one-CTA configuration then spread over the SMs in
  /// 128-thread clusters instead.
  std::int64_t few_rows_ctas_per_sm;
  /// 16-bit forward rows of the widest one-CTA configuration, in launches of more rows an SM
  /// than this, take one staged CTA of 40 KB (five an SM in flight, against two).
  std::int64_t staged_one_cta_min_rows_per_sm;

  // Staged rows, 16-bit forward (tuning log, staged rows).
  /// Rows of so many 32 KB CTAs, the last nearly empty, take CTAs of 40 KB instead (an SM's
  /// five of 40 KB hold more of such rows than its six of 32 KB).
  nearly_empty_last_cta staged40_instead_of_32KB[2];

  // Staged rows, fp32 forward (tuning log, staged rows).
  /// Rows of at least this many 32 KB CTAs are staged (in launches as below)...
  std::int64_t fp32_staged_min_ctas;
  /// ... and rows of one CTA fewer where the CTAs are fuller than this.
  ratio fp32_staged_fewer_ctas_fill;
  /// The launches staged: more CTAs an SM than the first, at most the second.
  std::int64_t fp32_staged_launch_above_per_sm;
  std::int64_t fp32_staged_launch_at_most_per_sm;

  // Register clusters (tuning log, register clusters).
  /// Forward rows of more CTAs than this (of 128 bytes a thread) take 256 bytes a thread in full
  /// launches: twice the bytes in flight a thread.
  std::int64_t wide_cluster_beyond_ctas;
  /// Full launches for that: of 256-thread CTAs more than this share of the SMs...
  ratio wide_cluster_launch_of_sms;
  /// ... of 128-thread CTAs more than this many an SM.
  std::int64_t wide_cluster_narrow_launch_per_sm;
  /// fp32 forward rows take 288 bytes a thread where that takes fewer CTAs that fill the device
  /// at once within this many per mille of the slots 256 bytes fill (cluster_fill).
  int cluster288_fill_slack_permille;
  /// 16-bit backward rows of this many 256-thread cluster CTAs (first to last), in launches of
  /// more CTAs than SMs, stream instead (half the CTAs, read once).
  std::int64_t backward16_streams_cluster_ctas_first;
  std::int64_t backward16_streams_cluster_ctas_last;

  // Streaming (tuning log, streaming).
  /// Tiles a forward streaming CTA stashes at most (more ran slower than one).
  int streaming_forward_stash_tiles;
  /// Forward rows that streaming reads partly twice stream rather than split where at most this
  /// share of their tiles is read twice...
  ratio streamed_twice_at_most;
  /// ... and the launch fills at least this many waves of the CTAs an SM holds.
  std::int64_t streamed_min_waves;

  // Split rows (tuning log, split rows).
  /// A round's cost in tile transfers beyond the CTA's own: the meeting.
  double split_meeting_transfers;
  /// Forward rows (second reads from L2): the meeting costs this...
  double split_forward_meeting_transfers;
  /// ... plus one transfer per this many CTAs of the group.
  double split_forward_meeting_ctas_per_transfer;
  /// Forward rows read at most this many tiles a CTA twice on average (L2 holds no more):
  /// fp32, and 16-bit (two CTAs an SM instead of three).
  double split_forward_rereads_per_cta_fp32;
  double split_forward_rereads_per_cta_16bit;
  /// Backward and 16-bit forward rows take the hinted kernel where at least this share of a
  /// group's CTAs read a tile twice.
  ratio split_hinted_from_rereading_ctas;

  // Staged split, 16-bit forward (tuning log, split rows).
  /// Staged split only where the device holds at least this many rows in shared memory at once.
  std::int64_t staged_split_min_rows_on_chip;
  /// CTAs of a group at most this many times the CTAs a row needs.
  std::int64_t staged_split_max_ctas_per_needed;
};

/// Hopper (sm_90), measured on the H200.
inline constexpr planner_tuning sm90_tuning = {
    /*short_rows_for_misaligned_16bit=*/false,
    /*few_rows_ctas_per_sm=*/2,
    /*staged_one_cta_min_rows_per_sm=*/24,
    /*staged40_instead_of_32KB=*/{{3, {1, 8}}, {4, {1, 5}}},
    /*fp32_staged_min_ctas=*/5,
    /*fp32_staged_fewer_ctas_fill=*/{7, 8},
    /*fp32_staged_launch_above_per_sm=*/3,
    /*fp32_staged_launch_at_most_per_sm=*/60,
    /*wide_cluster_beyond_ctas=*/8,
    /*wide_cluster_launch_of_sms=*/{3, 4},
    /*wide_cluster_narrow_launch_per_sm=*/8,
    /*cluster288_fill_slack_permille=*/30,
    /*backward16_streams_cluster_ctas_first=*/11,
    /*backward16_streams_cluster_ctas_last=*/12,
    /*streaming_forward_stash_tiles=*/1,
    /*streamed_twice_at_most=*/{3, 8},
    /*streamed_min_waves=*/8,
    /*split_meeting_transfers=*/1.0,
    /*split_forward_meeting_transfers=*/1.5,
    /*split_forward_meeting_ctas_per_transfer=*/80.0,
    /*split_forward_rereads_per_cta_fp32=*/2.5,
    /*split_forward_rereads_per_cta_16bit=*/4.0,
    /*split_hinted_from_rereading_ctas=*/{7, 8},
    /*staged_split_min_rows_on_chip=*/4,
    /*staged_split_max_ctas_per_needed=*/2,
};

/// Ampere (sm_80) and other devices without clusters: not measured there; the Hopper values,
/// of which only the rules that need no clusters apply.
inline constexpr planner_tuning sm80_tuning = sm90_tuning;

/// The record for a device of compute capability `cc` (major * 10 + minor).
constexpr planner_tuning const& tuning_for(int compute_capability) noexcept {
  return compute_capability >= 90 ? sm90_tuning : sm80_tuning;  // sm_90: Hopper
}

}  // namespace rowsoftmax::detail
