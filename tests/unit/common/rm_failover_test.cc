// FailoverChannel: per-call failover over a list of RM addresses,
// against in-process gRPC servers on loopback: a fake "standby" that refuses
// every call with the leader hint, a fake "active" ClientService that counts
// calls, and one that fails UNAVAILABLE without a hint (in-flight failure).
#include "common/rm_failover.h"

#include <grpcpp/generic/async_generic_service.h>
#include <gtest/gtest.h>

#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus {
namespace {

using namespace std::chrono_literals;

// Refuses every method UNAVAILABLE with `morpheus-leader: <hint>`.
class FakeStandby : public grpc::CallbackGenericService {
 public:
  explicit FakeStandby(std::string hint) : hint_(std::move(hint)) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    struct Reactor : grpc::ServerGenericBidiReactor {
      Reactor(grpc::GenericCallbackServerContext* ctx, const std::string& hint) {
        ctx->AddTrailingMetadata(kLeaderMetadataKey, hint);
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "standby; active RM is " + hint));
      }
      void OnDone() override { delete this; }
    };
    ++calls;
    return new Reactor(ctx, hint_);
  }
  std::atomic<int> calls{0};

 private:
  std::string hint_;
};

// A ClientService answering GetClusterMetrics with `status` (live_nodes 7 when OK).
class FakeRm : public v1::ClientService::Service {
 public:
  explicit FakeRm(grpc::Status status = grpc::Status::OK) : status_(std::move(status)) {}
  grpc::Status GetClusterMetrics(grpc::ServerContext*, const v1::GetClusterMetricsRequest*,
                                 v1::ClusterMetrics* out) override {
    ++calls;
    if (status_.ok()) out->set_live_nodes(7);
    return status_;
  }
  std::atomic<int> calls{0};

 private:
  grpc::Status status_;
};

// A ClientService that never answers GetClusterMetrics in time: it holds
// each call until the caller gives up (or 10 s pass).
class SilentRm : public v1::ClientService::Service {
 public:
  grpc::Status GetClusterMetrics(grpc::ServerContext* ctx, const v1::GetClusterMetricsRequest*,
                                 v1::ClusterMetrics*) override {
    ++calls;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!ctx->IsCancelled() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);
    }
    return grpc::Status(grpc::StatusCode::INTERNAL, "answered too late");
  }
  std::atomic<int> calls{0};
};

// One loopback server running `service` (or, for a standby, the generic one).
struct Server {
  explicit Server(grpc::Service* service, grpc::CallbackGenericService* generic = nullptr) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (service) b.RegisterService(service);
    if (generic) b.RegisterCallbackGenericService(generic);
    server = b.BuildAndStart();
  }
  ~Server() { server->Shutdown(std::chrono::system_clock::now()); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

// A port nothing listens on (bound once, then released).
std::string deadAddress() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

grpc::Status metrics(FailoverChannel& fc, CallKind kind, v1::ClusterMetrics* out,
                     Millis timeout = Millis(3000)) {
  return fc.unary(&v1::ClientService::Stub::GetClusterMetrics, v1::GetClusterMetricsRequest(), out,
                  timeout, kind);
}

std::shared_ptr<FailoverChannel> channel(const std::string& list) {
  auto fc = FailoverChannel::create(list, TlsOptions{}, "--rm", {Millis(10), Millis(50)});
  EXPECT_TRUE(fc.isOk()) << fc.status().toString();
  return *fc;
}

// A standby's refusal is followed to the hinted active at once; a non-idempotent
// call runs exactly once there and the channel sticks to the active afterwards.
TEST(FailoverChannelTest, StandbyRefusalIsFollowedToTheHintedActive) {
  FakeRm rm;
  Server active(&rm);
  FakeStandby refusal(active.address());
  Server standby(nullptr, &refusal);
  auto fc = channel(standby.address() + "," + active.address());
  v1::ClusterMetrics out;
  grpc::Status st = metrics(*fc, CallKind::kNotIdempotent, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(out.live_nodes(), 7);
  EXPECT_EQ(rm.calls, 1);
  EXPECT_EQ(refusal.calls, 1);
  EXPECT_EQ(fc->current(), active.address());
  ASSERT_TRUE(metrics(*fc, CallKind::kNotIdempotent, &out).ok());
  EXPECT_EQ(refusal.calls, 1) << "the second call went straight to the active";
}

// An address nobody listens on is skipped (nothing was sent), even for a
// call that is not idempotent.
TEST(FailoverChannelTest, ConnectionRefusedMovesToTheNextAddress) {
  FakeRm rm;
  Server active(&rm);
  auto fc = channel(deadAddress() + "," + active.address());
  v1::ClusterMetrics out;
  grpc::Status st = metrics(*fc, CallKind::kNotIdempotent, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(rm.calls, 1);
  EXPECT_EQ(fc->current(), active.address());
}

// UNAVAILABLE without a leader hint (the call may have run at a dying active)
// is returned for a non-idempotent call and retried elsewhere for an idempotent one.
TEST(FailoverChannelTest, InFlightFailureIsRetriedOnlyWhenIdempotent) {
  FakeRm dying(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"));
  Server first(&dying);
  FakeRm rm;
  Server active(&rm);
  const std::string list = first.address() + "," + active.address();
  v1::ClusterMetrics out;
  grpc::Status st = metrics(*channel(list), CallKind::kNotIdempotent, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(rm.calls, 0);
  st = metrics(*channel(list), CallKind::kIdempotent, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(rm.calls, 1);
}

// CANCELLED by a server shutting down as the call arrived (a standby handing
// its ports over) is treated like an in-flight failure: retried only when idempotent.
TEST(FailoverChannelTest, ServerCancelledCallIsRetriedOnlyWhenIdempotent) {
  FakeRm closing(grpc::Status(grpc::StatusCode::CANCELLED, "shutting down"));
  Server first(&closing);
  FakeRm rm;
  Server active(&rm);
  const std::string list = first.address() + "," + active.address();
  v1::ClusterMetrics out;
  EXPECT_EQ(metrics(*channel(list), CallKind::kNotIdempotent, &out).error_code(),
            grpc::StatusCode::CANCELLED);
  EXPECT_EQ(rm.calls, 0);
  grpc::Status st = metrics(*channel(list), CallKind::kIdempotent, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(rm.calls, 1);
}

// With no active RM (both standbys, no leader yet) the call backs off between
// rounds and gives up UNAVAILABLE at its deadline, naming the last address.
TEST(FailoverChannelTest, GivesUpAtTheDeadlineWhenNoRmIsActive) {
  FakeStandby r1(""), r2("");
  Server s1(nullptr, &r1), s2(nullptr, &r2);
  auto fc = channel(s1.address() + "," + s2.address());
  v1::ClusterMetrics out;
  grpc::Status st = metrics(*fc, CallKind::kIdempotent, &out, Millis(1000));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("no active RM"), std::string::npos) << st.error_message();
  EXPECT_GE(r1.calls + r2.calls, 4) << "retried over several rounds";
}

// The deadline passes while the call is still moving between addresses (in
// an attempt at an address that does not answer in time, after a standby's
// refusal): the call gives up as at the end of a round, with the failover's
// UNAVAILABLE naming the standby, not the attempt's own DEADLINE_EXCEEDED.
TEST(FailoverChannelTest, DeadlineDuringAFailoverGivesUpNamingTheLastRefusal) {
  FakeStandby refusal("");
  Server standby(nullptr, &refusal);
  SilentRm silent;
  Server slow(&silent);
  auto fc = channel(standby.address() + "," + slow.address());
  v1::ClusterMetrics out;
  grpc::Status st = metrics(*fc, CallKind::kIdempotent, &out, Millis(2000));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_EQ(st.error_message().rfind("no active RM in 2 address(es), last " + standby.address() +
                                         ": standby; active RM is ",
                                     0),
            0u)
      << st.error_message();
  EXPECT_EQ(silent.calls, 1);
}

// Other errors (the call ran and was refused) are returned without failover.
TEST(FailoverChannelTest, NonUnavailableErrorsAreReturnedAtOnce) {
  FakeRm denied(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no"));
  Server first(&denied);
  FakeRm rm;
  Server second(&rm);
  auto fc = channel(first.address() + "," + second.address());
  v1::ClusterMetrics out;
  EXPECT_EQ(metrics(*fc, CallKind::kIdempotent, &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(rm.calls, 0);
}

// A malformed list is refused naming the field.
TEST(FailoverChannelTest, MalformedListNamesTheField) {
  auto fc = FailoverChannel::create("127.0.0.1:1,,x", TlsOptions{}, "nm.rm-address");
  ASSERT_FALSE(fc.isOk());
  EXPECT_EQ(fc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(fc.status().message().find("nm.rm-address"), std::string::npos);
}

}  // namespace
}  // namespace morpheus
