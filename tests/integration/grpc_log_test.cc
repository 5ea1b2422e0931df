// gRPC's own log lines go through the daemons' logger (common/logging.h):
// the real RM, NM and inference service and morpheusctl on loopback, with a
// throwaway PKI (test_pki.h). A TLS client without a certificate makes the
// daemon's gRPC log a failed handshake at ERROR, which gRPC alone would print
// to stderr as "E1129 05:44:44.088166043 23288 ssl_transport_security.cc:1501] ...".
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "common/wire.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"
#include "test_pki.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;

// The lines of `text` that gRPC's default output function would have written
// ("<severity letter><MMDD> <time> <thread id> <file>:<line>] ...").
std::vector<std::string> rawGrpcLines(const std::string& text) {
  static const std::regex raw(R"(^[DIE]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ +[^ ]+:\d+\])");
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, raw)) out.push_back(line);
  }
  return out;
}

// The lines of `text` in the daemon logger's format (kLogPattern) at
// `level_letter` from logger `name` whose message starts with "grpc: ` + what`.
std::vector<std::string> loggedGrpcLines(const std::string& text, const std::string& level_letter,
                                         const std::string& name, const std::string& what) {
  std::regex fmt(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 )" + level_letter + R"( \[)" +
                 name + R"(\] grpc: )" + what);
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, fmt)) out.push_back(line);
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The gRPC health check of `address` as a TLS client trusting `ca` that
// presents no certificate; its status code.
grpc::StatusCode healthWithoutCertificate(const std::string& address, const std::string& ca) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = readFile(ca);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateCustomChannel(address, grpc::SslCredentials(o), args));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  auto ctx = makeContext(Millis(1500));
  return stub->Check(ctx.get(), req, &resp).error_code();
}

class GrpcLogIT : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(opensslPath().empty()) << "the openssl CLI is needed (deploy/install-deps.sh)";
    ca_ = pki_.makeCa("ca");
    id_ = pki_.issue("ca", "daemon");
    other_ca_ = pki_.makeCa("other-ca");
    ASSERT_TRUE(pki_.ok()) << pki_.errors();
  }

  // The daemon's own flags (credentials) plus mutual TLS required of clients.
  std::vector<std::string> daemonArgs(const std::string& component) {
    std::vector<std::string> args;
    if (component == "rm") args = rmAuthArgs();
    if (component == "nm")
      args = {"--rm", "127.0.0.1:1", "--set", "nm.token-file=" + nodeTokenFile("nm1")};
    if (component == "inference") args = {"--set", "inference.auth-disabled=true"};
    for (const auto& a : tlsArgs(ca_, id_)) args.push_back(a);
    args.insert(args.end(), {"--set", "tls.client-certs=require"});
    return args;
  }

  TestPki pki_{"grpc-log-pki"};
  std::string ca_, other_ca_;
  Identity id_;
};

// A failed handshake, logged by the daemon's gRPC, is one line in the
// daemon's format at error level on stderr and in log.file, never gRPC's raw
// line; gRPC's INFO diagnostics stay out at log.level info. A second daemon
// on the first one's (taken) gRPC port fails without a raw gRPC line either.
class GrpcLogDaemonIT : public GrpcLogIT, public ::testing::WithParamInterface<std::string> {};

TEST_P(GrpcLogDaemonIT, LogsGrpcLinesInItsOwnFormat) {
  const std::string component = GetParam();
  std::string dir = freshDir("grpc-log-" + component);
  std::string log_file = dir + "/daemon.log";
  auto args = daemonArgs(component);
  args.insert(args.end(), {"--set", "log.file=" + log_file});
  Process p = Process::startDaemon(component, dir + "/data", args);
  ASSERT_FALSE(p.grpcAddress().empty()) << p.log();

  EXPECT_NE(healthWithoutCertificate(p.grpcAddress(), ca_), grpc::StatusCode::OK);
  const std::string what = "Handshake failed .*\\(ssl_transport_security\\.cc:\\d+\\)$";
  EXPECT_TRUE(waitFor([&] { return !loggedGrpcLines(p.log(), "E", component, what).empty(); }, 5s))
      << p.log();
  EXPECT_TRUE(waitFor(
      [&] { return !loggedGrpcLines(readFile(log_file), "E", component, what).empty(); }, 5s))
      << readFile(log_file);
  EXPECT_EQ(joined(rawGrpcLines(p.log())), "") << p.log();
  // gRPC's INFO line about its server's pollers is a debug line.
  EXPECT_EQ(p.log().find("Synchronous server"), std::string::npos) << p.log();

  std::string port = p.grpcAddress().substr(p.grpcAddress().rfind(':') + 1);
  std::vector<std::string> argv = {binary("morpheus-" + component),
                                   "--data-dir",
                                   freshDir("grpc-log-busy"),
                                   "--grpc-port",
                                   port,
                                   "--http-port",
                                   "0"};
  argv.insert(argv.end(), args.begin(), args.end() - 2);  // without log.file
  auto [code, out] = runCommand(argv);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find(port), std::string::npos) << out;
  EXPECT_EQ(joined(rawGrpcLines(out)), "") << out;
}

INSTANTIATE_TEST_SUITE_P(Daemons, GrpcLogDaemonIT, ::testing::Values("rm", "nm", "inference"));

// log.level decides what of gRPC shows: at debug its INFO diagnostics appear
// as debug lines; at warn (as at info) they do not, but its errors do.
TEST_F(GrpcLogIT, LogLevelDecidesWhatOfGrpcShows) {
  auto args = daemonArgs("rm");
  args.insert(args.end(), {"--set", "log.level=debug"});
  Process debug = Process::startDaemon("rm", freshDir("grpc-log-debug"), args);
  ASSERT_FALSE(debug.grpcAddress().empty()) << debug.log();
  EXPECT_FALSE(loggedGrpcLines(debug.log(), "D", "rm", "Synchronous server").empty())
      << debug.log();
  EXPECT_EQ(joined(rawGrpcLines(debug.log())), "") << debug.log();

  args = daemonArgs("rm");
  args.insert(args.end(), {"--set", "log.level=warn"});
  Process warn = Process::startDaemon("rm", freshDir("grpc-log-warn"), args);
  ASSERT_FALSE(warn.grpcAddress().empty()) << warn.log();
  EXPECT_NE(healthWithoutCertificate(warn.grpcAddress(), ca_), grpc::StatusCode::OK);
  EXPECT_TRUE(waitFor(
      [&] { return !loggedGrpcLines(warn.log(), "E", "rm", "Handshake failed").empty(); }, 5s))
      << warn.log();
  EXPECT_EQ(warn.log().find("Synchronous server"), std::string::npos) << warn.log();
  EXPECT_EQ(joined(rawGrpcLines(warn.log())), "") << warn.log();
}

// morpheusctl trusting another CA: its gRPC's failed handshakes (one per
// reconnect attempt) are one "morpheusctl: grpc: ..." line on stderr next to
// its own error, never gRPC's raw line.
TEST_F(GrpcLogIT, CliPrintsGrpcLinesOnceInItsOwnFormat) {
  Process rm = Process::startDaemon("rm", freshDir("grpc-log-cli"), daemonArgs("rm"));
  ASSERT_FALSE(rm.grpcAddress().empty()) << rm.log();
  auto [code, out] = runCommand({binary("morpheusctl"), "--rm", rm.grpcAddress(), "--tls-ca",
                                 other_ca_, "--token", testToken("alice"), "cluster", "status"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(joined(rawGrpcLines(out)), "") << out;
  std::regex line(R"((^|\n)morpheusctl: grpc: Handshake failed [^\n]*certificate verify failed)");
  auto n =
      std::distance(std::sregex_iterator(out.begin(), out.end(), line), std::sregex_iterator());
  EXPECT_EQ(n, 1) << out;
  EXPECT_NE(out.find("morpheusctl: cannot reach the RM at " + rm.grpcAddress()), std::string::npos)
      << out;
}

}  // namespace
}  // namespace morpheus::testing
