// AM launches do not block each other: a real morpheus-rm with
// two node managers simulated by this process over gRPC, one of them silent.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>

#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"

using namespace morpheus;
using namespace morpheus::testing;
using namespace std::chrono_literals;

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// A ContainerManager that starts nothing but records when each app's AM
// launch arrived.
class RecordingContainerManager final : public v1::ContainerManager::Service {
 public:
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& r : req->requests()) {
      const auto& env = r.launch_context().env();
      if (auto app = env.find("MORPHEUS_APP_ID"); app != env.end())
        arrived_.emplace(app->second, std::chrono::steady_clock::now());
      resp->add_started(r.container().container_id());
    }
    return grpc::Status::OK;
  }
  std::optional<SteadyTime> arrival(const std::string& app) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = arrived_.find(app);
    if (it == arrived_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, SteadyTime> arrived_;
};

// A TCP listener that never accepts: the kernel completes connections in its
// backlog, nothing ever answers. Readable once a connection is waiting.
struct SilentListener {
  int fd = -1;
  int port = 0;
  SilentListener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 16) != 0) return;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~SilentListener() { ::close(fd); }
  bool connected() const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
};

class AmLaunchIT : public ::testing::Test {
 protected:
  void SetUp() override {
    rm_ = Process::startDaemon("rm", freshDir("rm"), rmAuthArgs());
    ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
    auto channel = makeChannel(rm_.grpcAddress(), TlsOptions{});
    tracker_ = v1::ResourceTracker::NewStub(channel);
    client_ = v1::ClientService::NewStub(channel);
  }
  void TearDown() override { rm_.signalAndWait(SIGTERM, 10s); }

  static std::unique_ptr<grpc::ClientContext> as(const std::string& principal) {
    auto ctx = makeContext(Millis(10000));
    ctx->AddMetadata("authorization", "Bearer " + testToken(principal));
    return ctx;
  }
  // Registers `node` (4 GiB, 4 vcores) with its ContainerManager at `address`;
  // the RM's heartbeat interval.
  Millis registerNode(const std::string& node, const std::string& address) {
    v1::RegisterNodeRequest req;
    req.set_node_id(node);
    req.set_container_manager_address(address);
    toProto(Resource(4096, 4), req.mutable_total());
    v1::RegisterNodeResponse resp;
    auto ctx = as(node);
    grpc::Status st = tracker_->RegisterNode(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return Millis(resp.heartbeat_interval_ms());
  }
  void heartbeat(const std::string& node) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(node);
    toProto(Resource(), req.mutable_used());
    v1::NodeHeartbeatResponse resp;
    auto ctx = as(node);
    grpc::Status st = tracker_->NodeHeartbeat(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  std::string submit(const std::string& name) {
    v1::SubmitApplicationRequest req;
    req.set_name(name);
    toProto(Resource(1024, 1), req.mutable_am_resource());
    req.mutable_am_launch_context()->set_command("/bin/true");
    v1::SubmitApplicationResponse resp;
    auto ctx = as("alice");
    grpc::Status st = client_->SubmitApplication(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.application_id();
  }
  std::string amNode(const std::string& app) {
    v1::GetApplicationRequest req;
    req.set_application_id(app);
    v1::ApplicationReport rep;
    auto ctx = as("alice");
    return client_->GetApplication(ctx.get(), req, &rep).ok() ? rep.am_node_id() : "";
  }

  Process rm_;
  std::unique_ptr<v1::ResourceTracker::Stub> tracker_;
  std::unique_ptr<v1::ClientService::Stub> client_;
};

// A node that accepts TCP and never answers holds up only its own AM launch:
// an AM placed on another node afterwards reaches that node's
// ContainerManager within one heartbeat interval.
TEST_F(AmLaunchIT, SilentNodeDoesNotDelayAnAmLaunchOnAnotherNode) {
  SilentListener silent;
  ASSERT_GT(silent.port, 0);
  RecordingContainerManager cm;
  grpc::ServerBuilder sb;
  int cm_port = 0;
  sb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &cm_port);
  sb.RegisterService(&cm);
  auto cm_server = sb.BuildAndStart();
  ASSERT_GT(cm_port, 0);

  // The first AM goes to the silent node (the only one): its launch hangs.
  Millis interval = registerNode("nm1", "127.0.0.1:" + std::to_string(silent.port));
  ASSERT_GT(interval.count(), 0);
  std::string stuck = submit("stuck");
  ASSERT_TRUE(waitFor(
      [&] {
        heartbeat("nm1");
        return amNode(stuck) == "nm1";
      },
      10s))
      << rm_.log();
  ASSERT_TRUE(waitFor([&] { return silent.connected(); }, 5s)) << "the RM never called nm1";

  // The second AM is placed on the answering node by its heartbeat.
  registerNode("nm2", "127.0.0.1:" + std::to_string(cm_port));
  std::string app = submit("free");
  SteadyTime placed;
  ASSERT_TRUE(waitFor(
      [&] {
        heartbeat("nm2");
        placed = std::chrono::steady_clock::now();
        return amNode(app) == "nm2";
      },
      10s))
      << rm_.log();
  ASSERT_TRUE(waitFor([&] { return cm.arrival(app).has_value(); }, 15s)) << rm_.log();
  auto delay = std::chrono::duration_cast<Millis>(*cm.arrival(app) - placed);
  EXPECT_LT(delay, interval) << "AM launch on nm2 waited " << delay.count() << " ms";
  EXPECT_FALSE(cm.arrival(stuck).has_value());
  cm_server->Shutdown();
}

}  // namespace
