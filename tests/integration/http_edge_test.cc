// The RM's HTTP edge under hostile load, against
// the real morpheus-rm: descriptor floods, idle connections, a huge request.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/wire.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using nlohmann::json;

int portOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// GET `target` with a deadline (the harness's httpRequest has none, and a
// dead server would hang the test). The status, or 0 when no answer came.
int timedGet(const std::string& address, const std::string& target,
             std::chrono::milliseconds timeout = 2000ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
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
  if (resp.rfind("HTTP/1.1 ", 0) != 0 || resp.size() < 12) return 0;
  return std::stoi(resp.substr(9, 3));
}

// The RM's gRPC health service answers SERVING.
bool grpcServing(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(makeChannel(address, TlsOptions{}));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  auto ctx = makeContext(Millis(2000));
  grpc::Status st = stub->Check(ctx.get(), req, &resp);
  return st.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

// A value of the RM's /metrics, or -1.
double metricOf(const std::string& address, const std::string& line_prefix) {
  auto m = httpRequest(address, "GET", "/metrics");
  auto at = m.body.find("\n" + line_prefix + " ");
  if (at == std::string::npos) return -1;
  return std::stod(m.body.substr(at + line_prefix.size() + 2));
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

std::vector<std::string> rmArgs(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// With its descriptors exhausted by idle HTTP connections the RM's
// accept fails (EMFILE); once the flood is closed, /healthz and gRPC both
// answer again within seconds. (Before: the acceptor gave up on the first
// error and HTTP stayed dead.) The caps are set high and the limit lowered
// after start so that exhaustion is reachable despite the caps.
TEST(HttpEdgeIT, RmServesAgainAfterDescriptorFlood) {
  Process rm = Process::startDaemon("rm", freshDir("rm"),
                                    rmArgs({"--set", "http.max-connections=5000", "--set",
                                            "http.max-connections-per-client=5000"}));
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  rlimit low{256, 256};
  ASSERT_EQ(::prlimit(rm.pid(), RLIMIT_NOFILE, &low, nullptr), 0) << std::strerror(errno);
  Sockets flood;
  for (int i = 0; i < 400; i++) {
    int fd = connectLoopback(portOf(rm.httpAddress()), "127.0.0.2", false);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    flood.fds.push_back(fd);
  }
  ASSERT_TRUE(
      waitFor([&] { return rm.log().find("http: accept failed") != std::string::npos; }, 10s))
      << "the RM never ran out of descriptors\n"
      << rm.log();
  EXPECT_EQ(timedGet(rm.httpAddress(), "/healthz", 500ms), 0);  // exhausted: no answer
  flood.closeAll();
  auto t0 = Steady::now();
  EXPECT_TRUE(waitFor([&] { return timedGet(rm.httpAddress(), "/healthz") == 200; }, 10s))
      << rm.log();
  EXPECT_TRUE(waitFor([&] { return grpcServing(rm.grpcAddress()); }, 10s)) << rm.log();
  std::cout << "RM answered HTTP and gRPC "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - t0).count()
            << " ms after the flood closed\n";
  EXPECT_GT(metricOf(rm.httpAddress(), "morpheus_http_accept_errors_total"), 0);
  EXPECT_TRUE(rm.running());
}

// With the default caps: an RM started under a 256-descriptor limit
// keeps its HTTP caps below it, so a flood of 400 idle connections from four
// clients is refused (503, counted) instead of exhausting descriptors; gRPC
// answers during the flood, and HTTP again after it.
TEST(HttpEdgeIT, RmUnderLowDescriptorLimitRefusesFloodAndKeepsGrpc) {
  std::string dir = freshDir("rm");
  std::vector<std::string> args = {"--nofile=256:256", binary("morpheus-rm"),
                                   "--data-dir",       dir,
                                   "--grpc-port",      "0",
                                   "--http-port",      "0"};
  for (const auto& a : rmArgs()) args.push_back(a);
  Process rm = Process::start("/usr/bin/prlimit", args, dir + ".log");
  std::string ep = dir + "/rm.endpoints.json";
  ASSERT_TRUE(waitFor([&] { return std::filesystem::exists(ep) || !rm.running(); }, 20s));
  std::ifstream in(ep);
  auto endpoints = json::parse(in, nullptr, false);
  ASSERT_FALSE(endpoints.is_discarded()) << rm.log();
  std::string http = endpoints["http"], grpc_addr = endpoints["grpc"];
  EXPECT_NE(rm.log().find("http.max-connections 1000 lowered to 128"), std::string::npos)
      << rm.log();

  Sockets flood;
  for (const char* source : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}) {
    for (int i = 0; i < 100; i++) {
      int fd = connectLoopback(portOf(http), source, false);
      ASSERT_GE(fd, 0) << std::strerror(errno);
      flood.fds.push_back(fd);
    }
  }
  // Our request is accepted after the whole flood (FIFO): the cap is full.
  EXPECT_EQ(timedGet(http, "/healthz"), 503);
  EXPECT_TRUE(grpcServing(grpc_addr)) << "gRPC starved of descriptors during the flood";
  EXPECT_EQ(rm.log().find("http: accept failed"), std::string::npos) << rm.log();
  flood.closeAll();
  EXPECT_TRUE(waitFor([&] { return timedGet(http, "/healthz") == 200; }, 10s)) << rm.log();
  EXPECT_GT(metricOf(http, "morpheus_http_connections_refused_total{reason=\"max-connections\"}"),
            0);
  EXPECT_TRUE(grpcServing(grpc_addr));
}

// 200 idle connections (two clients, 100 each, within the default caps) do
// not keep /healthz from being served: 20 requests all answered, none refused.
// The latency figures are bench_http_latency's.
TEST(HttpEdgeIT, TwoHundredIdleConnectionsDoNotDelayHealthz) {
  Process rm = Process::startDaemon("rm", freshDir("rm"), rmArgs());
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  Sockets idle;
  for (const char* source : {"127.0.0.2", "127.0.0.3"}) {
    for (int i = 0; i < 100; i++) {
      int fd = connectLoopback(portOf(rm.httpAddress()), source, false);
      ASSERT_GE(fd, 0);
      idle.fds.push_back(fd);
    }
  }
  ASSERT_TRUE(waitFor(
      [&] { return metricOf(rm.httpAddress(), "morpheus_http_connections_open") >= 200; }, 10s))
      << "the RM does not hold the 200 idle connections open";
  for (int i = 0; i < 20; i++) EXPECT_EQ(timedGet(rm.httpAddress(), "/healthz"), 200) << i;
  EXPECT_GE(metricOf(rm.httpAddress(), "morpheus_http_connections_open"), 200)
      << "the idle connections were closed meanwhile";
  EXPECT_EQ(metricOf(rm.httpAddress(),
                     "morpheus_http_connections_refused_total{reason=\"max-"
                     "connections-per-client\"}"),
            0);
}

// A huge REST submission (num-containers 2^31-1) is refused before any
// planning (rm.max-containers-per-stage) and /healthz answers while it is in
// flight: the test holds the submission's body back until three probes have
// been answered, so they overlap it whatever the machine's speed (handlers
// run off the I/O thread; HttpServerTest covers a slow handler). A body over
// http.max-body-bytes is answered 413. The latency figures are
// bench_http_latency's.
TEST(HttpEdgeIT, HugeReservationDoesNotBlockHealthz) {
  Process rm = Process::startDaemon("rm", freshDir("rm"), rmArgs());
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  std::vector<std::string> nm_args = {
      "--rm", rm.grpcAddress(), "--resources", "memory=102400,vcores=100", "--node-id", "nm1"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
  Process nm = Process::startDaemon("nm", freshDir("nm"), nm_args);
  ASSERT_FALSE(nm.grpcAddress().empty()) << nm.log();
  int64_t t0 = nowMs() + 3600000;
  json huge = {
      {"reservation-id", "r-huge"},
      {"queue", "default"},
      {"reservation-definition",
       {{"arrival", t0},
        {"deadline", t0 + 7200000},
        {"reservation-name", "huge"},
        {"priority", 0},
        {"reservation-requests",
         {{"reservation-request-interpreter", 0},
          {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                {"num-containers", 2147483647},
                                                {"min-concurrency", 1},
                                                {"duration", 600000}}})}}}}}};
  auto n = httpRequest(rm.httpAddress(), "POST", "/ws/v1/cluster/reservation/new-reservation", "",
                       "application/json", bearer("alice"));
  ASSERT_EQ(n.status, 200) << n.body;
  huge["reservation-id"] = json::parse(n.body, nullptr, false).value("reservation-id", "");
  const std::string body = huge.dump();
  const std::string head =
      "POST /ws/v1/cluster/reservation/submit HTTP/1.1\r\nHost: t\r\n"
      "Connection: close\r\nContent-Type: application/json\r\n"
      "Authorization: Bearer " +
      testToken("alice") + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  const size_t half = body.size() / 2;
  int fd = connectLoopback(portOf(rm.httpAddress()), "127.0.0.1", true);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  Sockets held;
  held.fds.push_back(fd);
  const std::string first = head + body.substr(0, half);
  ASSERT_EQ(::send(fd, first.data(), first.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(first.size()));
  // The submission is in flight (headers and half its body sent).
  for (int i = 0; i < 3; i++) EXPECT_EQ(timedGet(rm.httpAddress(), "/healthz"), 200) << i;
  const std::string rest = body.substr(half);
  ASSERT_EQ(::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL), static_cast<ssize_t>(rest.size()));
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string resp;
  char buf[4096];
  ssize_t got;
  while ((got = ::recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<size_t>(got));
  ASSERT_EQ(resp.rfind("HTTP/1.1 ", 0), 0u) << "no answer to the submission: " << resp;
  EXPECT_EQ(resp.substr(9, 3), "400") << resp;
  EXPECT_NE(resp.find("num-containers"), std::string::npos) << resp;
  EXPECT_EQ(timedGet(rm.httpAddress(), "/healthz"), 200);

  std::string big(2 << 20, ' ');
  auto r = httpRequest(rm.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit", big);
  EXPECT_EQ(r.status, 413) << r.body;
}

// Sends one keep-alive GET of /ws/v1/cluster/info as `principal` on `fd` and
// returns the response's status (0 when none came within 5 s). The
// connection stays open unless the server closes it.
int keepAliveGet(int fd, const std::string& principal) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = "GET /ws/v1/cluster/info HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                    testToken(principal) + "\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return 0;
  }
  std::string resp;
  char buf[4096];
  while (true) {
    auto end = resp.find("\r\n\r\n");
    if (end != std::string::npos) {
      auto cl = resp.find("Content-Length: ");
      size_t body = cl == std::string::npos || cl > end ? 0 : std::stoul(resp.substr(cl + 16));
      if (resp.size() >= end + 4 + body) break;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  if (resp.rfind("HTTP/1.1 ", 0) != 0 || resp.size() < 12) return 0;
  return std::stoi(resp.substr(9, 3));
}

// Low finding: the per-client cap is per IP, so one user spread over a few
// addresses could hold the whole global cap. Once a connection authenticates
// it counts against its user (http.max-connections-per-principal): alice's
// sixth connection, from a sixth address, is refused while bob is served, and
// alice is served again once she closes one.
TEST(HttpEdgeIT, OneUserOverSeveralAddressesHoldsAtMostThePrincipalCap) {
  Process rm = Process::startDaemon("rm", freshDir("rm"),
                                    rmArgs({"--set", "http.max-connections-per-principal=5"}));
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  int port = portOf(rm.httpAddress());
  Sockets alice;
  for (int i = 0; i < 5; i++) {
    int fd = connectLoopback(port, "127.0.0." + std::to_string(i + 2), true);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    alice.fds.push_back(fd);
    ASSERT_EQ(keepAliveGet(fd, "alice"), 200) << rm.log();
  }
  int sixth = connectLoopback(port, "127.0.0.7", true);
  ASSERT_GE(sixth, 0);
  alice.fds.push_back(sixth);
  EXPECT_EQ(keepAliveGet(sixth, "alice"), 503);
  int bob = connectLoopback(port, "127.0.0.7", true);
  ASSERT_GE(bob, 0);
  alice.fds.push_back(bob);
  EXPECT_EQ(keepAliveGet(bob, "bob"), 200);
  EXPECT_EQ(metricOf(rm.httpAddress(),
                     "morpheus_http_connections_refused_total{reason=\"max-connections-per-"
                     "principal\"}"),
            1);
  ::close(alice.fds[0]);
  alice.fds.erase(alice.fds.begin());
  EXPECT_TRUE(waitFor(
      [&] {
        int fd = connectLoopback(port, "127.0.0.8", true);
        if (fd < 0) return false;
        int status = keepAliveGet(fd, "alice");
        ::close(fd);
        return status == 200;
      },
      10s));
}

}  // namespace
}  // namespace morpheus::testing
