#!/usr/bin/env bash
# Profiles the timed rows of one ab_bias build (the binary given, built with -DAB_ONLY=<n>):
# each row's biased forward launched once under Nsight Compute, its speed of light, memory,
# warp-state and occupancy sections, as text in $OUT/profile.txt.
#
#   OUT=out benchmarks/ab_bias/profile.sh ./ab_prof
set -u
bin=$(realpath "${1:?the ab_bias binary}")
AB_REPS=0 ncu --kernel-name regex:_kernel --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section Occupancy --section LaunchStats \
  --section ComputeWorkloadAnalysis --section InstructionStats --page details "$bin" time \
  > "$OUT/profile.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_]+kernel|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Issue Slots Busy|Executed Instructions  |Executed Ipc A" "$OUT/profile.txt" | head -120
