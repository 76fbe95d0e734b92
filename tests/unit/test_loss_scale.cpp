#include <gtest/gtest.h>

#include "precision_probe/results.hpp"

namespace pp = precision_probe;

// GradScaler's rule against a sequence worked out by hand: backoff 0.5 on an overflow (step
// skipped, run of good steps reset), growth 2.0 after `growth_interval` good steps in a row.
TEST(LossScale, FollowsGradScalersRuleStepByStep) {
  pp::LossScaleModel m;
  m.scale = 65536.0;
  m.growth_interval = 3;
  const std::vector<bool> found_inf = {false, true, false, false, false, false,
                                       true,  true, false, false, false};
  // step:                                  0      1      2      3      4      5      6     7      8
  // 9     10
  const std::vector<double> scale_after = {65536, 32768, 32768, 32768, 65536, 65536,
                                           32768, 16384, 16384, 16384, 32768};
  const std::vector<bool> runs = {true,  false, true, true, true, true,
                                  false, false, true, true, true};
  for (std::size_t i = 0; i < found_inf.size(); ++i) {
    EXPECT_EQ(m.update(found_inf[i]), runs[i]) << "step " << i;
    EXPECT_DOUBLE_EQ(m.scale, scale_after[i]) << "step " << i;
  }
}

TEST(LossScale, GrowthStopsShortOfInfinity) {
  pp::LossScaleModel m;
  m.scale = 1e308;
  m.growth_interval = 1;
  m.update(false);
  EXPECT_DOUBLE_EQ(m.scale, 1e308);
  EXPECT_EQ(m.growth_tracker, 0);
}
