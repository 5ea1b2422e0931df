// The fixture of the ContainerRuntime tests (container_runtime_test.cc) and
// of the kernel ones (cgroup_kernel_test.cc): a temporary directory per test,
// runtimes in it, /bin/sh containers and waits with deadlines.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "nodemanager/container_runtime.h"
#include "started_runtime.h"

namespace morpheus::nm {

class RuntimeFixture : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = freshTestDir("nmrt"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<ContainerRuntime> make(Millis grace = Millis(300),
                                         const std::string& mode = "monitor",
                                         const std::string& cg = "") {
    auto rt = std::make_unique<ContainerRuntime>(dir_ + "/local", Millis(50), grace, metrics_);
    rt->setMemoryEnforcement(mode, cg);
    return rt;
  }
  LaunchSpec shell(const std::string& id, const std::string& script, int64_t mem = 256) {
    LaunchSpec s;
    s.id = ContainerId(id);
    s.app = AppId("app_1");
    s.resource = Resource(mem, 1);
    s.command = "/bin/sh";
    s.args = {"-c", script};
    return s;
  }
  ContainerSnapshot waitDone(ContainerRuntime& rt, const std::string& id,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      rt.monitorOnce();
      auto s = rt.get(ContainerId(id));
      if (s && !s->running) return *s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << id << " did not complete";
    return {};
  }
  // Polls until `path` exists (a ready file a container script writes once
  // it is where the test needs it); false after `timeout`.
  static bool waitForFile(const std::string& path,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (!std::filesystem::exists(path)) {
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  // Until the file holds `text` (a container's stdout exists as soon as the
  // launcher opens it, before the command wrote anything).
  static bool waitForText(const std::string& path, const std::string& text,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::ifstream f(path);
      std::string got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (got == text) return true;
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Process `pid` has ended (gone, or a zombie nobody has reaped).
  static bool exitedOrZombie(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return true;
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
  }
  // The work dir (cwd) of container `id`.
  std::string work(const std::string& id) const {
    return dir_ + "/local/containers/" + id + "/work";
  }
  std::string dir_;
  MetricsRegistry metrics_;
};

}  // namespace morpheus::nm
