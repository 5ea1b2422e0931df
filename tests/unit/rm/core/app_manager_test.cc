// AppManager: validation, binding, attempts, kill ACL, AM tokens, and
// persistence across a restart (real SQLite StateStore, virtual clock).
#include "rm/core/app_manager.h"

#include <gtest/gtest.h>

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
    return std::make_unique<AppManager>(
        o, *store_, clock_, metrics_, signer_,
        [](const JobKey& k) -> std::vector<BindTarget> {
          if (k.value() == "nightly") return {{ReservationId("r_nightly"), UserId("alice"), "default"}};
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
  EXPECT_NE(mgr_->submit(s, anyBind()).status().message().find("reservation_id"), std::string::npos);
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
  EXPECT_NE(apps.submit(bad, anyBind()).status().message().find("rm.max-name-length"), std::string::npos);
  bad.name = "ok";
  bad.tags = {{"k", std::string("v\0", 2)}};
  EXPECT_EQ(apps.submit(bad, anyBind()).status().message().rfind("tags[k]: contains U+0000", 0), 0u);
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

}  // namespace
}  // namespace morpheus::rm
