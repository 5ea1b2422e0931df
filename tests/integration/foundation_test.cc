// Foundation integration tests: the real daemons on loopback.
#include <gtest/gtest.h>

#include <signal.h>
#include <chrono>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "common/wire.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"
#include "test_paths.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;

grpc::health::v1::HealthCheckResponse::ServingStatus healthOf(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(makeChannel(address, TlsOptions{}));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  auto ctx = makeContext(Millis(3000));
  grpc::Status st = stub->Check(ctx.get(), req, &resp);
  if (!st.ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  return resp.status();
}

class DaemonTest : public ::testing::TestWithParam<std::string> {};

// Each daemon serves /healthz 200, /metrics, gRPC health SERVING, and exits 0 on SIGTERM within 5
// s.
TEST_P(DaemonTest, ServesHealthAndStopsOnSigterm) {
  std::vector<std::string> args;
  if (GetParam() == "nm") args = {"--rm", "127.0.0.1:1"};  // no RM: must still serve
  if (GetParam() == "nm")
    args.insert(args.end(), {"--set", "nm.token-file=" + nodeTokenFile("nm1")});
  if (GetParam() == "rm") args = rmAuthArgs();
  if (GetParam() == "inference") args = {"--set", "inference.auth-disabled=true"};
  if (GetParam() == "rm") args = {"--set", "rm.token-file=" + testTokenFile()};
  Process p = Process::startDaemon(GetParam(), freshDir(GetParam()), args);
  ASSERT_FALSE(p.httpAddress().empty()) << p.log();
  auto h = httpRequest(p.httpAddress(), "GET", "/healthz");
  EXPECT_EQ(h.status, 200);
  auto m = httpRequest(p.httpAddress(), "GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("\nmorpheus_build_info{daemon=\"" + GetParam() + "\","), std::string::npos)
      << m.body;
  EXPECT_EQ(m.body.find("# TYPE morpheus_" + GetParam() + "_up "), std::string::npos)
      << "Prometheus adds `up` to each scrape itself";
  EXPECT_EQ(httpRequest(p.httpAddress(), "GET", "/nope").status, 404);
  EXPECT_EQ(healthOf(p.grpcAddress()), grpc::health::v1::HealthCheckResponse::SERVING);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(p.signalAndWait(SIGTERM, 5s), 0) << p.log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// A config file with a bad value exits non-zero with one line naming the key.
TEST_P(DaemonTest, BadConfigExitsNamingTheKey) {
  std::string dir = freshDir("badcfg");
  std::string cfg = dir + "/bad.yaml";
  std::ofstream(cfg) << "grpc:\n  port: not-a-port\n";
  auto [code, out] = runCommand({binary("morpheus-" + GetParam()), "--config", cfg});
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("grpc.port"), std::string::npos) << out;
  std::ofstream(cfg) << "log:\n  levle: info\n";
  auto [code2, out2] = runCommand({binary("morpheus-" + GetParam()), "--config", cfg});
  EXPECT_NE(code2, 0);
  EXPECT_NE(out2.find("log.levle"), std::string::npos) << out2;
}

// A busy gRPC port and an unusable data dir are clear start-up failures.
TEST_P(DaemonTest, BusyPortAndBadDataDirFail) {
  std::vector<std::string> args;
  if (GetParam() == "nm")
    args = {"--rm", "127.0.0.1:1", "--set", "nm.token-file=" + nodeTokenFile("nm1")};
  if (GetParam() == "rm") args = rmAuthArgs();
  if (GetParam() == "inference") args = {"--set", "inference.auth-disabled=true"};
  if (GetParam() == "rm") args = {"--set", "rm.token-file=" + testTokenFile()};
  Process first = Process::startDaemon(GetParam(), freshDir("first"), args);
  ASSERT_FALSE(first.grpcAddress().empty()) << first.log();
  std::string port = first.grpcAddress().substr(first.grpcAddress().rfind(':') + 1);
  std::vector<std::string> argv = {binary("morpheus-" + GetParam()),
                                   "--data-dir",
                                   freshDir("second"),
                                   "--grpc-port",
                                   port,
                                   "--http-port",
                                   "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto [code, out] = runCommand(argv);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find(port), std::string::npos) << out;

  std::string file = freshDir("file") + "/plain-file";
  std::ofstream(file) << "x";
  std::vector<std::string> argv2 = {
      binary("morpheus-" + GetParam()), "--data-dir", file, "--grpc-port", "0", "--http-port", "0"};
  argv2.insert(argv2.end(), args.begin(), args.end());
  auto [code2, out2] = runCommand(argv2);
  EXPECT_NE(code2, 0);
  EXPECT_NE(out2.find("data-dir"), std::string::npos) << out2;
}

INSTANTIATE_TEST_SUITE_P(Daemons, DaemonTest, ::testing::Values("rm", "nm", "inference"));

// Three NMs register and show up in `morpheusctl cluster status` (text and --json).
TEST(ClusterTest, ThreeNodesShowUpInClusterStatus) {
  Process rm = Process::startDaemon("rm", freshDir("rm"), rmAuthArgs());
  ASSERT_FALSE(rm.grpcAddress().empty()) << rm.log();
  std::vector<Process> nms;
  for (int i = 0; i < 3; i++) {
    std::string node = "nm" + std::to_string(i + 1);
    std::vector<std::string> args = {"--rm",        rm.grpcAddress(),
                                     "--resources", "memory=2048,vcores=2",
                                     "--node-id",   node,
                                     "--set",       "nm.attributes=rack=r" + std::to_string(i)};
    for (auto& a : nmAuthArgs(node)) args.push_back(std::move(a));
    nms.push_back(Process::startDaemon("nm", freshDir("nm"), args));
    ASSERT_FALSE(nms.back().grpcAddress().empty()) << nms.back().log();
  }
  nlohmann::json status;
  bool ok = waitFor(
      [&] {
        auto [code, out] =
            runCommand({binary("morpheusctl"), "cluster", "status", "--json"},
                       {{"MORPHEUS_RM", rm.grpcAddress()}, {"MORPHEUS_TOKEN", testToken("alice")}});
        if (code != 0) return false;
        status = nlohmann::json::parse(out, nullptr, false);
        return !status.is_discarded() && status["live_nodes"] == 3;
      },
      15s);
  ASSERT_TRUE(ok) << status.dump();
  EXPECT_EQ(status["capacity"]["memory_mib"], 3 * 2048);
  std::set<std::string> ids;
  for (const auto& n : status["nodes"]) {
    ids.insert(n["node_id"].get<std::string>());
    EXPECT_EQ(n["total"]["vcores"], 2);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"nm1", "nm2", "nm3"}));
  EXPECT_EQ(status["nodes"][1]["attributes"]["rack"], "r1");

  auto [code, text] = runCommand({binary("morpheusctl"), "--rm", rm.grpcAddress(), "--token",
                                  testToken("alice"), "cluster", "status"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(text.find("3 live node(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("nm3"), std::string::npos) << text;
}

// Node expiry: with a short expiry a killed NM turns LOST, and comes back when restarted.
TEST(ClusterTest, SilentNodeIsLostAndRejoins) {
  std::vector<std::string> rm_args = {"--set", "rm.node-expiry=1s"};
  for (auto& a : rmAuthArgs()) rm_args.push_back(std::move(a));
  Process rm = Process::startDaemon("rm", freshDir("rm"), rm_args);
  ASSERT_FALSE(rm.grpcAddress().empty()) << rm.log();
  std::string nm_dir = freshDir("nm");
  std::vector<std::string> nm_args = {"--rm", rm.grpcAddress(), "--node-id", "nm1"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
  // Port 0: the restarted NM registers from a new address, accepted because
  // the node is lost by then.
  auto startNm = [&] { return Process::startDaemon("nm", nm_dir, nm_args); };
  Process nm = startNm();
  auto liveNodes = [&] {
    auto [code, out] =
        runCommand({binary("morpheusctl"), "--rm", rm.grpcAddress(), "--token", testToken("alice"),
                    "cluster", "status", "--json", "--include-lost"});
    auto j = nlohmann::json::parse(out, nullptr, false);
    return j.is_discarded() ? -1 : j["live_nodes"].get<int>();
  };
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 10s));
  nm.signalAndWait(SIGKILL, 5s);
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 0; }, 10s));
  auto m = httpRequest(rm.httpAddress(), "GET", "/metrics");
  EXPECT_NE(m.body.find("morpheus_rm_nodes_lost_total 1"), std::string::npos) << m.body;
  Process nm2 = startNm();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 10s)) << nm2.log();
}

// Number after `series ` at the start of a line of Prometheus text, or -1.
double sample(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + series.size() + 2);
}

// Readiness: the RM is ready with its store open and plan loaded;
// an NM is ready once registered, and not ready (but live) while its RM is
// unreachable. /metrics carries process_* and the RM's latency histograms,
// the heartbeat one counting the NM's heartbeats.
TEST(ObservabilityTest, ReadinessProcessMetricsAndLatencyHistograms) {
  Process rm = Process::startDaemon("rm", freshDir("rm"), rmAuthArgs());
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  EXPECT_EQ(httpRequest(rm.httpAddress(), "GET", "/readyz").status, 200);
  std::vector<std::string> lonely_args = {"--rm", "127.0.0.1:1", "--node-id", "nm2"};
  for (auto& a : nmAuthArgs("nm2")) lonely_args.push_back(std::move(a));
  Process lonely = Process::startDaemon("nm", freshDir("nm"), lonely_args);
  ASSERT_FALSE(lonely.httpAddress().empty()) << lonely.log();
  auto not_ready = httpRequest(lonely.httpAddress(), "GET", "/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_NE(not_ready.body.find("registered"), std::string::npos) << not_ready.body;
  EXPECT_EQ(httpRequest(lonely.httpAddress(), "GET", "/healthz").status, 200);
  std::vector<std::string> nm_args = {"--rm", rm.grpcAddress(), "--node-id", "nm1"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
  Process nm = Process::startDaemon("nm", freshDir("nm"), nm_args);
  ASSERT_FALSE(nm.httpAddress().empty()) << nm.log();
  EXPECT_TRUE(
      waitFor([&] { return httpRequest(nm.httpAddress(), "GET", "/readyz").status == 200; }, 10s))
      << nm.log();
  std::string text;
  EXPECT_TRUE(waitFor(
      [&] {
        text = httpRequest(rm.httpAddress(), "GET", "/metrics").body;
        return sample(text, "morpheus_rm_node_heartbeat_duration_seconds_count") >= 1;
      },
      10s))
      << text;
  EXPECT_EQ(sample(text, "morpheus_rm_ready"), 1);
  EXPECT_GT(sample(text, "process_cpu_seconds_total"), 0);
  EXPECT_GT(sample(text, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(sample(text, "process_open_fds"), 3);
  EXPECT_GT(sample(text, "process_start_time_seconds"), 1.6e9);
  for (const char* h : {"morpheus_rm_allocate_duration_seconds_count",
                        "morpheus_rm_reservation_admission_duration_seconds_count",
                        "morpheus_rm_dra_decision_duration_seconds_count"}) {
    EXPECT_GE(sample(text, h), 0) << h;
  }
  std::string nm_text = httpRequest(lonely.httpAddress(), "GET", "/metrics").body;
  EXPECT_EQ(sample(nm_text, "morpheus_nm_ready"), 0) << nm_text;
  EXPECT_GT(sample(nm_text, "process_open_fds"), 3);
}

// morpheusctl reports an unreachable RM as one line naming it and how to
// name another, and a non-zero exit.
TEST(CliTest, UnreachableRmIsAClearError) {
  auto [code, out] =
      runCommand({binary("morpheusctl"), "--rm", "127.0.0.1:1", "cluster", "status"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out.rfind("morpheusctl: cannot reach the RM at 127.0.0.1:1: ", 0), 0u) << out;
  EXPECT_NE(out.find("--rm HOST:PORT or MORPHEUS_RM"), std::string::npos) << out;

  // A host name that does not resolve is reported without waiting out
  // --timeout: it will not start answering.
  const auto start = std::chrono::steady_clock::now();
  auto [ncode, nout] = runCommand({binary("morpheusctl"), "--rm", "no-such-host.invalid:8030",
                                   "--timeout", "60s", "cluster", "status"});
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(ncode, 1) << nout;
  EXPECT_NE(nout.find("the host name 'no-such-host.invalid' does not resolve"), std::string::npos)
      << nout;
  EXPECT_LT(waited, std::chrono::seconds(30)) << "waited out --timeout 60s for an unknown name";
}

// The example configs in deploy/ load and document every option the daemon has.
TEST(ConfigFilesTest, ExampleConfigsListEveryOption) {
  for (std::string d : {"rm", "nm", "inference"}) {
    std::string path = std::string(sourceDir()) + "/deploy/" + d + ".yaml";
    auto [code, out] = runCommand({binary("morpheus-" + d), "--config", path, "--print-config"});
    ASSERT_EQ(code, 0) << out;
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string file = ss.str();
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::string key = line.substr(0, line.find(':'));
      EXPECT_NE(file.find("\n" + key + ":"), std::string::npos) << d << ".yaml lacks " << key;
    }
  }
}

}  // namespace
}  // namespace morpheus::testing
