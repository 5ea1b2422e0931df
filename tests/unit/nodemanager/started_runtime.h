// Shared by the NM's unit tests: a fresh temporary directory per test (the
// ContainerRuntime fixture, runtime_fixture.h, too); for the service tests
// (container_service_test.cc, node_agent_test.cc) a ContainerRuntime started
// in it as the NM starts it and stopped at the end with no container left
// running; and whether a process still runs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "nodemanager/container_runtime.h"

namespace morpheus::nm {

// <tmp>/morpheus-<tag>-<pid>-<current test's name>, removed if it exists.
inline std::string freshTestDir(const std::string& tag) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("morpheus-" + tag + "-" + std::to_string(::getpid()) + "-" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                        .string();
  std::filesystem::remove_all(dir);
  return dir;
}

// A ContainerRuntime in `dir`/local (monitored every 30 ms, 200 ms between
// SIGTERM and SIGKILL, memory limits monitored), initialised and started.
inline void startRuntime(const std::string& dir, MetricsRegistry& metrics,
                         std::unique_ptr<ContainerRuntime>* out) {
  *out = std::make_unique<ContainerRuntime>(dir + "/local", Millis(30), Millis(200), metrics);
  (*out)->setMemoryEnforcement("monitor", "");
  ASSERT_TRUE((*out)->init().isOk());
  (*out)->start();
}

// Stops every container of `runtime` (when there is one) and waits up to
// 10 s until none runs, failing the test if one still does; then destroys it.
inline void stopRuntime(std::unique_ptr<ContainerRuntime>& runtime) {
  if (!runtime) return;
  runtime->stopAll(ExitReason::kKilled, "test over");
  auto anyRunning = [&] {
    for (const auto& s : runtime->snapshot()) {
      if (s.running) return true;
    }
    return false;
  };
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (anyRunning() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(anyRunning()) << "a container outlived the test";
  runtime.reset();
}

// Process `pid` runs (exists and is not a zombie).
inline bool alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

}  // namespace morpheus::nm
