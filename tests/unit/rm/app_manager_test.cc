// AppManager: validation, binding, attempts, kill ACL, AM tokens, and
// persistence across a restart (real SQLite StateStore, virtual clock).
#include "rm/app_manager.h"

#include <gtest/gtest.h>

#include "test_db.h"

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
        [](const JobKey& k) -> std::optional<ReservationId> {
          if (k.value() == "nightly") return ReservationId("r_nightly");
          return std::nullopt;
        },
        [](const ReservationId& r) { return r.value() == "r_nightly" || r.value() == "r_other"; });
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
  EXPECT_EQ(mgr_->submit(s).status().message(), "name: is required");
  s = spec();
  s.am_resource = Resource();
  EXPECT_EQ(mgr_->submit(s).status().code(), StatusCode::kInvalidArgument);
  s = spec();
  s.queue = "root.nope";
  auto r = mgr_->submit(s);
  EXPECT_NE(r.status().message().find("queue: unknown queue 'root.nope'"), std::string::npos)
      << r.status().message();
  s = spec();
  s.reservation = ReservationId("r_missing");
  EXPECT_NE(mgr_->submit(s).status().message().find("reservation_id"), std::string::npos);
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
      [](const JobKey&) -> std::optional<ReservationId> { return std::nullopt; },
      [](const ReservationId&) { return false; });
  auto a1 = apps.submit(spec());
  auto a2 = apps.submit(spec());
  ASSERT_TRUE(a1.isOk() && a2.isOk());
  auto refused = apps.submit(spec());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("rm.max-pending-apps-per-user"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(apps.list({}, "").size(), 2u) << "a refusal stores nothing";
  auto bob = spec();
  bob.user = UserId("bob");
  EXPECT_TRUE(apps.submit(bob).isOk()) << "per user";
  // a1 and a2 run, a4 waits: one pending, three unfinished.
  ASSERT_TRUE(apps.amLaunched(a1->id, ContainerId(a1->id.value() + "_1_am"), NodeId("n1")).isOk());
  EXPECT_TRUE(apps.submit(spec()).isOk());
  ASSERT_TRUE(apps.amLaunched(a2->id, ContainerId(a2->id.value() + "_1_am"), NodeId("n1")).isOk());
  auto total = apps.submit(spec());
  EXPECT_EQ(total.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(total.status().message().find("rm.max-apps-per-user"), std::string::npos)
      << total.status().message();
  ASSERT_TRUE(apps.finish(a1->id, AppState::kFinished, "").isOk());
  EXPECT_TRUE(apps.submit(spec()).isOk()) << "a finished app no longer counts";

  auto bad = spec();
  bad.user = UserId("carol");
  bad.am_launch_context = std::string(65, 'x');
  EXPECT_NE(apps.submit(bad).status().message().find("am_launch_context: is 65 bytes"),
            std::string::npos);
  bad = spec();
  bad.user = UserId("carol");
  bad.name =
      "a\xe2\x80\xae"
      "b";
  EXPECT_EQ(apps.submit(bad).status().message().rfind("name: contains U+202E", 0), 0u);
  bad.name = std::string(17, 'n');
  EXPECT_NE(apps.submit(bad).status().message().find("rm.max-name-length"), std::string::npos);
  bad.name = "ok";
  bad.tags = {{"k", std::string("v\0", 2)}};
  EXPECT_EQ(apps.submit(bad).status().message().rfind("tags[k]: contains U+0000", 0), 0u);
  EXPECT_EQ(apps.list({}, "").size(), 5u);
}

TEST_F(AppManagerTest, BindsByReservationIdOrRecurrenceKey) {
  auto s = spec();
  s.reservation = ReservationId("r_other");
  EXPECT_EQ(mgr_->submit(s)->reservation.value(), "r_other");
  s = spec();
  s.recurrence_key = JobKey("nightly");
  auto bound = mgr_->submit(s);
  EXPECT_EQ(bound->reservation.value(), "r_nightly");
  EXPECT_EQ(bound->queue, "");
  s.recurrence_key = JobKey("unknown-key");  // no reservation: ad hoc in the default queue
  auto adhoc = mgr_->submit(s);
  EXPECT_TRUE(adhoc->reservation.empty());
  EXPECT_EQ(adhoc->queue, "root.default");
}

TEST_F(AppManagerTest, AttemptsRetryThenFail) {
  auto s = spec();
  s.max_attempts = 2;
  AppId id = mgr_->submit(s)->id;
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
  AppId id = mgr_->submit(spec())->id;
  EXPECT_EQ(mgr_->kill(id, UserId("mallory"), false, "").code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(mgr_->kill(id, UserId("ops"), true, "maintenance").isOk());
  EXPECT_EQ(mgr_->get(id)->state, AppState::kKilled);
  EXPECT_EQ(mgr_->kill(id, UserId("alice"), false, "").code(), StatusCode::kInfeasible);
  EXPECT_TRUE(mgr_->finish(id, AppState::kFinished, "").isOk());  // ignored: already final
  EXPECT_EQ(mgr_->get(id)->state, AppState::kKilled);
}

TEST_F(AppManagerTest, AmTokenActsOnlyForItsOwnAppAndAttempt) {
  AppId a = mgr_->submit(spec())->id;
  AppId b = mgr_->submit(spec())->id;
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
  AppId a = mgr_->submit(spec())->id;
  ASSERT_TRUE(mgr_->amLaunched(a, ContainerId("c1"), NodeId("n1")).isOk());
  AppId b = mgr_->submit(spec())->id;
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
  AppId c = mgr_->submit(spec())->id;
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(mgr_->list({AppState::kFinished}, "").size(), 1u);
}

}  // namespace
}  // namespace morpheus::rm
