// Shared by the RM runtime unit tests (runtime_test.cc,
// runtime_report_test.cc): the plan they script instead of a
// ReservationManager (tests/support/inproc_rm.h), so a test sets a
// reservation's guarantee directly.
#pragma once

#include <optional>
#include <vector>

#include "inproc_rm.h"

namespace morpheus::rm {

// Only reservation "r1" exists (owner "u", queue "default"); it is periodic
// and guarantees *guarantee at any time (the test changes it as it goes). No
// recurring job binds to a reservation.
inline testing::ScriptedPlan scriptedR1Plan(const Resource* guarantee) {
  return {[](const JobKey&) { return std::vector<BindTarget>(); },
          [](const ReservationId& r) -> std::optional<BindTarget> {
            if (r.value() != "r1") return std::nullopt;
            return BindTarget{r, UserId("u"), "default"};
          },
          [](const ReservationId&) { return true; },
          [guarantee](const ReservationId&, TimePoint) { return *guarantee; }};
}

}  // namespace morpheus::rm
