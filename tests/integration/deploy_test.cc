// Running the daemons as services: the systemd readiness
// protocol without systemd (the test owns the NOTIFY_SOCKET datagram socket),
// and SIGHUP reopening the log file after an outside rotation.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace morpheus::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A bound AF_UNIX datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    fs::remove(path);
    bound_ = fd_ >= 0 && path.size() < sizeof(addr.sun_path) &&
             ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
    fs::remove(path_);
  }
  bool bound() const { return bound_; }
  // The next datagram, or "" when none arrives within `timeout`.
  std::string receive(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

// Starts `bin` with NOTIFY_SOCKET=`socket` in its environment (the variable is
// set only around the fork, which copies the environment).
Process startNotified(const std::string& socket, const std::string& bin,
                      const std::vector<std::string>& args, const std::string& log) {
  ::setenv("NOTIFY_SOCKET", socket.c_str(), 1);
  Process p = Process::start(bin, args, log);
  ::unsetenv("NOTIFY_SOCKET");
  return p;
}

std::string endpoint(const std::string& endpoints_file, const std::string& key) {
  std::ifstream in(endpoints_file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str(), quoted = "\"" + key + "\":\"";
  auto at = text.find(quoted);
  if (at == std::string::npos) return "";
  at += quoted.size();
  return text.substr(at, text.find('"', at) - at);
}

// The RM, the NM and the inference service each send READY=1 once they serve
// (their HTTP answers /healthz at that moment) and STOPPING=1 on SIGTERM.
TEST(SdNotifyTest, DaemonsSendReadyWhenServingAndStoppingOnSigterm) {
  std::string root = freshDir("notify");
  // Short: a socket path has at most 107 bytes.
  std::string sock_path =
      (fs::temp_directory_path() / ("morpheus-notify-" + std::to_string(::getpid()))).string();
  NotifySocket sock(sock_path);
  ASSERT_TRUE(sock.bound()) << "cannot bind " << sock_path;
  auto expectReady = [&](Process& p, const std::string& component, const std::string& dir) {
    std::string msg = sock.receive(20s);
    ASSERT_NE(msg.find("READY=1"), std::string::npos) << component << " sent '" << msg << "'\n"
                                                      << p.log();
    EXPECT_NE(msg.find("serving gRPC on port "), std::string::npos) << msg;
    // Serving when it said so: the endpoints file is there and /healthz answers.
    std::string http = endpoint(dir + "/" + component + ".endpoints.json", "http");
    ASSERT_FALSE(http.empty()) << component << ": READY=1 before its endpoints file";
    EXPECT_EQ(httpRequest(http, "GET", "/healthz").status, 200) << component;
  };
  std::string rm_dir = root + "/rm";
  std::vector<std::string> rm_args = {"--data-dir", rm_dir, "--grpc-port", "0", "--http-port", "0"};
  for (auto& a : rmAuthArgs()) rm_args.push_back(a);
  Process rm = startNotified(sock_path, binary("morpheus-rm"), rm_args, rm_dir + ".log");
  expectReady(rm, "rm", rm_dir);
  std::string rm_grpc = endpoint(rm_dir + "/rm.endpoints.json", "grpc");

  std::string nm_dir = root + "/nm";
  std::vector<std::string> nm_args = {
      "--data-dir", nm_dir, "--grpc-port", "0",     "--http-port", "0",
      "--node-id",  "nm1",  "--rm",        rm_grpc, "--set",       "nm.memory-enforcement=monitor"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(a);
  Process nm = startNotified(sock_path, binary("morpheus-nm"), nm_args, nm_dir + ".log");
  expectReady(nm, "nm", nm_dir);

  std::string inf_dir = root + "/inference";
  Process inf = startNotified(sock_path, binary("morpheus-inference"),
                              {"--data-dir", inf_dir, "--grpc-port", "0", "--http-port", "0",
                               "--rm", rm_grpc, "--set", "inference.auth-disabled=true"},
                              inf_dir + ".log");
  expectReady(inf, "inference", inf_dir);

  for (Process* p : {&inf, &nm, &rm}) {
    ::kill(p->pid(), SIGTERM);
    std::string msg = sock.receive(10s);
    EXPECT_NE(msg.find("STOPPING=1"), std::string::npos) << "'" << msg << "'\n" << p->log();
    EXPECT_EQ(p->wait(20s), 0) << p->log();
  }
}

// SIGHUP makes a daemon reopen log.file: after logrotate moved the file away,
// new lines go to a new file at the configured path; the daemon keeps serving.
TEST(LogReopenTest, SighupReopensTheLogFileAfterRotation) {
  std::string dir = freshDir("hup-rm");
  std::string log = dir + "-rm.log";
  std::vector<std::string> args = {"--log-file", log};
  for (auto& a : rmAuthArgs()) args.push_back(a);
  Process rm = Process::startDaemon("rm", dir, args);
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  ASSERT_TRUE(waitFor([&] { return fs::exists(log) && fs::file_size(log) > 0; }, 5s));
  fs::rename(log, log + ".1");
  ASSERT_EQ(::kill(rm.pid(), SIGHUP), 0);
  auto contains = [](const std::string& path, const std::string& what) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str().find(what) != std::string::npos;
  };
  EXPECT_TRUE(waitFor([&] { return contains(log, "log file reopened on SIGHUP"); }, 10s))
      << rm.log();
  EXPECT_TRUE(contains(log + ".1", "morpheus-rm started"));
  EXPECT_FALSE(contains(log + ".1", "log file reopened"));
  EXPECT_EQ(httpRequest(rm.httpAddress(), "GET", "/healthz").status, 200) << "still serving";
  EXPECT_EQ(rm.signalAndWait(SIGTERM, 20s), 0) << rm.log();
}

// morpheus-nm with nm.cgroup-parent: own (as its systemd unit runs it) takes
// its cgroup from /proc/self/cgroup, moves itself to <own>/supervisor and
// keeps containers below <own>/containers, writing nothing above <own>
// (stand-in hierarchy under nm.cgroup-root; the kernel's side is
// RuntimeFixture.KernelEnforcesMemoryMaxOnARealCgroupV2).
TEST(NmCgroupTest, OwnCgroupParentKeepsTheNmBelowItsDelegatedCgroup) {
  std::string root = freshDir("cgroot");
  std::ifstream self("/proc/self/cgroup");
  std::string line, own;
  while (std::getline(self, line)) {
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  if (own.empty()) GTEST_SKIP() << "this process is in no cgroup v2 hierarchy (no 0:: line)";
  // The NM inherits this test's cgroup; mirror it in the stand-in hierarchy.
  std::string own_dir = root + (own == "/" ? "" : own);
  fs::create_directories(own_dir);
  std::ofstream(root + "/cgroup.controllers") << "cpu memory pids\n";
  std::ofstream(own_dir + "/cgroup.controllers") << "cpu memory pids\n";
  std::vector<std::string> args = {"--rm",  "127.0.0.1:1",
                                   "--set", "nm.cgroup-parent=own",
                                   "--set", "nm.memory-enforcement=cgroup",
                                   "--set", "nm.cgroup-root=" + root};
  for (auto& a : nmAuthArgs("nm1")) args.push_back(a);
  Process nm = Process::startDaemon("nm", freshDir("nm-own"), args);
  ASSERT_FALSE(nm.grpcAddress().empty()) << nm.log();
  std::ifstream procs(own_dir + "/supervisor/cgroup.procs");
  pid_t pid = 0;
  procs >> pid;
  EXPECT_EQ(pid, nm.pid()) << "the NM moved itself out of its own cgroup\n" << nm.log();
  EXPECT_TRUE(fs::exists(own_dir + "/containers/cgroup.subtree_control")) << nm.log();
  EXPECT_NE(nm.log().find("containers below " + own_dir + "/containers"), std::string::npos)
      << nm.log();
  if (own != "/") {
    EXPECT_FALSE(fs::exists(root + "/cgroup.subtree_control")) << "nothing written above <own>";
  }
  EXPECT_FALSE(fs::exists(root + "/morpheus-nm"));
  EXPECT_EQ(nm.signalAndWait(SIGTERM, 20s), 0) << nm.log();
}

}  // namespace
}  // namespace morpheus::testing
