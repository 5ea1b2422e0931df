// NodeAgent, the NM's link to the RM, against a scripted in-process
// ResourceTracker on loopback (a fake peer: this is a unit test of the agent)
// and a real ContainerRuntime in a temporary directory. Checks what the agent
// sends (node id, resources, attributes, token, container statuses, sequence,
// epoch) and what it does with the answers: kills and acknowledgements run on
// the runtime, a resync re-registers, a shutdown stops every container,
// refused registrations back off doubling from 200 ms, and an RM answering
// UNAVAILABLE is retried with backoff, never in a tight loop.
#include "nodemanager/node_agent.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/token.h"
#include "started_runtime.h"

namespace morpheus::nm {
namespace {

using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr char kNodeToken[] = "node-token-0123456789abcdef";
constexpr char kNodeKey[] = "node-a-container-token-key";

// What the fake RM received, in arrival order.
struct Registration {
  SteadyTime at;
  std::string authorization;  // "" = no metadata
  v1::RegisterNodeRequest req;
};
struct Heartbeat {
  SteadyTime at;
  std::string authorization;
  v1::NodeHeartbeatRequest req;
};

// A ResourceTracker that records every call and answers from per-method
// scripts (consumed one answer per call, in order); with an empty script it
// registers the node (epoch-1, this node's key, 30 ms heartbeats) and answers
// heartbeats ACTION_NORMAL.
class FakeTracker final : public v1::ResourceTracker::Service {
 public:
  struct RegisterAnswer {
    grpc::Status status;
    v1::RegisterNodeResponse resp;
  };
  struct HeartbeatAnswer {
    grpc::Status status;
    v1::NodeHeartbeatResponse resp;
  };

  static RegisterAnswer accept(const std::string& epoch) {
    RegisterAnswer a;
    a.resp.set_rm_epoch(epoch);
    a.resp.set_heartbeat_interval_ms(30);
    a.resp.set_container_token_secret(kNodeKey);
    return a;
  }
  static RegisterAnswer refuse(grpc::StatusCode code, const std::string& why) {
    return {grpc::Status(code, why), {}};
  }
  static HeartbeatAnswer normal() {
    HeartbeatAnswer a;
    a.resp.set_action(v1::NodeHeartbeatResponse::ACTION_NORMAL);
    a.resp.set_next_heartbeat_interval_ms(30);
    return a;
  }
  static HeartbeatAnswer failing(grpc::StatusCode code, const std::string& why) {
    return {grpc::Status(code, why), {}};
  }

  void scriptRegister(RegisterAnswer a) {
    std::lock_guard<std::mutex> lk(mu_);
    register_script_.push_back(std::move(a));
  }
  void scriptHeartbeat(HeartbeatAnswer a) {
    std::lock_guard<std::mutex> lk(mu_);
    heartbeat_script_.push_back(std::move(a));
  }

  grpc::Status RegisterNode(grpc::ServerContext* ctx, const v1::RegisterNodeRequest* req,
                            v1::RegisterNodeResponse* resp) override {
    std::lock_guard<std::mutex> lk(mu_);
    registrations_.push_back({std::chrono::steady_clock::now(), authorization(*ctx), *req});
    RegisterAnswer a = accept("epoch-1");
    if (!register_script_.empty()) {
      a = std::move(register_script_.front());
      register_script_.pop_front();
    }
    cv_.notify_all();
    *resp = a.resp;
    return a.status;
  }

  grpc::Status NodeHeartbeat(grpc::ServerContext* ctx, const v1::NodeHeartbeatRequest* req,
                             v1::NodeHeartbeatResponse* resp) override {
    std::lock_guard<std::mutex> lk(mu_);
    heartbeats_.push_back({std::chrono::steady_clock::now(), authorization(*ctx), *req});
    HeartbeatAnswer a = normal();
    if (!heartbeat_script_.empty()) {
      a = std::move(heartbeat_script_.front());
      heartbeat_script_.pop_front();
    }
    cv_.notify_all();
    *resp = a.resp;
    return a.status;
  }

  // Waits until `pred(registrations, heartbeats)` holds; false after `timeout`.
  template <typename Pred>
  bool waitUntil(Pred pred, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return pred(registrations_, heartbeats_); });
  }
  std::vector<Registration> registrations() {
    std::lock_guard<std::mutex> lk(mu_);
    return registrations_;
  }
  std::vector<Heartbeat> heartbeats() {
    std::lock_guard<std::mutex> lk(mu_);
    return heartbeats_;
  }

 private:
  static std::string authorization(const grpc::ServerContext& ctx) {
    const auto& md = ctx.client_metadata();
    auto it = md.find("authorization");
    return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RegisterAnswer> register_script_;    // GUARDED_BY(mu_)
  std::deque<HeartbeatAnswer> heartbeat_script_;  // GUARDED_BY(mu_)
  std::vector<Registration> registrations_;       // GUARDED_BY(mu_)
  std::vector<Heartbeat> heartbeats_;             // GUARDED_BY(mu_)
};

// The status the heartbeat `req` reports for container `id`, or nullptr.
const v1::ContainerStatus* statusOf(const v1::NodeHeartbeatRequest& req, const std::string& id) {
  for (const auto& s : req.container_statuses()) {
    if (s.container_id() == id) return &s;
  }
  return nullptr;
}

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = freshTestDir("agent");
    ASSERT_NO_FATAL_FAILURE(startRuntime(dir_, metrics_, &runtime_));
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&rm_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    agent_.reset();  // stops its thread before the RM and the runtime go
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + 1s);
    stopRuntime(runtime_);
    std::filesystem::remove_all(dir_);
  }

  NmOptions options() const {
    NmOptions o;
    o.rm_address = "127.0.0.1:" + std::to_string(port_);
    o.resources = Resource(4096, 4);
    o.attributes = {{"rack", "r1"}};
    o.heartbeat_interval = Millis(30);
    o.full_report_every = 1;
    return o;
  }
  void startAgent(const NmOptions& o, const std::string& token = kNodeToken) {
    agent_ = std::make_unique<NodeAgent>(o, "node-a", "127.0.0.1:45454", "127.0.0.1:8042", token,
                                         metrics_, *runtime_, key_);
    agent_->setRegistrationListener([this](bool registered) {
      std::lock_guard<std::mutex> lk(events_mu_);
      registration_events_.push_back(registered);
    });
  }
  std::vector<bool> registrationEvents() {
    std::lock_guard<std::mutex> lk(events_mu_);
    return registration_events_;
  }

  // Launches a /bin/sh container of app_1 straight on the runtime.
  void launch(const std::string& id, const std::string& script) {
    LaunchSpec s;
    s.id = ContainerId(id);
    s.app = AppId("app_1");
    s.resource = Resource(256, 1);
    s.command = "/bin/sh";
    s.args = {"-c", script};
    ASSERT_TRUE(runtime_->launch(s).isOk()) << id;
  }
  // Waits until `pred(snapshot of id)` holds (nullopt: the runtime forgot it).
  template <typename Pred>
  bool waitContainer(const std::string& id, Pred pred, std::chrono::milliseconds timeout = 10s) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (pred(runtime_->get(ContainerId(id)))) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  std::string dir_;
  MetricsRegistry metrics_;
  std::unique_ptr<ContainerRuntime> runtime_;
  TokenKey key_;
  FakeTracker rm_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<NodeAgent> agent_;
  std::mutex events_mu_;
  std::vector<bool> registration_events_;  // GUARDED_BY(events_mu_)
};

// The registration names the node, its addresses, its resources and
// attributes, carries the node token and lists the containers already
// running; the agent then learns the node's container-token key and the
// RM's heartbeat interval. Heartbeats carry the node id, the epoch, a
// sequence counting up from 1, the running container with its allocation,
// the used total and what the heartbeat extension adds.
TEST_F(NodeAgentTest, RegistersThenHeartbeatsWhatTheNodeRuns) {
  launch("c_run", "exec sleep 30");
  NmOptions o = options();
  o.heartbeat_interval = Millis(60000);  // only the RM's 30 ms lets heartbeats follow
  startAgent(o);
  agent_->setHeartbeatExtension(
      [](v1::NodeHeartbeatRequest* req) { req->mutable_harvest_offer()->set_memory_mib(1234); });
  EXPECT_FALSE(key_.known());
  agent_->start();
  ASSERT_TRUE(rm_.waitUntil([](auto&, auto& hb) { return hb.size() >= 3; }))
      << "heartbeats do not follow the RM's 30 ms interval";
  ASSERT_TRUE(agent_->registered());
  EXPECT_EQ(registrationEvents(), std::vector<bool>{true});

  auto regs = rm_.registrations();
  ASSERT_EQ(regs.size(), 1u);
  const auto& r = regs[0].req;
  EXPECT_EQ(regs[0].authorization, std::string("Bearer ") + kNodeToken);
  EXPECT_EQ(r.node_id(), "node-a");
  EXPECT_EQ(r.container_manager_address(), "127.0.0.1:45454");
  EXPECT_EQ(r.http_address(), "127.0.0.1:8042");
  EXPECT_EQ(r.total().memory_mib(), 4096);
  EXPECT_EQ(r.total().vcores(), 4);
  ASSERT_EQ(r.attributes_size(), 1);
  EXPECT_EQ(r.attributes(0).key(), "rack");
  EXPECT_EQ(r.attributes(0).value(), "r1");
  EXPECT_FALSE(r.version().empty());
  ASSERT_EQ(r.running_containers_size(), 1);
  EXPECT_EQ(r.running_containers(0).container_id(), "c_run");
  EXPECT_EQ(r.running_containers(0).state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(r.running_containers(0).resource().memory_mib(), 256);

  // The key from the registration verifies this node's container tokens.
  ASSERT_TRUE(key_.known());
  ContainerTokenInfo info;
  info.container = ContainerId("c_x");
  info.app = AppId("app_1");
  info.node = NodeId("node-a");
  info.resource = Resource(64, 1);
  info.expires = fromEpochMs(1);
  EXPECT_TRUE(key_.verify(issueContainerToken(TokenSigner(kNodeKey), info)).isOk());
  EXPECT_FALSE(key_.verify(issueContainerToken(TokenSigner("another key"), info)).isOk());

  auto hbs = rm_.heartbeats();
  for (size_t i = 0; i < hbs.size(); i++) {
    const auto& h = hbs[i].req;
    EXPECT_EQ(hbs[i].authorization, std::string("Bearer ") + kNodeToken) << i;
    EXPECT_EQ(h.node_id(), "node-a") << i;
    EXPECT_EQ(h.rm_epoch(), "epoch-1") << i;
    EXPECT_EQ(h.sequence(), static_cast<int64_t>(i + 1)) << i;
    EXPECT_EQ(h.harvest_offer().memory_mib(), 1234) << "the extension's field is sent";
  }
  const auto& first = hbs[0].req;
  EXPECT_FALSE(first.changes_only());
  const v1::ContainerStatus* c = statusOf(first, "c_run");
  ASSERT_NE(c, nullptr) << first.DebugString();
  EXPECT_EQ(c->state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(c->resource().memory_mib(), 256);
  EXPECT_EQ(c->resource().vcores(), 1);
  EXPECT_EQ(first.used().memory_mib(), 256);
  EXPECT_EQ(first.used().vcores(), 1);
}

// nm.auth-disabled: no token, no authorization metadata.
TEST_F(NodeAgentTest, WithoutATokenSendsNoCredentials) {
  startAgent(options(), "");
  agent_->start();
  ASSERT_TRUE(rm_.waitUntil([](auto& regs, auto& hb) { return !regs.empty() && !hb.empty(); }));
  EXPECT_EQ(rm_.registrations()[0].authorization, "");
  EXPECT_EQ(rm_.heartbeats()[0].authorization, "");
}

// Kills ordered by the RM run on the runtime (SIGTERM, the process is gone,
// reported KILLED in the next heartbeats); an order for a container the node
// does not have is ignored; acknowledged completed containers are forgotten
// and no longer reported.
TEST_F(NodeAgentTest, KillsAndAcknowledgesWhatTheRmOrders) {
  launch("c_kill", "exec sleep 30");
  launch("c_done", "exit 0");
  launch("c_keep", "exec sleep 30");
  ASSERT_TRUE(waitContainer("c_done", [](const auto& s) { return s && !s->running; }));
  const int kill_session = runtime_->get(ContainerId("c_kill"))->session;
  ASSERT_GT(kill_session, 0);
  const std::vector<int> kill_pids = sessionProcesses(kill_session);
  ASSERT_FALSE(kill_pids.empty());

  FakeTracker::HeartbeatAnswer orders = FakeTracker::normal();
  orders.resp.add_containers_to_kill("c_kill");
  orders.resp.add_containers_to_kill("c_not_here");
  orders.resp.add_containers_to_acknowledge("c_done");
  rm_.scriptHeartbeat(orders);
  startAgent(options());
  agent_->start();

  ASSERT_TRUE(waitContainer("c_kill", [](const auto& s) { return s && !s->running; }))
      << "the RM's kill order did not stop c_kill";
  auto killed = runtime_->get(ContainerId("c_kill"));
  EXPECT_EQ(killed->reason, ExitReason::kKilled);
  EXPECT_EQ(killed->diagnostics, "killed by the RM");
  for (int pid : kill_pids) EXPECT_FALSE(alive(pid)) << "process " << pid << " of c_kill";
  // The agent runs a response's kills before its acknowledgements: c_kill
  // may be seen stopped before c_done is forgotten.
  EXPECT_TRUE(waitContainer("c_done", [](const auto& s) { return !s.has_value(); }))
      << "acknowledged: forgotten";
  EXPECT_TRUE(runtime_->get(ContainerId("c_keep"))->running) << "not ordered killed";

  // What the RM hears: first c_done complete and c_kill running, then c_kill
  // KILLED and c_done no more.
  const auto first = rm_.heartbeats().at(0).req;
  ASSERT_NE(statusOf(first, "c_done"), nullptr);
  EXPECT_EQ(statusOf(first, "c_done")->state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(statusOf(first, "c_done")->exit_status(), 0);
  ASSERT_NE(statusOf(first, "c_kill"), nullptr);
  EXPECT_EQ(statusOf(first, "c_kill")->state(), v1::CONTAINER_RUNNING);
  ASSERT_TRUE(rm_.waitUntil([](auto&, auto& hb) {
    if (hb.empty()) return false;
    const auto* s = statusOf(hb.back().req, "c_kill");
    return s != nullptr && s->state() == v1::CONTAINER_COMPLETE;
  })) << "c_kill's completion was not reported";
  const auto last = rm_.heartbeats().back().req;
  EXPECT_EQ(statusOf(last, "c_kill")->exit_reason(), v1::EXIT_REASON_KILLED);
  EXPECT_EQ(statusOf(last, "c_done"), nullptr) << last.DebugString();
  EXPECT_EQ(rm_.registrations().size(), 1u) << "an unknown id in a kill order is no resync";
}

// ACTION_SHUTDOWN (node decommissioned): every container is stopped.
TEST_F(NodeAgentTest, ShutdownOrderStopsEveryContainer) {
  launch("c_a", "exec sleep 30");
  launch("c_b", "exec sleep 30");
  FakeTracker::HeartbeatAnswer shutdown = FakeTracker::normal();
  shutdown.resp.set_action(v1::NodeHeartbeatResponse::ACTION_SHUTDOWN);
  rm_.scriptHeartbeat(shutdown);
  startAgent(options());
  agent_->start();
  for (const char* id : {"c_a", "c_b"}) {
    ASSERT_TRUE(waitContainer(id, [](const auto& s) { return s && !s->running; })) << id;
    auto s = runtime_->get(ContainerId(id));
    EXPECT_EQ(s->reason, ExitReason::kKilled) << id;
    EXPECT_EQ(s->diagnostics, "node decommissioned") << id;
  }
}

// ACTION_RESYNC (the RM forgot the node: restart or expiry): the agent
// reports itself unregistered, registers again at once (listing its running
// containers: they survive), and heartbeats with the new epoch, the sequence
// starting over and a full report first.
TEST_F(NodeAgentTest, ResyncOrderReRegistersWithTheRunningContainers) {
  launch("c_run", "exec sleep 30");
  // Change reports in between, so a full one right after the re-registration
  // shows the reporter was reset. The node's phase (heartbeat_report.h) must
  // leave the 2nd to 6th reports of the first registration change reports.
  NmOptions o = options();
  o.full_report_every = 1000;
  ASSERT_LT(std::hash<std::string>{}("node-a") % 1000, 990u) << "pick another node id";
  rm_.scriptRegister(FakeTracker::accept("epoch-1"));
  rm_.scriptRegister(FakeTracker::accept("epoch-2"));
  for (int i = 0; i < 3; i++) rm_.scriptHeartbeat(FakeTracker::normal());
  FakeTracker::HeartbeatAnswer resync = FakeTracker::normal();
  resync.resp.set_action(v1::NodeHeartbeatResponse::ACTION_RESYNC);
  rm_.scriptHeartbeat(resync);
  startAgent(o);
  agent_->start();
  ASSERT_TRUE(rm_.waitUntil([](auto& regs, auto& hb) {
    return regs.size() == 2 && !hb.empty() && hb.back().req.rm_epoch() == "epoch-2" &&
           hb.back().req.sequence() >= 2;
  })) << "no re-registration after the resync order";
  EXPECT_EQ(registrationEvents(), (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(agent_->registered());
  auto regs = rm_.registrations();
  ASSERT_EQ(regs[1].req.running_containers_size(), 1);
  EXPECT_EQ(regs[1].req.running_containers(0).container_id(), "c_run");
  EXPECT_EQ(regs[1].req.total().memory_mib(), 4096);
  EXPECT_GE(regs[1].at, rm_.heartbeats()[3].at) << "registered again after the 4th heartbeat";
  EXPECT_LT(regs[1].at - rm_.heartbeats()[3].at, 1000ms) << "re-registration waits no backoff";

  auto hbs = rm_.heartbeats();
  ASSERT_GE(hbs.size(), 6u);
  // Before: epoch-1, 1..4; the 2nd to 4th are change reports of a node whose
  // container the RM already has.
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(hbs[i].req.rm_epoch(), "epoch-1") << i;
    EXPECT_EQ(hbs[i].req.sequence(), static_cast<int64_t>(i + 1)) << i;
  }
  EXPECT_TRUE(hbs[1].req.changes_only());
  EXPECT_EQ(statusOf(hbs[1].req, "c_run"), nullptr);
  // After: epoch-2 from 1 again, a full report listing c_run.
  EXPECT_EQ(hbs[4].req.rm_epoch(), "epoch-2");
  EXPECT_EQ(hbs[4].req.sequence(), 1);
  EXPECT_FALSE(hbs[4].req.changes_only()) << "the first report after a registration is full";
  ASSERT_NE(statusOf(hbs[4].req, "c_run"), nullptr) << hbs[4].req.DebugString();
  EXPECT_EQ(hbs[5].req.sequence(), 2);
  EXPECT_TRUE(runtime_->get(ContainerId("c_run"))->running) << "a resync keeps containers";
}

// A refused registration (wrong token, node id live elsewhere) is retried
// after 200 ms, then 400, 800, ...: the RM is not flooded. Registered, the
// backoff starts over: a later refusal waits 200 ms again, not 1.6 s.
TEST_F(NodeAgentTest, RefusedRegistrationBacksOffDoublingAndStartsOverOnceRegistered) {
  for (int i = 0; i < 3; i++) {
    rm_.scriptRegister(FakeTracker::refuse(grpc::StatusCode::PERMISSION_DENIED, "bad node token"));
  }
  rm_.scriptRegister(FakeTracker::accept("epoch-1"));
  FakeTracker::HeartbeatAnswer resync = FakeTracker::normal();
  resync.resp.set_action(v1::NodeHeartbeatResponse::ACTION_RESYNC);
  rm_.scriptHeartbeat(resync);
  rm_.scriptRegister(FakeTracker::refuse(grpc::StatusCode::ALREADY_EXISTS, "node-a is live"));
  rm_.scriptRegister(FakeTracker::accept("epoch-2"));
  startAgent(options());
  agent_->start();
  ASSERT_TRUE(rm_.waitUntil([](auto& regs, auto&) { return regs.size() >= 6; }, 15s));
  auto regs = rm_.registrations();
  // Lower bounds only: a loaded machine can make the waits longer, never shorter.
  const std::chrono::milliseconds expected[] = {200ms, 400ms, 800ms};
  for (size_t i = 0; i < 3; i++) {
    auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(regs[i + 1].at - regs[i].at);
    EXPECT_GE(gap, expected[i] * 9 / 10) << "gap after refusal " << i + 1;
  }
  auto again = std::chrono::duration_cast<std::chrono::milliseconds>(regs[5].at - regs[4].at);
  EXPECT_GE(again, 180ms);
  EXPECT_LT(again, 1200ms) << "the backoff did not start over after the registration";
  ASSERT_TRUE(rm_.waitUntil(
      [](auto&, auto& hb) { return !hb.empty() && hb.back().req.rm_epoch() == "epoch-2"; }));
  EXPECT_EQ(registrationEvents(), (std::vector<bool>{true, false, true}))
      << "refusals are no registration";
}

// An RM answering UNAVAILABLE (restarting, overloaded) is retried with a
// growing wait (50 ms doubling: common/rm_failover.h), not in a loop. During
// an outage of heartbeats the node keeps its registration and repeats the same
// heartbeat (same sequence number) until the RM answers, then counts on.
TEST_F(NodeAgentTest, UnavailableRmIsRetriedWithBackoffAndTheNodeStaysRegistered) {
  for (int i = 0; i < 4; i++) {
    rm_.scriptRegister(FakeTracker::refuse(grpc::StatusCode::UNAVAILABLE, "rm restarting"));
  }
  rm_.scriptRegister(FakeTracker::accept("epoch-1"));
  rm_.scriptHeartbeat(FakeTracker::normal());
  for (int i = 0; i < 3; i++) {
    rm_.scriptHeartbeat(FakeTracker::failing(grpc::StatusCode::UNAVAILABLE, "rm overloaded"));
  }
  startAgent(options());
  agent_->start();
  ASSERT_TRUE(rm_.waitUntil([](auto&, auto& hb) { return hb.size() >= 7; }));
  auto regs = rm_.registrations();
  ASSERT_EQ(regs.size(), 5u) << "registered at the 5th attempt, never again";
  const std::chrono::milliseconds expected[] = {50ms, 100ms, 200ms, 400ms};
  for (size_t i = 0; i < 4; i++) {
    auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(regs[i + 1].at - regs[i].at);
    EXPECT_GE(gap, expected[i] * 9 / 10) << "gap after UNAVAILABLE " << i + 1;
  }
  auto hbs = rm_.heartbeats();
  EXPECT_EQ(hbs[0].req.sequence(), 1);
  for (size_t i = 1; i <= 4; i++) {
    EXPECT_EQ(hbs[i].req.sequence(), 2) << "heartbeat " << i << " repeats the unanswered one";
  }
  EXPECT_EQ(hbs[5].req.sequence(), 3);
  EXPECT_EQ(hbs[6].req.sequence(), 4);
  EXPECT_GE(hbs[4].at - hbs[1].at, (50ms + 100ms + 200ms) * 9 / 10);
  EXPECT_EQ(registrationEvents(), std::vector<bool>{true});
  EXPECT_TRUE(agent_->registered());
}

// The node token file: one word of at least 16 characters; errors name
// nm.token-file.
TEST(ReadNodeTokenTest, OneLongWordOrAnErrorNamingTheOption) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("morpheus-nodetoken-" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  auto ok = readNodeToken(file("ok", "# node-a\n  abcdefghijklmnop  # the token\n"));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(*ok, "abcdefghijklmnop");
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"short", "abc\n"},
           {"two", "abcdefghijklmnop qrstuvwxyz012345\n"},
           {"empty", "# x\n"}}) {
    auto r = readNodeToken(file(name, text));
    ASSERT_FALSE(r.isOk()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(r.status().message().find("nm.token-file"), std::string::npos) << name;
  }
  EXPECT_FALSE(readNodeToken(dir + "/missing").isOk());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace morpheus::nm
