#include "harness.h"
#include "test_paths.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

namespace morpheus::testing {

namespace fs = std::filesystem;

std::string binary(const std::string& name) {
  // MORPHEUS_TEST_BIN_DIR runs the tests against other binaries (e.g. an
  // older build, to show an attack test fails there).
  const char* dir = std::getenv("MORPHEUS_TEST_BIN_DIR");
  return std::string(dir != nullptr && *dir != 0 ? dir : buildBinDir()) + "/" + name;
}

std::string testTempRoot() {
  return (fs::temp_directory_path() / ("morpheus-it-" + std::to_string(::getpid()))).string();
}

std::string freshDir(const std::string& tag) {
  static int counter = 0;
  fs::path d = fs::path(testTempRoot()) / (tag + "-" + std::to_string(counter++));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

int connectLoopback(int port, const std::string& source, bool blocking) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
    ::close(fd);
    return -1;
  }
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
  if (rc != 0 && (blocking || errno != EINPROGRESS)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string testToken(const std::string& principal) {
  return "tok-" + principal + "-0123456789abcdef";
}

std::string testTokenFile() {
  fs::path path = fs::path(freshDir("tokens")) / "tokens";
  std::ofstream out(path);
  for (const char* user : {"alice", "bob", "mallory"})
    out << testToken(user) << " " << user << "\n";
  out << testToken("ops") << " ops admin\n";
  for (int i = 1; i <= 9; i++) {
    std::string node = "nm" + std::to_string(i);
    out << testToken(node) << " " << node << " node\n";
  }
  out.close();
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  return path.string();
}

void writeSecretFile(const std::string& path, const std::string& text) {
  fs::remove(path);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t n = ::write(fd, text.data(), text.size());
  (void)n;
  ::close(fd);
}

std::string nodeTokenFile(const std::string& node) {
  fs::path path = fs::path(freshDir("token-" + node)) / "token";
  std::ofstream(path) << testToken(node) << "\n";
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  return path.string();
}

std::vector<std::string> nmRunAsArgs() {
  if (::geteuid() != 0) return {};
  return {"--set", "nm.run-as=nm-user", "--set", "nm.allow-root-containers=true"};
}

std::vector<std::string> rmAuthArgs() { return {"--set", "rm.token-file=" + testTokenFile()}; }

std::vector<std::string> nmAuthArgs(const std::string& node) {
  return {"--set", "nm.token-file=" + nodeTokenFile(node)};
}

namespace {

// Fields of /proc/<pid>/stat the reaper needs; nullopt when the process is gone.
struct ProcStat {
  char state = '?';
  long long session = -1;
  unsigned long long start = 0;  // field 22, clock ticks after boot
};

std::optional<ProcStat> procStat(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return std::nullopt;
  auto rp = line.rfind(')');
  if (rp == std::string::npos || rp + 2 > line.size()) return std::nullopt;
  std::istringstream in(line.substr(rp + 2));
  ProcStat p;
  long long ppid = 0, pgrp = 0;
  std::string field;
  in >> p.state >> ppid >> pgrp >> p.session;
  for (int i = 7; i <= 22 && (in >> field); i++) {
    if (i == 22) p.start = std::strtoull(field.c_str(), nullptr, 10);
  }
  if (!in) return std::nullopt;
  return p;
}

// Live (non-zombie) processes of session `sid`.
std::vector<pid_t> sessionMembers(pid_t sid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    auto p = procStat(pid);
    if (p && p->session == sid && p->state != 'Z') out.push_back(pid);
  }
  return out;
}

// The session of a container from its record, if the container still runs.
std::optional<pid_t> liveContainerSession(const fs::path& record) {
  std::ifstream in(record);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.contains("completed")) return std::nullopt;
  pid_t pid = j.value("pid", pid_t{-1});
  unsigned long long start = j.value("proc_start", 0ULL);
  if (pid <= 1 || start == 0) return std::nullopt;
  auto p = procStat(pid);
  if (!p || p->state == 'Z' || p->start != start || p->session != pid) return std::nullopt;
  return pid;
}

// Stops, after each test, what that test's NMs left running (see harness.h).
class ContainerReaper : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& test) override {
    int n = stopContainersUnder(testTempRoot());
    if (n > 0) {
      std::printf("[  harness ] %s.%s: stopped %d container(s) its NMs left running\n",
                  test.test_suite_name(), test.name(), n);
    }
  }
};

// Installed once per test binary; gtest owns (and deletes) the listener.
const bool kContainerReaperInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ContainerReaper);
  return true;
}();

}  // namespace

int stopContainersUnder(const std::string& dir) {
  std::vector<pid_t> sessions;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code dir_ec;
    if (!it->is_directory(dir_ec) || it->path().filename() != "containers") continue;
    it.disable_recursion_pending();  // container work dirs hold no NM
    for (const auto& c : fs::directory_iterator(it->path(), dir_ec)) {
      if (auto sid = liveContainerSession(c.path() / "container.json")) sessions.push_back(*sid);
    }
  }
  auto anyLeft = [&] {
    bool left = false;
    for (pid_t sid : sessions) {
      for (pid_t pid : sessionMembers(sid)) {
        ::kill(pid, SIGKILL);
        left = true;
      }
    }
    return left;
  };
  waitFor([&] { return !anyLeft(); }, std::chrono::seconds(5));
  return static_cast<int>(sessions.size());
}

namespace {

// The lowest port the kernel hands out to outgoing connections
// (net.ipv4.ip_local_port_range), 32768 when unreadable.
int ephemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  in >> low;
  return low;
}

sockaddr_in loopbackAddress(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

bool bindable(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopbackAddress(port);
  bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

}  // namespace

// Below the ephemeral range (see harness.h; seen in HaIT under ctest -j2,
// where the standby starts seconds after its port was chosen). Random, so
// concurrent tests rarely pick the same one, and checked bindable.
int freeLoopbackPort() {
  // Seeded from the kernel: pid ^ time gave two test processes started 1 ms
  // apart with consecutive pids the same seed, hence the same ports (seen
  // under ctest -j2: the second etcd failed to bind and its test talked to
  // the first test's etcd).
  static std::mt19937 rng(std::random_device{}());
  const int high = ephemeralLow();
  if (high > 11000) {
    std::uniform_int_distribution<int> pick(10000, high - 1);
    for (int attempt = 0; attempt < 200; ++attempt) {
      int port = pick(rng);
      if (bindable(port)) return port;
    }
    for (int port = 10000; port < high; ++port) {
      if (bindable(port)) return port;
    }
  }
  ADD_FAILURE() << "no free loopback port below the ephemeral range (" << high << ")";
  return 0;
}

std::vector<int> freeLoopbackPorts(int n) {
  std::vector<int> out;
  while (static_cast<int>(out.size()) < n) {
    const int port = freeLoopbackPort();
    if (port == 0) break;
    if (std::find(out.begin(), out.end(), port) == out.end()) out.push_back(port);
  }
  return out;
}

ClosedLoopbackPort::ClosedLoopbackPort() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopbackAddress(0);
  socklen_t len = sizeof(a);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ADD_FAILURE() << "cannot bind a loopback port: " << std::strerror(errno);
    return;
  }
  port_ = ntohs(a.sin_port);
}

ClosedLoopbackPort::~ClosedLoopbackPort() {
  if (fd_ >= 0) ::close(fd_);
}

bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

Process::Process(Process&& o) noexcept
    : pid_(o.pid_),
      exit_status_(o.exit_status_),
      log_path_(std::move(o.log_path_)),
      grpc_(std::move(o.grpc_)),
      http_(std::move(o.http_)) {
  o.pid_ = -1;
}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0 && running()) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    pid_ = o.pid_;
    exit_status_ = o.exit_status_;
    log_path_ = std::move(o.log_path_);
    grpc_ = std::move(o.grpc_);
    http_ = std::move(o.http_);
    o.pid_ = -1;
  }
  return *this;
}

Process::~Process() {
  if (pid_ > 0 && running()) {
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
}

Process Process::start(const std::string& bin, const std::vector<std::string>& args,
                       const std::string& log_path) {
  Process p;
  p.log_path_ = log_path;
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setpgid(0, 0);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(bin.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    _exit(127);
  }
  p.pid_ = pid;
  return p;
}

Process Process::startDaemon(const std::string& component, const std::string& data_dir,
                             const std::vector<std::string>& args) {
  return startDaemonOnPorts(component, data_dir, 0, 0, args, std::chrono::seconds(0));
}

Process Process::startDaemonOnPorts(const std::string& component, const std::string& data_dir,
                                    int grpc_port, int http_port,
                                    const std::vector<std::string>& args,
                                    std::chrono::milliseconds timeout,
                                    const std::string& log_path) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string log = log_path.empty() ? data_dir + ".log" : log_path;
  for (;;) {
    std::error_code ec;
    const auto before = fs::exists(log, ec) ? fs::file_size(log, ec) : 0;  // the log is appended
    Process p = startDaemonOnce(component, data_dir, grpc_port, http_port, args, log);
    if (!p.grpc_.empty() || p.running() || std::chrono::steady_clock::now() >= deadline ||
        p.log().find("cannot listen on", ec ? 0 : before) == std::string::npos) {
      return p;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a port was taken: again
  }
}

Process Process::startDaemonOnce(const std::string& component, const std::string& data_dir,
                                 int grpc_port, int http_port, const std::vector<std::string>& args,
                                 const std::string& log_path) {
  std::vector<std::string> all = {"--data-dir",  data_dir,
                                  "--grpc-port", std::to_string(grpc_port),
                                  "--http-port", std::to_string(http_port)};
  if (component == "nm") {
    for (auto& a : nmRunAsArgs()) all.push_back(std::move(a));  // a test's own --set wins
  }
  all.insert(all.end(), args.begin(), args.end());
  std::string bin = binary("morpheus-" + component);
  std::string ep = data_dir + "/" + component + ".endpoints.json";
  fs::remove(ep);  // a SIGKILLed predecessor leaves its file behind
  Process p = start(bin, all, log_path);
  waitFor([&] { return fs::exists(ep) || !p.running(); }, std::chrono::seconds(20));
  if (fs::exists(ep)) {
    std::ifstream in(ep);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) {
      p.grpc_ = j.value("grpc", "");
      p.http_ = j.value("http", "");
    }
  }
  return p;
}

std::string Process::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Process::running() {
  if (pid_ <= 0 || exit_status_ >= 0) return false;
  int st;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

int Process::wait(std::chrono::milliseconds timeout) {
  if (!waitFor([&] { return !running(); }, timeout)) return -1;
  return exit_status_;
}

int Process::signalAndWait(int sig, std::chrono::milliseconds timeout) {
  if (running()) ::kill(pid_, sig);
  return wait(timeout);
}

HttpResult httpRequest(const std::string& address, const std::string& method,
                       const std::string& target, const std::string& body,
                       const std::string& content_type,
                       const std::map<std::string, std::string>& headers) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  using tcp = boost::asio::ip::tcp;
  HttpResult out;
  try {
    auto colon = address.rfind(':');
    boost::asio::io_context io;
    tcp::socket sock(io);
    sock.connect(tcp::endpoint(boost::asio::ip::make_address(address.substr(0, colon)),
                               static_cast<unsigned short>(std::stoi(address.substr(colon + 1)))));
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, address);
    if (!body.empty()) req.set(http::field::content_type, content_type);
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    http::write(sock, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(sock, buf, res);
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
  } catch (const std::exception&) {
    out.status = 0;
  }
  return out;
}

std::pair<int, std::string> runCommand(const std::vector<std::string>& argv,
                                       const std::map<std::string, std::string>& env) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {-1, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(argv[0].c_str(), args.data());
    _exit(127);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int st;
  ::waitpid(pid, &st, 0);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void writeHistoryRun(std::ostream& out, const HistoryRun& r) {
  out << nlohmann::json({{"type", "run"},
                         {"job", r.job},
                         {"run", r.run},
                         {"user", r.user},
                         {"submit_ms", r.submit_ms},
                         {"start_ms", r.start_ms},
                         {"end_ms", r.end_ms},
                         {"step_ms", 60000},
                         {"skyline", r.skyline},
                         {"container", {{"memory_mib", 1024}, {"vcores", 1}}}})
             .dump()
      << "\n";
}

void writeHistoryEvent(std::ostream& out, const std::string& job, const std::string& run,
                       const std::string& path, const char* kind, int64_t time_ms) {
  out << nlohmann::json({{"type", "event"},
                         {"job", job},
                         {"run", run},
                         {"path", path},
                         {"kind", kind},
                         {"time_ms", time_ms}})
             .dump()
      << "\n";
}

void ClusterTest::startCluster(int nms, const std::vector<std::string>& rm_args,
                               const std::string& nm_resources,
                               const std::vector<std::string>& extra_nm_args) {
  using namespace std::chrono_literals;
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
  args.insert(args.end(), rm_args.begin(), rm_args.end());
  rm_ = Process::startDaemon("rm", freshDir("rm"), args);
  ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
  for (int i = 0; i < nms; i++) {
    std::string node = "nm" + std::to_string(i + 1);
    std::vector<std::string> nm_args = {"--rm",        rm_.grpcAddress(),
                                        "--node-id",   node,
                                        "--resources", nm_resources,
                                        "--set",       "nm.monitor-interval=200ms",
                                        "--set",       "nm.heartbeat-interval=300ms"};
    for (auto& a : nmAuthArgs(node)) nm_args.push_back(std::move(a));
    nm_args.insert(nm_args.end(), extra_nm_args.begin(), extra_nm_args.end());
    nm_dirs_.push_back(freshDir("nm"));
    nms_.push_back(Process::startDaemon("nm", nm_dirs_.back(), nm_args));
    ASSERT_FALSE(nms_.back().grpcAddress().empty()) << nms_.back().log();
  }
  ASSERT_TRUE(waitLiveNodes(nms)) << rm_.log();
}

bool ClusterTest::waitLiveNodes(int n) {
  using namespace std::chrono_literals;
  return waitFor(
      [&] {
        auto [code, out] = ctl({"cluster", "status", "--json"});
        auto j = nlohmann::json::parse(out, nullptr, false);
        return code == 0 && !j.is_discarded() && j["live_nodes"] == n;
      },
      15s);
}

std::string ClusterTest::submitReservation(const nlohmann::json& def) {
  std::string path = freshDir("res") + "/r.json";
  std::ofstream(path)
      << nlohmann::json({{"queue", "default"}, {"reservation-definition", def}}).dump();
  auto [code, out] = ctl({"reservation", "submit", "-f", path, "--json"});
  EXPECT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("reservations") || j["reservations"].empty()) return "";
  return j["reservations"][0].value("reservation_id", "");
}

std::pair<int, std::string> ClusterTest::ctl(std::vector<std::string> args) {
  return ctlAs("alice", std::move(args));
}

std::pair<int, std::string> ClusterTest::ctlAs(const std::string& principal,
                                               std::vector<std::string> args) {
  std::vector<std::string> argv = {binary("morpheusctl"), "--rm",
                                   rm_addr_.empty() ? rm_.grpcAddress() : rm_addr_};
  if (!principal.empty()) {
    argv.push_back("--token");
    argv.push_back(testToken(principal));
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
}

std::map<std::string, std::string> bearer(const std::string& principal) {
  return {{"Authorization", "Bearer " + testToken(principal)}};
}

nlohmann::json ClusterTest::app(const std::string& id) {
  auto [code, out] = ctl({"app", "status", id, "--json"});
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("applications") || j["applications"].empty()) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return j["applications"][0];
}

bool ClusterTest::waitFinal(const std::string& id, std::chrono::milliseconds timeout) {
  return waitFor(
      [&] {
        nlohmann::json a = app(id);
        return !a.is_discarded() &&
               (a["state"] == "FINISHED" || a["state"] == "FAILED" || a["state"] == "KILLED");
      },
      timeout);
}

bool ClusterTest::waitRunning(const std::string& id, int n, std::chrono::milliseconds timeout) {
  return waitFor(
      [&] {
        nlohmann::json a = app(id);
        return !a.is_discarded() && a["running_containers"].get<double>() >= n;
      },
      timeout);
}

std::string ClusterTest::writeJob(const std::string& yaml) {
  std::string path = freshDir("job") + "/job.yaml";
  std::ofstream(path) << yaml;
  return path;
}

}  // namespace morpheus::testing
