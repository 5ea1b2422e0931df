// TLS between the daemons (docs/operator/security.md): a throwaway CA and
// certificates made with the openssl CLI in a temp dir, the real RM, NM,
// inference service, morpheusctl and morpheus-dag-am on loopback. The RM and
// the NM verify a client certificate when one is presented and admit token
// callers without one (tls.client-certs: request, their default): AMs get
// the CA bundle only, never the node's certificate or key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "common/wire.h"
#include "etcd_cluster.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "test_paths.h"
#include "test_pki.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

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

  // How morpheusctl talks to the cluster.
  enum class Client { kCertificate, kCaOnly, kPlaintext };
  // morpheusctl as alice (her token), with her client certificate by default.
  std::pair<int, std::string> ctl(std::vector<std::string> args,
                                  Client client = Client::kCertificate) {
    std::vector<std::string> argv = {
        binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--user", "alice", "--token",
        testToken("alice")};
    if (client != Client::kPlaintext) argv.insert(argv.end(), {"--tls-ca", ca_});
    if (client == Client::kCertificate) {
      argv.insert(argv.end(), {"--tls-cert", client_id_.cert, "--tls-key", client_id_.key});
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

// With TLS on, the NM registers (its channel to the RM presents its
// certificate) and morpheusctl with a client certificate sees the live node.
// The RM's and the NM's gRPC servers (tls.client-certs: request) refuse
// plaintext and a client certificate of another CA, and admit a TLS client
// without a certificate, which then authenticates by its token: morpheusctl
// with the CA alone and alice's token works, without her token it does not.
// An RM with tls.client-certs: require refuses a client without a
// certificate, and says at start that AMs cannot reach it.
TEST_F(TlsIT, ClusterAcceptsOnlyClientsItsCaVerifies) {
  startCluster();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  for (const Process* p : {&rm_, &nm_}) {
    const std::string& addr = p->grpcAddress();
    // The control: the same probe with a certificate of the cluster's CA works.
    EXPECT_EQ(healthCheck(addr, tlsClient(ca_, client_id_)), grpc::StatusCode::OK) << addr;
    EXPECT_EQ(healthCheck(addr, grpc::InsecureChannelCredentials()), grpc::StatusCode::UNAVAILABLE)
        << addr << ": plaintext client";
    EXPECT_EQ(healthCheck(addr, tlsClient(ca_, Identity{})), grpc::StatusCode::OK)
        << addr << ": TLS client without a certificate (tls.client-certs: request)";
    EXPECT_EQ(healthCheck(addr, tlsClient(ca_, foreign_id_)), grpc::StatusCode::UNAVAILABLE)
        << addr << ": client certificate of another CA";
    EXPECT_EQ(healthCheck(addr, tlsClient(other_ca_, Identity{})), grpc::StatusCode::UNAVAILABLE)
        << addr << ": a client that trusts another CA does not accept the server";
  }
  EXPECT_NE(rm_.log().find("tls.client-certs: request"), std::string::npos) << rm_.log();
  // morpheusctl without TLS cannot talk to the RM, and says to pass --tls-ca.
  auto [code, out] = ctl({"cluster", "status", "--json"}, Client::kPlaintext);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("cannot reach the RM at " + rm_.grpcAddress() +
                     ": it accepts connections but no gRPC session"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("pass --tls-ca or set MORPHEUS_TLS_CA"), std::string::npos) << out;
  // With the CA alone and alice's token it does; without a token it is refused.
  std::tie(code, out) = ctl({"cluster", "status", "--json"}, Client::kCaOnly);
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = runCommand(
      {binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--tls-ca", ca_, "cluster", "status"},
      {{"MORPHEUS_TOKEN", ""}});
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("missing credentials"), std::string::npos) << out;
  // morpheusctl refuses, before any call, a certificate its CA did not sign,
  // and a certificate without its key.
  auto [c2, o2] =
      runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--tls-ca", ca_, "--tls-cert",
                  foreign_id_.cert, "--tls-key", foreign_id_.key, "cluster", "status"});
  EXPECT_EQ(c2, 2) << o2;
  EXPECT_NE(o2.find("--tls-cert (MORPHEUS_TLS_CERT): certificate in"), std::string::npos) << o2;
  std::tie(c2, o2) = runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--tls-ca", ca_,
                                 "--tls-cert", client_id_.cert, "cluster", "status"});
  EXPECT_EQ(c2, 2) << o2;
  EXPECT_NE(o2.find("--tls-key (MORPHEUS_TLS_KEY): required when --tls-cert"), std::string::npos)
      << o2;

  // tls.client-certs: require: mutual TLS only, and a warning that AMs cannot connect.
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile(), "--set",
                                   "tls.client-certs=require"};
  for (const auto& a : tlsArgs(ca_, rm_id_)) args.push_back(a);
  Process strict = Process::startDaemon("rm", freshDir("rm-require"), args);
  ASSERT_FALSE(strict.grpcAddress().empty()) << strict.log();
  EXPECT_EQ(healthCheck(strict.grpcAddress(), tlsClient(ca_, client_id_)), grpc::StatusCode::OK);
  EXPECT_EQ(healthCheck(strict.grpcAddress(), tlsClient(ca_, Identity{})),
            grpc::StatusCode::UNAVAILABLE)
      << "TLS client without a certificate";
  EXPECT_NE(strict.log().find("tls.client-certs: require: application masters hold no client "
                              "certificate"),
            std::string::npos)
      << strict.log();
}

// A TLS client without a certificate reaches the RM's and the NM's servers,
// but no method takes that as a credential: node methods need the node's own
// token, user methods a user's token and acting for another user an admin's,
// the AM protocol a valid AM token, the NM a container token. The control: a
// user token works on the same connection. With rm.auth-disabled (no tokens
// to check) such a client is refused everywhere but the certificate holder
// is admitted.
TEST_F(TlsIT, ClientWithoutCertificateCannotCallNodeOrAdminMethodsWithoutItsToken) {
  startCluster();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  grpc::ChannelArguments cargs;
  cargs.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  auto channel = [&](const std::string& addr, const Identity& id) {
    return grpc::CreateCustomChannel(addr, tlsClient(ca_, id), cargs);
  };
  auto rm_ch = channel(rm_.grpcAddress(), Identity{});
  auto tracker = v1::ResourceTracker::NewStub(rm_ch);
  auto client = v1::ClientService::NewStub(rm_ch);
  auto am = v1::ApplicationMaster::NewStub(rm_ch);
  auto as = [](const std::string& principal) {
    auto ctx = makeContext(Millis(5000));
    if (!principal.empty()) ctx->AddMetadata("authorization", "Bearer " + testToken(principal));
    return ctx;
  };
  // Node methods: no token, a user's token, another node's token.
  for (const std::string& who :
       {std::string(), std::string("alice"), std::string("ops"), std::string("nm2")}) {
    v1::RegisterNodeRequest reg;
    reg.set_node_id("nm1");
    reg.set_container_manager_address("127.0.0.1:1");
    reg.mutable_total()->set_memory_mib(1 << 20);
    reg.mutable_total()->set_vcores(1000);
    v1::RegisterNodeResponse reg_resp;
    grpc::Status st = tracker->RegisterNode(as(who).get(), reg, &reg_resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << "RegisterNode as '" << who << "': " << st.error_message();
    EXPECT_TRUE(reg_resp.container_token_secret().empty()) << who;
    v1::UnregisterNodeRequest unreg;
    unreg.set_node_id("nm1");
    v1::UnregisterNodeResponse unreg_resp;
    st = tracker->UnregisterNode(as(who).get(), unreg, &unreg_resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << "UnregisterNode as '" << who << "': " << st.error_message();
  }
  // User methods need a user's token; acting for another user an admin's.
  v1::ListNodesRequest list;
  v1::ListNodesResponse nodes;
  grpc::Status st = client->ListNodes(as("").get(), list, &nodes);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  st = client->ListNodes(as("nm1").get(), list, &nodes);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  st = client->ListNodes(as("alice").get(), list, &nodes);
  ASSERT_TRUE(st.ok()) << "control, alice's token: " << st.error_message();
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).container_manager_address(), nm_.grpcAddress())
      << "the refused RegisterNode changed nothing";
  v1::SubmitApplicationRequest submit;
  submit.set_name("as-bob");
  submit.set_user("bob");
  submit.mutable_am_launch_context()->set_command("/bin/true");
  submit.mutable_am_resource()->set_memory_mib(256);
  submit.mutable_am_resource()->set_vcores(1);
  v1::SubmitApplicationResponse submitted;
  st = client->SubmitApplication(as("alice").get(), submit, &submitted);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  // The AM protocol needs the application's AM token.
  v1::AllocateRequest alloc;
  alloc.set_application_id("application_1_0001");
  alloc.set_am_token("forged");
  v1::AllocateResponse alloc_resp;
  st = am->Allocate(as("ops").get(), alloc, &alloc_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  // The NM needs a container token signed with its key.
  auto cm = v1::ContainerManager::NewStub(channel(nm_.grpcAddress(), Identity{}));
  v1::GetContainerStatusesRequest statuses;
  v1::GetContainerStatusesResponse statuses_resp;
  st = cm->GetContainerStatuses(as("ops").get(), statuses, &statuses_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  v1::StartContainersRequest start;
  auto* r = start.add_requests();
  r->mutable_container()->set_container_id("c_no_token");
  r->mutable_launch_context()->set_command("/bin/true");
  v1::StartContainersResponse started;
  st = cm->StartContainers(as("ops").get(), start, &started);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(started.started_size(), 0);
  ASSERT_EQ(started.failed_size(), 1);
  EXPECT_EQ(started.failed(0).code(), "PERMISSION_DENIED") << started.failed(0).message();

  // rm.auth-disabled: no token to check, so the certificate is the credential.
  std::vector<std::string> args = {"--set", "rm.auth-disabled=true"};
  for (const auto& a : tlsArgs(ca_, rm_id_)) args.push_back(a);
  Process open_rm = Process::startDaemon("rm", freshDir("rm-open"), args);
  ASSERT_FALSE(open_rm.grpcAddress().empty()) << open_rm.log();
  auto anonymous = channel(open_rm.grpcAddress(), Identity{});
  st = v1::ClientService::NewStub(anonymous)->ListNodes(as("").get(), list, &nodes);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  EXPECT_NE(st.error_message().find("presented none"), std::string::npos) << st.error_message();
  v1::RegisterNodeRequest reg;
  reg.set_node_id("nm9");
  reg.set_container_manager_address("127.0.0.1:1");
  v1::RegisterNodeResponse reg_resp;
  st = v1::ResourceTracker::NewStub(anonymous)->RegisterNode(as("").get(), reg, &reg_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_TRUE(reg_resp.container_token_secret().empty());
  auto certified = channel(open_rm.grpcAddress(), client_id_);
  st = v1::ClientService::NewStub(certified)->ListNodes(as("").get(), list, &nodes);
  EXPECT_TRUE(st.ok()) << "control, with a client certificate: " << st.error_message();
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
  // Bound but not listening for the whole test, so no other process can take
  // it and answer in its place.
  ClosedLoopbackPort closed;
  const std::string dead = std::to_string(closed.port());
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

// A DAG job runs end to end under TLS: the RM launches the AM on the NM over
// mutual TLS, the NM gives the AM container the CA bundle only (a copy in its
// directory), the AM talks to the RM and starts its tasks on the NM over
// server-verified TLS with its tokens, and the finished run's telemetry
// reaches an inference service that requires client certificates.
TEST_F(TlsIT, DagJobAndTelemetryFlowOverMutualTls) {
  std::vector<std::string> inf_args = {"--set", "inference.auth-disabled=true"};
  for (const auto& a : tlsArgs(ca_, inference_id_)) inf_args.push_back(a);
  Process inf = Process::startDaemon("inference", freshDir("inference"), inf_args);
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  startCluster({"--set", "rm.inference-address=" + inf.grpcAddress(), "--set", "planner.step=2s"});
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  auto [code, out] = ctl({"app", "submit", std::string(sourceDir()) + "/examples/dag-3stage.yaml",
                          "--recurrence", "dag-tls", "--wait"});
  ASSERT_EQ(code, 0) << out << rm_.log() << nm_.log();
  EXPECT_NE(out.find("all 5 task(s) of job 'dag-3stage' succeeded"), std::string::npos) << out;
  std::vector<std::string> inf_ctl = {
      binary("morpheusctl"), "--inference",   inf.grpcAddress(), "--tls-ca",     ca_,
      "--tls-cert",          client_id_.cert, "--tls-key",       client_id_.key, "slo"};
  auto slo = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = inf_ctl;
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  };
  ASSERT_TRUE(waitFor(
      [&] {
        slo({"refit"});
        auto [c, o] = slo({"list", "--why"});  // a job without a proposal yet
        return c == 0 && o.find("dag-tls") != std::string::npos;
      },
      20s))
      << inf.log() << rm_.log();
  // The control: the inference service refuses a plaintext client.
  auto [pc, po] =
      runCommand({binary("morpheusctl"), "--inference", inf.grpcAddress(), "slo", "list"});
  EXPECT_EQ(pc, 1) << po;
}

// Under TLS in nm-user mode (every container as the NM's account) the NM
// gives an AM the cluster's CA bundle and nothing else of its TLS: the AM's
// environment names a copy of the CA in its container directory (mode 0444,
// the CA's text) and neither the node's certificate nor its key, and a task
// gets no TLS setting at all. The AM still reaches the RM and the NM (its app
// finishes). Before, every AM got MORPHEUS_TLS_CERT and MORPHEUS_TLS_KEY
// naming the node's own files. (That an AM of another account cannot open
// the node's key is RunAsIT.DagJobRunsUnderTlsAsTheSubmittersAccount: here
// the AM runs as the NM's own account, which can read its key by design.)
TEST_F(TlsIT, AmGetsTheCaBundleButNeverTheNodeCertificateOrKey) {
  startCluster();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << rm_.log() << nm_.log();
  std::string dir = freshDir("am-env");
  std::string job = dir + "/job.yaml";
  std::ofstream(job) << "name: am-env\n"
                        "stages:\n"
                        "  - name: hold\n"
                        "    tasks: 1\n"
                        "    command: \"while [ ! -e " +
                            dir +
                            "/go ]; do sleep 0.1; done\"\n"
                            "    resources: {memory_mib: 256, vcores: 1}\n"
                            "    max_attempts: 1\n";
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  std::vector<std::string> am_pids, task_pids;
  ASSERT_TRUE(waitFor(
      [&] {
        am_pids = appProcesses(id, "morpheus-dag-am");
        task_pids = appProcesses(id, "sleep 0.1");
        return !am_pids.empty() && !task_pids.empty();
      },
      60s))
      << rm_.log() << nm_.log();
  for (const auto& pid : am_pids) {
    auto env = processEnvironment(pid);
    EXPECT_EQ(env.count("MORPHEUS_TLS_CERT"), 0u) << "AM pid " << pid;
    EXPECT_EQ(env.count("MORPHEUS_TLS_KEY"), 0u) << "AM pid " << pid;
    for (const auto& [k, v] : env) {
      EXPECT_EQ(v.find(nm_id_.key), std::string::npos) << k << "=" << v;
      EXPECT_EQ(v.find(nm_id_.cert), std::string::npos) << k << "=" << v;
    }
    ASSERT_EQ(env.count("MORPHEUS_TLS_CA"), 1u) << "AM pid " << pid;
    const std::string& ca_copy = env["MORPHEUS_TLS_CA"];
    EXPECT_NE(ca_copy, ca_) << "a copy, not the NM's file";
    EXPECT_EQ(fs::path(ca_copy).filename().string(), "tls-ca.pem");
    EXPECT_EQ(readFile(ca_copy), readFile(ca_));
    EXPECT_EQ(fs::status(ca_copy).permissions(),
              fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  }
  for (const auto& pid : task_pids) {
    for (const auto& [k, v] : processEnvironment(pid)) {
      EXPECT_NE(k.rfind("MORPHEUS_TLS_", 0), 0u) << "task pid " << pid << ": " << k;
    }
  }
  std::ofstream(dir + "/go") << "go\n";
  std::string state;
  EXPECT_TRUE(waitFor(
      [&] {
        auto [c, o] = ctl({"app", "status", id, "--json"});
        auto j = nlohmann::json::parse(o, nullptr, false);
        state = c == 0 && !j.is_discarded() && j.contains("applications")
                    ? j["applications"][0].value("state", "")
                    : "";
        return state == "FINISHED" || state == "FAILED" || state == "KILLED";
      },
      60s));
  EXPECT_EQ(state, "FINISHED") << rm_.log() << nm_.log();
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
  std::string reservation =
      nlohmann::json::parse(oa)["proposals"][0]["reservation_id"].get<std::string>();
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
      {"nm",
       {"--set", "tls.client-certs=optional"},
       "config error: tls.client-certs: 'optional' is not one of: require, request"},
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
