// SPDX-License-Identifier: Apache-2.0
// The float benchmarks (one translation unit per type, so they compile in parallel).
#include "bench_common.cuh"

namespace rowsoftmax::bench {
namespace {
/// Registers "forward/fp32/<group>/rows:R/cols:C[/config:CxN][/queued|/cold|/hot]": fp32 forward
/// of rows x cols, planned or forced through `config`, timed as `how` says (see time_launches).
void register_forward(char const* group, std::int64_t rows, std::int64_t cols, forced_config config,
                      timing how) {
  const std::string name = std::string("forward/fp32/") + group + "/rows:" + std::to_string(rows) +
                           "/cols:" + std::to_string(cols) +
                           (config.config < 0 ? ""
                                              : "/config:" + std::to_string(config.config) + "x" +
                                                    std::to_string(config.cluster)) +
                           (how == timing::idle ? "" : "/" + timing_name(how));
  register_timed(name, [=](benchmark::State& s) {
    softmax_benchmark<float>(s, name, direction::forward, rows, cols, config, false, how);
  });
}
}  // namespace

void register_float() {
  register_type<float>();
  register_out_type<float, __nv_bfloat16>();
  // Decode-time sampling over a vocabulary: few rows, 128256 columns, fp32 forward. The input
  // stays in L2 between launches (warm), as it does when sampling step after step.
  // Also forced through the other configurations that hold such a row (tuning data), and the
  // planned call timed behind a spin (the GPU's time for the call, without the host's time to
  // submit it to an idle GPU): queued (the input in L2 from the call before), cold (L2 flushed)
  // and hot (the input just written by a copy, as after the GEMM that makes the logits).
  const forced_config configs[] = {{},
                                   {detail::configs::cluster_256t_256B, 16},
                                   {detail::configs::streaming_cluster, 8},
                                   {detail::configs::streaming_cluster, 16}};
  for (std::int64_t rows : {1, 8, 64}) {
    for (forced_config config : configs)
      register_forward("decode", rows, 128256, config, timing::idle);
    for (timing how : {timing::queued, timing::cold, timing::hot})
      register_forward("decode", rows, 128256, {}, how);
  }
  // Between decode and full launches (rows of 5 to 16 staged CTAs, or of 4 more than 7/8 full,
  // in launches of 3 to 60 such CTAs an SM: staged), queued; each also forced through the
  // register cluster the planner chose for it before such rows were staged (the A/B of
  // docs/tuning.md, Staged rows).
  struct mid_shape {
    std::int64_t rows, cols;
    forced_config registers;
  };
  const mid_shape mids[] = {{128, 28673, {detail::configs::cluster_256t, 4}},
                            {256, 32000, {detail::configs::cluster_256t, 4}},
                            {128, 32769, {detail::configs::cluster_256t_256B, 3}},
                            {512, 32769, {detail::configs::cluster_256t_256B, 3}},
                            {133, 40000, {detail::configs::cluster_256t, 5}},
                            {1536, 40000, {detail::configs::cluster_256t, 5}},
                            {128, 50257, {detail::configs::cluster_256t_256B, 4}},
                            {64, 65536, {detail::configs::cluster_256t, 8}},
                            {64, 100000, {detail::configs::cluster_256t_256B, 7}},
                            {32, 128256, {detail::configs::cluster_256t_256B, 8}},
                            {128, 128256, {detail::configs::cluster_256t_256B, 8}},
                            {300, 128256, {detail::configs::cluster_256t_256B, 8}}};
  for (mid_shape const& m : mids)
    for (forced_config config : {forced_config{}, m.registers})
      register_forward("mid", m.rows, m.cols, config, timing::queued);
}
}  // namespace rowsoftmax::bench
