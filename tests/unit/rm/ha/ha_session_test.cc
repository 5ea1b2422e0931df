// HaSession (ha_session.h) against a real single-member etcd on loopback:
// becomeActive lets one session win while another waits as standby (told
// the leader's record) until the winner resigns or a termination signal
// arrives; sharedTokenSecret gives every active of the pair the first one's
// key; resign frees the leader key at once; keepLeadership reports a lost
// lease.
//
// A standby campaigns on a thread of its own with SIGTERM and SIGINT
// blocked (as main() blocks them, blockTerminationSignals), and the test
// stops it with a signal sent to that thread only (pthread_kill), so no
// other thread of the test process can receive it.
#include "rm/ha/ha_session.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "etcd_cluster.h"
#include "rm/ha/standby_front.h"

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;
using Session = std::unique_ptr<HaSession>;
using Outcome = Result<std::optional<Session>>;

// becomeActive on a thread with the termination signals blocked; records the
// leaders it is told about.
class Campaign {
 public:
  Campaign(HaOptions opts, Clock& clock) {
    opts.on_leader_change = [this](const std::string& leader) {
      std::lock_guard<std::mutex> lk(mu_);
      leaders_.push_back(leader);
    };
    thread_ = std::thread([this, opts = std::move(opts), &clock] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGTERM);
      sigaddset(&set, SIGINT);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      Outcome r = HaSession::becomeActive(opts, clock);
      std::lock_guard<std::mutex> lk(mu_);
      outcome_.emplace(std::move(r));
    });
  }
  ~Campaign() {
    if (!thread_.joinable()) return;
    if (!done()) signal(SIGTERM);
    thread_.join();
  }
  bool done() const {
    std::lock_guard<std::mutex> lk(mu_);
    return outcome_.has_value();
  }
  std::vector<std::string> leaders() const {
    std::lock_guard<std::mutex> lk(mu_);
    return leaders_;
  }
  // To the campaigning thread only.
  void signal(int sig) { pthread_kill(thread_.native_handle(), sig); }
  // Joins the thread: call once done() (or after signal()).
  Outcome take() {
    thread_.join();
    std::lock_guard<std::mutex> lk(mu_);
    return std::move(*outcome_);
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> leaders_;  // GUARDED_BY(mu_)
  std::optional<Outcome> outcome_;    // GUARDED_BY(mu_)
  std::thread thread_;
};

class HaSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EtcdCluster::available()) GTEST_SKIP() << "etcd is not installed";
    etcd_ = std::make_unique<testing::EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->log();
  }
  // main()'s options: the identity is the RM's leader record.
  HaOptions options(const std::string& host, Millis lease_ttl) {
    HaOptions o;
    o.endpoints = etcd_->endpoints();
    o.election.identity = encodeLeaderRecord({host + ":8030", host + ":8088", 1});
    o.election.lease_ttl = lease_ttl;
    return o;
  }
  // The active session for `opts` (it must win at once); fails the test otherwise.
  Session active(const HaOptions& opts) {
    Outcome r = HaSession::becomeActive(opts, clock_);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (!r.isOk()) return nullptr;
    EXPECT_TRUE(r->has_value()) << "becomeActive returned without a session";
    if (!r->has_value()) return nullptr;
    return std::move(**r);
  }
  // A bare candidate for the same leader key, to see who holds it.
  static LeaderElectionOptions probeOptions() {
    LeaderElectionOptions o;
    o.identity = "probe";
    o.lease_ttl = Millis(2000);
    return o;
  }
  std::shared_ptr<store::EtcdClient> client() {
    auto c = store::EtcdClient::connect(etcd_->endpoints(), "endpoints", Millis(1000));
    EXPECT_TRUE(c.isOk());
    return std::move(c).value();
  }

  RealClock clock_;
  std::unique_ptr<testing::EtcdCluster> etcd_;
};

// The first session is active at once and has written its identity through
// the fenced store; a second one waits as standby, told the active's record,
// and becomes active only once the first resigns, long before the first's
// lease could have expired. The first's store is then fenced.
TEST_F(HaSessionTest, OneSessionWinsTheOtherWaitsUntilItResigns) {
  HaOptions a_opts = options("10.0.0.1", Millis(10000));
  Session a = active(a_opts);
  ASSERT_NE(a, nullptr);
  auto written = a->store().get("rm-ha", "active");
  ASSERT_TRUE(written.isOk() && written->has_value()) << written.status().toString();
  EXPECT_EQ(**written, a_opts.election.identity);
  std::atomic<bool> a_lost{false};
  a->keepLeadership([&a_lost] { a_lost = true; });

  HaOptions b_opts = options("10.0.0.2", Millis(2000));
  Campaign b(b_opts, clock_);
  ASSERT_TRUE(testing::waitFor([&] { return !b.leaders().empty(); }, 10s))
      << "the standby was never told the leader";
  EXPECT_EQ(b.leaders().front(), a_opts.election.identity);
  // Still standby after several of its polls (lease_ttl / 5 = 400 ms each).
  EXPECT_FALSE(testing::waitFor([&] { return b.done(); }, 1500ms)) << "two active sessions";

  const auto resigned = std::chrono::steady_clock::now();
  ASSERT_TRUE(a->resign().isOk());
  ASSERT_TRUE(testing::waitFor([&] { return b.done(); }, 8s))
      << "the standby did not take over within 8 s of the resignation (a's lease is 10 s)";
  EXPECT_LT(std::chrono::steady_clock::now() - resigned, 8s);
  Outcome won = b.take();
  ASSERT_TRUE(won.isOk()) << won.status().toString();
  ASSERT_TRUE(won->has_value());
  Session b_session = std::move(**won);
  auto b_written = b_session->store().get("rm-ha", "active");
  ASSERT_TRUE(b_written.isOk() && b_written->has_value());
  EXPECT_EQ(**b_written, b_opts.election.identity);
  EXPECT_EQ(a->store().commit({{"rm-ha", "late", "a"}}).code(), StatusCode::kInfeasible)
      << "the resigned session can still write";
  EXPECT_TRUE(b_session->store().commit({{"rm-ha", "late", "b"}}).isOk());
  EXPECT_FALSE(a_lost.load()) << "a resignation is no loss of leadership";
  EXPECT_TRUE(b_session->resign().isOk());
}

// A standby that gets SIGTERM while it waits returns OK without a session
// (main() exits 0), and the active keeps the key.
TEST_F(HaSessionTest, StandbyReturnsNoSessionWhenSignalledWhileWaiting) {
  Session a = active(options("10.0.0.1", Millis(5000)));
  ASSERT_NE(a, nullptr);
  a->keepLeadership([] {});
  Campaign b(options("10.0.0.2", Millis(2000)), clock_);
  ASSERT_TRUE(testing::waitFor([&] { return !b.leaders().empty(); }, 10s));
  b.signal(SIGTERM);
  ASSERT_TRUE(testing::waitFor([&] { return b.done(); }, 5s)) << "SIGTERM did not stop it";
  Outcome stopped = b.take();
  ASSERT_TRUE(stopped.isOk()) << stopped.status().toString();
  EXPECT_FALSE(stopped->has_value());
  EXPECT_TRUE(a->store().commit({{"rm-ha", "still", "a"}}).isOk());
  LeaderElector probe(client(), probeOptions(), clock_);
  auto r = probe.tryAcquire();
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_FALSE(r->has_value()) << "the leader key was free while a is active";
  EXPECT_TRUE(a->resign().isOk());
}

// The first active stores its local key; every later active of the pair
// (and the same one asking again) gets that key, not its own, so tokens
// signed before a failover verify after it.
TEST_F(HaSessionTest, SharedTokenSecretIsTheFirstActivesKeyForEveryLaterOne) {
  Session a = active(options("10.0.0.1", Millis(5000)));
  ASSERT_NE(a, nullptr);
  auto first = a->sharedTokenSecret("key-of-a");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ(*first, "key-of-a");
  auto again = a->sharedTokenSecret("another-local-key");
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(*again, "key-of-a");
  auto stored = a->store().get("rm-ha", "token-secret");
  ASSERT_TRUE(stored.isOk() && stored->has_value());
  EXPECT_EQ(**stored, "key-of-a");
  ASSERT_TRUE(a->resign().isOk());
  a.reset();

  Session b = active(options("10.0.0.2", Millis(5000)));
  ASSERT_NE(b, nullptr);
  auto adopted = b->sharedTokenSecret("key-of-b");
  ASSERT_TRUE(adopted.isOk()) << adopted.status().toString();
  EXPECT_EQ(*adopted, "key-of-a");
  stored = b->store().get("rm-ha", "token-secret");
  ASSERT_TRUE(stored.isOk() && stored->has_value());
  EXPECT_EQ(**stored, "key-of-a") << "the later active overwrote the shared key";
  // An empty stored key counts as none (ha_session.cc): the active's own is stored.
  ASSERT_TRUE(b->store().commit({{"rm-ha", "token-secret", ""}}).isOk());
  auto refilled = b->sharedTokenSecret("key-of-b");
  ASSERT_TRUE(refilled.isOk());
  EXPECT_EQ(*refilled, "key-of-b");
  EXPECT_TRUE(b->resign().isOk());
}

// resign() deletes the leader key at once (a candidate wins immediately,
// though the lease had seconds left), stops the renewals without reporting a
// loss, and fences the resigned session's store.
TEST_F(HaSessionTest, ResignFreesTheLeaderKeyAtOnce) {
  Session a = active(options("10.0.0.1", Millis(3000)));
  ASSERT_NE(a, nullptr);
  std::atomic<int> lost{0};
  a->keepLeadership([&lost] { lost++; });
  LeaderElector probe(client(), probeOptions(), clock_);
  auto before = probe.tryAcquire();
  ASSERT_TRUE(before.isOk()) << before.status().toString();
  EXPECT_FALSE(before->has_value());
  EXPECT_EQ(probe.leader(), options("10.0.0.1", Millis(3000)).election.identity);

  ASSERT_TRUE(a->resign().isOk());
  auto after = probe.tryAcquire();
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_TRUE(after->has_value()) << "the leader key outlived the resignation";
  EXPECT_EQ(a->store().commit({{"rm-ha", "late", "a"}}).code(), StatusCode::kInfeasible);
  // Renewals of the revoked lease would find it gone and report a loss within
  // one renewal period (lease_ttl / 6).
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(lost.load(), 0) << "the keep-alive ran on after the resignation";
  EXPECT_TRUE(probe.resign().isOk());
}

// An active that cannot renew its lease (etcd gone) is told once, within
// 2/3 of the lease TTL after its last renewal.
TEST_F(HaSessionTest, KeepLeadershipReportsTheLossOnceWhenEtcdIsGone) {
  Session a = active(options("10.0.0.1", Millis(2000)));
  ASSERT_NE(a, nullptr);
  std::atomic<int> lost{0};
  a->keepLeadership([&lost] { lost++; });
  EXPECT_FALSE(testing::waitFor([&] { return lost.load() > 0; }, 2s))
      << "renewals failed while etcd was up";
  etcd_->kill(0);
  ASSERT_TRUE(testing::waitFor([&] { return lost.load() > 0; }, 10s)) << "the loss went unnoticed";
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(lost.load(), 1);
}

// Endpoint lists are checked before anything else, naming the option.
TEST(HaSessionOptionsTest, BecomeActiveRefusesAMissingOrMalformedEndpointList) {
  RealClock clock;
  HaOptions o;
  o.election.identity = "rm";
  auto none = HaSession::becomeActive(o, clock);
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "state-store.location: is required for etcd (endpoint list)");
  for (const std::string bad : {"127.0.0.1:2379,,127.0.0.1:2380", "localhost"}) {
    o.endpoints = bad;
    auto r = HaSession::becomeActive(o, clock);
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message().rfind("state-store.location: ", 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace morpheus::rm
