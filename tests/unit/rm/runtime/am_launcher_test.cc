// AmLauncher: concurrent, bounded AM launches over real gRPC on
// loopback, against an in-process ContainerManager and a silent listener.
#include "rm/runtime/am_launcher.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;

// Starts every container and counts the calls it is serving at once.
class CountingContainerManager final : public v1::ContainerManager::Service {
 public:
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    int now = ++active_;
    int seen = max_active_.load();
    while (now > seen && !max_active_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(20ms);  // a launch takes a while on a real NM
    for (const auto& r : req->requests()) resp->add_started(r.container().container_id());
    --active_;
    return grpc::Status::OK;
  }
  int maxActive() const { return max_active_.load(); }

 private:
  std::atomic<int> active_{0}, max_active_{0};
};

// Answers every StartContainers as a node manager that cannot run the
// container (a failed entry with its code and message), or, with `error`,
// fails the call itself.
class RefusingContainerManager final : public v1::ContainerManager::Service {
 public:
  explicit RefusingContainerManager(bool error = false) : error_(error) {}
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    calls_++;
    if (error_)
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node not registered with the RM yet");
    for (const auto& r : req->requests()) {
      auto* f = resp->add_failed();
      f->set_container_id(r.container().container_id());
      f->set_code("PERMISSION_DENIED");
      f->set_message("container token: expired");
    }
    return grpc::Status::OK;
  }
  int calls() const { return calls_.load(); }

 private:
  const bool error_;
  std::atomic<int> calls_{0};
};

// Serves `service` on 127.0.0.1:0 for the scope of the object.
class Served {
 public:
  explicit Served(grpc::Service* service) {
    grpc::ServerBuilder sb;
    sb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    sb.RegisterService(service);
    server_ = sb.BuildAndStart();
  }
  ~Served() { server_->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Listens and never accepts: connections complete in the backlog, unanswered.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~SilentListener() { ::close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Launch outcomes as the Done callback reports them.
struct Outcomes {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> by_container;  // container id -> error ("" = started)
  bool waitFor(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, timeout, [&] { return by_container.size() >= n; });
  }
};

AmLaunch launch(const std::string& node, const std::string& address, const std::string& id) {
  AmLaunch l{AppId("app-" + id), NodeId(node), address, {}};
  auto* r = l.request.add_requests();
  r->mutable_container()->set_container_id(id);
  r->mutable_container()->set_node_id(node);
  return l;
}

class AmLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder sb;
    sb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    sb.RegisterService(&cm_);
    server_ = sb.BuildAndStart();
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }
  std::string cmAddress() const { return "127.0.0.1:" + std::to_string(port_); }
  AmLauncher::Done record() {
    return [this](const AmLaunch& l, const std::string& error) {
      std::lock_guard<std::mutex> lk(out_.mu);
      out_.by_container[l.request.requests(0).container().container_id()] = error;
      out_.cv.notify_all();
    };
  }

  CountingContainerManager cm_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  Outcomes out_;
};

// Launches on a silent node do not hold up launches on an answering node,
// and stop() cancels the silent ones at once (reported as failures).
TEST_F(AmLauncherTest, SilentNodeDelaysOnlyItsOwnLaunches) {
  SilentListener silent;
  AmLauncherOptions o;
  o.timeout = Millis(30000);
  AmLauncher launcher(o, record());
  launcher.start();
  for (int i = 0; i < 4; i++)
    launcher.submit(launch("dead", silent.address(), "d" + std::to_string(i)));
  for (int i = 0; i < 4; i++) launcher.submit(launch("good", cmAddress(), "g" + std::to_string(i)));
  ASSERT_TRUE(out_.waitFor(4, 5s));
  {
    std::lock_guard<std::mutex> lk(out_.mu);
    for (int i = 0; i < 4; i++) EXPECT_EQ(out_.by_container.at("g" + std::to_string(i)), "");
  }
  EXPECT_EQ(launcher.inFlight(), 2);  // the dead node's two slots
  EXPECT_EQ(launcher.queued(), 2u);
  auto t0 = std::chrono::steady_clock::now();
  launcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  std::lock_guard<std::mutex> lk(out_.mu);
  EXPECT_NE(out_.by_container.at("d0").find("cannot reach node dead"), std::string::npos);
}

// At most per_node_in_flight calls reach one node at a time; all complete.
TEST_F(AmLauncherTest, CallsToOneNodeStayWithinTheirBound) {
  AmLauncherOptions o;
  o.per_node_in_flight = 3;
  AmLauncher launcher(o, record());
  launcher.start();
  for (int i = 0; i < 12; i++)
    launcher.submit(launch("good", cmAddress(), "c" + std::to_string(i)));
  ASSERT_TRUE(out_.waitFor(12, 10s));
  EXPECT_LE(cm_.maxActive(), 3);
  EXPECT_GE(cm_.maxActive(), 2);  // concurrent, not one after the other
}

// A silent node's launch fails once its deadline passes, naming the node.
TEST_F(AmLauncherTest, SilentNodeLaunchFailsAtItsDeadline) {
  SilentListener silent;
  AmLauncherOptions o;
  o.timeout = Millis(200);
  AmLauncher launcher(o, record());
  launcher.start();
  launcher.submit(launch("dead", silent.address(), "d0"));
  ASSERT_TRUE(out_.waitFor(1, 5s));
  std::lock_guard<std::mutex> lk(out_.mu);
  EXPECT_NE(out_.by_container.at("d0").find("cannot reach node dead"), std::string::npos);
}

// A node that refuses the container: the error names the node and carries
// the NM's code and message (the RM's diagnostic for the app is built from it).
TEST_F(AmLauncherTest, RefusedLaunchNamesTheNodeAndTheReason) {
  RefusingContainerManager refusing;
  Served nm(&refusing);
  AmLauncher launcher(AmLauncherOptions{}, record());
  launcher.start();
  launcher.submit(launch("n7", nm.address(), "r0"));
  ASSERT_TRUE(out_.waitFor(1, 5s));
  std::lock_guard<std::mutex> lk(out_.mu);
  const std::string& error = out_.by_container.at("r0");
  EXPECT_NE(error.find("PERMISSION_DENIED: container token: expired"), std::string::npos) << error;
  EXPECT_NE(error.find("node n7"), std::string::npos) << "which node refused? " << error;
}

// A node that answers the call with an error: the error names the node, its
// address and the NM's message.
TEST_F(AmLauncherTest, NmErrorNamesTheNodeAndItsMessage) {
  RefusingContainerManager failing(/*error=*/true);
  Served nm(&failing);
  AmLauncher launcher(AmLauncherOptions{}, record());
  launcher.start();
  launcher.submit(launch("n7", nm.address(), "e0"));
  ASSERT_TRUE(out_.waitFor(1, 5s));
  std::lock_guard<std::mutex> lk(out_.mu);
  const std::string& error = out_.by_container.at("e0");
  EXPECT_NE(error.find("node n7 at " + nm.address()), std::string::npos) << error;
  EXPECT_NE(error.find("node not registered with the RM yet"), std::string::npos) << error;
}

// Failed launches give their node's slot back: with one slot per node, every
// queued launch of a refusing node is tried in turn and reported, and
// nothing stays in flight or queued.
TEST_F(AmLauncherTest, FailedLaunchesFreeTheirSlots) {
  RefusingContainerManager refusing;
  Served nm(&refusing);
  AmLauncherOptions o;
  o.per_node_in_flight = 1;
  o.max_in_flight = 1;
  AmLauncher launcher(o, record());
  launcher.start();
  for (int i = 0; i < 5; i++) launcher.submit(launch("n7", nm.address(), "f" + std::to_string(i)));
  launcher.submit(launch("good", cmAddress(), "g0"));
  ASSERT_TRUE(out_.waitFor(6, 10s));
  EXPECT_EQ(refusing.calls(), 5);
  EXPECT_EQ(launcher.inFlight(), 0);
  EXPECT_EQ(launcher.queued(), 0u);
  std::lock_guard<std::mutex> lk(out_.mu);
  for (int i = 0; i < 5; i++) EXPECT_FALSE(out_.by_container.at("f" + std::to_string(i)).empty());
  EXPECT_EQ(out_.by_container.at("g0"), "") << "the answering node's launch started";
}

}  // namespace
}  // namespace morpheus::rm
