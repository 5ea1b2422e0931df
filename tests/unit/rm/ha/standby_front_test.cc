// StandbyFront, what a standby RM serves while it waits (standby_front.h),
// started in process on ephemeral loopback ports and called over gRPC and
// HTTP as clients and load balancers would: every RM method, and any other,
// is refused UNAVAILABLE naming the active RM (message and `morpheus-leader`
// trailing metadata), before a leader is known and after each change; HTTP
// answers health, readiness and metrics and refuses the web UI and REST.
#include "rm/ha/standby_front.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/rm_failover.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "harness.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/reservation.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;
using testing::httpRequest;

// What the active RM of these tests advertises (nothing listens there).
const LeaderRecord kActive{"10.1.2.3:8030", "10.1.2.3:8088", 4242};
const LeaderRecord kNext{"10.9.8.7:9030", "10.9.8.7:9088", 77};

class StandbyFrontTest : public ::testing::Test {
 protected:
  void SetUp() override { front_ = start(0, 0); }

  std::unique_ptr<StandbyFront> start(int grpc_port, int http_port) {
    auto f = StandbyFront::start(options(grpc_port, http_port), metrics_);
    EXPECT_TRUE(f.isOk()) << f.status().toString();
    return f.isOk() ? std::move(f).value() : nullptr;
  }
  DaemonOptions options(int grpc_port, int http_port) {
    DaemonOptions o;
    o.grpc_host = "127.0.0.1";
    o.grpc_port = grpc_port;
    o.http_host = "127.0.0.1";
    o.http_port = http_port;
    o.data_dir = testing::freshDir("standby");
    return o;
  }
  std::string grpcAddress() const { return "127.0.0.1:" + std::to_string(front_->grpcPort()); }
  std::string httpAddress() const { return "127.0.0.1:" + std::to_string(front_->httpPort()); }

  // One refused call: its status and the leader hint it carried.
  struct Refusal {
    std::string method;
    grpc::Status status;
    std::optional<std::string> hint;
  };

  // Calls one method of each RM service and one no service has, with
  // credentials where a real client sends them.
  std::vector<Refusal> callEveryService() {
    auto channel = grpc::CreateChannel(grpcAddress(), grpc::InsecureChannelCredentials());
    std::vector<Refusal> out;
    auto client = v1::ClientService::NewStub(channel);
    auto tracker = v1::ResourceTracker::NewStub(channel);
    v1::SubmitApplicationRequest submit;
    submit.set_name("job");
    EXPECT_TRUE(call(&out, "SubmitApplication", *client,
                     &v1::ClientService::Stub::SubmitApplication, submit)
                    .application_id()
                    .empty());
    call(&out, "ListApplications", *client, &v1::ClientService::Stub::ListApplications, {});
    call(&out, "NewReservation", *v1::ReservationService::NewStub(channel),
         &v1::ReservationService::Stub::NewReservation, {});
    v1::RegisterNodeRequest reg;
    reg.set_node_id("nm1");
    EXPECT_TRUE(call(&out, "RegisterNode", *tracker, &v1::ResourceTracker::Stub::RegisterNode, reg)
                    .container_token_secret()
                    .empty());
    v1::NodeHeartbeatRequest beat;
    beat.set_node_id("nm1");
    call(&out, "NodeHeartbeat", *tracker, &v1::ResourceTracker::Stub::NodeHeartbeat, beat);
    v1::AllocateRequest alloc;
    alloc.set_application_id("application_1_0001");
    call(&out, "Allocate", *v1::ApplicationMaster::NewStub(channel),
         &v1::ApplicationMaster::Stub::Allocate, alloc);
    grpc::ClientContext ctx;
    asAClient(&ctx);
    grpc::Status st = genericCall(channel, &ctx);
    out.push_back({"/no.such.Service/Method", st, leaderHint(ctx)});
    return out;
  }

  // What a real client sets on a call: a deadline and a user's bearer token.
  static void asAClient(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + 10s);
    ctx->AddMetadata("authorization", "Bearer some-user-token-0001");
  }
  // `rpc` of `stub` called as a client would (asAClient) with `req`; its
  // status and leader hint recorded in `out` as `method`'s. The response.
  template <typename Stub, typename Req, typename Resp>
  static Resp call(std::vector<Refusal>* out, const std::string& method, Stub& stub,
                   grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Req&, Resp*),
                   const Req& req) {
    grpc::ClientContext ctx;
    asAClient(&ctx);
    Resp resp;
    grpc::Status st = (stub.*rpc)(&ctx, req, &resp);
    out->push_back({method, st, leaderHint(ctx)});
    return resp;
  }

  // A unary call of a method no service of the RM has.
  static grpc::Status genericCall(const std::shared_ptr<grpc::Channel>& channel,
                                  grpc::ClientContext* ctx) {
    grpc::GenericStub stub(channel);
    grpc::Slice payload(
        std::string("\x0a\x03"
                    "abc"));
    grpc::ByteBuffer request(&payload, 1);
    grpc::ByteBuffer response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    stub.UnaryCall(ctx, "/no.such.Service/Method", grpc::StubOptions(), &request, &response,
                   [&](grpc::Status st) {
                     std::lock_guard<std::mutex> lk(mu);
                     status = std::move(st);
                     done = true;
                     cv.notify_one();
                   });
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return done; });
    return status;
  }

  // Every call refused UNAVAILABLE with `message` and the hint `hint`.
  void expectAllRefused(const std::string& message, const std::string& hint) {
    auto refusals = callEveryService();
    ASSERT_EQ(refusals.size(), 7u);
    for (const auto& r : refusals) {
      SCOPED_TRACE(r.method);
      EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
      EXPECT_EQ(r.status.error_message(), message);
      ASSERT_TRUE(r.hint.has_value()) << "no morpheus-leader trailing metadata";
      EXPECT_EQ(*r.hint, hint);
    }
  }

  // The HTTP side's answers to the web UI and REST, every method.
  void expectHttpRefused(const std::string& body) {
    for (const std::string method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
      for (const std::string path :
           {"/", "/ui", "/ui/index.html", "/ui/api/cluster", "/ws/v1/cluster/info",
            "/ws/v1/cluster/reservation/new-reservation", "/ws/v1/cluster/apps/x/state"}) {
        auto r = httpRequest(httpAddress(), method, path, "{}");
        EXPECT_EQ(r.status, 503) << method << " " << path << ": " << r.body;
        EXPECT_EQ(r.body, body) << method << " " << path;
      }
    }
  }

  MetricsRegistry metrics_;
  std::unique_ptr<StandbyFront> front_;
};

// Before any leader is known: the refusals say there is none, with an empty hint.
TEST_F(StandbyFrontTest, RefusesEveryGrpcCallBeforeALeaderIsKnown) {
  ASSERT_NE(front_, nullptr);
  expectAllRefused("standby; no active RM yet", "");
}

// After setLeader the refusals name the leader's gRPC address, in the message
// and the hint; a new leader replaces it; "" goes back to none.
TEST_F(StandbyFrontTest, RefusesEveryGrpcCallNamingTheCurrentLeader) {
  ASSERT_NE(front_, nullptr);
  front_->setLeader(encodeLeaderRecord(kActive));
  expectAllRefused("standby; active RM is 10.1.2.3:8030", "10.1.2.3:8030");
  front_->setLeader(encodeLeaderRecord(kNext));
  expectAllRefused("standby; active RM is 10.9.8.7:9030", "10.9.8.7:9030");
  front_->setLeader("");
  expectAllRefused("standby; no active RM yet", "");
}

// An older RM's leader value ("host:port (pid N)") still names its gRPC address.
TEST_F(StandbyFrontTest, NamesALeaderOfTheOlderRecordFormat) {
  ASSERT_NE(front_, nullptr);
  front_->setLeader("10.5.5.5:8030 (pid 12)");
  expectAllRefused("standby; active RM is 10.5.5.5:8030", "10.5.5.5:8030");
}

// The standby reports itself NOT_SERVING to gRPC health checks.
TEST_F(StandbyFrontTest, HealthServiceReportsNotServing) {
  ASSERT_NE(front_, nullptr);
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(grpcAddress(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status st = stub->Check(&ctx, {}, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
}

// HTTP: alive, not ready (naming the active RM's HTTP address, only the
// current one), metrics with the role gauge at 0, and 503 naming the active
// RM's HTTP address for the web UI and REST under every method.
TEST_F(StandbyFrontTest, HttpAnswersHealthReadinessAndRefusesTheUiAndRest) {
  ASSERT_NE(front_, nullptr);
  auto health = httpRequest(httpAddress(), "GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  auto ready = httpRequest(httpAddress(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body, "not ready: active (standby; no active RM yet)\n");
  auto metrics = httpRequest(httpAddress(), "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("morpheus_rm_ha_active 0\n"), std::string::npos) << metrics.body;
  expectHttpRefused("standby; no active RM yet\n");

  front_->setLeader(encodeLeaderRecord(kActive));
  ready = httpRequest(httpAddress(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body, "not ready: active (standby; active RM is 10.1.2.3:8088)\n");
  expectHttpRefused("standby; active RM is 10.1.2.3:8088\n");

  front_->setLeader(encodeLeaderRecord(kNext));
  ready = httpRequest(httpAddress(), "GET", "/readyz");
  EXPECT_EQ(ready.body, "not ready: active (standby; active RM is 10.9.8.7:9088)\n")
      << "the previous leader's condition is still listed";
  expectHttpRefused("standby; active RM is 10.9.8.7:9088\n");
  EXPECT_EQ(httpRequest(httpAddress(), "GET", "/healthz").status, 200);
}

// The active RM serves its web UI at "/ui/" too (web_ui.cc), and the subtree
// route "/ui/*" matches only paths strictly below "/ui/": the standby refuses
// "/ui/" itself with the 503 naming the active RM, not a 404.
TEST_F(StandbyFrontTest, RefusesTheUiPathWithATrailingSlash) {
  ASSERT_NE(front_, nullptr);
  front_->setLeader(encodeLeaderRecord(kActive));
  auto r = httpRequest(httpAddress(), "GET", "/ui/");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.body, "standby; active RM is 10.1.2.3:8088\n");
}

// A busy port is UNAVAILABLE naming the address; once the front is destroyed
// its ports are free for the real servers (a new front takes both).
TEST_F(StandbyFrontTest, BusyPortIsRefusedAndPortsAreFreedOnDestruction) {
  ASSERT_NE(front_, nullptr);
  const int grpc_port = front_->grpcPort(), http_port = front_->httpPort();
  // Connections of both kinds, so the ports have had clients when freed.
  expectAllRefused("standby; no active RM yet", "");
  EXPECT_EQ(httpRequest(httpAddress(), "GET", "/healthz").status, 200);

  auto busy_grpc = StandbyFront::start(options(grpc_port, 0), metrics_);
  ASSERT_FALSE(busy_grpc.isOk());
  EXPECT_EQ(busy_grpc.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(busy_grpc.status().message().find("127.0.0.1:" + std::to_string(grpc_port)),
            std::string::npos)
      << busy_grpc.status().message();
  auto busy_http = StandbyFront::start(options(0, http_port), metrics_);
  ASSERT_FALSE(busy_http.isOk());
  EXPECT_EQ(busy_http.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(busy_http.status().message().find("127.0.0.1:" + std::to_string(http_port)),
            std::string::npos)
      << busy_http.status().message();
  // The failed starts did not disturb the running front.
  expectAllRefused("standby; no active RM yet", "");

  front_.reset();
  front_ = start(grpc_port, http_port);
  ASSERT_NE(front_, nullptr) << "the destroyed front kept its ports";
  EXPECT_EQ(front_->grpcPort(), grpc_port);
  EXPECT_EQ(front_->httpPort(), http_port);
  EXPECT_EQ(httpRequest(httpAddress(), "GET", "/healthz").status, 200);
}

// The leader record (the etcd value) and the advertised host.
TEST(LeaderRecordTest, EncodesAndDecodesAndReadsTheOlderFormat) {
  LeaderRecord r = decodeLeaderRecord(encodeLeaderRecord(kActive));
  EXPECT_EQ(r.grpc, kActive.grpc);
  EXPECT_EQ(r.http, kActive.http);
  EXPECT_EQ(r.pid, kActive.pid);
  LeaderRecord old = decodeLeaderRecord("rm1:8030 (pid 9)");
  EXPECT_EQ(old.grpc, "rm1:8030");
  EXPECT_EQ(old.http, "");
  EXPECT_EQ(advertisedHost("rm.example.com", "0.0.0.0"), "rm.example.com");
  EXPECT_EQ(advertisedHost("", "10.0.0.5"), "10.0.0.5");
  for (const std::string wildcard : {"", "0.0.0.0", "::", "[::]"}) {
    std::string host = advertisedHost("", wildcard);
    EXPECT_FALSE(host.empty());
    EXPECT_NE(host, wildcard);
  }
}

}  // namespace
}  // namespace morpheus::rm
