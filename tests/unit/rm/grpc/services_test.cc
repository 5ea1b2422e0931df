// The RM's gRPC edge (ResourceTrackerService, ClientServiceImpl,
// ApplicationMasterServiceImpl) served in process as main() wires it
// (tests/support/inproc_rm.h): the real RmCore, ReservationManager,
// AppManager (SQLite), RmRuntime, Strand and ReplyQueue, an Authenticator
// loaded from a token file, and a gRPC server called through the generated
// stubs over its in-process channel. No daemon, no port. The AM launcher is not started, so an AM
// container placed by a heartbeat is never launched; tests act as the AM with the token the RM
// would hand it (AppManager::amToken).
//
// What is checked is the edge's contract (resource_tracker_service.h,
// client_service.h, am_service.h, rm/core/access.h): who may call what, that a
// refused or invalid call changes nothing (in memory and in the state store),
// and that a node's registration reply carries its own container-token key
// only.
#include "rm/grpc/client_service.h"
#include "rm/grpc/resource_tracker_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/auth.h"
#include "common/token.h"
#include "common/wire.h"
#include "inproc_rm.h"
#include "rm/grpc/am_service.h"

#include "../test_db.h"

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "the-rm-master-secret-for-tests";

// Bearer tokens of the test's token file (rm.token-file).
constexpr char kAlice[] = "alice-token-000000000001";
constexpr char kBob[] = "bob-token-0000000000002";
constexpr char kCarol[] = "carol-token-00000000003";  // administers root.default
constexpr char kOps[] = "ops-token-0000000000004";    // role admin
constexpr char kBoss[] = "boss-token-000000000005";   // listed in rm.admins
constexpr char kNm1[] = "nm1-token-0000000000006";
constexpr char kNm2[] = "nm2-token-0000000000007";
constexpr char kStale[] = "stale-token-00000000008";     // alice's, expired
constexpr char kUserNm3[] = "user-nm3-token-000000010";  // a user named like a node
constexpr char kUnknown[] = "nobody-knows-this-token-9";

// Polls `cond` every 10 ms until it holds or `timeout` passes.
bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class RmServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto acls = QueueAcls::parse({{"root.restricted", "bob"}}, {{"root.default", "carol"}});
    ASSERT_TRUE(acls.isOk()) << acls.status().toString();
    testing::InProcRmOptions o;
    o.state_store = freshTestDb("svc");
    o.token_file = std::filesystem::path(o.state_store).replace_extension(".tokens").string();
    o.tokens = std::string(kAlice) + " alice\n" + kBob + " bob\n" + kCarol + " carol\n" + kOps +
               " ops admin\n" + kBoss + " boss\n" + kNm1 + " nm1 node\n" + kNm2 + " nm2 node\n" +
               kStale + " alice expires=2000-01-01\n" + kUserNm3 + " nm3\n";
    o.token_secret = kSecret;
    o.admins = {"boss"};
    o.acls = *acls;
    o.rm.heartbeat_interval = Millis(700);
    o.rm.strand_max_queued = 1000;
    o.apps.queues = {"root.default", "root.restricted"};
    o.runtime.queue_weights = {{"root.default", 1}, {"root.restricted", 1}};
    o.strand = true;
    o.serve = true;
    auto rm = testing::InProcRm::start(clock_, std::move(o));
    ASSERT_TRUE(rm.isOk()) << rm.status().toString();
    rm_ = std::move(rm).value();
    auto channel = rm_->channel();
    tracker_stub_ = v1::ResourceTracker::NewStub(channel);
    client_stub_ = v1::ClientService::NewStub(channel);
    am_stub_ = v1::ApplicationMaster::NewStub(channel);
  }

  void TearDown() override { rm_.reset(); }  // main()'s order (inproc_rm.h)

  // A context carrying `token` as "authorization: Bearer TOKEN" ("" = none).
  static std::unique_ptr<grpc::ClientContext> ctx(const std::string& token) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + 10s);
    if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
    return c;
  }
  // `method` of `stub` called with `req` as the holder of `token`; the
  // response in *out when given.
  template <typename Stub, typename Req, typename Resp>
  static grpc::Status call(Stub& stub,
                           grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                           const std::string& token, const Req& req, Resp* out) {
    Resp resp;
    grpc::Status st = (stub.*method)(ctx(token).get(), req, &resp);
    if (out != nullptr) *out = resp;
    return st;
  }

  // ---- ClientService ----
  static v1::SubmitApplicationRequest submitRequest(const std::string& name = "job") {
    v1::SubmitApplicationRequest r;
    r.set_name(name);
    toProto(Resource(1024, 1), r.mutable_am_resource());
    r.mutable_am_launch_context()->set_command("/bin/true");
    return r;
  }
  grpc::Status submit(const std::string& token, const v1::SubmitApplicationRequest& req,
                      std::string* id = nullptr) {
    v1::SubmitApplicationResponse resp;
    grpc::Status st = client_stub_->SubmitApplication(ctx(token).get(), req, &resp);
    if (id != nullptr) *id = resp.application_id();
    return st;
  }
  // Submits as `token`'s user; fails the test on an error.
  std::string submitted(const std::string& token, const std::string& name = "job") {
    std::string id;
    grpc::Status st = submit(token, submitRequest(name), &id);
    EXPECT_TRUE(st.ok()) << st.error_message();
    EXPECT_FALSE(id.empty());
    return id;
  }
  grpc::Status get(const std::string& token, const std::string& app,
                   v1::ApplicationReport* out = nullptr) {
    v1::GetApplicationRequest req;
    req.set_application_id(app);
    return call(*client_stub_, &v1::ClientService::Stub::GetApplication, token, req, out);
  }
  grpc::Status kill(const std::string& token, const std::string& app,
                    const std::string& as_user = "") {
    v1::KillApplicationRequest req;
    req.set_application_id(app);
    req.set_reason("test");
    req.set_user(as_user);
    v1::KillApplicationResponse resp;
    return client_stub_->KillApplication(ctx(token).get(), req, &resp);
  }
  grpc::Status list(const std::string& token, std::vector<std::string>* ids = nullptr) {
    v1::ListApplicationsRequest req;
    v1::ListApplicationsResponse resp;
    grpc::Status st = client_stub_->ListApplications(ctx(token).get(), req, &resp);
    if (ids != nullptr) {
      ids->clear();
      for (const auto& a : resp.applications()) ids->push_back(a.application_id());
    }
    return st;
  }
  grpc::Status logAccess(const std::string& token, const std::string& app,
                         const std::string& container,
                         v1::GetContainerLogAccessResponse* out = nullptr) {
    v1::GetContainerLogAccessRequest req;
    req.set_application_id(app);
    req.set_container_id(container);
    return call(*client_stub_, &v1::ClientService::Stub::GetContainerLogAccess, token, req, out);
  }
  AppState stateOf(const std::string& app) const { return rm_->apps().get(AppId(app))->state; }

  // ---- ResourceTracker ----
  // 8 vcores; nothing listens at its ContainerManager, so no AM is launched.
  static v1::RegisterNodeRequest registerRequest(const std::string& node) {
    return testing::nodeRegistration(node, 8, {}, "127.0.0.1:1", "127.0.0.1:2");
  }
  grpc::Status registerNode(const std::string& token, const v1::RegisterNodeRequest& req,
                            v1::RegisterNodeResponse* out = nullptr) {
    return call(*tracker_stub_, &v1::ResourceTracker::Stub::RegisterNode, token, req, out);
  }
  v1::NodeHeartbeatRequest heartbeatRequest(const std::string& node) {
    v1::NodeHeartbeatRequest r;
    r.set_node_id(node);
    r.set_sequence(++sequence_);
    r.set_rm_epoch(rm_->core().epoch());
    return r;
  }
  grpc::Status heartbeat(const std::string& token, const v1::NodeHeartbeatRequest& req,
                         v1::NodeHeartbeatResponse* out = nullptr) {
    return call(*tracker_stub_, &v1::ResourceTracker::Stub::NodeHeartbeat, token, req, out);
  }
  grpc::Status unregisterNode(const std::string& token, const std::string& node) {
    v1::UnregisterNodeRequest req;
    req.set_node_id(node);
    v1::UnregisterNodeResponse resp;
    return tracker_stub_->UnregisterNode(ctx(token).get(), req, &resp);
  }
  // Returns once the strand ran every task posted before: the scheduling
  // (background lane, FIFO) that earlier heartbeats asked for included.
  void drainStrand() {
    auto done = std::make_shared<std::promise<void>>();
    auto ran = done->get_future();
    ASSERT_TRUE(rm_->strand()->postBackground([done] { done->set_value(); }));
    ASSERT_EQ(ran.wait_for(10s), std::future_status::ready) << "the strand is stuck";
  }
  // One heartbeat of `node` as its NM, and the scheduling it triggers.
  void heartbeatAndSchedule(const std::string& token, const std::string& node) {
    grpc::Status st = heartbeat(token, heartbeatRequest(node));
    ASSERT_TRUE(st.ok()) << st.error_message();
    drainStrand();
  }
  // Heartbeats `node` (as its NM) until every app in `ids` runs (its AM
  // container placed on a node); fails the test after 10 s.
  void heartbeatUntilRunning(const std::string& token, const std::string& node,
                             const std::vector<std::string>& ids) {
    bool running = waitFor(
        [&] {
          heartbeatAndSchedule(token, node);
          for (const auto& id : ids) {
            if (stateOf(id) != AppState::kRunning) return false;
          }
          return true;
        },
        10s);
    ASSERT_TRUE(running) << "the AMs were never placed";
  }

  // ---- ApplicationMaster ----
  grpc::Status registerAm(const std::string& app, const std::string& am_token,
                          v1::RegisterApplicationMasterResponse* out = nullptr) {
    v1::RegisterApplicationMasterRequest req;
    req.set_application_id(app);
    req.set_am_token(am_token);
    return call(*am_stub_, &v1::ApplicationMaster::Stub::RegisterApplicationMaster, "", req, out);
  }
  static v1::AllocateRequest allocateRequest(const std::string& app, const std::string& am_token,
                                             int count) {
    if (count != 0) return testing::taskAsk(AppId(app), am_token, count);
    v1::AllocateRequest req;
    req.set_application_id(app);
    req.set_am_token(am_token);
    return req;
  }
  grpc::Status allocate(const v1::AllocateRequest& req, v1::AllocateResponse* out = nullptr) {
    return call(*am_stub_, &v1::ApplicationMaster::Stub::Allocate, "", req, out);
  }
  grpc::Status finishAm(const std::string& app, const std::string& am_token,
                        v1::FinalStatus status = v1::FINAL_STATUS_SUCCEEDED) {
    v1::FinishApplicationMasterRequest req;
    req.set_application_id(app);
    req.set_am_token(am_token);
    req.set_final_status(status);
    v1::FinishApplicationMasterResponse resp;
    return am_stub_->FinishApplicationMaster(ctx("").get(), req, &resp);
  }
  std::string amToken(const std::string& app) const {
    return rm_->apps().amToken(AppId(app), rm_->apps().get(AppId(app))->attempt);
  }

  // What a refused call must not change: every app (state, diagnostics,
  // progress, AM) and node (liveness, capacity, last heartbeat and sequence)
  // in memory, and the apps a restarted RM would recover from the store.
  std::string clusterState() {
    std::string out;
    for (const auto& a : rm_->apps().list({}, "")) {
      out += "app " + a.id.value() + " " + a.spec.user.value() + " " + toString(a.state) + " " +
             a.diagnostics + " am=" + a.am_container.value() + "@" + a.am_node.value() +
             " progress=" + std::to_string(a.progress) + "\n";
    }
    for (const auto& n : rm_->core().nodes(/*include_lost=*/true)) {
      out += "node " + n.id.value() + (n.live ? " live " : " lost ") + n.total.toString() +
             " used=" + n.used.toString() + " hb=" + std::to_string(toEpochMs(n.last_heartbeat)) +
             " seq=" + std::to_string(n.last_sequence) + "\n";
    }
    auto recovered = rm_->makeAppManager();
    Status st = recovered->recover();
    EXPECT_TRUE(st.isOk()) << st.toString();
    for (const auto& a : recovered->list({}, "")) {
      out += "stored " + a.id.value() + " " + toString(a.state) + " " + a.diagnostics + "\n";
    }
    return out;
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};
  std::unique_ptr<testing::InProcRm> rm_;
  std::unique_ptr<v1::ResourceTracker::Stub> tracker_stub_;
  std::unique_ptr<v1::ClientService::Stub> client_stub_;
  std::unique_ptr<v1::ApplicationMaster::Stub> am_stub_;
  int64_t sequence_ = 0;
};

// ---------------------------------------------------------------------------
// Authentication of the client surface (RmAccess::caller).

// No token, an unknown one, one in the wrong scheme and an expired one are
// all UNAUTHENTICATED on every ClientService method, and nothing changes.
TEST_F(RmServicesTest, ClientCallsWithoutAValidTokenAreUnauthenticatedAndChangeNothing) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  std::string app = submitted(kAlice);
  const std::string before = clusterState();
  struct Credential {
    std::string label;
    std::function<void(grpc::ClientContext*)> set;
  };
  const std::vector<Credential> credentials = {
      {"none", [](grpc::ClientContext*) {}},
      {"unknown token",
       [](grpc::ClientContext* c) {
         c->AddMetadata("authorization", std::string("Bearer ") + kUnknown);
       }},
      {"not a bearer token",
       [](grpc::ClientContext* c) {
         c->AddMetadata("authorization", std::string("Basic ") + kAlice);
       }},
      {"expired token",
       [](grpc::ClientContext* c) {
         c->AddMetadata("authorization", std::string("Bearer ") + kStale);
       }},
  };
  for (const auto& cred : credentials) {
    SCOPED_TRACE(cred.label);
    auto c = [&] {
      auto x = std::make_unique<grpc::ClientContext>();
      x->set_deadline(std::chrono::system_clock::now() + 10s);
      cred.set(x.get());
      return x;
    };
    std::vector<std::pair<std::string, grpc::Status>> calls;
    {
      v1::SubmitApplicationResponse r;
      calls.emplace_back("SubmitApplication",
                         client_stub_->SubmitApplication(c().get(), submitRequest(), &r));
    }
    {
      v1::KillApplicationRequest q;
      q.set_application_id(app);
      v1::KillApplicationResponse r;
      calls.emplace_back("KillApplication", client_stub_->KillApplication(c().get(), q, &r));
    }
    {
      v1::GetApplicationRequest q;
      q.set_application_id(app);
      v1::ApplicationReport r;
      calls.emplace_back("GetApplication", client_stub_->GetApplication(c().get(), q, &r));
    }
    {
      v1::ListApplicationsResponse r;
      calls.emplace_back("ListApplications", client_stub_->ListApplications(c().get(), {}, &r));
      EXPECT_EQ(r.applications_size(), 0);
    }
    {
      v1::ListNodesResponse r;
      calls.emplace_back("ListNodes", client_stub_->ListNodes(c().get(), {}, &r));
      EXPECT_EQ(r.nodes_size(), 0);
    }
    {
      v1::ClusterMetrics r;
      calls.emplace_back("GetClusterMetrics", client_stub_->GetClusterMetrics(c().get(), {}, &r));
    }
    {
      v1::ListQueuesResponse r;
      calls.emplace_back("ListQueues", client_stub_->ListQueues(c().get(), {}, &r));
    }
    {
      v1::ListAppTelemetryResponse r;
      calls.emplace_back("ListAppTelemetry", client_stub_->ListAppTelemetry(c().get(), {}, &r));
    }
    {
      v1::GetContainerLogAccessRequest q;
      q.set_application_id(app);
      q.set_container_id(app + "_1_am1");
      v1::GetContainerLogAccessResponse r;
      calls.emplace_back("GetContainerLogAccess",
                         client_stub_->GetContainerLogAccess(c().get(), q, &r));
      EXPECT_EQ(r.targets_size(), 0);
    }
    {
      v1::ListContainersRequest q;
      q.set_application_id(app);
      v1::ListContainersResponse r;
      calls.emplace_back("ListContainers", client_stub_->ListContainers(c().get(), q, &r));
      EXPECT_EQ(r.containers_size(), 0);
    }
    for (const auto& [method, st] : calls) {
      EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << method << ": " << st.error_message();
    }
  }
  EXPECT_EQ(clusterState(), before);
  EXPECT_EQ(stateOf(app), AppState::kSubmitted);
}

// The refusal says why, so a user can fix the call.
TEST_F(RmServicesTest, UnauthenticatedRefusalsSayWhatIsWrong) {
  grpc::Status none = list("");
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(none.error_message().find("missing credentials"), std::string::npos)
      << none.error_message();
  grpc::Status unknown = list(kUnknown);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(unknown.error_message(), "unknown token");
  grpc::Status stale = list(kStale);
  EXPECT_EQ(stale.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(stale.error_message().find("the token of alice expired"), std::string::npos)
      << stale.error_message();
}

// A node manager's credential is no user: PERMISSION_DENIED on the client
// surface, and no app is submitted or killed with it.
TEST_F(RmServicesTest, NodeCredentialIsRefusedByTheClientService) {
  std::string app = submitted(kAlice);
  const std::string before = clusterState();
  grpc::Status st = submit(kNm1, submitRequest());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("node credential of nm1 is not a user"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(kill(kNm1, app).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(list(kNm1).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(clusterState(), before);
}

// ---------------------------------------------------------------------------
// The ResourceTracker: only a node's own token acts as that node.

// Without a valid node token (none, unknown, expired, a user's, an admin's)
// RegisterNode, NodeHeartbeat and UnregisterNode are PERMISSION_DENIED and
// the node registry does not change.
TEST_F(RmServicesTest, NodeCallsWithoutTheNodesTokenAreRefusedAndChangeNothing) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  clock_.advance(Millis(5000));  // a heartbeat that got through would move nm1's last heartbeat
  const std::string before = clusterState();
  for (const std::string token : {"", kUnknown, kStale, kAlice, kOps, kBoss}) {
    SCOPED_TRACE("token '" + token + "'");
    grpc::Status reg = registerNode(token, registerRequest("nm1"));
    EXPECT_EQ(reg.error_code(), grpc::StatusCode::PERMISSION_DENIED) << reg.error_message();
    EXPECT_EQ(registerNode(token, registerRequest("nm9")).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    grpc::Status hb = heartbeat(token, heartbeatRequest("nm1"));
    EXPECT_EQ(hb.error_code(), grpc::StatusCode::PERMISSION_DENIED) << hb.error_message();
    grpc::Status un = unregisterNode(token, "nm1");
    EXPECT_EQ(un.error_code(), grpc::StatusCode::PERMISSION_DENIED) << un.error_message();
  }
  grpc::Status admin = registerNode(kOps, registerRequest("nm1"));
  EXPECT_NE(admin.error_message().find("ops is not a node manager"), std::string::npos)
      << admin.error_message();
  // Only the role makes a node: a user whose name is a node id is none.
  grpc::Status named = registerNode(kUserNm3, registerRequest("nm3"));
  EXPECT_EQ(named.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(named.error_message(),
            "nm3 is not a node manager: only a node token may register, heartbeat or unregister "
            "a node");
  EXPECT_EQ(clusterState(), before);
}

// nm1's token cannot register, heartbeat or unregister node nm2 (the
// registration of an impostor, a fake liveness report, a forced removal).
TEST_F(RmServicesTest, NodeTokenCannotActAsAnotherNode) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  grpc::Status impostor = registerNode(kNm1, registerRequest("nm2"));
  EXPECT_EQ(impostor.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(impostor.error_message(), "the node token of nm1 may not act as node 'nm2'");
  ASSERT_EQ(rm_->core().nodes(true).size(), 1u) << "nm2 was registered with nm1's token";

  ASSERT_TRUE(registerNode(kNm2, registerRequest("nm2")).ok());
  clock_.advance(Millis(5000));
  const std::string before = clusterState();
  auto hb = heartbeatRequest("nm2");
  toProto(Resource(4096, 4), hb.mutable_used());
  EXPECT_EQ(heartbeat(kNm1, hb).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(unregisterNode(kNm1, "nm2").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::RegisterNodeRequest takeover = registerRequest("nm2");
  takeover.set_container_manager_address("10.0.0.66:8041");
  EXPECT_EQ(registerNode(kNm1, takeover).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(clusterState(), before);

  // Its own token does each of them.
  EXPECT_TRUE(heartbeat(kNm2, heartbeatRequest("nm2")).ok());
  EXPECT_TRUE(unregisterNode(kNm2, "nm2").ok());
  auto nodes = rm_->core().nodes(/*include_lost=*/false);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].id.value(), "nm1");
}

// The registration reply carries the node's own container-token key (the
// master secret's derivation for that node id), never the master secret: it
// verifies the container tokens the RM issues for this node and no other's.
TEST_F(RmServicesTest, RegisterNodeRepliesWithTheNodesOwnKeyNeverTheMasterSecret) {
  v1::RegisterNodeResponse r1, r2;
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1"), &r1).ok());
  ASSERT_TRUE(registerNode(kNm2, registerRequest("nm2"), &r2).ok());
  EXPECT_EQ(r1.rm_epoch(), rm_->core().epoch());
  EXPECT_EQ(r1.heartbeat_interval_ms(), 700);

  const std::string& key1 = r1.container_token_secret();
  const std::string& key2 = r2.container_token_secret();
  EXPECT_NE(key1, kSecret);
  EXPECT_EQ(key1.find(kSecret), std::string::npos);
  EXPECT_EQ(key1, deriveNodeKey(kSecret, NodeId("nm1")));
  EXPECT_EQ(key2, deriveNodeKey(kSecret, NodeId("nm2")));
  EXPECT_NE(key1, key2);

  ContainerTokenInfo on1{ContainerId("application_1_0001_1_1"),
                         AppId("application_1_0001"),
                         NodeId("nm1"),
                         Resource(1024, 1),
                         {},
                         "alice"};
  ContainerTokenInfo on2 = on1;
  on2.node = NodeId("nm2");
  std::string t1 = rm_->core().issueContainerToken(on1);
  std::string t2 = rm_->core().issueContainerToken(on2);
  EXPECT_TRUE(verifyContainerToken(TokenSigner(key1), t1).isOk());
  EXPECT_FALSE(verifyContainerToken(TokenSigner(key1), t2).isOk())
      << "nm1's key verifies a token for nm2";
  EXPECT_TRUE(verifyContainerToken(TokenSigner(key2), t2).isOk());
  // Nor does the AM token key (the master secret) leave through a node's reply.
  EXPECT_FALSE(
      TokenSigner(key1).verify(rm_->apps().amToken(AppId("application_1_0001"), 1)).isOk());
}

// Invalid node input is INVALID_ARGUMENT naming the wire field, and neither
// registers the node nor records the heartbeat.
TEST_F(RmServicesTest, NodeRpcsRefuseBadInputNamingTheFieldAndChangeNothing) {
  struct Case {
    std::string field;
    std::function<void(v1::RegisterNodeRequest*)> bad;
  };
  const std::vector<Case> registrations = {
      {"total.memory_mib: must be >= 0",
       [](v1::RegisterNodeRequest* r) { r->mutable_total()->set_memory_mib(-1); }},
      {"total.vcores: must be >= 0",
       [](v1::RegisterNodeRequest* r) { r->mutable_total()->set_vcores(-8); }},
      {"attributes.key: must not be empty",
       [](v1::RegisterNodeRequest* r) {
         auto* a = r->add_attributes();
         a->set_key("rack");
         a->set_value("r1");
         a = r->add_attributes();
         a->set_value("no key");
       }},
      {"container_manager_address: must not be empty",
       [](v1::RegisterNodeRequest* r) { r->clear_container_manager_address(); }},
  };
  for (const auto& c : registrations) {
    SCOPED_TRACE(c.field);
    v1::RegisterNodeRequest req = registerRequest("nm1");
    c.bad(&req);
    v1::RegisterNodeResponse resp;
    grpc::Status st = registerNode(kNm1, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message().rfind(c.field, 0), 0u) << st.error_message();
    EXPECT_TRUE(resp.container_token_secret().empty());
  }
  EXPECT_TRUE(rm_->core().nodes(true).empty());
  v1::ListNodesResponse listed;
  ASSERT_TRUE(client_stub_->ListNodes(ctx(kOps).get(), {}, &listed).ok());
  EXPECT_EQ(listed.nodes_size(), 0);

  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  clock_.advance(Millis(5000));
  const std::string before = clusterState();
  auto negative_used = heartbeatRequest("nm1");
  toProto(Resource(1024, 1), negative_used.mutable_used());
  negative_used.mutable_used()->set_vcores(-1);
  grpc::Status st = heartbeat(kNm1, negative_used);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "used.vcores: must be >= 0");
  auto negative_running = heartbeatRequest("nm1");
  negative_running.set_changes_only(true);
  negative_running.set_running_containers(-3);
  st = heartbeat(kNm1, negative_running);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "running_containers: must be >= 0");
  // The report the runtime takes is parsed before the core records anything.
  const std::vector<std::pair<std::string, std::function<void(v1::NodeHeartbeatRequest*)>>>
      reports = {
          {"container_statuses[1].container_id: is required",
           [](v1::NodeHeartbeatRequest* r) {
             r->add_container_statuses()->set_container_id("application_1_0001_1_am1");
             r->add_container_statuses()->set_state(v1::CONTAINER_COMPLETE);
           }},
          {"container_statuses[0].resource.vcores: must be >= 0",
           [](v1::NodeHeartbeatRequest* r) {
             auto* c = r->add_container_statuses();
             c->set_container_id("application_1_0001_1_7");
             c->mutable_resource()->set_vcores(-1);
           }},
          {"primary_usage.cpu_vcores: must be a number >= 0",
           [](v1::NodeHeartbeatRequest* r) { r->mutable_primary_usage()->set_cpu_vcores(-0.5); }},
          {"primary_usage.memory_mib: must be >= 0",
           [](v1::NodeHeartbeatRequest* r) { r->mutable_primary_usage()->set_memory_mib(-1); }},
          {"harvest_offer.memory_mib: must be >= 0",
           [](v1::NodeHeartbeatRequest* r) {
             r->mutable_primary_usage()->set_cpu_vcores(1);
             r->mutable_harvest_offer()->set_memory_mib(-1024);
           }},
      };
  for (const auto& [message, bad] : reports) {
    SCOPED_TRACE(message);
    auto req = heartbeatRequest("nm1");
    bad(&req);
    st = heartbeat(kNm1, req);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), message);
  }
  EXPECT_EQ(clusterState(), before);
}

// A node the liveness check declares lost takes its containers with it: the
// app no longer reports its AM container running, and ListNodes shows the
// node lost.
TEST_F(RmServicesTest, ExpiredNodesContainersAreLost) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  std::string app = submitted(kAlice);
  heartbeatUntilRunning(kNm1, "nm1", {app});
  v1::ApplicationReport report;
  ASSERT_TRUE(get(kAlice, app, &report).ok());
  ASSERT_EQ(report.running_containers(), 1);
  clock_.advance(rm_->options().rm.node_expiry + Millis(1000));
  rm_->core().checkLiveness();
  v1::ListNodesRequest with_lost;
  with_lost.set_include_lost(true);
  v1::ListNodesResponse nodes;
  ASSERT_TRUE(client_stub_->ListNodes(ctx(kAlice).get(), with_lost, &nodes).ok());
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).state(), v1::NodeReport::NODE_STATE_LOST);
  ASSERT_TRUE(get(kAlice, app, &report).ok());
  EXPECT_EQ(report.running_containers(), 0);
}

// A node that unregisters takes its containers with it as one that expires
// does: the runtime hears of it (RmCore's node-lost listener), so the app no
// longer counts its AM container running on a node ListNodes no longer has.
TEST_F(RmServicesTest, UnregisteredNodesContainersAreLostAsOnExpiry) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  std::string app = submitted(kAlice);
  heartbeatUntilRunning(kNm1, "nm1", {app});
  ASSERT_TRUE(unregisterNode(kNm1, "nm1").ok());
  v1::ListNodesRequest with_lost;
  with_lost.set_include_lost(true);
  v1::ListNodesResponse nodes;
  ASSERT_TRUE(client_stub_->ListNodes(ctx(kAlice).get(), with_lost, &nodes).ok());
  EXPECT_EQ(nodes.nodes_size(), 0);
  v1::ApplicationReport report;
  ASSERT_TRUE(get(kAlice, app, &report).ok());
  EXPECT_EQ(report.running_containers(), 0)
      << "the AM container of " << app << " still counts as running on unregistered nm1";
}

// ---------------------------------------------------------------------------
// ClientService: applications.

// Submit, find in the list and by id, kill: each visible to the next call.
TEST_F(RmServicesTest, SubmitListGetAndKillAnApplication) {
  v1::SubmitApplicationRequest req = submitRequest("wordcount");
  req.set_queue("root.default");
  (*req.mutable_tags())["team"] = "search";
  std::string app;
  grpc::Status st = submit(kAlice, req, &app);
  ASSERT_TRUE(st.ok()) << st.error_message();

  v1::ApplicationReport report;
  ASSERT_TRUE(get(kAlice, app, &report).ok());
  EXPECT_EQ(report.application_id(), app);
  EXPECT_EQ(report.name(), "wordcount");
  EXPECT_EQ(report.user(), "alice");  // from the token; the request named no user
  EXPECT_EQ(report.queue(), "root.default");
  EXPECT_EQ(report.state(), v1::APP_STATE_SUBMITTED);

  std::vector<std::string> ids;
  ASSERT_TRUE(list(kAlice, &ids).ok());
  EXPECT_EQ(ids, std::vector<std::string>{app});
  v1::ListApplicationsRequest running_only;
  running_only.add_states(v1::APP_STATE_RUNNING);
  v1::ListApplicationsResponse none;
  ASSERT_TRUE(client_stub_->ListApplications(ctx(kAlice).get(), running_only, &none).ok());
  EXPECT_EQ(none.applications_size(), 0);

  st = kill(kAlice, app);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(get(kAlice, app, &report).ok());
  EXPECT_EQ(report.state(), v1::APP_STATE_KILLED);
  EXPECT_EQ(report.diagnostics(), "killed by alice: test");
  // Persisted: a restarted RM recovers it killed.
  auto recovered = rm_->makeAppManager();
  ASSERT_TRUE(recovered->recover().isOk());
  EXPECT_EQ(recovered->get(AppId(app))->state, AppState::kKilled);
  // A second kill finds it final.
  EXPECT_EQ(kill(kAlice, app).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  v1::ApplicationReport missing;
  EXPECT_EQ(get(kAlice, "application_1_9999", &missing).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Reports are readable by every user; killing an app and reading its logs
// need its owner, an administrator of its queue, or an admin (a token with
// role admin or a user in rm.admins). A refused kill changes nothing.
TEST_F(RmServicesTest, UsersCannotKillOrReadLogsOfAnothersAppUnlessAdmin) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  std::string app = submitted(kAlice);
  const std::string container = app + "_1_am1";
  const std::string before = clusterState();

  v1::ApplicationReport report;
  EXPECT_TRUE(get(kBob, app, &report).ok());
  EXPECT_EQ(report.user(), "alice");

  grpc::Status st = kill(kBob, app);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("bob may not kill application " + app + " of alice"),
            std::string::npos)
      << st.error_message();
  // Naming the owner as the acting user does not help.
  st = kill(kBob, app, "alice");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(st.error_message().rfind("user: bob may not", 0), 0u) << st.error_message();
  v1::GetContainerLogAccessResponse logs;
  st = logAccess(kBob, app, container, &logs);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("bob may not read the logs of application " + app),
            std::string::npos)
      << st.error_message();
  EXPECT_EQ(logs.targets_size(), 0);
  EXPECT_EQ(clusterState(), before);

  // The owner, an admin token, an rm.admins user and the queue's
  // administrator may read the logs: one target per node, with a container
  // token of the app for that node.
  for (const std::string token : {kAlice, kOps, kBoss, kCarol}) {
    SCOPED_TRACE("token " + token);
    st = logAccess(token, app, container, &logs);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(logs.targets_size(), 1);
    EXPECT_EQ(logs.targets(0).node_id(), "nm1");
    auto info = verifyContainerToken(TokenSigner(deriveNodeKey(kSecret, NodeId("nm1"))),
                                     logs.targets(0).token());
    ASSERT_TRUE(info.isOk()) << info.status().toString();
    EXPECT_EQ(info->app.value(), app);
    EXPECT_EQ(info->user, "alice");
  }

  // Kill: an admin token, a user in rm.admins, and the queue administrator.
  std::string by_boss = submitted(kAlice);
  std::string by_carol = submitted(kAlice);
  EXPECT_TRUE(kill(kOps, app).ok());
  EXPECT_TRUE(kill(kBoss, by_boss).ok());
  EXPECT_TRUE(kill(kCarol, by_carol).ok());
  EXPECT_EQ(stateOf(app), AppState::kKilled);
  EXPECT_EQ(stateOf(by_boss), AppState::kKilled);
  EXPECT_EQ(stateOf(by_carol), AppState::kKilled);
  EXPECT_EQ(rm_->apps().get(AppId(by_boss))->diagnostics, "killed by boss: test");

  // Carol administers root.default only: bob's app in root.restricted is not hers.
  v1::SubmitApplicationRequest restricted = submitRequest();
  restricted.set_queue("root.restricted");
  std::string bobs;
  ASSERT_TRUE(submit(kBob, restricted, &bobs).ok());
  EXPECT_EQ(kill(kCarol, bobs).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(stateOf(bobs), AppState::kSubmitted);
}

// A log read names a container of the app, or its AM container when it names
// none. The request is checked before the permission, for every caller alike:
// the app and its AM container id are readable by every user (GetApplication),
// so a wrong container reveals nothing the caller could not read.
TEST_F(RmServicesTest, LogAccessChecksTheContainerBeforeThePermission) {
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1")).ok());
  std::string app = submitted(kAlice);
  std::string other = submitted(kAlice);
  const std::string foreign = other + "_1_am1";
  for (const std::string token : {kAlice, kBob}) {
    SCOPED_TRACE("token " + token);
    v1::GetContainerLogAccessResponse logs;
    grpc::Status st = logAccess(token, app, foreign, &logs);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(),
              "container_id: '" + foreign + "' is not a container of application " + app);
    // No AM container yet, and none named.
    st = logAccess(token, app, "", &logs);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(st.error_message(), "application " + app + " has no AM container yet");
    EXPECT_EQ(logs.targets_size(), 0);
  }
  // A container of the app: the permission decides.
  EXPECT_EQ(logAccess(kBob, app, app + "_1_am1").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(logAccess(kAlice, app, app + "_1_am1").ok());
  EXPECT_EQ(logAccess(kAlice, "", app + "_1_am1").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(logAccess(kAlice, "application_1_9999", "").error_code(), grpc::StatusCode::NOT_FOUND);
}

// The container list leads to the logs: the access of GetContainerLogAccess
// (owner, queue administrator, admin), whatever user the caller names.
TEST_F(RmServicesTest, ListContainersNeedsOwnerQueueAdminOrAdmin) {
  std::string app = submitted(kAlice);
  auto list = [&](const std::string& token, const std::string& id,
                  v1::ListContainersResponse* out) {
    v1::ListContainersRequest req;
    req.set_application_id(id);
    return call(*client_stub_, &v1::ClientService::Stub::ListContainers, token, req, out);
  };
  v1::ListContainersResponse resp;
  grpc::Status st = list(kBob, app, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("bob may not list the containers of application " + app),
            std::string::npos)
      << st.error_message();
  for (const std::string token : {kAlice, kOps, kBoss, kCarol}) {
    SCOPED_TRACE("token " + token);
    st = list(token, app, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.containers_size(), 0) << "no AM launched yet";
    EXPECT_FALSE(resp.partial());
  }
  EXPECT_EQ(list(kAlice, "", &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(kAlice, "application_1_9999", &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Invalid or unauthorized submissions are refused naming the field as the
// request spells it, and store nothing: the list and a restarted RM's
// recovery show no new app.
TEST_F(RmServicesTest, SubmitRefusesBadInputNamingTheFieldAndStoresNothing) {
  struct Case {
    std::string label;
    std::function<void(v1::SubmitApplicationRequest*)> bad;
    grpc::StatusCode code;
    std::string message_start;
  };
  const auto invalid = grpc::StatusCode::INVALID_ARGUMENT;
  const std::vector<Case> cases = {
      {"no launch context", [](v1::SubmitApplicationRequest* r) { r->clear_am_launch_context(); },
       invalid, "am_launch_context.command: is required"},
      {"no command",
       [](v1::SubmitApplicationRequest* r) { r->mutable_am_launch_context()->clear_command(); },
       invalid, "am_launch_context.command: is required"},
      {"no name", [](v1::SubmitApplicationRequest* r) { r->clear_name(); }, invalid,
       "name: is required"},
      {"control character in the name",
       [](v1::SubmitApplicationRequest* r) { r->set_name("job\x1b[2J"); }, invalid,
       "name: contains U+001B"},
      {"negative AM memory",
       [](v1::SubmitApplicationRequest* r) { r->mutable_am_resource()->set_memory_mib(-1); },
       invalid, "am_resource.memory_mib: must be >= 0"},
      {"empty AM resource", [](v1::SubmitApplicationRequest* r) { r->clear_am_resource(); },
       invalid, "am_resource: must be a positive container size"},
      {"unknown queue", [](v1::SubmitApplicationRequest* r) { r->set_queue("root.nope"); }, invalid,
       "queue: unknown queue 'root.nope'"},
      {"unknown reservation",
       [](v1::SubmitApplicationRequest* r) { r->set_reservation_id("reservation_404"); }, invalid,
       "reservation_id: no active reservation reservation_404"},
      {"negative attempts", [](v1::SubmitApplicationRequest* r) { r->set_max_am_attempts(-1); },
       invalid, "max_am_attempts: must be >= 0"},
      {"control character in a tag",
       [](v1::SubmitApplicationRequest* r) { (*r->mutable_tags())["team"] = "a\nb"; }, invalid,
       "tags[team]: contains U+000A"},
      {"another user", [](v1::SubmitApplicationRequest* r) { r->set_user("bob"); },
       grpc::StatusCode::PERMISSION_DENIED, "user: alice may not submit application job as bob"},
      {"a queue alice may not submit to",
       [](v1::SubmitApplicationRequest* r) { r->set_queue("root.restricted"); },
       grpc::StatusCode::PERMISSION_DENIED, "alice may not submit application job"},
  };
  const std::string before = clusterState();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    v1::SubmitApplicationRequest req = submitRequest();
    c.bad(&req);
    std::string id;
    grpc::Status st = submit(kAlice, req, &id);
    EXPECT_EQ(st.error_code(), c.code) << st.error_message();
    EXPECT_EQ(st.error_message().rfind(c.message_start, 0), 0u) << st.error_message();
    EXPECT_TRUE(id.empty());
  }
  std::vector<std::string> ids;
  ASSERT_TRUE(list(kOps, &ids).ok());
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(clusterState(), before);
  // The same request, valid, is accepted: the refusals were about the field.
  EXPECT_TRUE(submit(kAlice, submitRequest()).ok());
}

// The other client RPCs' missing or invalid fields.
TEST_F(RmServicesTest, ClientRpcsRefuseMissingAndInvalidFieldsNamingThem) {
  std::string app = submitted(kAlice);
  const std::string before = clusterState();
  grpc::Status st = get(kAlice, "");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "application_id: is required");
  st = kill(kAlice, "");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "application_id: is required");
  st = logAccess(kAlice, "", "");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "application_id: is required");
  st = logAccess(kAlice, app, "application_1_0042_1_am1");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message().rfind("container_id: 'application_1_0042_1_am1' is not a "
                                     "container of application " +
                                         app,
                                     0),
            0u)
      << st.error_message();
  v1::ListApplicationsRequest bad_state;
  bad_state.add_states(static_cast<v1::ApplicationState>(99));
  v1::ListApplicationsResponse resp;
  st = client_stub_->ListApplications(ctx(kAlice).get(), bad_state, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "states: unknown state 99");
  EXPECT_EQ(resp.applications_size(), 0);
  EXPECT_EQ(clusterState(), before);
}

// ---------------------------------------------------------------------------
// The AM protocol: an AM token acts for its own app's current attempt only.

TEST_F(RmServicesTest, AmTokenOfOneAppCannotActOnAnother) {
  v1::RegisterNodeResponse reg;
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1"), &reg).ok());
  std::string a = submitted(kAlice, "a");
  std::string b = submitted(kBob, "b");
  heartbeatUntilRunning(kNm1, "nm1", {a, b});
  const std::string token_a = amToken(a);
  const std::string token_b = amToken(b);
  ASSERT_TRUE(registerAm(a, token_a).ok());
  ASSERT_TRUE(registerAm(b, token_b).ok());
  const std::string before = clusterState();

  // A's token on B: every AM call refused, naming the token's app.
  grpc::Status st = registerAm(b, token_a);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(st.error_message(), "am_token: issued for " + a + ", not " + b);
  v1::AllocateResponse stolen;
  st = allocate(allocateRequest(b, token_a, 3), &stolen);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(stolen.allocated_size(), 0);
  v1::AllocateRequest progress = allocateRequest(b, token_a, 0);
  progress.set_progress(0.9f);
  EXPECT_EQ(allocate(progress).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  st = finishAm(b, token_a, v1::FINAL_STATUS_FAILED);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // No token, a forged one (another key), and a token of another attempt.
  EXPECT_EQ(registerAm(b, "").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  std::string forged = TokenSigner("some-other-secret").sign("am|" + b + "|1");
  st = finishAm(b, forged);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(st.error_message(), "am_token: invalid");
  st = finishAm(b, rm_->apps().amToken(AppId(b), 2));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("is not the current attempt"), std::string::npos);
  // A container token is no AM token either.
  std::string container_token = rm_->core().issueContainerToken(
      {ContainerId(b + "_1_am1"), AppId(b), NodeId("nm1"), Resource(1024, 1), {}, "bob"});
  EXPECT_EQ(finishAm(b, container_token).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(clusterState(), before);
  EXPECT_EQ(stateOf(b), AppState::kRunning);
  // B's asks did not reach the scheduler: heartbeats grant B nothing (the
  // node has room for the three containers asked for).
  for (int i = 0; i < 3; i++) heartbeatAndSchedule(kNm1, "nm1");
  v1::AllocateResponse own;
  ASSERT_TRUE(allocate(allocateRequest(b, token_b, 0), &own).ok());
  EXPECT_EQ(own.allocated_size(), 0);
  EXPECT_EQ(stateOf(b), AppState::kRunning);
}

// The AM path end to end with its own token: register, ask, get grants
// whose container tokens the node's key from its registration verifies,
// finish. Invalid asks and final statuses name the field and change nothing.
TEST_F(RmServicesTest, AmRegistersAllocatesAndFinishesWithItsOwnToken) {
  v1::RegisterNodeResponse reg;
  ASSERT_TRUE(registerNode(kNm1, registerRequest("nm1"), &reg).ok());
  std::string app = submitted(kAlice);
  heartbeatUntilRunning(kNm1, "nm1", {app});
  const std::string token = amToken(app);
  v1::RegisterApplicationMasterResponse registered;
  ASSERT_TRUE(registerAm(app, token, &registered).ok());
  EXPECT_EQ(registered.queue(), "root.default");

  const std::string before = clusterState();
  v1::AllocateRequest negative = allocateRequest(app, token, 2);
  negative.mutable_asks(0)->set_count(-1);
  grpc::Status st = allocate(negative);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "asks[0].count: must be >= 0");
  v1::AllocateRequest zero = allocateRequest(app, token, 2);
  zero.mutable_asks(0)->clear_capability();
  st = allocate(zero);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "asks[0].capability: must not be zero");
  st = allocate(allocateRequest("", token, 1));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "application_id: is required");
  st = finishAm(app, token, v1::FINAL_STATUS_UNSPECIFIED);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message().rfind("final_status:", 0), 0u) << st.error_message();
  EXPECT_EQ(clusterState(), before);

  v1::AllocateResponse resp;
  ASSERT_TRUE(allocate(allocateRequest(app, token, 2), &resp).ok());
  std::vector<v1::Container> granted;
  ASSERT_TRUE(waitFor(
      [&] {
        heartbeatAndSchedule(kNm1, "nm1");
        v1::AllocateResponse r;
        EXPECT_TRUE(allocate(allocateRequest(app, token, 0), &r).ok());
        for (const auto& c : r.allocated()) granted.push_back(c);
        return granted.size() >= 2;
      },
      10s))
      << "the two containers asked for were never granted";
  ASSERT_EQ(granted.size(), 2u);
  TokenSigner node_key(reg.container_token_secret());
  for (const auto& c : granted) {
    EXPECT_EQ(c.node_id(), "nm1");
    auto info = verifyContainerToken(node_key, c.token());
    ASSERT_TRUE(info.isOk()) << info.status().toString();
    EXPECT_EQ(info->container.value(), c.container_id());
    EXPECT_EQ(info->app.value(), app);
    EXPECT_EQ(info->user, "alice");
  }

  ASSERT_TRUE(finishAm(app, token).ok());
  v1::ApplicationReport report;
  ASSERT_TRUE(get(kAlice, app, &report).ok());
  EXPECT_EQ(report.state(), v1::APP_STATE_FINISHED);
  // Finished: the token no longer allocates.
  EXPECT_EQ(allocate(allocateRequest(app, token, 1)).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace morpheus::rm
