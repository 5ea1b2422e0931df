// ContainerRuntime with real processes: exit codes, output, kill with grace,
// memory kill, rlimits, the cgroup v2 files (on a stand-in hierarchy), and
// re-attach after a restart. What needs a real kernel cgroup is in
// cgroup_kernel_test.cc (nm_kernel_tests).
#include "nodemanager/container_runtime.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "runtime_fixture.h"

namespace morpheus::nm {
namespace {

using namespace std::chrono_literals;

TEST_F(RuntimeFixture, RunsAProcessAndReportsExitCodeAndOutput) {
  auto rt = make();
  ASSERT_TRUE(rt->init().isOk());
  ASSERT_TRUE(rt->launch(shell("c1", "echo hello $MORPHEUS_CONTAINER_ID; exit 3")).isOk());
  auto s = waitDone(*rt, "c1");
  EXPECT_EQ(s.exit_status, 3);
  EXPECT_EQ(s.reason, ExitReason::kFailure);
  EXPECT_EQ(*rt->logs(ContainerId("c1"), "stdout", 0), "hello c1\n");
  EXPECT_EQ(rt->launch(shell("c1", "true")).code(), StatusCode::kAlreadyExists);
  LaunchSpec bad = shell("c2", "");
  bad.command = "no-such-command-xyz";
  EXPECT_FALSE(rt->launch(bad).isOk());
  EXPECT_EQ(rt->get(ContainerId("c2"))->reason, ExitReason::kLaunchFailed);
}

// A stop at any moment after launch reaches the command, never a wrapper in
// between: before the launcher's fork-to-exec completes the child dies of
// SIGTERM's default action, after it the command gets the signal. (The former
// sh wrapper's trap swallowed a SIGTERM landing in its fork-to-exec window,
// ~1 in 13 stops under load in NmContainerIT; that window is too narrow to
// hit reliably here, so the next test checks the structure that closes it.)
TEST_F(RuntimeFixture, StopRightAfterLaunchIsNeverLost) {
  auto rt = make(Millis(20000));
  ASSERT_TRUE(rt->init().isOk());
  for (int i = 0; i < 30; i++) {
    LaunchSpec s = shell("s" + std::to_string(i), "");
    s.command = "sleep";
    s.args = {"30"};
    ASSERT_TRUE(rt->launch(s).isOk());
    // 0..6 ms after launch: sweeps the wrapper's start, fork and exec.
    std::this_thread::sleep_for(std::chrono::microseconds(200 * i));
    ASSERT_TRUE(rt->stop(s.id, ExitReason::kKilled, "stopped at once").isOk());
  }
  for (int i = 0; i < 30; i++) {
    auto d = waitDone(*rt, "s" + std::to_string(i), 5s);
    EXPECT_EQ(d.exit_status, 128 + SIGTERM) << "s" << i;
    EXPECT_EQ(d.reason, ExitReason::kKilled) << "s" << i;
  }
}

// The command starts with no signal blocked or ignored and SIGTERM/SIGPIPE at
// their defaults, whatever the NM's own mask (which blocks SIGTERM for its
// sigwait) and dispositions (it ignores SIGPIPE); its group is not the
// launcher's.
TEST_F(RuntimeFixture, CommandStartsWithDefaultSignalsInAGroupOfItsOwn) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  auto old_pipe = signal(SIGPIPE, SIG_IGN);
  auto rt = make();
  ASSERT_TRUE(rt->init().isOk());
  // The shell reads its own status with builtins: a child (grep) reading
  // /proc/$$/status raced dash's wait, which blocks every signal around its
  // sigsuspend (seen once: SigBlk fffffffe7ffbfeff).
  ASSERT_TRUE(rt->launch(shell("sig",
                               "while read -r k v; do case $k in SigBlk:|SigIgn:) "
                               "printf '%s\\t%s\\n' \"$k\" \"$v\";; esac; done < /proc/$$/status; "
                               "echo pgid $(cut -d' ' -f5 /proc/$$/stat) sid "
                               "$(cut -d' ' -f6 /proc/$$/stat) pid $$"))
                  .isOk());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  signal(SIGPIPE, old_pipe);
  auto d = waitDone(*rt, "sig");
  ASSERT_EQ(d.exit_status, 0);
  std::string out = *rt->logs(ContainerId("sig"), "stdout", 0);
  EXPECT_NE(out.find("SigBlk:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("SigIgn:\t0000000000000000"), std::string::npos) << out;
  std::istringstream in(out.substr(out.find("pgid")));
  std::string k1, k2, k3;
  long pgid = 0, sid = 0, pid = 0;
  in >> k1 >> pgid >> k2 >> sid >> k3 >> pid;
  EXPECT_EQ(pgid, pid) << out;
  EXPECT_NE(sid, pid) << out;
}

TEST_F(RuntimeFixture, MissingLauncherRefusesToStart) {
  auto rt = make();
  rt->setLauncher(dir_ + "/no-such-launcher");
  Status st = rt->init();
  EXPECT_EQ(st.code(), StatusCode::kInfeasible);
  EXPECT_NE(st.message().find("no-such-launcher"), std::string::npos) << st.toString();
}

TEST_F(RuntimeFixture, StopSendsSigtermThenSigkillAfterTheGrace) {
  auto rt = make(Millis(300));
  ASSERT_TRUE(rt->init().isOk());
  // Each script writes ./ready once its trap is installed; the stops come after.
  ASSERT_TRUE(
      rt->launch(shell("polite", "trap 'exit 0' TERM; : > ready; while true; do sleep 0.05; done"))
          .isOk());
  ASSERT_TRUE(
      rt->launch(shell("stubborn", "trap '' TERM; : > ready; while true; do sleep 0.05; done"))
          .isOk());
  ASSERT_TRUE(waitForFile(work("polite") + "/ready")) << "polite never installed its trap";
  ASSERT_TRUE(waitForFile(work("stubborn") + "/ready")) << "stubborn never installed its trap";
  ASSERT_TRUE(rt->stop(ContainerId("polite"), ExitReason::kKilled, "test").isOk());
  ASSERT_TRUE(rt->stop(ContainerId("stubborn"), ExitReason::kKilled, "test").isOk());
  auto p = waitDone(*rt, "polite");
  EXPECT_EQ(p.exit_status, 0) << "its trap ran and it exited by itself";
  EXPECT_EQ(p.reason, ExitReason::kKilled);
  auto s = waitDone(*rt, "stubborn");
  EXPECT_EQ(s.exit_status, 128 + SIGKILL);
  EXPECT_GE(s.end - s.start, Millis(300));
}

TEST_F(RuntimeFixture, KillsAContainerOverItsMemoryNamingTheLimit) {
  auto rt = make();
  ASSERT_TRUE(rt->init().isOk());
  ASSERT_TRUE(
      rt->launch(shell("hog", "x=$(head -c 150000000 /dev/zero | tr '\\0' a); sleep 30", 64))
          .isOk());
  auto s = waitDone(*rt, "hog", 20s);
  EXPECT_EQ(s.reason, ExitReason::kMemoryExceeded);
  EXPECT_NE(s.diagnostics.find("exceeded its limit of 64 MiB"), std::string::npos) << s.diagnostics;
}

TEST_F(RuntimeFixture, WithoutCgroupsTheAddressSpaceIsLimited) {
  auto rt = make(Millis(300), "auto", dir_ + "/not-a-cgroup");
  ASSERT_TRUE(rt->init().isOk());
  EXPECT_FALSE(rt->usingCgroups());
  ASSERT_TRUE(rt->launch(shell("ul", "ulimit -v; ulimit -c", 100)).isOk());
  waitDone(*rt, "ul");
  EXPECT_EQ(*rt->logs(ContainerId("ul"), "stdout", 0),
            std::to_string((100 * 8 + 2048) * 1024) + "\n0\n");
}

TEST_F(RuntimeFixture, CgroupModeWritesMemoryMaxAndJoinsTheCgroup) {
  // A stand-in for a cgroup v2 mount: the files the kernel would provide.
  std::string root = dir_ + "/cgroup";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
  auto rt = make(Millis(300), "cgroup", root);
  ASSERT_TRUE(rt->init().isOk());
  EXPECT_TRUE(rt->usingCgroups());
  ASSERT_TRUE(rt->launch(shell("cg", "sleep 0.3", 128)).isOk());
  std::string cg = root + "/morpheus-nm/cg";
  std::ifstream mm(cg + "/memory.max");
  std::string max;
  mm >> max;
  EXPECT_EQ(max, std::to_string(128LL * 1024 * 1024));
  // The child writes its pid before it execs the launcher, so it is there
  // once launch() returns; polled anyway, with a deadline.
  pid_t pid = 0;
  auto end = std::chrono::steady_clock::now() + 10s;
  while (pid <= 0 && std::chrono::steady_clock::now() < end) {
    std::ifstream(cg + "/cgroup.procs") >> pid;
    if (pid <= 0) std::this_thread::sleep_for(10ms);
  }
  EXPECT_GT(pid, 0);
  waitDone(*rt, "cg");
  // Forcing cgroups on something that is not a hierarchy is a start-up error.
  auto bad = make(Millis(300), "cgroup", dir_ + "/nothing");
  Status st = bad->init();
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("nm.memory-enforcement"), std::string::npos) << st.message();
}

// nm.cgroup-parent: own: the NM moves itself below its delegated
// cgroup and puts containers in <own>/containers, never writing the root's
// cgroup.subtree_control (stand-in hierarchy: the files the kernel would provide).
TEST_F(RuntimeFixture, DelegatedCgroupKeepsContainersBelowTheNmsOwnCgroup) {
  std::string root = dir_ + "/cgroup";
  std::string own = root + "/system.slice/morpheus-nm.service";
  std::filesystem::create_directories(own);
  std::ofstream(root + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
  std::ofstream(own + "/cgroup.controllers") << "cpu memory pids\n";
  auto rt = make(Millis(300), "cgroup", root);
  rt->setDelegatedCgroup("/system.slice/morpheus-nm.service");
  ASSERT_TRUE(rt->init().isOk());
  EXPECT_EQ(rt->cgroupParent(), own + "/containers");
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(slurp(own + "/supervisor/cgroup.procs"), std::to_string(::getpid()))
      << "the NM left its own cgroup (no processes in a cgroup that hands controllers down)";
  EXPECT_EQ(slurp(own + "/cgroup.subtree_control"), "+memory");
  EXPECT_EQ(slurp(own + "/containers/cgroup.subtree_control"), "+memory");
  EXPECT_FALSE(std::filesystem::exists(root + "/cgroup.subtree_control"))
      << "nothing written above the delegated cgroup";
  EXPECT_FALSE(std::filesystem::exists(root + "/morpheus-nm"));
  ASSERT_TRUE(rt->launch(shell("dg", "sleep 0.2", 96)).isOk());
  EXPECT_EQ(slurp(own + "/containers/dg/memory.max"), std::to_string(96LL * 1024 * 1024));
  waitDone(*rt, "dg");
  // A delegated cgroup without the memory controller: cgroup mode refuses to start.
  std::ofstream(own + "/cgroup.controllers", std::ios::trunc) << "cpu pids\n";
  auto bad = make(Millis(300), "cgroup", root);
  bad->setDelegatedCgroup("/system.slice/morpheus-nm.service");
  Status st = bad->init();
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("memory controller"), std::string::npos) << st.message();
}

// cgroup mode on stand-in hierarchies: init() enables the memory controller
// in the root's and in morpheus-nm's cgroup.subtree_control; a root that is no
// cgroup v2 hierarchy, one without the memory controller and a subtree_control
// that cannot be written are start-up errors naming the path.
TEST_F(RuntimeFixture, CgroupInitOnAStandInTreeWritesSubtreeControlOrNamesThePath) {
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  auto initError = [&](const std::string& root) {
    auto rt = make(Millis(300), "cgroup", root);
    Status st = rt->init();
    EXPECT_EQ(st.code(), StatusCode::kInfeasible) << root;
    EXPECT_FALSE(rt->usingCgroups());
    return st.message();
  };
  const std::string none = dir_ + "/cg-none";
  std::filesystem::create_directories(none);
  std::string msg = initError(none);
  EXPECT_NE(msg.find(none + " is not a cgroup v2 hierarchy (no cgroup.controllers)"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(std::filesystem::exists(none + "/morpheus-nm"));

  const std::string no_memory = dir_ + "/cg-nomem";
  std::filesystem::create_directories(no_memory);
  std::ofstream(no_memory + "/cgroup.controllers") << "cpuset cpu io pids\n";
  msg = initError(no_memory);
  EXPECT_NE(msg.find("the memory controller is not available in " + no_memory), std::string::npos)
      << msg;
  EXPECT_FALSE(std::filesystem::exists(no_memory + "/morpheus-nm"));

  const std::string blocked = dir_ + "/cg-blocked";
  std::filesystem::create_directories(blocked + "/morpheus-nm/cgroup.subtree_control");
  std::ofstream(blocked + "/cgroup.controllers") << "cpu memory\n";
  msg = initError(blocked);
  EXPECT_NE(msg.find("cannot enable the memory controller in " + blocked + "/morpheus-nm"),
            std::string::npos)
      << msg;

  const std::string good = dir_ + "/cg-good";
  std::filesystem::create_directories(good);
  std::ofstream(good + "/cgroup.controllers") << "cpu memory pids\n";
  auto rt = make(Millis(300), "cgroup", good);
  ASSERT_TRUE(rt->init().isOk());
  EXPECT_EQ(rt->cgroupParent(), good + "/morpheus-nm");
  EXPECT_EQ(slurp(good + "/cgroup.subtree_control"), "+memory");
  EXPECT_EQ(slurp(good + "/morpheus-nm/cgroup.subtree_control"), "+memory");
}

// A container on a stand-in cgroup v2 tree: memory.max = its allocation in
// bytes, memory.swap.max = 0, its launcher's pid in cgroup.procs; an oom_kill
// the kernel counted in memory.events is the container's verdict (MEMORY_
// EXCEEDED naming the limit) however it exited. A memory.max that cannot be
// written or a cgroup that cannot be made fail the launch naming the path,
// and no process joins the cgroup.
TEST_F(RuntimeFixture, CgroupLaunchOnAStandInTreeWritesLimitsAndReadsTheOomVerdict) {
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string root = dir_ + "/cgroup";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpu memory pids\n";
  auto rt = make(Millis(300), "cgroup", root);
  ASSERT_TRUE(rt->init().isOk());
  const std::string parent = root + "/morpheus-nm";

  ASSERT_TRUE(
      rt->launch(shell("oomed", "while [ ! -e go ]; do sleep 0.02; done; exit 0", 64)).isOk());
  EXPECT_EQ(slurp(parent + "/oomed/memory.max"), std::to_string(64LL * 1024 * 1024));
  EXPECT_EQ(slurp(parent + "/oomed/memory.swap.max"), "0");
  const auto launched = rt->get(ContainerId("oomed"));
  ASSERT_TRUE(launched.has_value());
  EXPECT_EQ(slurp(parent + "/oomed/cgroup.procs"), std::to_string(launched->session))
      << "the launcher joined before it ran";
  std::ofstream(parent + "/oomed/memory.events") << "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n";
  std::ofstream(work("oomed") + "/go").flush();
  auto oomed = waitDone(*rt, "oomed");
  EXPECT_EQ(oomed.exit_status, 0);
  EXPECT_EQ(oomed.reason, ExitReason::kMemoryExceeded);
  EXPECT_NE(oomed.diagnostics.find("killed by the kernel: over its cgroup limit of 64 MiB"),
            std::string::npos)
      << oomed.diagnostics;

  ASSERT_TRUE(rt->launch(shell("fine", "exit 0", 32)).isOk());
  EXPECT_EQ(slurp(parent + "/fine/memory.max"), std::to_string(32LL * 1024 * 1024));
  EXPECT_EQ(waitDone(*rt, "fine").reason, ExitReason::kSuccess) << "no memory.events, no verdict";

  // A directory where memory.max should be: open(O_WRONLY) fails even for root.
  std::filesystem::create_directories(parent + "/blocked/memory.max");
  Status st = rt->launch(shell("blocked", "exit 0"));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("cannot write " + parent + "/blocked/memory.max"), std::string::npos)
      << st.message();
  EXPECT_FALSE(rt->get(ContainerId("blocked")).has_value());
  EXPECT_FALSE(std::filesystem::exists(parent + "/blocked/cgroup.procs")) << "nothing ran";

  // A file where the container's cgroup should be.
  std::ofstream(parent + "/filed") << "";
  st = rt->launch(shell("filed", "exit 0"));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("cannot create cgroup " + parent + "/filed"), std::string::npos)
      << st.message();
  EXPECT_FALSE(rt->get(ContainerId("filed")).has_value());
}

// The NM's own cgroup is the "0::" line of /proc/<pid>/cgroup (v2 or hybrid layout).
TEST(OwnCgroupPathTest, ReadsTheCgroupV2Line) {
  EXPECT_EQ(*ownCgroupPath("0::/system.slice/morpheus-nm.service\n"),
            "/system.slice/morpheus-nm.service");
  EXPECT_EQ(*ownCgroupPath("4:memory:/x\n1:cpu:/\n0::/\n"), "/");
  auto none = ownCgroupPath("4:memory:/x\n1:cpu:/\n");
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("nm.cgroup-parent"), std::string::npos);
  EXPECT_TRUE(readOwnCgroupPath().isOk() || !std::filesystem::exists("/sys/fs/cgroup"));
}

TEST_F(RuntimeFixture, ARestartedRuntimeReattachesAndLearnsExitCodes) {
  {
    auto rt = make();
    ASSERT_TRUE(rt->init().isOk());
    // "long" runs until the test creates ./go in its work dir; "quick" is
    // done once its launcher has recorded ./exit_status.
    ASSERT_TRUE(rt->launch(shell("long", "while [ ! -e go ]; do sleep 0.02; done; exit 7")).isOk());
    ASSERT_TRUE(rt->launch(shell("quick", "exit 5")).isOk());
    ASSERT_TRUE(waitForFile(dir_ + "/local/containers/quick/exit_status"));
    // ... and its launcher has exited (a zombie: nobody reaps it now).
    std::ifstream rec(dir_ + "/local/containers/quick/container.json");
    const auto launcher = nlohmann::json::parse(rec, nullptr, false).value("pid", 0);
    ASSERT_GT(launcher, 0);
    auto end = std::chrono::steady_clock::now() + 10s;
    while (!exitedOrZombie(launcher) && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(exitedOrZombie(launcher)) << "quick's launcher " << launcher << " still runs";
    // The "NM" goes away without reaping (records stay on disk).
  }
  auto rt = make();
  ASSERT_TRUE(rt->init().isOk());
  auto q = rt->get(ContainerId("quick"));
  ASSERT_TRUE(q.has_value());
  EXPECT_FALSE(q->running);
  EXPECT_EQ(q->exit_status, 5);
  auto l = rt->get(ContainerId("long"));
  ASSERT_TRUE(l.has_value());
  EXPECT_TRUE(l->running);
  std::ofstream(work("long") + "/go").flush();
  auto done = waitDone(*rt, "long");
  EXPECT_EQ(done.exit_status, 7);
  rt->acknowledge({ContainerId("long"), ContainerId("quick")});
  EXPECT_FALSE(rt->get(ContainerId("long")).has_value());
  auto again = make();
  ASSERT_TRUE(again->init().isOk());
  EXPECT_TRUE(again->snapshot().empty()) << "acknowledged containers are forgotten";
}

// Run only by ContainerReaperTest, in a process of its own (its own test
// main, hence its own reaper): starts a container that sleeps, publishes the
// container's pid in $MORPHEUS_REAPER_PID_FILE and waits to be killed.
TEST_F(RuntimeFixture, DISABLED_HelperStartsAContainerAndWaits) {
  const char* pid_file = std::getenv("MORPHEUS_REAPER_PID_FILE");
  ASSERT_NE(pid_file, nullptr);
  auto rt = make();
  ASSERT_TRUE(rt->init().isOk());
  ASSERT_TRUE(
      rt->launch(shell("sleeper", "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 300")).isOk());
  ASSERT_TRUE(waitForFile(work("sleeper") + "/pid"));
  std::filesystem::copy_file(work("sleeper") + "/pid", std::string(pid_file) + ".tmp");
  std::filesystem::rename(std::string(pid_file) + ".tmp", pid_file);
  std::this_thread::sleep_for(120s);
}

// A unit test killed with SIGKILL (ctest's timeout) leaves no container
// running: the runtime starts containers with a fresh environment in a
// session of their own, so they do not carry the test's MORPHEUS_TEST_RUN
// marker; the test main's reaper finds them by their working directory below
// the test's temporary directory (tests/support/test_main.cc).
TEST(ContainerReaperTest, KilledTestLeavesNoContainerRunning) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("morpheus-reaper-" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string pid_file = dir + "/sleeper.pid";
  const pid_t helper = ::fork();
  if (helper == 0) {
    ::setenv("MORPHEUS_REAPER_PID_FILE", pid_file.c_str(), 1);
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    ::execl(self.c_str(), self.c_str(), "--gtest_also_run_disabled_tests",
            "--gtest_filter=RuntimeFixture.DISABLED_HelperStartsAContainerAndWaits",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(helper, 0);
  auto end = std::chrono::steady_clock::now() + 30s;
  while (!std::filesystem::exists(pid_file) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
  pid_t sleeper = 0;
  std::ifstream(pid_file) >> sleeper;
  if (sleeper <= 0) {
    ::kill(helper, SIGKILL);
    ::waitpid(helper, nullptr, 0);
    FAIL() << "the helper did not start its container";
  }
  auto alive = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return false;
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
  };
  EXPECT_TRUE(alive(sleeper));
  {
    std::ifstream in("/proc/" + std::to_string(sleeper) + "/environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(env.find("MORPHEUS_TEST_RUN="), std::string::npos)
        << "the container carries the marker: this test would not show the cwd rule works";
  }
  ::kill(helper, SIGKILL);  // no destructor, no atexit: only the reaper can clean up
  ::waitpid(helper, nullptr, 0);
  end = std::chrono::steady_clock::now() + 15s;
  while (alive(sleeper) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
  const bool gone = !alive(sleeper);
  if (!gone) ::kill(sleeper, SIGKILL);
  EXPECT_TRUE(gone) << "container process " << sleeper << " outlived its killed test";
}

// A restarted runtime reports what the old one had decided: a memory kill not
// yet acknowledged, a stop in its grace period (SIGKILL still comes), and a
// container killed behind its back with its launcher (exit status unknown ->
// NODE_LOST).
TEST_F(RuntimeFixture, ARestartedRuntimeKeepsVerdictsAndDeadlines) {
  pid_t victim_pid = 0;
  TimePoint stopped_at;
  {
    auto rt = make(Millis(400));
    ASSERT_TRUE(rt->init().isOk());
    ASSERT_TRUE(
        rt->launch(shell("hog", "x=$(head -c 150000000 /dev/zero | tr '\\0' a); sleep 30", 64))
            .isOk());
    ASSERT_TRUE(
        rt->launch(shell("stubborn", "trap '' TERM; while true; do sleep 0.05; done")).isOk());
    ASSERT_TRUE(rt->launch(shell("victim", "echo $$ > pid; sleep 30")).isOk());
    EXPECT_EQ(waitDone(*rt, "hog", 20s).reason, ExitReason::kMemoryExceeded);
    stopped_at = std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
    ASSERT_TRUE(
        rt->stop(ContainerId("stubborn"), ExitReason::kPreempted, "preempted for reservation r1")
            .isOk());
    std::string pid_file = dir_ + "/local/containers/victim/work/pid";
    auto end = std::chrono::steady_clock::now() + 5s;
    while (victim_pid == 0 && std::chrono::steady_clock::now() < end) {
      std::ifstream(pid_file) >> victim_pid;
      if (victim_pid == 0) std::this_thread::sleep_for(20ms);
    }
    ASSERT_GT(victim_pid, 0);
  }
  // While no runtime watches, something else SIGKILLs the victim's whole
  // session: its launcher's group first (killed second, the launcher could
  // still record the command's death), then the command's group.
  pid_t victim_sid = ::getsid(victim_pid);
  ASSERT_GT(victim_sid, 0);
  const pid_t victim_pgid = ::getpgid(victim_pid);
  ASSERT_NE(victim_pgid, victim_sid) << "the command runs in a group of its own";
  ASSERT_EQ(::kill(-victim_sid, SIGKILL), 0);
  ASSERT_EQ(::kill(-victim_pgid, SIGKILL), 0);
  auto rt = make(Millis(400));
  ASSERT_TRUE(rt->init().isOk());
  auto hog = rt->get(ContainerId("hog"));
  ASSERT_TRUE(hog.has_value());
  EXPECT_FALSE(hog->running);
  EXPECT_EQ(hog->reason, ExitReason::kMemoryExceeded);
  EXPECT_EQ(hog->exit_status, 128 + SIGKILL);
  EXPECT_NE(hog->diagnostics.find("exceeded its limit of 64 MiB"), std::string::npos)
      << hog->diagnostics;
  auto victim = waitDone(*rt, "victim");
  EXPECT_EQ(victim.reason, ExitReason::kNodeLost);
  EXPECT_EQ(victim.exit_status, -1);
  EXPECT_NE(victim.diagnostics.find("NM restarted"), std::string::npos) << victim.diagnostics;
  auto stubborn = waitDone(*rt, "stubborn");
  EXPECT_EQ(stubborn.reason, ExitReason::kPreempted);
  EXPECT_EQ(stubborn.diagnostics, "preempted for reservation r1");
  EXPECT_EQ(stubborn.exit_status, 128 + SIGKILL)
      << "the launcher outlives the command's SIGKILL and records it for a non-parent";
  EXPECT_GE(stubborn.end - stopped_at, Millis(390)) << "the new runtime kept the SIGKILL deadline";
}

}  // namespace
}  // namespace morpheus::nm

namespace morpheus::nm {
namespace {

// An id that is not a container id never becomes a path
// (launch and logs are INVALID_ARGUMENT naming container_id, nothing is
// created); an acknowledged container's application stays known (for the
// logs' token check), also to a restarted runtime, which does not re-attach
// it, and launching it again is ALREADY_EXISTS. Before, "../escape" made
// <local-dir>/escape, logs read any dir, and an acknowledged id ran again.
TEST_F(RuntimeFixture, MalformedIdsAreRefusedAndAcknowledgedContainersKeepTheirApp) {
  auto rt = make();
  ASSERT_TRUE(rt->init().isOk());
  for (std::string id : {"../escape", "..", "a/b", "", "../../.."}) {
    Status st = rt->launch(shell(id, "true"));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "'" << id << "'";
    EXPECT_EQ(st.message().rfind("container_id", 0), 0u) << st.message();
    EXPECT_EQ(rt->logs(ContainerId(id), "stdout", 0).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(rt->appOf(ContainerId(id)).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/local/escape"));

  ASSERT_TRUE(rt->launch(shell("c1", "echo hi")).isOk());
  waitDone(*rt, "c1");
  rt->acknowledge({ContainerId("c1")});
  EXPECT_FALSE(rt->get(ContainerId("c1")).has_value()) << "forgotten once acknowledged";
  auto app = rt->appOf(ContainerId("c1"));
  ASSERT_TRUE(app.isOk()) << app.status().toString();
  EXPECT_EQ(app->value(), "app_1");
  EXPECT_EQ(*rt->logs(ContainerId("c1"), "stdout", 0), "hi\n");
  EXPECT_EQ(rt->appOf(ContainerId("c404")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rt->launch(shell("c1", "echo again")).code(), StatusCode::kAlreadyExists)
      << "a replayed token does not run an acknowledged container again";
  rt->shutdown();

  auto again = make();
  ASSERT_TRUE(again->init().isOk());
  EXPECT_FALSE(again->get(ContainerId("c1")).has_value()) << "not re-attached";
  ASSERT_TRUE(again->appOf(ContainerId("c1")).isOk());
  EXPECT_EQ(again->appOf(ContainerId("c1"))->value(), "app_1");
}

}  // namespace
}  // namespace morpheus::nm
