// daemonExit (common/daemon.h): the one line and the exit code of each way a
// daemon's main() ends.
#include <gtest/gtest.h>

#include <signal.h>

#include "common/daemon.h"

namespace morpheus {
namespace {

TEST(DaemonExitTest, PrintsOneLinePerPhaseAndChoosesTheExitCode) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(daemonExit("morpheus-x", DaemonPhase::kValidate, Status::ok()), 0);
  EXPECT_EQ(daemonExit("morpheus-x", DaemonPhase::kRun, Status::ok()), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(daemonExit("morpheus-x", DaemonPhase::kValidate, invalidArgument("x.y", "bad")), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "morpheus-x: config error: x.y: bad\n");

  // A start step that failed: no config label, still "did not start".
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(daemonExit("morpheus-x", DaemonPhase::kRun, unavailable("port 1 is busy")), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "morpheus-x: port 1 is busy\n");

  // Once waitForTerminationSignal has returned the daemon had served: a
  // failure now exits 3 (the RM's lost leadership), a clean stop 0.
  blockTerminationSignals();
  ASSERT_EQ(::raise(SIGTERM), 0);  // pending for this thread until sigwait takes it
  EXPECT_EQ(waitForTerminationSignal(), SIGTERM);
  EXPECT_EQ(daemonExit("morpheus-x", DaemonPhase::kRun, unavailable("leadership lost")), 3);
  EXPECT_EQ(daemonExit("morpheus-x", DaemonPhase::kRun, Status::ok()), 0);
}

}  // namespace
}  // namespace morpheus
