// Every daemon's gRPC port under hostile load, against the real morpheus-rm,
// morpheus-nm and morpheus-inference: more idle connections than the process
// has descriptors, connections that never speak, one client holding many
// connections, unauthenticated huge messages, and messages over their
// method's limit. Each attack must leave the port serving authenticated calls
// and /readyz telling the truth.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include <grpcpp/generic/generic_stub.h>

#include "common/wire.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/inference.grpc.pb.h"
#include "morpheus/v1/reservation.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

int portOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// GET `target` with a deadline; {status, body}, status 0 when no answer came.
std::pair<int, std::string> timedGet(const std::string& address, const std::string& target,
                                     std::chrono::milliseconds timeout = 2000ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {0, ""};
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(portOf(address)));
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  std::string resp;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0 &&
      ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (resp.rfind("HTTP/1.1 ", 0) != 0 || resp.size() < 12) return {0, ""};
  auto body = resp.find("\r\n\r\n");
  return {std::stoi(resp.substr(9, 3)), body == std::string::npos ? "" : resp.substr(body + 4)};
}

// A value of the daemon's /metrics, or -1.
double metricOf(const std::string& address, const std::string& line_prefix) {
  auto [status, body] = timedGet(address, "/metrics");
  auto at = body.find("\n" + line_prefix + " ");
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + line_prefix.size() + 2));
}

// A channel of its own (no subchannel shared with other channels of the test).
std::shared_ptr<grpc::Channel> ownChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// One unary call of `method` with `payload` as its raw request body, without
// credentials, on a channel of its own; waits for the outcome (30 s deadline).
grpc::Status rawCall(const std::string& address, const std::string& method,
                     const grpc::Slice& payload) {
  grpc::GenericStub stub(ownChannel(address));
  grpc::ByteBuffer request(&payload, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status st) {
    std::lock_guard<std::mutex> lock(mu);
    status = std::move(st);
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return status;
}

bool grpcServing(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(ownChannel(address));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  auto ctx = makeContext(Millis(2000));
  grpc::Status st = stub->Check(ctx.get(), req, &resp);
  return st.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

// Closes every socket it holds when it goes out of scope.
struct Sockets {
  std::vector<int> fds;
  ~Sockets() { closeAll(); }
  void closeAll() {
    for (int fd : fds) ::close(fd);
    fds.clear();
  }
};

// Lets this test process hold the flood's sockets.
void raiseOwnDescriptorLimit() {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

// A daemon of one kind, with what the test needs to call it as a real user.
struct Daemon {
  std::string component;  // rm, nm, inference
  Process proc;
  std::string grpc, http;
};

// The daemon's arguments without an RM behind it (NM and inference keep
// retrying the RM; their gRPC ports serve meanwhile).
std::vector<std::string> daemonArgs(const std::string& component, const std::string& dir) {
  if (component == "rm") return rmAuthArgs();
  if (component == "nm") {
    std::vector<std::string> a = {"--rm",      "127.0.0.1:1", "--resources", "memory=1024,vcores=1",
                                  "--node-id", "nm1"};
    for (auto& x : nmAuthArgs("nm1")) a.push_back(x);
    return a;
  }
  std::string rm_token = dir + "-rm-token";
  writeSecretFile(rm_token, testToken("ops") + "\n");
  return {"--rm",          "127.0.0.1:1", "--token-file",
          testTokenFile(), "--set",       "inference.rm-token-file=" + rm_token};
}

// Starts `component` with RLIMIT_NOFILE `nofile` (soft and hard, so the
// daemon cannot raise it) set by prlimit(1) before exec.
Daemon startUnderLimit(const std::string& component, int nofile,
                       const std::vector<std::string>& extra = {}) {
  std::string dir = freshDir(component);
  std::string lim = std::to_string(nofile);
  std::vector<std::string> args = {"--nofile=" + lim + ":" + lim,
                                   binary("morpheus-" + component),
                                   "--data-dir",
                                   dir,
                                   "--grpc-port",
                                   "0",
                                   "--http-port",
                                   "0"};
  for (const auto& a : daemonArgs(component, dir)) args.push_back(a);
  for (const auto& a : extra) args.push_back(a);
  Daemon d;
  d.component = component;
  d.proc = Process::start("/usr/bin/prlimit", args, dir + ".log");
  std::string ep = dir + "/" + component + ".endpoints.json";
  waitFor([&] { return std::filesystem::exists(ep) || !d.proc.running(); }, 20s);
  std::ifstream in(ep);
  auto endpoints = json::parse(in, nullptr, false);
  if (!endpoints.is_discarded()) {
    d.grpc = endpoints["grpc"];
    d.http = endpoints["http"];
  }
  return d;
}

// An authenticated call of the daemon's own service returns OK (the NM's
// services take container tokens, not users': its health service there).
bool servesAuthenticatedCall(const Daemon& d) {
  auto channel = ownChannel(d.grpc);
  auto ctx = makeContext(Millis(3000));
  ctx->AddMetadata("authorization", "Bearer " + testToken("alice"));
  if (d.component == "rm") {
    auto stub = v1::ClientService::NewStub(channel);
    v1::GetClusterMetricsRequest req;
    v1::ClusterMetrics resp;
    return stub->GetClusterMetrics(ctx.get(), req, &resp).ok();
  }
  if (d.component == "inference") {
    auto stub = v1::InferenceService::NewStub(channel);
    v1::ListProposalsRequest req;
    v1::ListProposalsResponse resp;
    return stub->ListProposals(ctx.get(), req, &resp).ok();
  }
  return grpcServing(d.grpc);
}

// Opens `per_source` idle connections from each of `sources` (127.0.0.x).
void flood(Sockets& s, int port, int sources, int per_source) {
  for (int src = 0; src < sources; src++) {
    std::string source = "127.0.0." + std::to_string(src + 2);
    for (int i = 0; i < per_source; i++) {
      int fd = connectLoopback(port, source, false);
      ASSERT_GE(fd, 0) << std::strerror(errno);
      s.fds.push_back(fd);
    }
  }
}

class GrpcDescriptorFloodIT : public ::testing::TestWithParam<const char*> {};

// With 1024 descriptors, 1,100 idle connections to the gRPC port and then all
// closed: the port serves an authenticated call again, and /readyz never
// claims ready while gRPC does not answer. (Before: gRPC's accept loop hit
// EMFILE, gave up for good, and /readyz kept answering 200 ready.)
TEST_P(GrpcDescriptorFloodIT, IdleConnectionsBeyondTheDescriptorLimitDoNotWedgeThePort) {
  raiseOwnDescriptorLimit();
  Daemon d = startUnderLimit(GetParam(), 1024);
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  ASSERT_TRUE(waitFor([&] { return servesAuthenticatedCall(d); }, 20s)) << d.proc.log();
  Sockets idle;
  flood(idle, portOf(d.grpc), 11, 100);
  // The daemon has dealt with the flood once it ran out of descriptors or
  // refused connections over its caps.
  ASSERT_TRUE(waitFor(
      [&] {
        return d.proc.log().find("Too many open files") != std::string::npos ||
               metricOf(d.http,
                        "morpheus_grpc_connections_refused_total{reason=\"max-connections\"}") > 0;
      },
      20s))
      << d.proc.log();
  idle.closeAll();
  bool served = waitFor([&] { return servesAuthenticatedCall(d); }, 15s);
  auto [status, body] = timedGet(d.http, "/readyz");
  EXPECT_TRUE(served) << "the gRPC port stays wedged after the flood closed\n" << d.proc.log();
  EXPECT_TRUE(served || status != 200) << "/readyz says ready while gRPC does not answer";
  EXPECT_EQ(body.find("grpc-accepting"), std::string::npos) << body;
  EXPECT_TRUE(d.proc.running());
}

INSTANTIATE_TEST_SUITE_P(EveryDaemon, GrpcDescriptorFloodIT,
                         ::testing::Values("rm", "nm", "inference"),
                         [](const auto& info) { return std::string(info.param); });

// Sends GET `target` on the open keep-alive connection `fd`; {status, body},
// status 0 when no complete answer came within 3 s.
std::pair<int, std::string> keepAliveGet(int fd, const std::string& target) {
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return {0, ""};
  }
  std::string resp;
  char buf[4096];
  while (true) {
    auto end = resp.find("\r\n\r\n");
    if (end != std::string::npos) {
      auto cl = resp.find("Content-Length: ");
      size_t body = cl == std::string::npos || cl > end ? 0 : std::stoul(resp.substr(cl + 16));
      if (resp.size() >= end + 4 + body)
        return {std::stoi(resp.substr(9, 3)), resp.substr(end + 4)};
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return {0, ""};
    resp.append(buf, static_cast<size_t>(n));
  }
}

// Descriptors exhausted through the gRPC port itself (its caps raised above
// the limit, which is lowered after start): /readyz, asked on a keep-alive
// connection opened before (a new one could not be accepted either), fails
// naming grpc-accepting while the port cannot accept; once the flood is
// closed the port recovers by itself and /readyz is ready again. (Before:
// /readyz answered 200 ready throughout and the port never recovered.)
TEST(GrpcEdgeIT, ReadyzFailsWhileTheGrpcPortCannotAcceptAndRecovers) {
  raiseOwnDescriptorLimit();
  Daemon d;
  d.component = "rm";
  std::vector<std::string> args = rmAuthArgs();
  for (const char* s : {"grpc.max-connections=5000", "grpc.max-connections-per-client=5000",
                        "grpc.handshake-timeout=60s"}) {
    args.push_back("--set");
    args.push_back(s);
  }
  d.proc = Process::startDaemon("rm", freshDir("rm"), args);
  d.grpc = d.proc.grpcAddress();
  d.http = d.proc.httpAddress();
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  Sockets probe;
  probe.fds.push_back(connectLoopback(portOf(d.http), "127.0.0.1", true));
  ASSERT_GE(probe.fds[0], 0);
  ASSERT_TRUE(waitFor([&] { return keepAliveGet(probe.fds[0], "/readyz").first == 200; }, 20s));
  rlimit low{256, 256};
  ASSERT_EQ(::prlimit(d.proc.pid(), RLIMIT_NOFILE, &low, nullptr), 0) << std::strerror(errno);
  Sockets idle;
  flood(idle, portOf(d.grpc), 4, 100);
  std::string last;
  EXPECT_TRUE(waitFor(
      [&] {
        auto [status, body] = keepAliveGet(probe.fds[0], "/readyz");
        last = std::to_string(status) + " " + body;
        return status == 503 && body.find("grpc-accepting") != std::string::npos;
      },
      20s))
      << "/readyz never reported that the gRPC port cannot accept; last: " << last << "\n"
      << d.proc.log();
  idle.closeAll();
  EXPECT_TRUE(waitFor([&] { return timedGet(d.http, "/readyz").first == 200; }, 15s))
      << d.proc.log();
  EXPECT_TRUE(waitFor([&] { return servesAuthenticatedCall(d); }, 15s)) << d.proc.log();
  EXPECT_GT(metricOf(d.http, "morpheus_grpc_accept_errors_total"), 0);
}

// One client opening 300 idle connections holds at most its per-client cap
// (grpc.max-connections-per-client, 100) and connections that never send the
// HTTP/2 preface are closed after grpc.handshake-timeout; another client is
// served throughout. (Before: every connection was held, with no limit.)
TEST(GrpcEdgeIT, IdleConnectionsOfOneClientAreCappedAndTimedOut) {
  raiseOwnDescriptorLimit();
  Daemon d;
  d.component = "rm";
  std::vector<std::string> args = rmAuthArgs();
  args.push_back("--set");
  args.push_back("grpc.handshake-timeout=2s");
  d.proc = Process::startDaemon("rm", freshDir("rm"), args);
  d.grpc = d.proc.grpcAddress();
  d.http = d.proc.httpAddress();
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  Sockets idle;
  flood(idle, portOf(d.grpc), 1, 300);
  EXPECT_TRUE(servesAuthenticatedCall(d)) << d.proc.log();
  // Every idle connection is closed by the server: refused over the cap at
  // once, the others at the handshake timeout.
  size_t closed = 0;
  std::vector<bool> seen(idle.fds.size(), false);
  waitFor(
      [&] {
        for (size_t i = 0; i < idle.fds.size(); i++) {
          if (seen[i]) continue;
          pollfd p{idle.fds[i], POLLIN, 0};
          char c;
          if (::poll(&p, 1, 0) == 1 && ::recv(idle.fds[i], &c, 1, MSG_DONTWAIT) <= 0) {
            seen[i] = true;
            closed++;
          }
        }
        return closed == idle.fds.size();
      },
      20s);
  EXPECT_EQ(closed, idle.fds.size()) << "the server kept idle connections that never spoke";
  EXPECT_EQ(metricOf(d.http,
                     "morpheus_grpc_connections_refused_total{reason=\"max-connections-"
                     "per-client\"}"),
            200);
  EXPECT_EQ(metricOf(d.http, "morpheus_grpc_connections_refused_total{reason=\"handshake\"}"), 100);
  EXPECT_TRUE(servesAuthenticatedCall(d));
}

// The peak resident memory (VmHWM) of `pid` in bytes, or -1.
int64_t peakRss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// 16 concurrent calls without a token, each with a 60 MiB message, are
// refused before the messages are buffered: the RM's peak memory grows by far
// less than their size, and an authenticated call is served afterwards.
// (Before: the RM buffered every message up to its 64 MiB limit before
// looking at the caller, from ~100 MiB to ~1 GiB.)
TEST(GrpcEdgeIT, UnauthenticatedHugeMessagesAreRefusedBeforeTheyAreBuffered) {
  Daemon d;
  d.component = "rm";
  d.proc = Process::startDaemon("rm", freshDir("rm"), rmAuthArgs());
  d.grpc = d.proc.grpcAddress();
  d.http = d.proc.httpAddress();
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  ASSERT_TRUE(servesAuthenticatedCall(d));
  int64_t before = peakRss(d.proc.pid());
  ASSERT_GT(before, 0);
  constexpr size_t kMessage = 60u << 20;
  constexpr int kCalls = 16;
  grpc::Slice payload(std::string(kMessage, 'x'));  // shared by every call (refcounted)
  std::atomic<int> refused{0};
  std::vector<std::thread> calls;
  for (int i = 0; i < kCalls; i++) {
    calls.emplace_back([&] {
      grpc::Status status =
          rawCall(d.grpc, "/morpheus.v1.ClientService/SubmitApplication", payload);
      if (!status.ok()) refused++;
    });
  }
  for (auto& t : calls) t.join();
  EXPECT_EQ(refused.load(), kCalls);
  int64_t after = peakRss(d.proc.pid());
  std::cout << "RM peak RSS " << before / (1 << 20) << " MiB before, " << after / (1 << 20)
            << " MiB after " << kCalls << " unauthenticated " << kMessage / (1 << 20)
            << " MiB calls\n";
  // Less than a quarter of what one round of the messages would take.
  EXPECT_LT(after - before, static_cast<int64_t>(kCalls * kMessage / 4));
  EXPECT_TRUE(servesAuthenticatedCall(d)) << d.proc.log();
  EXPECT_TRUE(d.proc.running());
}

// An HPACK literal field without indexing, with a new name (RFC 7541 §6.2.2).
std::string hpackLiteral(const std::string& name, const std::string& value) {
  auto str = [](const std::string& v) {
    std::string out;
    size_t n = v.size();
    if (n < 127) {
      out.push_back(static_cast<char>(n));
    } else {
      out.push_back(127);
      n -= 127;
      while (n >= 128) {
        out.push_back(static_cast<char>(0x80 | (n & 0x7f)));
        n >>= 7;
      }
      out.push_back(static_cast<char>(n));
    }
    return out + v;
  };
  return std::string(1, '\0') + str(name) + str(value);
}

std::string http2Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  size_t n = payload.size();
  for (int shift = 16; shift >= 0; shift -= 8) f.push_back(static_cast<char>(n >> shift));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(stream >> shift));
  return f + payload;
}

// HTTP/2 by hand: opens one gRPC call of `method` (with `token` unless empty)
// and sends only the 5-byte prefix of a `len`-byte message, never its body.
// True when the server closes the connection within `wait`.
bool closedAtPrefix(const std::string& address, const std::string& method, const std::string& token,
                    uint32_t len, std::chrono::milliseconds wait) {
  int fd = connectLoopback(portOf(address), "127.0.0.1", true);
  if (fd < 0) return false;
  std::string block = hpackLiteral(":method", "POST") + hpackLiteral(":scheme", "http") +
                      hpackLiteral(":path", method) + hpackLiteral(":authority", "t") +
                      hpackLiteral("content-type", "application/grpc") +
                      hpackLiteral("te", "trailers");
  if (!token.empty()) block += hpackLiteral("authorization", "Bearer " + token);
  std::string prefix(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) prefix.push_back(static_cast<char>(len >> shift));
  std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + http2Frame(4, 0, 0, "") +
                    http2Frame(1, 0x4, 1, block) + http2Frame(0, 0, 1, prefix);
  bool closed = false;
  if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size())) {
    auto until = std::chrono::steady_clock::now() + wait;
    char buf[4096];
    while (!closed && std::chrono::steady_clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      closed = r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
    }
  } else {
    closed = true;
  }
  ::close(fd);
  return closed;
}

double refusedFor(const Daemon& d, const std::string& reason) {
  return metricOf(d.http, "morpheus_grpc_connections_refused_total{reason=\"" + reason + "\"}");
}

class GrpcMethodLimitIT : public ::testing::TestWithParam<const char*> {};

// Every daemon: a call without a token to a small method is cut off as soon
// as its message's length prefix announces 1 MiB (the body is never sent, so
// the close proves the daemon did not wait for it), while half a megabyte is
// waited for; an authenticated call is held to its method's limit instead.
// The NM's container-manager methods carry their tokens inside the request:
// there the method's limit applies without a token.
TEST_P(GrpcMethodLimitIT, TheLimitOfACallComesFromItsMethodAndCredentials) {
  std::string component = GetParam();
  Daemon d = startUnderLimit(component, 4096);
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  ASSERT_TRUE(waitFor([&] { return servesAuthenticatedCall(d); }, 20s)) << d.proc.log();
  std::string small = component == "rm"          ? "/morpheus.v1.ClientService/GetClusterMetrics"
                      : component == "inference" ? "/morpheus.v1.InferenceService/ListProposals"
                                                 : "/grpc.health.v1.Health/Check";
  std::string alice = testToken("alice");
  EXPECT_TRUE(closedAtPrefix(d.grpc, small, "", 1 << 20, 5s));
  EXPECT_EQ(refusedFor(d, "unauthenticated"), 1);
  EXPECT_FALSE(closedAtPrefix(d.grpc, small, "", 60 << 10, 1s));
  if (component == "nm") {
    std::string start = "/morpheus.v1.ContainerManager/StartContainers";
    EXPECT_FALSE(closedAtPrefix(d.grpc, start, "", 4 << 20, 1s));
    EXPECT_TRUE(closedAtPrefix(d.grpc, start, "", 17 << 20, 5s));  // grpc.max-receive-message-bytes
  } else {
    EXPECT_FALSE(closedAtPrefix(d.grpc, small, alice, 512 << 10, 1s));
    EXPECT_TRUE(
        closedAtPrefix(d.grpc, small, alice, 2 << 20, 5s));  // grpc.default-max-message-bytes
  }
  EXPECT_EQ(refusedFor(d, "message-size"), 1);
  EXPECT_EQ(refusedFor(d, "unauthenticated"), 1);
  EXPECT_TRUE(servesAuthenticatedCall(d)) << d.proc.log();
  EXPECT_TRUE(d.proc.running());
}

INSTANTIATE_TEST_SUITE_P(EveryDaemon, GrpcMethodLimitIT, ::testing::Values("rm", "nm", "inference"),
                         [](const auto& info) { return std::string(info.param); });

// A reservation of 80,000 stages (~1.3 MiB), more than the RM takes
// (rm.max-stages): authenticated, the whole message reaches the RM, which
// answers for itself; without a token the connection is closed at its prefix.
v1::SubmitReservationRequest manyStages(const std::string& id, int stages) {
  v1::SubmitReservationRequest req;
  req.set_reservation_id(id);
  req.set_queue("default");
  auto* def = req.mutable_definition();
  int64_t arrival = (nowMs() / 60000 + 60) * 60000;
  def->set_arrival_ms(arrival);
  def->set_deadline_ms(arrival + 86400000);
  def->set_name("many-stages");
  for (int i = 0; i < stages; i++) {
    auto* st = def->add_stages();
    st->mutable_capability()->set_memory_mib(1024);
    st->mutable_capability()->set_vcores(1);
    st->set_num_containers(1);
    st->set_min_concurrency(1);
    st->set_duration_ms(60000);
  }
  return req;
}

grpc::Status submitReservation(const Daemon& d, const std::string& principal,
                               const v1::SubmitReservationRequest& req) {
  auto stub = v1::ReservationService::NewStub(ownChannel(d.grpc));
  auto ctx = makeContext(Millis(20000));
  if (!principal.empty()) ctx->AddMetadata("authorization", "Bearer " + testToken(principal));
  v1::SubmitReservationResponse resp;
  return stub->SubmitReservation(ctx.get(), req, &resp);
}

Daemon startRm(const std::vector<std::string>& extra = {}) {
  Daemon d;
  d.component = "rm";
  std::vector<std::string> args = rmAuthArgs();
  for (const auto& a : extra) args.push_back(a);
  d.proc = Process::startDaemon("rm", freshDir("rm"), args);
  d.grpc = d.proc.grpcAddress();
  d.http = d.proc.httpAddress();
  return d;
}

std::string newReservation(const Daemon& d, const std::string& principal) {
  auto stub = v1::ReservationService::NewStub(ownChannel(d.grpc));
  auto ctx = makeContext(Millis(5000));
  ctx->AddMetadata("authorization", "Bearer " + testToken(principal));
  v1::NewReservationResponse resp;
  grpc::Status st = stub->NewReservation(ctx.get(), v1::NewReservationRequest(), &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return resp.reservation_id();
}

TEST(GrpcMethodLimitIT, ALargeAuthenticatedReservationReachesTheRm) {
  Daemon d = startRm();
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  ASSERT_TRUE(servesAuthenticatedCall(d));
  auto req = manyStages(newReservation(d, "alice"), 80000);
  ASSERT_GT(req.ByteSizeLong(), 1u << 20);
  grpc::Status st = submitReservation(d, "alice", req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("rm.max-stages"), std::string::npos) << st.error_message();
  grpc::Status anonymous = submitReservation(d, "", req);
  EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAVAILABLE) << anonymous.error_message();
  EXPECT_EQ(refusedFor(d, "unauthenticated"), 1);
  // A small call without a token still reaches the RM, which refuses it itself.
  grpc::Status small = submitReservation(d, "", manyStages(newReservation(d, "alice"), 3));
  EXPECT_EQ(small.error_code(), grpc::StatusCode::UNAUTHENTICATED) << small.error_message();
  EXPECT_TRUE(d.proc.running());
}

// The operator's per-method limit replaces the built-in one; a limit for a
// method the daemon does not have stops it at start, naming the option.
TEST(GrpcMethodLimitIT, AnOperatorLimitOverridesTheBuiltInOne) {
  Daemon d = startRm({"--set",
                      "grpc.max-message-bytes-per-method=/morpheus.v1.ReservationService/"
                      "SubmitReservation=100000"});
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  ASSERT_TRUE(servesAuthenticatedCall(d));
  grpc::Status st = submitReservation(d, "alice", manyStages(newReservation(d, "alice"), 10000));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_EQ(refusedFor(d, "message-size"), 1);
  EXPECT_TRUE(servesAuthenticatedCall(d));

  std::string dir = freshDir("rm");
  std::vector<std::string> argv = {binary("morpheus-rm"), "--data-dir", dir, "--grpc-port", "0",
                                   "--http-port",         "0"};
  for (const auto& a : rmAuthArgs()) argv.push_back(a);
  argv.push_back("--set");
  argv.push_back("grpc.max-message-bytes-per-method=/morpheus.v1.ClientService/Nope=5");
  auto [code, out] = runCommand(argv);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("grpc.max-message-bytes-per-method./morpheus.v1.ClientService/Nope"),
            std::string::npos)
      << out;
}

// 16 concurrent calls without a token, each with a 1 MiB message to a method
// of small messages, are all cut off before their bodies are buffered: the
// RM's peak memory grows by far less than the messages' size.
TEST(GrpcMethodLimitIT, ConcurrentUnauthenticatedMegabyteCallsAreNotBuffered) {
  Daemon d = startRm();
  ASSERT_FALSE(d.grpc.empty()) << d.proc.log();
  ASSERT_TRUE(servesAuthenticatedCall(d));
  int64_t before = peakRss(d.proc.pid());
  ASSERT_GT(before, 0);
  constexpr size_t kMessage = 1u << 20;
  constexpr int kCalls = 16;
  grpc::Slice payload(std::string(kMessage, 'x'));
  std::atomic<int> refused{0};
  std::vector<std::thread> calls;
  for (int i = 0; i < kCalls; i++) {
    calls.emplace_back([&] {
      grpc::Status status =
          rawCall(d.grpc, "/morpheus.v1.ClientService/GetClusterMetrics", payload);
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE) refused++;
    });
  }
  for (auto& t : calls) t.join();
  EXPECT_EQ(refused.load(), kCalls);
  EXPECT_EQ(refusedFor(d, "unauthenticated"), kCalls);
  int64_t after = peakRss(d.proc.pid());
  std::cout << "RM peak RSS " << before / (1 << 20) << " MiB before, " << after / (1 << 20)
            << " MiB after " << kCalls << " unauthenticated " << kMessage / (1 << 20)
            << " MiB calls\n";
  EXPECT_LT(after - before, static_cast<int64_t>(kCalls * kMessage / 2));
  EXPECT_TRUE(servesAuthenticatedCall(d)) << d.proc.log();
}

}  // namespace
}  // namespace morpheus::testing
