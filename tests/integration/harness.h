// Integration-test harness: starts the real binaries on loopback with port 0
// and a fresh data dir, learns their ports from <data-dir>/<c>.endpoints.json,
// and stops them. Conditions are polled with a deadline, never fixed sleeps.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace morpheus::testing {

// Absolute path of a built binary (<build>/bin/NAME).
std::string binary(const std::string& name);
// A fresh empty directory under the test temp dir.
std::string freshDir(const std::string& tag);

// The test cluster's bearer tokens, all in one file for rm.token-file:
// users alice, bob and mallory, the admin ops, and node managers nm1..nm9
// (role node). testToken("alice") is alice's token.
std::string testToken(const std::string& principal);
// Writes that file (mode 0600) under the test temp dir; returns its path.
std::string testTokenFile();
// Writes `text` to a new file `path` of mode 0600 (daemons refuse token files
// other accounts may read: token-file-check).
void writeSecretFile(const std::string& path, const std::string& text);
// A file (mode 0600) holding only testToken(node), for nm.token-file.
std::string nodeTokenFile(const std::string& node);
// The NM flags every test NM gets first (Process::startDaemon "nm"): as root
// (CI), containers run as root by the explicit nm.allow-root-containers (the
// test applications are submitted by users with no local account); a test
// about isolation sets nm.run-as=mapped after them. Empty when not root.
std::vector<std::string> nmRunAsArgs();
// {"--set", "rm.token-file=<testTokenFile()>"}: an RM started directly.
std::vector<std::string> rmAuthArgs();
// {"--set", "nm.token-file=<nodeTokenFile(node)>"}: an NM with --node-id `node`.
std::vector<std::string> nmAuthArgs(const std::string& node);

// Containers outlive a killed NM by design (they are re-attached by the next
// NM process). After every test (a gtest listener installed by the harness,
// run once the test's fixture and its Process objects are gone) the harness
// stops what the test's NMs left running: for each record
// <nm.local-dir>/containers/<id>/container.json under `dir` that is not
// completed and whose launcher pid still has the recorded /proc start time,
// SIGKILL to every process of that session (the launcher is the session
// leader). Returns how many containers it stopped; waits (<= 5 s) until
// their processes are gone.
int stopContainersUnder(const std::string& dir);
// The directory all freshDir()s of this test process live in.
std::string testTempRoot();

// Ports for daemons a test starts on fixed ports (an HA pair's addresses, a
// restart on the same address). Never one the kernel picked for port 0 and
// released: that comes from the ephemeral range, where any test's outgoing
// connection can take it before the daemon binds it. Instead a random port
// below net.ipv4.ip_local_port_range, checked bindable at the time (another
// test may still take it: starts on fixed ports retry, see
// Process::startDaemonOnPorts). freeLoopbackPorts(n): n distinct such ports.
// ADD_FAILURE and 0 when no port below the range is free.
int freeLoopbackPort();
std::vector<int> freeLoopbackPorts(int n);

// A loopback port nothing listens on for as long as this object lives: the
// socket is bound (so no other process can take the port) but not listening,
// so a connection to it is refused. For tests of an unreachable address.
class ClosedLoopbackPort {
 public:
  ClosedLoopbackPort();
  ~ClosedLoopbackPort();
  ClosedLoopbackPort(const ClosedLoopbackPort&) = delete;
  ClosedLoopbackPort& operator=(const ClosedLoopbackPort&) = delete;
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Polls `cond` every 20 ms until it returns true or `timeout` passes.
bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

class Process {
 public:
  Process() = default;
  Process(Process&& o) noexcept;
  // Kills (SIGKILL) and reaps any process this object still owns, then takes o's.
  Process& operator=(Process&& o) noexcept;
  ~Process();

  // Starts `bin` with `args`; stdout+stderr go to `log_path`.
  static Process start(const std::string& bin, const std::vector<std::string>& args,
                       const std::string& log_path);
  // Starts a daemon with --data-dir DIR --grpc-port 0 --http-port 0 plus `args` and
  // waits (<= 20 s) for its endpoints file. On failure, pid() is -1 or the
  // process has exited; log() shows why.
  static Process startDaemon(const std::string& component, const std::string& data_dir,
                             const std::vector<std::string>& args);
  // As startDaemon, on fixed ports (0 = any) and with its log appended to
  // `log_path` ("" = <data_dir>.log). A port is free only as long as nobody
  // takes it: when the daemon exits before it is up because it could not
  // listen ("cannot listen on ..."), it is started again on the same ports
  // (a restart must keep its address), every 200 ms until `timeout` passes.
  static Process startDaemonOnPorts(const std::string& component, const std::string& data_dir,
                                    int grpc_port, int http_port,
                                    const std::vector<std::string>& args,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                    const std::string& log_path = "");

  pid_t pid() const { return pid_; }
  const std::string& grpcAddress() const { return grpc_; }
  const std::string& httpAddress() const { return http_; }
  std::string log() const;
  bool running();
  // Sends `sig`; returns the exit status (exit code, or 128+signal) or -1 on timeout.
  int signalAndWait(int sig, std::chrono::milliseconds timeout);
  // Waits for exit without signalling; -1 on timeout.
  int wait(std::chrono::milliseconds timeout);

 private:
  static Process startDaemonOnce(const std::string& component, const std::string& data_dir,
                                 int grpc_port, int http_port, const std::vector<std::string>& args,
                                 const std::string& log_path);

  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::string log_path_;
  std::string grpc_, http_;
};

struct HttpResult {
  int status = 0;  // 0 = could not connect
  std::string body;
};
// `headers`: extra request headers, e.g. bearer("alice").
HttpResult httpRequest(const std::string& address, const std::string& method,
                       const std::string& target, const std::string& body = "",
                       const std::string& content_type = "application/json",
                       const std::map<std::string, std::string>& headers = {});
// {"Authorization": "Bearer <testToken(principal)>"} for httpRequest.
std::map<std::string, std::string> bearer(const std::string& principal);

// A TCP connection from `source` (a 127.x address, so tests can act as several
// clients) to 127.0.0.1:port; the socket, or -1. `blocking` false: the connect
// is started non-blocking and completes in the kernel's backlog whether or not
// the server accepts it (connection floods).
int connectLoopback(int port, const std::string& source, bool blocking);

// Runs a command to completion; returns {exit code, stdout+stderr}.
std::pair<int, std::string> runCommand(const std::vector<std::string>& argv,
                                       const std::map<std::string, std::string>& env = {});

// Wall-clock now in ms since the epoch (reservation windows of the real RM).
int64_t nowMs();

// Run history in morpheusctl's JSON lines format (`history import --format
// jsonl`): one run of `job` (1 GiB, 1 vcore containers; `skyline` holds one
// sample per minute), and one file event of a run ("read" or "write").
struct HistoryRun {
  std::string job, run, user;
  int64_t submit_ms = 0, start_ms = 0, end_ms = 0;
  std::vector<int> skyline;
};
void writeHistoryRun(std::ostream& out, const HistoryRun& r);
void writeHistoryEvent(std::ostream& out, const std::string& job, const std::string& run,
                       const std::string& path, const char* kind, int64_t time_ms);

// An RM with NMs on loopback (auth on: testTokenFile()), driven through
// morpheusctl as user alice.
class ClusterTest : public ::testing::Test {
 protected:
  // Starts the RM (`rm_args`) and `nms` NMs named nm1.. with `nm_resources`
  // (heartbeat 300 ms, memory monitor 200 ms) and waits until all are live.
  // `nm_args` are added to every NM's flags last; nm_dirs_[i] is NM i's data dir.
  void startCluster(int nms, const std::vector<std::string>& rm_args = {},
                    const std::string& nm_resources = "memory=4096,vcores=4",
                    const std::vector<std::string>& nm_args = {});
  // morpheusctl --rm <rm> --token <alice's token> ARGS.
  // True once `morpheusctl cluster status` reports `n` live nodes (polled, 15 s).
  bool waitLiveNodes(int n);
  std::pair<int, std::string> ctl(std::vector<std::string> args);
  // The same as `principal` (a testToken name; "" = no token at all).
  std::pair<int, std::string> ctlAs(const std::string& principal, std::vector<std::string> args);
  // `reservation submit -f FILE --json` of YARN's reservation-definition `def`
  // in queue default, as alice; the reservation id ("" and a test failure
  // when refused).
  std::string submitReservation(const nlohmann::json& def);
  // The application of `app status ID --json` (discarded JSON when it fails).
  nlohmann::json app(const std::string& id);
  // Polls until the app is FINISHED, FAILED or KILLED; false on timeout.
  bool waitFinal(const std::string& id, std::chrono::milliseconds timeout);
  // Polls until the app runs at least `n` containers; false on timeout.
  bool waitRunning(const std::string& id, int n, std::chrono::milliseconds timeout);
  // Writes a DAG job file and returns its path.
  std::string writeJob(const std::string& yaml);

  Process rm_;
  std::string rm_addr_;  // fixed RM address across a restart ("" = rm_'s)
  std::vector<Process> nms_;
  std::vector<std::string> nm_dirs_;
};

}  // namespace morpheus::testing
