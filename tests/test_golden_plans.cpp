// SPDX-License-Identifier: Apache-2.0
// Host-only: the planner's plans over a fixed sweep (tests/golden/plan_sweep.hpp) are the ones
// recorded in tests/golden/plans.txt. A planner change that moves any plan fails here and names
// the block of calls; rewrite the file with rowsoftmax_write_golden only where the change is
// meant to move plans.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "golden/config_key.hpp"
#include "golden/plan_sweep.hpp"

#ifndef ROWSOFTMAX_GOLDEN_FILE
#error "ROWSOFTMAX_GOLDEN_FILE: the path of tests/golden/plans.txt"
#endif

TEST(GoldenPlans, TheSweepGivesTheRecordedPlans) {
  std::ifstream in(ROWSOFTMAX_GOLDEN_FILE);
  ASSERT_TRUE(in) << "cannot read " << ROWSOFTMAX_GOLDEN_FILE;
  std::vector<std::string> want;
  for (std::string s; std::getline(in, s);)
    if (!s.empty()) want.push_back(s);
  const auto got = rowsoftmax::golden::sweep_lines(rowsoftmax::golden::config_key,
                                                   std::thread::hardware_concurrency());
  ASSERT_EQ(got.size(), want.size()) << "the sweep's size changed";
  int differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && ++differ <= 20)
      ADD_FAILURE() << "plans moved: got\n  " << got[i] << "\nrecorded\n  " << want[i];
  EXPECT_EQ(differ, 0) << "blocks whose plans moved";
}
