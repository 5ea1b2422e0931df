// ContainerServiceImpl, the NM's ContainerManager, served on a real
// in-process gRPC server (127.0.0.1, port 0) over a real ContainerRuntime in
// a temporary directory; time is a VirtualClock so token expiry is exact.
// A start without a valid container token for this node and this container
// (none, garbage, forged, another node's, expired, another container's) is
// refused and creates nothing; a valid one runs the command, whose status and
// output the application reads back; a stop kills it and leaves no process.
// Another application's token can neither stop, list nor read a container.
#include "nodemanager/container_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/token.h"
#include "started_runtime.h"

namespace morpheus::nm {
namespace {

using namespace std::chrono_literals;

constexpr char kMaster[] = "rm-master-secret-for-the-container-service-test";
constexpr char kNode[] = "node-a";

// `service` on 127.0.0.1:0 and a client stub to it.
struct Served {
  explicit Served(grpc::Service* service) {
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service);
    server = b.BuildAndStart();
    if (server && port > 0) {
      stub = v1::ContainerManager::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                               grpc::InsecureChannelCredentials()));
    }
  }
  ~Served() {
    if (server) server->Shutdown(std::chrono::system_clock::now() + 1s);
  }
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::ContainerManager::Stub> stub;
};

class ContainerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = freshTestDir("cmsvc");
    ASSERT_NO_FATAL_FAILURE(startRuntime(dir_, metrics_, &runtime_));
    key_.set(deriveNodeKey(kMaster, NodeId(kNode)));  // what the RM hands over at registration
    service_ = std::make_unique<ContainerServiceImpl>(*runtime_, key_, clock_, Millis(60000));
    service_->setNodeId(kNode);
    served_ = std::make_unique<Served>(service_.get());
    ASSERT_NE(served_->stub, nullptr);
  }
  void TearDown() override {
    served_.reset();
    stopRuntime(runtime_);
    std::filesystem::remove_all(dir_);
  }

  // A container token as the RM issues it: signed with `node`'s key.
  std::string token(const std::string& container, const std::string& app,
                    const std::string& node = kNode, Millis valid_for = Millis(600000)) const {
    ContainerTokenInfo info;
    info.container = ContainerId(container);
    info.app = AppId(app);
    info.node = NodeId(node);
    info.resource = Resource(128, 1);
    info.expires = clock_.now() + valid_for;
    return issueContainerToken(TokenSigner(deriveNodeKey(kMaster, NodeId(node))), info);
  }

  v1::StartContainersResponse start(const std::string& id, const std::string& tok,
                                    const std::string& script = "exec sleep 30") {
    v1::StartContainersRequest req;
    auto* r = req.add_requests();
    r->mutable_container()->set_container_id(id);
    r->mutable_container()->set_node_id(kNode);
    r->mutable_container()->set_token(tok);
    // The caller's claim; the token's grant (128 MiB, 1 vcore) is what counts.
    r->mutable_container()->mutable_resource()->set_memory_mib(99999);
    r->mutable_container()->mutable_resource()->set_vcores(64);
    r->mutable_launch_context()->set_command("/bin/sh");
    r->mutable_launch_context()->add_args("-c");
    r->mutable_launch_context()->add_args(script);
    v1::StartContainersResponse resp;
    grpc::ClientContext ctx;
    grpc::Status st = served_->stub->StartContainers(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }
  grpc::Status stop(const std::vector<std::string>& ids, const std::string& tok,
                    v1::StopContainersResponse* resp) {
    v1::StopContainersRequest req;
    for (const auto& id : ids) req.add_container_ids(id);
    req.set_token(tok);
    grpc::ClientContext ctx;
    return served_->stub->StopContainers(&ctx, req, resp);
  }
  grpc::Status statuses(const std::vector<std::string>& ids, const std::string& tok,
                        v1::GetContainerStatusesResponse* resp) {
    v1::GetContainerStatusesRequest req;
    for (const auto& id : ids) req.add_container_ids(id);
    req.set_token(tok);
    grpc::ClientContext ctx;
    return served_->stub->GetContainerStatuses(&ctx, req, resp);
  }
  grpc::Status logs(const std::string& id, const std::string& tok, std::string* out) {
    v1::GetContainerLogsRequest req;
    req.set_container_id(id);
    req.set_token(tok);
    v1::GetContainerLogsResponse resp;
    grpc::ClientContext ctx;
    grpc::Status st = served_->stub->GetContainerLogs(&ctx, req, &resp);
    *out = resp.data();
    return st;
  }
  // Nothing of `id` exists: no runtime record, no directory.
  bool nothingOf(const std::string& id) const {
    return !runtime_->get(ContainerId(id)).has_value() &&
           !std::filesystem::exists(dir_ + "/local/containers/" + id);
  }

  std::string dir_;
  MetricsRegistry metrics_;
  VirtualClock clock_{fromEpochMs(1700000000000)};
  std::unique_ptr<ContainerRuntime> runtime_;
  TokenKey key_;
  std::unique_ptr<ContainerServiceImpl> service_;
  std::unique_ptr<Served> served_;
};

// Every start without a token that verifies here for this very container, on
// this node, unexpired, is PERMISSION_DENIED for that container, with a reason,
// and creates neither a container nor its directory.
TEST_F(ContainerServiceTest, StartWithoutAValidTokenIsRefusedAndStartsNothing) {
  const std::string id = "app1_c1";
  const std::string good = token(id, "app_1");
  const std::string payload = good.substr(0, good.rfind('.'));
  const std::string mac = good.substr(good.rfind('.') + 1);
  std::string flipped_mac = mac;
  flipped_mac[0] = flipped_mac[0] == '0' ? '1' : '0';
  std::string other_app_payload = payload;
  other_app_payload.replace(other_app_payload.find("|app_1|"), 7, "|app_2|");
  ContainerTokenInfo mine;
  mine.container = ContainerId(id);
  mine.app = AppId("app_1");
  mine.node = NodeId(kNode);
  mine.resource = Resource(128, 1);
  mine.expires = clock_.now() + Millis(600000);
  struct Case {
    std::string what, token, reason;
  };
  const std::vector<Case> cases = {
      {"no token", "", "container token"},
      {"not a token", "hello", "container token"},
      {"forged MAC", payload + "." + flipped_mac, "container token"},
      {"payload changed to another app", other_app_payload + "." + mac, "container token"},
      {"signed with a key of the attacker's",
       issueContainerToken(TokenSigner("attacker's own key"), mine), "container token"},
      {"another node's token (its key)", token(id, "app_1", "node-b"), "container token"},
      {"this node's key naming another node",
       [&] {
         ContainerTokenInfo other = mine;
         other.node = NodeId("node-b");
         return issueContainerToken(TokenSigner(deriveNodeKey(kMaster, NodeId(kNode))), other);
       }(),
       "on node-b"},
      {"expired a millisecond ago", token(id, "app_1", kNode, Millis(-1)), "expired at"},
      {"expiring right now", token(id, "app_1", kNode, Millis(0)), "expired at"},
      {"another app's container's token", token("app2_c1", "app_2"), "is for app2_c1"},
      {"another container of the app", token("app1_c9", "app_1"), "is for app1_c9"},
  };
  for (const auto& c : cases) {
    auto resp = start(id, c.token);
    EXPECT_EQ(resp.started_size(), 0) << c.what;
    ASSERT_EQ(resp.failed_size(), 1) << c.what;
    EXPECT_EQ(resp.failed(0).container_id(), id) << c.what;
    EXPECT_EQ(resp.failed(0).code(), "PERMISSION_DENIED") << c.what;
    EXPECT_NE(resp.failed(0).message().find(c.reason), std::string::npos)
        << c.what << ": " << resp.failed(0).message();
    EXPECT_TRUE(nothingOf(id)) << c.what << " started something";
  }
  EXPECT_TRUE(runtime_->snapshot().empty());
  // The control: the same request with the good token starts it.
  auto ok = start(id, good);
  ASSERT_EQ(ok.started_size(), 1) << (ok.failed_size() ? ok.failed(0).message() : "");
  EXPECT_EQ(ok.started(0), id);
}

// Before the node has registered it has no key: every start is UNAVAILABLE.
TEST_F(ContainerServiceTest, UnregisteredNodeStartsNothing) {
  TokenKey unknown;
  ContainerServiceImpl fresh(*runtime_, unknown, clock_);
  fresh.setNodeId(kNode);
  Served s(&fresh);
  ASSERT_NE(s.stub, nullptr);
  v1::StartContainersRequest req;
  auto* r = req.add_requests();
  r->mutable_container()->set_container_id("app1_c1");
  r->mutable_container()->set_token(token("app1_c1", "app_1"));
  r->mutable_launch_context()->set_command("/bin/true");
  v1::StartContainersResponse resp;
  grpc::ClientContext ctx;
  grpc::Status st = s.stub->StartContainers(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_TRUE(nothingOf("app1_c1"));
}

// A container id that is not one (it would name a path) is INVALID_ARGUMENT
// naming container_id, even with a token signed for it; nothing is created.
TEST_F(ContainerServiceTest, MalformedContainerIdIsRefusedBeforeAnyPath) {
  auto resp = start("../escape", token("../escape", "app_1"));
  EXPECT_EQ(resp.started_size(), 0);
  ASSERT_EQ(resp.failed_size(), 1);
  EXPECT_EQ(resp.failed(0).code(), "INVALID_ARGUMENT");
  EXPECT_NE(resp.failed(0).message().find("container_id"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/local/escape"));
  EXPECT_TRUE(runtime_->snapshot().empty());
}

// A valid start runs the command with the token's grant; the application
// reads its status and output; a replay of the token runs nothing twice; a
// stop (with any token of the application) kills it: KILLED by SIGTERM, no
// process of its session left.
TEST_F(ContainerServiceTest, ValidStartRunsTheCommandAndStopLeavesNoProcess) {
  const std::string id = "app1_c1";
  const std::string tok = token(id, "app_1");
  auto started = start(id, tok, "echo started $MORPHEUS_CONTAINER_ID; exec sleep 30");
  ASSERT_EQ(started.started_size(), 1)
      << (started.failed_size() ? started.failed(0).message() : "");
  EXPECT_EQ(started.started(0), id);

  v1::GetContainerStatusesResponse st;
  ASSERT_TRUE(statuses({}, tok, &st).ok());
  ASSERT_EQ(st.statuses_size(), 1);
  EXPECT_EQ(st.statuses(0).container_id(), id);
  EXPECT_EQ(st.statuses(0).state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(st.statuses(0).resource().memory_mib(), 128) << "the token's grant, not the claim";
  EXPECT_EQ(st.statuses(0).resource().vcores(), 1);

  std::string out;
  auto end = std::chrono::steady_clock::now() + 10s;
  while (out.empty() && std::chrono::steady_clock::now() < end) {
    ASSERT_TRUE(logs(id, tok, &out).ok());
    if (out.empty()) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(out, "started " + id + "\n");

  const int session = runtime_->get(ContainerId(id))->session;
  ASSERT_GT(session, 0);
  std::vector<int> pids;
  end = std::chrono::steady_clock::now() + 10s;
  auto runsSleep = [&] {
    pids = sessionProcesses(session);
    for (int pid : pids) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      if (std::getline(comm, name) && name == "sleep") return true;
    }
    return false;
  };
  while (!runsSleep() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(runsSleep()) << "the command is not running";

  auto replay = start(id, tok);
  EXPECT_EQ(replay.started_size(), 0);
  ASSERT_EQ(replay.failed_size(), 1);
  EXPECT_EQ(replay.failed(0).code(), "ALREADY_EXISTS");
  EXPECT_EQ(runtime_->snapshot().size(), 1u);

  v1::StopContainersResponse stopped;
  ASSERT_TRUE(stop({id}, token("app1_c2", "app_1"), &stopped).ok());
  ASSERT_EQ(stopped.stopped_size(), 1)
      << (stopped.failed_size() ? stopped.failed(0).message() : "");
  EXPECT_EQ(stopped.stopped(0), id);

  end = std::chrono::steady_clock::now() + 10s;
  v1::ContainerStatus done;
  while (std::chrono::steady_clock::now() < end) {
    v1::GetContainerStatusesResponse s;
    ASSERT_TRUE(statuses({id}, tok, &s).ok());
    ASSERT_EQ(s.statuses_size(), 1);
    done = s.statuses(0);
    if (done.state() == v1::CONTAINER_COMPLETE) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(done.state(), v1::CONTAINER_COMPLETE) << "the stop did not end the container";
  EXPECT_EQ(done.exit_reason(), v1::EXIT_REASON_KILLED);
  EXPECT_EQ(done.exit_status(), 128 + SIGTERM);
  EXPECT_EQ(done.diagnostics(), "stopped by the application master");
  for (int pid : pids) EXPECT_FALSE(alive(pid)) << "process " << pid << " survived the stop";
  EXPECT_TRUE(sessionProcesses(session).empty());
}

// Another application's token (valid, this node's) stops, lists and reads
// nothing of this application's container, which keeps running; without a
// valid token the calls fail as a whole.
TEST_F(ContainerServiceTest, AnotherApplicationsTokenCannotTouchTheContainer) {
  const std::string id = "app1_c1";
  const std::string mine = token(id, "app_1");
  ASSERT_EQ(start(id, mine).started_size(), 1);
  const std::string theirs = token("app2_c1", "app_2");

  v1::StopContainersResponse stopped;
  ASSERT_TRUE(stop({id}, theirs, &stopped).ok());
  EXPECT_EQ(stopped.stopped_size(), 0);
  ASSERT_EQ(stopped.failed_size(), 1);
  EXPECT_EQ(stopped.failed(0).code(), "PERMISSION_DENIED");
  EXPECT_NE(stopped.failed(0).message().find("another application"), std::string::npos);

  v1::GetContainerStatusesResponse listed;
  ASSERT_TRUE(statuses({}, theirs, &listed).ok());
  EXPECT_EQ(listed.statuses_size(), 0) << "all of app_2's containers: none";
  ASSERT_TRUE(statuses({id}, theirs, &listed).ok());
  EXPECT_EQ(listed.statuses_size(), 0) << "another app's container is left out";

  std::string out;
  EXPECT_EQ(logs(id, theirs, &out).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  v1::StopContainersResponse none;
  EXPECT_EQ(stop({id}, "", &none).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(stop({id}, mine + "0", &none).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(statuses({}, "", &listed).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  ASSERT_TRUE(stop({"app1_c404"}, mine, &stopped).ok());
  ASSERT_EQ(stopped.failed_size(), 1);
  EXPECT_EQ(stopped.failed(0).code(), "NOT_FOUND");

  std::this_thread::sleep_for(300ms);  // longer than the kill grace
  auto s = runtime_->get(ContainerId(id));
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->running) << s->diagnostics;
  EXPECT_EQ(s->reason, ExitReason::kNone);
}

// A token expired at most nm.expired-token-grace ago (here 60 s) still stops
// its application's containers; one expired longer ago is refused, naming the
// option, and the container keeps running.
TEST_F(ContainerServiceTest, ExpiredTokenStopsOnlyWithinTheGrace) {
  ASSERT_EQ(start("app1_c1", token("app1_c1", "app_1")).started_size(), 1);
  ASSERT_EQ(start("app1_c2", token("app1_c2", "app_1")).started_size(), 1);
  const std::string old = token("app1_c0", "app_1", kNode, Millis(60000));
  clock_.advance(Millis(90000));  // expired 30 s ago
  v1::StopContainersResponse stopped;
  ASSERT_TRUE(stop({"app1_c1"}, old, &stopped).ok());
  EXPECT_EQ(stopped.stopped_size(), 1);
  clock_.advance(Millis(60000));  // expired 90 s ago
  grpc::Status st = stop({"app1_c2"}, old, &stopped);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("nm.expired-token-grace"), std::string::npos)
      << st.error_message();
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(runtime_->get(ContainerId("app1_c2"))->running);
}

// A finished, acknowledged container's logs are served after the NM
// restarts (a new runtime over the same directory, nothing in memory), to a
// token of its application signed for this node only; its record keeps the
// expiry of the token it was started with (LogRetention keeps the record
// until then).
TEST_F(ContainerServiceTest, LogsOfAFinishedContainerSurviveARestartForItsAppOnly) {
  const std::string id = "app1_c1";
  const std::string mine = token(id, "app_1");
  ASSERT_EQ(start(id, mine, "echo hi; echo oops >&2").started_size(), 1);
  auto done = [&] {
    auto s = runtime_->get(ContainerId(id));
    return s.has_value() && !s->running;
  };
  for (int i = 0; i < 500 && !done(); i++) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(done());
  runtime_->acknowledge({ContainerId(id)});

  // The NM restarts.
  served_.reset();
  service_.reset();
  stopRuntime(runtime_);
  ASSERT_NO_FATAL_FAILURE(startRuntime(dir_, metrics_, &runtime_));
  service_ = std::make_unique<ContainerServiceImpl>(*runtime_, key_, clock_, Millis(60000));
  service_->setNodeId(kNode);
  served_ = std::make_unique<Served>(service_.get());
  ASSERT_FALSE(runtime_->get(ContainerId(id)).has_value()) << "nothing of it in memory";

  std::string out;
  grpc::Status st = logs(id, token("app1_c9", "app_1"), &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(out, "hi\n");
  EXPECT_EQ(logs(id, token("app2_c1", "app_2"), &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(logs(id, token(id, "app_1", "node-b"), &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED)
      << "a token signed for another node";

  std::ifstream rec(dir_ + "/local/containers/" + id + "/container.acked.json");
  auto j = nlohmann::json::parse(rec, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j.value("token_expires_ms", int64_t{0}), toEpochMs(clock_.now()) + 600000);
}

}  // namespace
}  // namespace morpheus::nm
