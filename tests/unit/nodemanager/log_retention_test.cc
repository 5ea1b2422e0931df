// LogRetention over a real ContainerRuntime (real container processes) and
// a VirtualClock for "now": what a sweep removes and what it must leave.
#include "nodemanager/log_retention.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime_fixture.h"

namespace morpheus::nm {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class LogRetentionTest : public RuntimeFixture {
 protected:
  void SetUp() override {
    RuntimeFixture::SetUp();
    rt_ = make();
    ASSERT_TRUE(rt_->init().isOk());
  }
  void TearDown() override {
    rt_->stopAll(ExitReason::kKilled, "test over");
    for (const auto& s : rt_->snapshot()) {
      if (s.running) waitDone(*rt_, s.id.value());
    }
    rt_.reset();
    RuntimeFixture::TearDown();
  }
  std::string dirOf(const std::string& id) const { return dir_ + "/local/containers/" + id; }
  // A container that writes to stdout and stderr and exits at once.
  void runQuick(const std::string& id, TimePoint token_expires = {}) {
    LaunchSpec s = shell(id, "echo out-" + id + "; echo err-" + id + " >&2; touch file");
    s.token_expires = token_expires;
    ASSERT_TRUE(rt_->launch(s).isOk());
    waitDone(*rt_, id);
  }
  static TimePoint wallNow() {
    return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  }

  std::unique_ptr<ContainerRuntime> rt_;
};

// A finished container past the retention whose token has expired goes
// whole; a running container's logs stay, however old; a container that
// finished within the retention stays.
TEST_F(LogRetentionTest, RemovesFinishedContainersPastRetentionOnly) {
  runQuick("old");
  LaunchSpec run = shell("running", "echo still-here; exec sleep 30");
  ASSERT_TRUE(rt_->launch(run).isOk());
  ASSERT_TRUE(waitForText(dirOf("running") + "/stdout", "still-here\n"));

  VirtualClock clock(wallNow() + 5s);
  LogRetention retention(*rt_, Millis(1000), clock);
  auto sweep = retention.sweepOnce();
  EXPECT_EQ(sweep.dirs_removed, 1);
  EXPECT_EQ(sweep.failed, 0);
  EXPECT_FALSE(fs::exists(dirOf("old")));
  EXPECT_TRUE(fs::exists(dirOf("running") + "/stdout"));
  EXPECT_TRUE(fs::exists(dirOf("running") + "/container.json"));
  EXPECT_EQ(rt_->logs(ContainerId("old"), "stdout", 0).status().code(), StatusCode::kNotFound);

  // Days later the running container is still untouched.
  clock.advance(Millis(3 * 24 * 3600 * 1000));
  sweep = retention.sweepOnce();
  EXPECT_EQ(sweep.dirs_removed + sweep.logs_removed, 0);
  auto out = rt_->logs(ContainerId("running"), "stdout", 0);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(*out, "still-here\n");

  // One that just finished is within the retention.
  runQuick("fresh");
  VirtualClock real(wallNow());
  LogRetention now_retention(*rt_, Millis(60000), real);
  EXPECT_EQ(now_retention.sweepOnce().dirs_removed, 0);
  EXPECT_TRUE(fs::exists(dirOf("fresh") + "/stdout"));
}

// While the container token it was started with is still valid, the logs go
// but the record stays (a replayed token is refused: ALREADY_EXISTS) with a
// marker that makes a log read say why; after the token's expiry the
// directory goes.
TEST_F(LogRetentionTest, KeepsTheRecordUntilTheTokenExpires) {
  const TimePoint t0 = wallNow();
  runQuick("c1", t0 + 1h);
  rt_->acknowledge({ContainerId("c1")});

  VirtualClock clock(t0 + 10min);
  LogRetention retention(*rt_, Millis(60000), clock);
  auto sweep = retention.sweepOnce();
  EXPECT_EQ(sweep.logs_removed, 1);
  EXPECT_EQ(sweep.dirs_removed, 0);
  EXPECT_FALSE(fs::exists(dirOf("c1") + "/stdout"));
  EXPECT_FALSE(fs::exists(dirOf("c1") + "/stderr"));
  EXPECT_FALSE(fs::exists(dirOf("c1") + "/work"));
  EXPECT_TRUE(fs::exists(dirOf("c1") + "/container.acked.json"));
  auto logs = rt_->logs(ContainerId("c1"), "stderr", 0);
  EXPECT_EQ(logs.status().code(), StatusCode::kNotFound);
  EXPECT_NE(logs.status().message().find("nm.log-retention"), std::string::npos)
      << logs.status().toString();
  EXPECT_EQ(rt_->appOf(ContainerId("c1")).value().value(), "app_1");
  EXPECT_EQ(rt_->launch(shell("c1", "echo again")).code(), StatusCode::kAlreadyExists);
  // A second sweep has nothing more to do.
  EXPECT_EQ(retention.sweepOnce().logs_removed, 0);

  clock.advance(1h);
  EXPECT_EQ(retention.sweepOnce().dirs_removed, 1);
  EXPECT_FALSE(fs::exists(dirOf("c1")));
}

// A record without a completion may belong to a container that still runs
// (an NM that re-attaches to it): kept, however old. A directory without a
// record goes once its mtime is past the retention; entries that are not
// container directories are never touched.
TEST_F(LogRetentionTest, UnfinishedRecordsStayAndStrayDirsGo) {
  fs::create_directories(dirOf("unfinished"));
  std::ofstream(dirOf("unfinished") + "/container.json")
      << R"({"id":"unfinished","app":"app_1","memory_mib":1,"vcores":1,"pid":1,"proc_start":1,"start_ms":0})";
  std::ofstream(dirOf("unfinished") + "/stdout") << "mine\n";
  fs::create_directories(dirOf("stray") + "/work");
  std::ofstream(dirOf("stray") + "/stdout") << "x";
  struct timeval old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimes(dirOf("stray").c_str(), old), 0);
  fs::create_directories(dir_ + "/local/containers/not a container");

  VirtualClock clock(wallNow() + 1min);
  LogRetention retention(*rt_, Millis(1000), clock);
  auto sweep = retention.sweepOnce();
  EXPECT_EQ(sweep.dirs_removed, 1);
  EXPECT_TRUE(fs::exists(dirOf("unfinished") + "/stdout"));
  EXPECT_FALSE(fs::exists(dirOf("stray")));
  EXPECT_TRUE(fs::exists(dir_ + "/local/containers/not a container"));
}

// What a container left in its work dir cannot make the sweep remove
// anything outside: symbolic links are removed, never followed.
TEST_F(LogRetentionTest, NeverFollowsSymlinks) {
  const std::string outside = dir_ + "/outside";
  fs::create_directories(outside);
  std::ofstream(outside + "/precious") << "keep";
  LaunchSpec s =
      shell("c1", "ln -s " + outside + " link; ln -s " + outside + "/precious file-link");
  ASSERT_TRUE(rt_->launch(s).isOk());
  waitDone(*rt_, "c1");
  ASSERT_TRUE(fs::is_symlink(dirOf("c1") + "/work/link"));

  VirtualClock clock(wallNow() + 1h);
  LogRetention retention(*rt_, Millis(1000), clock);
  EXPECT_EQ(retention.sweepOnce().dirs_removed, 1);
  EXPECT_FALSE(fs::exists(dirOf("c1")));
  EXPECT_TRUE(fs::exists(outside + "/precious"));
}

// A directory being launched, or a running container, cannot be claimed;
// a claimed one cannot be launched into until released.
TEST_F(LogRetentionTest, ClaimExcludesLaunch) {
  LaunchSpec run = shell("busy", "exec sleep 30");
  ASSERT_TRUE(rt_->launch(run).isOk());
  EXPECT_FALSE(rt_->claimForRemoval(ContainerId("busy")));
  ASSERT_TRUE(rt_->claimForRemoval(ContainerId("fresh")));
  EXPECT_FALSE(rt_->claimForRemoval(ContainerId("fresh")));
  EXPECT_EQ(rt_->launch(shell("fresh", "true")).code(), StatusCode::kUnavailable);
  rt_->releaseRemoval(ContainerId("fresh"));
  EXPECT_TRUE(rt_->launch(shell("fresh", "true")).isOk());
}

// The interval: the retention, between 1 s and 10 min; 0 keeps everything.
TEST_F(LogRetentionTest, IntervalFollowsTheRetention) {
  VirtualClock clock(wallNow());
  EXPECT_EQ(LogRetention(*rt_, Millis(1000), clock).interval(), Millis(1000));
  EXPECT_EQ(LogRetention(*rt_, Millis(10), clock).interval(), Millis(1000));
  EXPECT_EQ(LogRetention(*rt_, Millis(7LL * 24 * 3600 * 1000), clock).interval(), Millis(600000));
  runQuick("kept");
  VirtualClock later(wallNow() + 1h);
  LogRetention off(*rt_, Millis(0), later);
  off.start();  // no thread, no sweep
  off.stop();
  EXPECT_TRUE(fs::exists(dirOf("kept") + "/stdout"));
}

}  // namespace
}  // namespace morpheus::nm
