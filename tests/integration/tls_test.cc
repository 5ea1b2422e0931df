// Mutual TLS between the daemons (docs/operator/security.md): a
// throwaway CA and certificates made with the openssl CLI in a temp dir, the
// real RM, NM, inference service, morpheusctl and morpheus-dag-am on loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/wire.h"
#include "etcd_cluster.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The openssl CLI from PATH ("" when absent).
std::string opensslPath() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir) / "openssl";
    if (!dir.empty() && fs::exists(p)) return p.string();
  }
  return "";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A certificate and its key, as files.
struct Identity {
  std::string cert;
  std::string key;
};

// A throwaway PKI in a fresh temp dir, made the way an operator would (README
// "Security"): a CA, then per identity an EC key, a CSR and a certificate the
// CA signs for 127.0.0.1/localhost, usable as server and client certificate.
class TestPki {
 public:
  explicit TestPki(const std::string& tag) : dir_(freshDir(tag)), openssl_(opensslPath()) {}

  // Makes the CA NAME (NAME.pem, NAME.key); its certificate's path.
  std::string makeCa(const std::string& name) {
    run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "1", "-subj",
         "/CN=" + name});
    return path(name + ".pem");
  }
  // Issues NAME's certificate signed by the CA `ca` (made by makeCa).
  Identity issue(const std::string& ca, const std::string& name) {
    std::ofstream(path("ext.cnf")) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                      "extendedKeyUsage=serverAuth,clientAuth\n";
    run({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/CN=" + name});
    run({"x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey",
         path(ca + ".key"), "-CAcreateserial", "-out", path(name + ".pem"), "-days", "1",
         "-extfile", path("ext.cnf")});
    return {path(name + ".pem"), path(name + ".key")};
  }
  std::string path(const std::string& file) const { return dir_ + "/" + file; }
  bool ok() const { return ok_; }
  const std::string& errors() const { return errors_; }

 private:
  void run(std::vector<std::string> args) {
    args.insert(args.begin(), openssl_);
    auto [code, out] = runCommand(args);
    if (code != 0) {
      ok_ = false;
      errors_ += out;
    }
  }
  std::string dir_;
  std::string openssl_;
  bool ok_ = true;
  std::string errors_;
};

// The tls.* settings of a daemon with identity `id` under CA `ca`.
std::vector<std::string> tlsArgs(const std::string& ca, const Identity& id) {
  return {"--set", "tls.ca-file=" + ca,     "--set", "tls.cert-file=" + id.cert,
          "--set", "tls.key-file=" + id.key};
}

// The gRPC health check of `address` over `creds`; its status code.
grpc::StatusCode healthCheck(const std::string& address,
                             std::shared_ptr<grpc::ChannelCredentials> creds) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  auto stub = grpc::health::v1::Health::NewStub(grpc::CreateCustomChannel(address, creds, args));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  auto ctx = makeContext(Millis(5000));
  return stub->Check(ctx.get(), req, &resp).error_code();
}

// TLS client credentials trusting `ca`, presenting `id` unless it is empty.
std::shared_ptr<grpc::ChannelCredentials> tlsClient(const std::string& ca, const Identity& id) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = readFile(ca);
  if (!id.cert.empty()) {
    o.pem_cert_chain = readFile(id.cert);
    o.pem_private_key = readFile(id.key);
  }
  return grpc::SslCredentials(o);
}

class TlsIT : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(opensslPath().empty()) << "the openssl CLI is needed (deploy/install-deps.sh)";
    ca_ = pki_.makeCa("ca");
    rm_id_ = pki_.issue("ca", "rm");
    nm_id_ = pki_.issue("ca", "nm1");
    inference_id_ = pki_.issue("ca", "inference");
    client_id_ = pki_.issue("ca", "alice");
    other_ca_ = pki_.makeCa("other-ca");
    foreign_id_ = pki_.issue("other-ca", "mallory");
    ASSERT_TRUE(pki_.ok()) << pki_.errors();
  }

  // Starts an RM (with the test token file) and one NM nm1, both with mTLS.
  void startCluster(const std::vector<std::string>& rm_args = {}) {
    std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
    for (const auto& a : tlsArgs(ca_, rm_id_)) args.push_back(a);
    args.insert(args.end(), rm_args.begin(), rm_args.end());
    rm_ = Process::startDaemon("rm", freshDir("rm"), args);
    ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
    std::vector<std::string> nm_args = {
        "--rm",        rm_.grpcAddress(),          "--node-id", "nm1",
        "--resources", "memory=4096,vcores=8",     "--set",     "nm.heartbeat-interval=300ms",
        "--set",       "nm.monitor-interval=200ms"};
    for (const auto& a : tlsArgs(ca_, nm_id_)) nm_args.push_back(a);
    for (const auto& a : nmAuthArgs("nm1")) nm_args.push_back(a);
    nm_ = Process::startDaemon("nm", freshDir("nm"), nm_args);
    ASSERT_FALSE(nm_.grpcAddress().empty()) << nm_.log();
  }

  // morpheusctl as alice with her client certificate (`tls` false: none).
  std::pair<int, std::string> ctl(std::vector<std::string> args, bool tls = true) {
    std::vector<std::string> argv = {
        binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--user", "alice", "--token",
        testToken("alice")};
    if (tls) {
      argv.insert(argv.end(),
                  {"--tls-ca", ca_, "--tls-cert", client_id_.cert, "--tls-key", client_id_.key});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }

  int liveNodes() {
    auto [code, out] = ctl({"cluster", "status", "--json"});
    auto j = nlohmann::json::parse(out, nullptr, false);
    return code == 0 && !j.is_discarded() ? j["live_nodes"].get<int>() : -1;
  }

  TestPki pki_{"pki"};
  std::string ca_, other_ca_;
  Identity rm_id_, nm_id_, inference_id_, client_id_, foreign_id_;
  Process rm_, nm_;
};

// With mTLS on, the NM registers (its channel to the RM presents its
// certificate), morpheusctl with a client certificate sees the live node, and
// the RM's and the NM's gRPC servers refuse plaintext, a TLS client without a
// certificate and one whose certificate another CA signed. Before tls.* existed
// the daemons refused to start with these options.
TEST_F(TlsIT, ClusterAcceptsOnlyClientsCertifiedByItsCa) {
  startCluster();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  for (const Process* p : {&rm_, &nm_}) {
    const std::string& addr = p->grpcAddress();
    // The control: the same probe with a certificate of the cluster's CA works.
    EXPECT_EQ(healthCheck(addr, tlsClient(ca_, client_id_)), grpc::StatusCode::OK) << addr;
    EXPECT_EQ(healthCheck(addr, grpc::InsecureChannelCredentials()), grpc::StatusCode::UNAVAILABLE)
        << addr << ": plaintext client";
    EXPECT_EQ(healthCheck(addr, tlsClient(ca_, Identity{})), grpc::StatusCode::UNAVAILABLE)
        << addr << ": TLS client without a certificate";
    EXPECT_EQ(healthCheck(addr, tlsClient(ca_, foreign_id_)), grpc::StatusCode::UNAVAILABLE)
        << addr << ": client certificate of another CA";
  }
  // morpheusctl without TLS cannot talk to the RM.
  auto [code, out] = ctl({"cluster", "status", "--json"}, false);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("UNAVAILABLE"), std::string::npos) << out;
  // morpheusctl refuses, before any call, a certificate its CA did not sign.
  auto [c2, o2] =
      runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--tls-ca", ca_, "--tls-cert",
                  foreign_id_.cert, "--tls-key", foreign_id_.key, "cluster", "status"});
  EXPECT_EQ(c2, 2) << o2;
  EXPECT_NE(o2.find("--tls-cert (MORPHEUS_TLS_CERT): certificate in"), std::string::npos) << o2;
}

// RM address lists under mTLS: each address is verified against
// its own host name. An NM given "127.0.0.1:<nothing>,localhost:<rm>" and
// morpheusctl given "localhost:<nothing>,127.0.0.1:<rm>" skip the dead entry
// and reach the RM whose certificate names both 127.0.0.1 and localhost (one
// channel over the resolved list checked every peer against one name).
TEST_F(TlsIT, RmAddressListVerifiesEachAddressAgainstItsOwnName) {
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
  for (const auto& a : tlsArgs(ca_, rm_id_)) args.push_back(a);
  rm_ = Process::startDaemon("rm", freshDir("rm"), args);
  ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
  const std::string port = rm_.grpcAddress().substr(rm_.grpcAddress().rfind(':') + 1);
  const std::string dead = std::to_string(freeLoopbackPort());
  std::vector<std::string> nm_args = {"--rm",        "127.0.0.1:" + dead + ",localhost:" + port,
                                      "--node-id",   "nm1",
                                      "--resources", "memory=4096,vcores=8",
                                      "--set",       "nm.heartbeat-interval=300ms"};
  for (const auto& a : tlsArgs(ca_, nm_id_)) nm_args.push_back(a);
  for (const auto& a : nmAuthArgs("nm1")) nm_args.push_back(a);
  nm_ = Process::startDaemon("nm", freshDir("nm"), nm_args);
  ASSERT_FALSE(nm_.grpcAddress().empty()) << nm_.log();
  auto live = [&] {
    auto [code, out] =
        runCommand({binary("morpheusctl"), "--rm", "localhost:" + dead + ",127.0.0.1:" + port,
                    "--token", testToken("alice"), "--tls-ca", ca_, "--tls-cert", client_id_.cert,
                    "--tls-key", client_id_.key, "cluster", "status", "--json"});
    auto j = nlohmann::json::parse(out, nullptr, false);
    return code == 0 && !j.is_discarded() ? j["live_nodes"].get<int>() : -1;
  };
  EXPECT_TRUE(waitFor([&] { return live() == 1; }, 15s)) << rm_.log() << nm_.log();
}

// A DAG job runs end to end under mTLS: the RM launches the AM on the NM over
// TLS, the NM hands its TLS files to the AM container (MORPHEUS_TLS_*), the AM
// talks to the RM and starts its tasks on the NM over TLS, and the finished
// run's telemetry reaches an inference service that also requires TLS.
TEST_F(TlsIT, DagJobAndTelemetryFlowOverMutualTls) {
  std::vector<std::string> inf_args = {"--set", "inference.auth-disabled=true"};
  for (const auto& a : tlsArgs(ca_, inference_id_)) inf_args.push_back(a);
  Process inf = Process::startDaemon("inference", freshDir("inference"), inf_args);
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  startCluster({"--set", "rm.inference-address=" + inf.grpcAddress(), "--set", "planner.step=2s"});
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  auto [code, out] =
      ctl({"app", "submit", std::string(MORPHEUS_SOURCE_DIR) + "/examples/dag-3stage.yaml",
           "--recurrence", "dag-tls", "--wait"});
  ASSERT_EQ(code, 0) << out << rm_.log() << nm_.log();
  EXPECT_NE(out.find("all 5 task(s) of job 'dag-3stage' succeeded"), std::string::npos) << out;
  std::vector<std::string> inf_ctl = {
      binary("morpheusctl"), "--inference",   inf.grpcAddress(), "--tls-ca",     ca_,
      "--tls-cert",          client_id_.cert, "--tls-key",       client_id_.key, "slo"};
  auto slo = [&](const std::string& verb) {
    std::vector<std::string> argv = inf_ctl;
    argv.push_back(verb);
    return runCommand(argv);
  };
  ASSERT_TRUE(waitFor(
      [&] {
        slo("refit");
        auto [c, o] = slo("list");
        return c == 0 && o.find("dag-tls") != std::string::npos;
      },
      20s))
      << inf.log() << rm_.log();
  // The control: the inference service refuses a plaintext client.
  auto [pc, po] =
      runCommand({binary("morpheusctl"), "--inference", inf.grpcAddress(), "slo", "list"});
  EXPECT_EQ(pc, 1) << po;
}

// Writes 48 hourly runs of job `key` (alice's; input written 2-6 min into the
// hour, 10 min run, output read 15-17 min after) ending before `now_ms`, as
// JSON lines for `history import --format jsonl`.
void writeHourlyHistory(const std::string& path, const std::string& key, int64_t now_ms) {
  constexpr int64_t kMin = 60000, kHour = 60 * kMin;
  std::ofstream out(path);
  int64_t first = now_ms / kHour * kHour - 50 * kHour;
  auto event = [&](const std::string& job, const std::string& run, const std::string& file,
                   const std::string& kind, int64_t t) {
    out << nlohmann::json({{"type", "event"},
                           {"job", job},
                           {"run", run},
                           {"path", file},
                           {"kind", kind},
                           {"time_ms", t}})
               .dump()
        << "\n";
  };
  for (int n = 0; n < 48; n++) {
    int64_t base = first + n * kHour;
    std::string run = key + "-" + std::to_string(n);
    int64_t start = base + 7 * kMin + 10000;
    int64_t end = start + 10 * kMin;
    out << nlohmann::json({{"type", "run"},
                           {"job", key},
                           {"run", run},
                           {"user", "alice"},
                           {"submit_ms", base + 7 * kMin},
                           {"start_ms", start},
                           {"end_ms", end},
                           {"step_ms", kMin},
                           {"skyline", {1, 2, 2, 1, 1, 2, 2, 1, 1, 1}},
                           {"container", {{"memory_mib", 256}, {"vcores", 1}}}})
               .dump()
        << "\n";
    std::string in = "/data/" + key + "/in/" + std::to_string(n);
    std::string outp = "/data/" + key + "/out/" + std::to_string(n);
    event("ingest", "ingest-" + run, in, "write", base + 2 * kMin + (n % 5) * kMin);
    event(key, run, in, "read", start + 1000);
    event(key, run, outp, "write", end - 1000);
    event("consumer", "c-" + run, outp, "read", end + 15 * kMin + (n % 2) * 2 * kMin);
  }
}

// Sign-off reaches the RM over mutual TLS: the inference service's channel to
// the RM presents its certificate, so accepting a proposal creates the
// recurring reservation in an RM that requires TLS.
TEST_F(TlsIT, SignOffReachesTheRmOverMutualTls) {
  startCluster();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  // Inference submits accepted proposals for their owners: an RM admin's token.
  std::string rm_token = pki_.path("inference-rm.token");
  writeSecretFile(rm_token, testToken("ops") + "\n");
  std::vector<std::string> inf_args = {"--rm",  rm_.grpcAddress(),
                                       "--set", "inference.auth-disabled=true",
                                       "--set", "inference.rm-token-file=" + rm_token};
  for (const auto& a : tlsArgs(ca_, inference_id_)) inf_args.push_back(a);
  Process inf = Process::startDaemon("inference", freshDir("inference"), inf_args);
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  auto infCtl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {
        binary("morpheusctl"), "--inference",   inf.grpcAddress(), "--tls-ca",    ca_,
        "--tls-cert",          client_id_.cert, "--tls-key",       client_id_.key};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  };
  std::string history = pki_.path("history.jsonl");
  writeHourlyHistory(history, "tls-hourly", nowMs());
  auto [ci, oi] = infCtl({"history", "import", history, "--format", "jsonl"});
  ASSERT_EQ(ci, 0) << oi << inf.log();
  auto [cr, orf] = infCtl({"slo", "refit"});
  ASSERT_EQ(cr, 0) << orf << inf.log();
  auto [cl, ol] = infCtl({"slo", "list", "--json"});
  ASSERT_EQ(cl, 0) << ol;
  std::string proposal;
  nlohmann::json list = nlohmann::json::parse(ol);
  for (const auto& p : list["proposals"]) {
    if (p["job_key"] == "tls-hourly") proposal = p["proposal_id"].get<std::string>();
  }
  ASSERT_FALSE(proposal.empty()) << ol;
  auto [ca, oa] = infCtl({"slo", "accept", proposal, "--json"});
  ASSERT_EQ(ca, 0) << oa << inf.log() << rm_.log();
  std::string reservation = nlohmann::json::parse(oa)["reservation_id"].get<std::string>();
  ASSERT_FALSE(reservation.empty()) << oa;
  auto [cs, os] = ctl({"reservation", "list"});
  ASSERT_EQ(cs, 0) << os;
  EXPECT_NE(os.find(reservation), std::string::npos) << os;
}

// Each daemon refuses to start, with one line naming the option, when the TLS
// files are incomplete, unreadable, not PEM or do not belong together.
TEST_F(TlsIT, DaemonsRefuseIncompleteOrInvalidTlsSettings) {
  std::string junk = pki_.path("junk.pem");
  std::ofstream(junk) << "not a certificate\n";
  struct Case {
    std::string daemon;
    std::vector<std::string> args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"rm", {"--set", "tls.ca-file=" + ca_}, "config error: tls.cert-file: required"},
      {"nm", {"--set", "tls.key-file=" + nm_id_.key}, "config error: tls.ca-file: required"},
      {"inference",
       {"--set", "tls.ca-file=" + ca_, "--set", "tls.cert-file=" + inference_id_.cert},
       "config error: tls.key-file: required"},
      {"rm", tlsArgs(ca_, {rm_id_.cert, nm_id_.key}), "config error: tls.key-file: '"},
      {"nm", tlsArgs(ca_, {pki_.path("missing.pem"), nm_id_.key}),
       "config error: tls.cert-file: cannot read"},
      {"inference", tlsArgs(junk, inference_id_), "config error: tls.ca-file: no PEM certificate"},
      {"rm", tlsArgs(ca_, foreign_id_), "config error: tls.cert-file: certificate in"},
  };
  for (const auto& c : cases) {
    std::string dir = freshDir(c.daemon + "-badtls");
    std::vector<std::string> args = {"--data-dir", dir, "--grpc-port", "0", "--http-port", "0"};
    if (c.daemon == "inference") args.insert(args.end(), {"--set", "inference.auth-disabled=true"});
    args.insert(args.end(), c.args.begin(), c.args.end());
    Process p = Process::start(binary("morpheus-" + c.daemon), args, dir + ".log");
    ASSERT_EQ(p.wait(10s), 2) << c.daemon << " did not refuse: " << p.log();
    std::string log = p.log();
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_EQ(log.rfind("morpheus-" + c.daemon + ": " + c.expected, 0), 0u)
        << "expected '" << c.expected << "' from " << c.daemon << ", got: " << log;
  }
}

}  // namespace
}  // namespace morpheus::testing
