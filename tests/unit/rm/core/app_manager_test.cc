// AppManager: validation, binding, attempts, kill ACL, AM tokens, and
// persistence across a restart (real SQLite StateStore, virtual clock).
#include "rm/core/app_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "../test_db.h"

namespace morpheus::rm {
namespace {

class AppManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = freshTestDb("apps");
    store_ = std::move(store::openStateStore("sqlite", path_)).value();
    mgr_ = make();
  }
  std::unique_ptr<AppManager> make() {
    AppManagerOptions o;
    o.queues = {"root.default", "root.prod"};
    if (tweak_) tweak_(o);
    return std::make_unique<AppManager>(
        o, *store_, clock_, metrics_, signer_,
        [](const JobKey& k) -> std::vector<BindTarget> {
          if (k.value() == "nightly")
            return {{ReservationId("r_nightly"), UserId("alice"), "default"}};
          if (k.value() == "shared") {
            return {{ReservationId("r_alice"), UserId("alice"), "default"},
                    {ReservationId("r_bob"), UserId("bob"), "default"}};
          }
          return {};
        },
        [](const ReservationId& r) -> std::optional<BindTarget> {
          if (r.value() != "r_nightly" && r.value() != "r_other") return std::nullopt;
          return BindTarget{r, UserId("alice"), "default"};
        });
  }
  static AppManager::BindCheck anyBind() {
    return [](const BindTarget&) { return Status::ok(); };
  }
  AppSpec spec() {
    AppSpec s;
    s.name = "job";
    s.user = UserId("alice");
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = std::string("\x0a\x04true", 6);  // binary bytes must survive
    return s;
  }
  // Applied to the options of every make() (limits, history bounds).
  std::function<void(AppManagerOptions&)> tweak_;
  VirtualClock clock_{fromEpochMs(1800000000000)};
  MetricsRegistry metrics_;
  TokenSigner signer_{"secret-key"};
  std::string path_;
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<AppManager> mgr_;
};

TEST_F(AppManagerTest, ValidationNamesTheFieldAndStoresNothing) {
  auto s = spec();
  s.name = "";
  EXPECT_EQ(mgr_->submit(s, anyBind()).status().message(), "name: is required");
  s = spec();
  s.am_resource = Resource();
  EXPECT_EQ(mgr_->submit(s, anyBind()).status().code(), StatusCode::kInvalidArgument);
  s = spec();
  s.queue = "root.nope";
  auto r = mgr_->submit(s, anyBind());
  EXPECT_NE(r.status().message().find("queue: unknown queue 'root.nope'"), std::string::npos)
      << r.status().message();
  s = spec();
  s.reservation = ReservationId("r_missing");
  EXPECT_NE(mgr_->submit(s, anyBind()).status().message().find("reservation_id"),
            std::string::npos);
  EXPECT_TRUE(mgr_->list({}, "").empty());
  EXPECT_TRUE(store_->list("apps")->empty());
}

// Per-user bounds count a user's SUBMITTED and unfinished apps; a refusal
// names the option and stores nothing; other users and finished apps do not
// count. Names with control or bidi characters and oversized launch contexts
// are refused naming the field.
TEST_F(AppManagerTest, PerUserBoundsAndNamesAreChecked) {
  AppManagerOptions o;
  o.max_pending_apps_per_user = 2;
  o.max_apps_per_user = 3;
  o.max_launch_context_bytes = 64;
  o.max_name_length = 16;
  AppManager apps(
      o, *store_, clock_, metrics_, signer_,
      [](const JobKey&) { return std::vector<BindTarget>{}; },
      [](const ReservationId&) -> std::optional<BindTarget> { return std::nullopt; });
  auto a1 = apps.submit(spec(), anyBind());
  auto a2 = apps.submit(spec(), anyBind());
  ASSERT_TRUE(a1.isOk() && a2.isOk());
  auto refused = apps.submit(spec(), anyBind());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("rm.max-pending-apps-per-user"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(apps.list({}, "").size(), 2u) << "a refusal stores nothing";
  auto bob = spec();
  bob.user = UserId("bob");
  EXPECT_TRUE(apps.submit(bob, anyBind()).isOk()) << "per user";
  // a1 and a2 run, a4 waits: one pending, three unfinished.
  ASSERT_TRUE(apps.amLaunched(a1->id, ContainerId(a1->id.value() + "_1_am"), NodeId("n1")).isOk());
  EXPECT_TRUE(apps.submit(spec(), anyBind()).isOk());
  ASSERT_TRUE(apps.amLaunched(a2->id, ContainerId(a2->id.value() + "_1_am"), NodeId("n1")).isOk());
  auto total = apps.submit(spec(), anyBind());
  EXPECT_EQ(total.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(total.status().message().find("rm.max-apps-per-user"), std::string::npos)
      << total.status().message();
  ASSERT_TRUE(apps.finish(a1->id, AppState::kFinished, "").isOk());
  EXPECT_TRUE(apps.submit(spec(), anyBind()).isOk()) << "a finished app no longer counts";

  auto bad = spec();
  bad.user = UserId("carol");
  bad.am_launch_context = std::string(65, 'x');
  EXPECT_NE(apps.submit(bad, anyBind()).status().message().find("am_launch_context: is 65 bytes"),
            std::string::npos);
  bad = spec();
  bad.user = UserId("carol");
  bad.name =
      "a\xe2\x80\xae"
      "b";
  EXPECT_EQ(apps.submit(bad, anyBind()).status().message().rfind("name: contains U+202E", 0), 0u);
  bad.name = std::string(17, 'n');
  EXPECT_NE(apps.submit(bad, anyBind()).status().message().find("rm.max-name-length"),
            std::string::npos);
  bad.name = "ok";
  bad.tags = {{"k", std::string("v\0", 2)}};
  EXPECT_EQ(apps.submit(bad, anyBind()).status().message().rfind("tags[k]: contains U+0000", 0),
            0u);
  EXPECT_EQ(apps.list({}, "").size(), 5u);
}

TEST_F(AppManagerTest, BindsByReservationIdOrRecurrenceKey) {
  auto s = spec();
  s.reservation = ReservationId("r_other");
  EXPECT_EQ(mgr_->submit(s, anyBind())->reservation.value(), "r_other");
  s = spec();
  s.recurrence_key = JobKey("nightly");
  auto bound = mgr_->submit(s, anyBind());
  EXPECT_EQ(bound->reservation.value(), "r_nightly");
  EXPECT_EQ(bound->queue, "");
  s.recurrence_key = JobKey("unknown-key");  // no reservation: ad hoc in the default queue
  auto adhoc = mgr_->submit(s, anyBind());
  EXPECT_TRUE(adhoc->reservation.empty());
  EXPECT_EQ(adhoc->queue, "root.default");
}

// Binding runs the caller's check on the reservation, by id and by key; a key
// binds to the first of its reservations the check admits; nothing is stored
// on a refusal.
TEST_F(AppManagerTest, BindingNeedsTheCheckOfTheReservation) {
  AppManager::BindCheck only_bob = [](const BindTarget& t) {
    if (t.owner == UserId("bob")) return Status::ok();
    return permissionDenied("bob may not run in " + t.id.value() + " of " + t.owner.value());
  };
  auto s = spec();
  s.user = UserId("bob");
  s.reservation = ReservationId("r_other");
  auto by_id = mgr_->submit(s, only_bob);
  EXPECT_EQ(by_id.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(by_id.status().message(), "reservation_id: bob may not run in r_other of alice");
  s.reservation = ReservationId();
  s.recurrence_key = JobKey("nightly");
  auto by_key = mgr_->submit(s, only_bob);
  EXPECT_EQ(by_key.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(by_key.status().message().find("recurrence_key: 'nightly' is reserved by another user"),
            std::string::npos)
      << by_key.status().message();
  EXPECT_TRUE(mgr_->list({}, "").empty());
  EXPECT_TRUE(store_->list("apps")->empty());
  s.recurrence_key = JobKey("shared");
  auto own = mgr_->submit(s, only_bob);
  ASSERT_TRUE(own.isOk()) << own.status().message();
  EXPECT_EQ(own->reservation.value(), "r_bob");
}

TEST_F(AppManagerTest, AttemptsRetryThenFail) {
  auto s = spec();
  s.max_attempts = 2;
  AppId id = mgr_->submit(s, anyBind())->id;
  ASSERT_TRUE(mgr_->amLaunched(id, ContainerId("c1"), NodeId("n1")).isOk());
  EXPECT_EQ(mgr_->get(id)->state, AppState::kRunning);
  EXPECT_EQ(mgr_->get(id)->attempt, 1);
  auto a = mgr_->amAttemptFailed(id, "node lost");
  EXPECT_EQ(a->state, AppState::kSubmitted);
  ASSERT_TRUE(mgr_->amLaunched(id, ContainerId("c2"), NodeId("n2")).isOk());
  auto b = mgr_->amAttemptFailed(id, "exit 1");
  EXPECT_EQ(b->state, AppState::kFailed);
  EXPECT_NE(b->diagnostics.find("no attempts left of 2"), std::string::npos) << b->diagnostics;
}

TEST_F(AppManagerTest, KillNeedsOwnerOrAdminAndIsFinal) {
  AppId id = mgr_->submit(spec(), anyBind())->id;
  EXPECT_EQ(mgr_->kill(id, UserId("mallory"), false, "").code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(mgr_->kill(id, UserId("ops"), true, "maintenance").isOk());
  EXPECT_EQ(mgr_->get(id)->state, AppState::kKilled);
  EXPECT_EQ(mgr_->kill(id, UserId("alice"), false, "").code(), StatusCode::kInfeasible);
  EXPECT_TRUE(mgr_->finish(id, AppState::kFinished, "").isOk());  // ignored: already final
  EXPECT_EQ(mgr_->get(id)->state, AppState::kKilled);
}

TEST_F(AppManagerTest, AmTokenActsOnlyForItsOwnAppAndAttempt) {
  AppId a = mgr_->submit(spec(), anyBind())->id;
  AppId b = mgr_->submit(spec(), anyBind())->id;
  ASSERT_TRUE(mgr_->amLaunched(a, ContainerId("c1"), NodeId("n1")).isOk());
  std::string tok = mgr_->amToken(a, 1);
  EXPECT_TRUE(mgr_->checkAmToken(a, tok).isOk());
  EXPECT_EQ(mgr_->checkAmToken(b, tok).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(mgr_->checkAmToken(a, tok + "x").code(), StatusCode::kPermissionDenied);
  (void)mgr_->amAttemptFailed(a, "lost");
  ASSERT_TRUE(mgr_->amLaunched(a, ContainerId("c2"), NodeId("n1")).isOk());
  EXPECT_EQ(mgr_->checkAmToken(a, tok).code(), StatusCode::kPermissionDenied);  // stale attempt
  EXPECT_TRUE(mgr_->checkAmToken(a, mgr_->amToken(a, 2)).isOk());
}

TEST_F(AppManagerTest, EverythingAcknowledgedSurvivesARestart) {
  AppId a = mgr_->submit(spec(), anyBind())->id;
  ASSERT_TRUE(mgr_->amLaunched(a, ContainerId("c1"), NodeId("n1")).isOk());
  AppId b = mgr_->submit(spec(), anyBind())->id;
  ASSERT_TRUE(mgr_->finish(a, AppState::kFinished, "ok").isOk());
  auto before_a = *mgr_->get(a);
  auto before_b = *mgr_->get(b);
  clock_.advance(Millis(5000));
  mgr_ = make();
  ASSERT_TRUE(mgr_->recover().isOk());
  auto after_a = *mgr_->get(a);
  EXPECT_EQ(after_a.state, AppState::kFinished);
  EXPECT_EQ(after_a.spec.am_launch_context, before_a.spec.am_launch_context);
  EXPECT_EQ(after_a.am_container, before_a.am_container);
  EXPECT_EQ(toEpochMs(after_a.finish), toEpochMs(before_a.finish));
  EXPECT_EQ(mgr_->get(b)->state, before_b.state);
  // New ids after a restart never collide with recovered ones.
  AppId c = mgr_->submit(spec(), anyBind())->id;
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(mgr_->list({AppState::kFinished}, "").size(), 1u);
}

// Queue and user running-apps limits: the app over a limit is accepted, not
// startable, and says why; it becomes startable when the running one ends.
TEST_F(AppManagerTest, AppOverALimitWaitsWithItsReasonAndStartsWhenOneEnds) {
  tweak_ = [](AppManagerOptions& o) {
    o.limits.max_running_apps["root.prod"] = 1;
    o.limits.user_max_running_apps["bob"] = 1;
  };
  mgr_ = make();
  auto s = spec();
  s.queue = "root.prod";
  AppId first = mgr_->submit(s, anyBind())->id;
  clock_.advance(Millis(10));
  AppId second = mgr_->submit(s, anyBind())->id;
  auto ids = [](const std::vector<AppRecord>& v) {
    std::vector<AppId> out;
    for (const auto& a : v) out.push_back(a.id);
    return out;
  };
  EXPECT_EQ(ids(mgr_->startable()), std::vector<AppId>{first});
  EXPECT_EQ(mgr_->waitingReason(first), "");
  EXPECT_NE(mgr_->waitingReason(second).find("queue root.prod runs 1 of its 1"), std::string::npos)
      << mgr_->waitingReason(second);
  // The first one's AM starts: still the only one.
  ASSERT_TRUE(mgr_->amLaunched(first, ContainerId("c1"), NodeId("n1")).isOk());
  EXPECT_TRUE(mgr_->startable().empty());
  // Another queue is not affected, but bob's own limit is.
  auto b = spec();
  b.user = UserId("bob");
  AppId bob1 = mgr_->submit(b, anyBind())->id;
  clock_.advance(Millis(10));
  AppId bob2 = mgr_->submit(b, anyBind())->id;
  EXPECT_EQ(ids(mgr_->startable()), std::vector<AppId>{bob1});
  EXPECT_NE(mgr_->waitingReason(bob2).find("user bob runs 1 of their 1"), std::string::npos);
  // A failed attempt keeps its place (retrying, SUBMITTED again).
  ASSERT_TRUE(mgr_->amAttemptFailed(first, "lost").isOk());
  EXPECT_EQ(mgr_->get(first)->state, AppState::kSubmitted);
  EXPECT_EQ(mgr_->waitingReason(first), "");
  EXPECT_NE(mgr_->waitingReason(second), "");
  // The first ends: the second may start.
  ASSERT_TRUE(mgr_->finish(first, AppState::kFinished, "").isOk());
  EXPECT_EQ(mgr_->waitingReason(second), "");
  auto now = ids(mgr_->startable());
  EXPECT_NE(std::find(now.begin(), now.end(), second), now.end());
  // A reload lifts bob's limit.
  QueueLimits l = mgr_->limits();
  l.user_max_running_apps.clear();
  mgr_->setLimits(l);
  EXPECT_EQ(mgr_->waitingReason(bob2), "");
}

// A reservation-bound app follows its plan guarantee: the limits neither
// hold it back nor count it.
TEST_F(AppManagerTest, ReservationBoundAppsAreOutsideTheLimits) {
  tweak_ = [](AppManagerOptions& o) { o.limits.user_max_running_apps["alice"] = 0; };
  mgr_ = make();
  AppId adhoc = mgr_->submit(spec(), anyBind())->id;
  auto s = spec();
  s.reservation = ReservationId("r_nightly");
  AppId bound = mgr_->submit(s, anyBind())->id;
  auto startable = mgr_->startable();
  ASSERT_EQ(startable.size(), 1u);
  EXPECT_EQ(startable[0].id, bound);
  EXPECT_EQ(mgr_->waitingReason(bound), "");
  EXPECT_NE(mgr_->waitingReason(adhoc).find("user alice runs 0 of their 0"), std::string::npos);
}

// Accounting adds up, is written for a final app at once and for a running
// one by flushUsage, and survives a restart.
TEST_F(AppManagerTest, UsageAddsUpAndSurvivesARestart) {
  AppId a = mgr_->submit(spec(), anyBind())->id;
  ASSERT_TRUE(mgr_->amLaunched(a, ContainerId("c1"), NodeId("n1")).isOk());
  mgr_->addUsage(a, 1024 * 5000, 2 * 5000);  // 1 GiB, 2 vcores for 5 s
  mgr_->addUsage(a, 512 * 1500, 1 * 1500);
  mgr_->addUsage(AppId("application_0_9999"), 1, 1);  // unknown: ignored
  EXPECT_EQ(mgr_->get(a)->memory_mib_ms, 1024 * 5000 + 512 * 1500);
  EXPECT_EQ(mgr_->get(a)->vcore_ms, 2 * 5000 + 1500);
  ASSERT_TRUE(mgr_->flushUsage().isOk());
  mgr_ = make();
  ASSERT_TRUE(mgr_->recover().isOk());
  EXPECT_EQ(mgr_->get(a)->memory_mib_ms, 1024 * 5000 + 512 * 1500);
  // After the app finished, its AM container's end is written at once.
  ASSERT_TRUE(mgr_->finish(a, AppState::kFinished, "").isOk());
  mgr_->addUsage(a, 100, 10);
  mgr_ = make();
  ASSERT_TRUE(mgr_->recover().isOk());
  EXPECT_EQ(mgr_->get(a)->memory_mib_ms, 1024 * 5000 + 512 * 1500 + 100);
  EXPECT_EQ(mgr_->get(a)->vcore_ms, 2 * 5000 + 1500 + 10);
}

TEST_F(AppManagerTest, UsageAggregatesPerUserAndQueueSince) {
  auto rec = [](const std::string& id, const std::string& user, const std::string& queue,
                AppState st, int64_t finish_ms, int64_t mem_ms, int64_t vc_ms) {
    AppRecord r;
    r.id = AppId(id);
    r.spec.user = UserId(user);
    r.queue = queue;
    r.state = st;
    r.finish = fromEpochMs(finish_ms);
    r.memory_mib_ms = mem_ms;
    r.vcore_ms = vc_ms;
    return r;
  };
  std::vector<AppRecord> apps = {
      rec("1", "alice", "root.a", AppState::kFinished, 1000, 4000, 40),
      rec("2", "alice", "root.b", AppState::kRunning, 0, 1000, 10),
      rec("3", "bob", "root.a", AppState::kFailed, 5000, 9000, 90),
      rec("4", "bob", "root.a", AppState::kKilled, 10, 7, 7),  // before `since`
  };
  auto running = [](const AppRecord& a) {
    return a.state == AppState::kRunning ? std::pair<int64_t, int64_t>{500, 5}
                                         : std::pair<int64_t, int64_t>{0, 0};
  };
  auto users = aggregateUsage(apps, UsageGroup::kUser, fromEpochMs(100), running);
  ASSERT_EQ(users.size(), 2u);
  EXPECT_EQ(users[0].key, "bob");  // biggest memory first
  EXPECT_EQ(users[0].memory_mib_ms, 9000);
  EXPECT_EQ(users[0].apps, 1);
  EXPECT_EQ(users[1].key, "alice");
  EXPECT_EQ(users[1].memory_mib_ms, 4000 + 1000 + 500);
  EXPECT_EQ(users[1].vcore_ms, 40 + 10 + 5);
  EXPECT_EQ(users[1].apps, 2);
  EXPECT_EQ(users[1].running_apps, 1);
  auto queues = aggregateUsage(apps, UsageGroup::kQueue, fromEpochMs(0), nullptr);
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].key, "root.a");
  EXPECT_EQ(queues[0].memory_mib_ms, 4000 + 9000 + 7);
  EXPECT_EQ(queues[0].apps, 3);
}

// History retention: beyond max-apps the oldest finished apps go (memory and
// store); beyond max-age all older ones; unfinished apps never.
TEST_F(AppManagerTest, FinishedAppsAreTrimmedByCountAndAge) {
  tweak_ = [](AppManagerOptions& o) {
    o.history_max_apps = 2;
    o.history_max_age = Millis(60000);
  };
  mgr_ = make();
  AppId running = mgr_->submit(spec(), anyBind())->id;
  std::vector<AppId> done;
  for (int i = 0; i < 4; i++) {
    AppId id = mgr_->submit(spec(), anyBind())->id;
    clock_.advance(Millis(1000));
    ASSERT_TRUE(mgr_->finish(id, AppState::kFinished, "").isOk());
    done.push_back(id);
  }
  EXPECT_EQ(mgr_->get(done[0]).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(mgr_->get(done[1]).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(mgr_->get(done[2]).isOk());
  EXPECT_TRUE(mgr_->get(done[3]).isOk());
  EXPECT_TRUE(mgr_->get(running).isOk());
  // Gone from the store too: a restart does not bring them back.
  mgr_ = make();
  ASSERT_TRUE(mgr_->recover().isOk());
  EXPECT_EQ(mgr_->list({}, "").size(), 3u);
  // By age: a minute after the last finish every finished app goes.
  clock_.advance(Millis(61000));
  EXPECT_EQ(*mgr_->trimHistory(), 2);
  EXPECT_EQ(mgr_->list({}, "").size(), 1u);
  EXPECT_TRUE(mgr_->get(running).isOk());
  EXPECT_EQ(*mgr_->trimHistory(), 0);
}

// start() runs the trimming on the clock.
TEST_F(AppManagerTest, HousekeepingTrimsOnTheClock) {
  tweak_ = [](AppManagerOptions& o) { o.history_max_age = Millis(2000); };
  mgr_ = make();
  AppId id = mgr_->submit(spec(), anyBind())->id;
  ASSERT_TRUE(mgr_->finish(id, AppState::kKilled, "").isOk());
  mgr_->start();
  clock_.advance(Millis(1000));
  EXPECT_TRUE(mgr_->get(id).isOk());
  clock_.advance(Millis(2000));
  EXPECT_EQ(mgr_->get(id).status().code(), StatusCode::kNotFound);
  mgr_->stop();
  EXPECT_EQ(clock_.pendingTimers(), 0u);
}

}  // namespace
}  // namespace morpheus::rm
