// Unit tests for turning a signed-off SLO into a recurring reservation definition.
#include <gtest/gtest.h>

#include "inference/service/rm_client.h"

namespace morpheus::inference {
namespace {

RecurringRequest hourly() {
  RecurringRequest r;
  r.job_key = "etl";
  r.owner = "alice";
  r.period = Millis(3600000);
  r.start_offset = Millis(600000);      // a = +10 min
  r.deadline_offset = Millis(2400000);  // d = +40 min
  r.step = Millis(60000);
  r.skyline = {2, 0, 3, 0, 0};
  r.container = Resource(1024, 1);
  r.budget_container_ms = 120000;
  return r;
}

// The first instance starting after now, one-step stages for non-zero steps.
TEST(RecurringDefinitionTest, BuildsNextInstanceWithOneStepStages) {
  TimePoint now = fromEpochMs(10 * 3600000LL + 900000);  // 10:15, after this hour's a
  auto d = recurringDefinition(hourly(), now);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_EQ(d->arrival_ms(), 11 * 3600000LL + 600000);
  EXPECT_EQ(d->deadline_ms(), 11 * 3600000LL + 2400000);
  EXPECT_EQ(d->period_ms(), 3600000);
  EXPECT_EQ(d->interpreter(), v1::R_ORDER_NO_GAP);
  EXPECT_EQ(d->recurrence_key(), "etl");
  ASSERT_EQ(d->stages_size(), 2);
  EXPECT_EQ(d->stages(0).num_containers(), 2);
  EXPECT_EQ(d->stages(1).num_containers(), 3);
  EXPECT_EQ(d->stages(1).duration_ms(), 60000);
  EXPECT_EQ(d->reprovision_budget_container_ms(), 120000);
  EXPECT_FALSE(d->problematic());
  auto flagged = hourly();
  flagged.problematic = true;  // inferred high CV: the planner's alignment penalty applies
  EXPECT_TRUE(recurringDefinition(flagged, now)->problematic());
  auto early = recurringDefinition(hourly(), fromEpochMs(10 * 3600000LL + 60000));
  EXPECT_EQ(early->arrival_ms(), 10 * 3600000LL + 600000) << "this hour's window is still ahead";
}

// proposal.skyline-steps: whole steps are gangs of their height (the
// planner holds the fitted shape or refuses it); stretchable ones may spread.
TEST(RecurringDefinitionTest, WholeStepsAreGangsOfTheirHeight) {
  auto d = recurringDefinition(hourly(), fromEpochMs(0));
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_EQ(d->stages(0).min_concurrency(), 2);
  EXPECT_EQ(d->stages(1).min_concurrency(), 3);
  auto r = hourly();
  r.whole_steps = false;
  auto s = recurringDefinition(r, fromEpochMs(0));
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->stages(0).min_concurrency(), 1);
  EXPECT_EQ(s->stages(1).min_concurrency(), 1);
}

// SLOs that cannot hold the skyline are rejected naming the field.
TEST(RecurringDefinitionTest, RejectsWindowsThatCannotHoldTheSkyline) {
  auto r = hourly();
  r.deadline_offset = Millis(600000 + 120000);  // 2 min window, skyline needs 3 steps
  auto d = recurringDefinition(r, fromEpochMs(0));
  ASSERT_FALSE(d.isOk());
  EXPECT_NE(d.status().message().find("slo.deadline_offset"), std::string::npos);
  r = hourly();
  r.deadline_offset = Millis(5000000);
  EXPECT_FALSE(recurringDefinition(r, fromEpochMs(0)).isOk()) << "window longer than the period";
  r = hourly();
  r.skyline = {0, 0};
  EXPECT_FALSE(recurringDefinition(r, fromEpochMs(0)).isOk());
}

// One instance of an off-kilter job (Morpheus §6): a one-off (period 0)
// definition whose window is [period_start + a, period_start + d], with the
// same stages and validation as the recurring one.
TEST(RecurringDefinitionTest, OneOffInstanceHasItsOwnWindowAndNoPeriod) {
  OneOffRequest r{hourly(), fromEpochMs(7 * 3600000LL * 1000), "slo-etl-1"};
  r.slo.period = Millis(7 * 3600000LL);
  auto d = oneOffDefinition(r);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_EQ(d->period_ms(), 0);
  EXPECT_EQ(d->arrival_ms(), 7 * 3600000LL * 1000 + 600000);
  EXPECT_EQ(d->deadline_ms(), 7 * 3600000LL * 1000 + 2400000);
  EXPECT_EQ(d->recurrence_key(), "etl");
  EXPECT_EQ(d->stages_size(), 2);
  r.slo.deadline_offset = Millis(600000 + 120000);  // cannot hold 3 steps
  EXPECT_FALSE(oneOffDefinition(r).isOk());
  r = OneOffRequest{hourly(), fromEpochMs(0), ""};
  EXPECT_FALSE(oneOffDefinition(r).isOk()) << "the caller names the reservation";
}

}  // namespace
}  // namespace morpheus::inference
