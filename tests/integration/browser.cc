#include "browser.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness.h"

namespace morpheus::testing {

using namespace std::chrono_literals;

namespace {

// Processes whose session id is `sid` (chromium's helpers stay in its
// session). Zombies among them that are this process's children are reaped.
std::vector<pid_t> sessionMembers(pid_t sid) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(f)), {});
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (session != sid) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (state == "Z" && ppid == ::getpid()) {
      ::waitpid(pid, nullptr, WNOHANG);
      continue;
    }
    out.push_back(pid);
  }
  return out;
}

}  // namespace

// The chromium binary: $MORPHEUS_CHROMIUM, else Debian's /usr/bin/chromium ("" = none).
std::string chromiumBinary() {
  const char* env = ::getenv("MORPHEUS_CHROMIUM");
  std::string path = env && *env ? env : "/usr/bin/chromium";
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

// Runs headless chromium with isolation flags, a fresh profile
// and HOME, in its own session; kills the whole session at `timeout` and
// always waits until no process of it is left. While it runs this process is
// a child subreaper, so helpers orphaned by the browser are reaped here
// rather than left as zombies of an init that may not reap them.
BrowserRun runChromium(const std::vector<std::string>& extra, std::chrono::milliseconds timeout) {
  std::string dir = freshDir("chromium");
  std::vector<std::string> argv = {chromiumBinary(),
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-dev-shm-usage",
                                   "--user-data-dir=" + dir + "/profile"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::cout.flush();  // else the child's freopen writes our buffered output again
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    FILE* o = ::freopen(out_path.c_str(), "w", stdout);
    FILE* e = ::freopen(err_path.c_str(), "w", stderr);
    if (!o || !e) _exit(126);
    ::setenv("HOME", dir.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  BrowserRun run;
  int st = 0;
  bool exited = waitFor([&] { return ::waitpid(pid, &st, WNOHANG) == pid; }, timeout);
  ::kill(-pid, SIGKILL);  // helpers left behind, or the browser itself at the timeout
  if (!exited) ::waitpid(pid, &st, 0);
  if (exited && WIFEXITED(st)) run.exit_code = WEXITSTATUS(st);
  EXPECT_TRUE(waitFor([&] { return sessionMembers(pid).empty(); }, 5s))
      << "chromium processes left in session " << pid;
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  std::ifstream o(out_path), e(err_path);
  run.output.assign(std::istreambuf_iterator<char>(o), {});
  run.log.assign(std::istreambuf_iterator<char>(e), {});
  return run;
}

}  // namespace morpheus::testing
