// LeaderElector against a real single-member etcd on loopback:
// one active at a time, takeover when the lease expires, step-down when the
// active is cut off from etcd, and the deposed active's writes fenced.
#include "rm/ha/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>

#include "etcd_cluster.h"

namespace morpheus::rm {
namespace {

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EtcdCluster::available()) GTEST_SKIP() << "etcd is not installed";
    etcd_ = std::make_unique<testing::EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->log();
  }
  std::shared_ptr<store::EtcdClient> client(const std::string& endpoints) {
    auto c = store::EtcdClient::connect(endpoints, "endpoints", Millis(300));
    EXPECT_TRUE(c.isOk());
    return std::move(c).value();
  }
  LeaderElectionOptions opts(const std::string& who, Millis lease_ttl = Millis(1000)) {
    LeaderElectionOptions o;
    o.identity = who;
    o.lease_ttl = lease_ttl;
    return o;
  }
  RealClock clock_;
  std::unique_ptr<testing::EtcdCluster> etcd_;
};

// The second candidate sees the first as leader and wins only after it resigns.
TEST_F(LeaderElectionTest, OneActiveUntilItResigns) {
  LeaderElector a(client(etcd_->endpoints()), opts("rm-a"), clock_);
  LeaderElector b(client(etcd_->endpoints()), opts("rm-b"), clock_);
  auto fa = a.tryAcquire();
  ASSERT_TRUE(fa.isOk() && fa->has_value()) << fa.status().toString();
  auto fb = b.tryAcquire();
  ASSERT_TRUE(fb.isOk());
  EXPECT_FALSE(fb->has_value());
  EXPECT_EQ(b.leader(), "rm-a");
  ASSERT_TRUE(a.resign().isOk());
  fb = b.tryAcquire();
  ASSERT_TRUE(fb.isOk() && fb->has_value());
  EXPECT_GT((*fb)->create_revision, (*fa)->create_revision);
}

// An active that stops renewing (killed) loses the key when its lease expires;
// the standby then wins and the old active's fenced store cannot write.
TEST_F(LeaderElectionTest, StandbyTakesOverWhenLeaseExpiresAndFencesOldActive) {
  auto etcd = client(etcd_->endpoints());
  auto a = std::make_unique<LeaderElector>(etcd, opts("rm-a"), clock_);
  auto fa = a->tryAcquire();
  ASSERT_TRUE(fa.isOk() && fa->has_value());
  auto store_a = store::makeEtcdStateStore(etcd, "/le-test/", **fa);
  ASSERT_TRUE(store_a->commit({{"n", "k", "a"}}).isOk());
  a.reset();  // no resign, no renewals: as if kill -9
  LeaderElector b(etcd, opts("rm-b"), clock_);
  std::optional<store::EtcdFence> fb;
  // A generous deadline: the takeover's latency is bench_leader_election's.
  ASSERT_TRUE(testing::waitFor(
      [&] {
        auto r = b.tryAcquire();
        if (r.isOk() && r->has_value()) fb = **r;
        return fb.has_value();
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(store_a->commit({{"n", "k", "late"}}).code(), StatusCode::kInfeasible);
  auto store_b = store::makeEtcdStateStore(etcd, "/le-test/", *fb);
  EXPECT_EQ(**store_b->get("n", "k"), "a");
  EXPECT_TRUE(store_b->commit({{"n", "k", "b"}}).isOk());
}

// An active cut off from etcd (frozen proxy) steps down (on_lost) before a
// standby can win: a candidate talking to etcd directly acquires the key only
// after the active's lease expired, and by then the active has been told it
// lost. A 3 s lease leaves the active's give-up (2/3 of the TTL after its
// last renewal) a second ahead of the expiry; how long the step-down takes is
// bench_leader_election's figure.
TEST_F(LeaderElectionTest, ActiveStepsDownBeforeAStandbyCanWin) {
  int port = std::stoi(etcd_->endpoint(0).substr(etcd_->endpoint(0).rfind(':') + 1));
  testing::TcpProxy proxy(port);
  LeaderElector a(client("127.0.0.1:" + std::to_string(proxy.port())), opts("rm-a", Millis(3000)),
                  clock_);
  auto fa = a.tryAcquire();
  ASSERT_TRUE(fa.isOk() && fa->has_value()) << fa.status().toString();
  std::atomic<bool> lost{false};
  a.startKeepAlive([&] { lost = true; });
  LeaderElector b(client(etcd_->endpoints()), opts("rm-b", Millis(3000)), clock_);
  proxy.freeze();
  bool won = false, lost_first = false;
  ASSERT_TRUE(testing::waitFor(
      [&] {
        auto r = b.tryAcquire();
        if (!r.isOk() || !r->has_value()) return false;
        lost_first = lost.load();
        won = true;
        return true;
      },
      std::chrono::seconds(30)));
  EXPECT_TRUE(won);
  EXPECT_TRUE(lost_first) << "the standby won while the partitioned active still held on";
  EXPECT_TRUE(lost.load());
}

}  // namespace
}  // namespace morpheus::rm
