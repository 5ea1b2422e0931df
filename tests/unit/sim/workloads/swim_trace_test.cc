// Unit tests for the SWIM trace loader used by morpheus-sim.
#include <gtest/gtest.h>

#include "sim/workloads/swim_trace.h"

namespace morpheus {
namespace {

// SWIM tasks are derived from bytes with 128 MiB blocks; bad lines name their number.
TEST(SwimTraceTest, DerivesTasksAndReportsBadLines) {
  sim::SwimRates rates;
  auto jobs = sim::parseSwimTrace(
      "job0\t49\t49\t268435457\t0\t0\njob1\t60\t11\t10\t134217728\t134217728\n", rates);
  ASSERT_TRUE(jobs.isOk()) << jobs.status().toString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].map_tasks, 3);
  EXPECT_EQ((*jobs)[0].reduce_tasks, 0);
  EXPECT_EQ((*jobs)[1].map_tasks, 1);
  EXPECT_EQ((*jobs)[1].reduce_tasks, 1);
  EXPECT_EQ((*jobs)[1].submit, Millis(60000));
  EXPECT_GE((*jobs)[1].reduce_task_duration, rates.min_task);
  auto bad = sim::parseSwimTrace("job0\t1\t1\t1\t1\t1\njob1\tx\t1\t1\t1\t1\n", rates);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2 column 2"), std::string::npos);
}

}  // namespace
}  // namespace morpheus
