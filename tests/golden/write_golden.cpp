// SPDX-License-Identifier: Apache-2.0
// Writes the golden plans (tests/golden/plans.txt) to standard output. Run it only where the
// planner is meant to change the plans it records, and say so in the commit.
#include <cstdio>
#include <thread>

#include "config_key.hpp"
#include "plan_sweep.hpp"

int main() {
  for (auto const& s : rowsoftmax::golden::sweep_lines(rowsoftmax::golden::config_key,
                                                       std::thread::hardware_concurrency()))
    std::puts(s.c_str());
}
