// Queue and user limits (rm/core/queue_limits.h): parsing names the option
// entry as written, and admit() holds back exactly the apps over a limit.
#include "rm/core/queue_limits.h"

#include <gtest/gtest.h>

namespace morpheus::rm {
namespace {

const std::set<std::string> kPaths = {"root", "root.default", "root.dev", "root.dev.a",
                                      "root.dev.b"};

TEST(QueueLimitsTest, ParsesTheThreeMaps) {
  auto l =
      parseQueueLimits({{"root.dev", "2"}, {"root.dev.a", "0"}},
                       {{"root.dev", "8192 mb, 4 vcores"}, {"root.dev.b", "memory=512 vcores=1"}},
                       {{"alice", "3"}, {"*", "1"}}, kPaths);
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  EXPECT_EQ(l->max_running_apps.at("root.dev"), 2);
  EXPECT_EQ(l->max_running_apps.at("root.dev.a"), 0);
  EXPECT_EQ(l->max_resources.at("root.dev"), Resource(8192, 4));
  EXPECT_EQ(l->max_resources.at("root.dev.b"), Resource(512, 1));
  EXPECT_EQ(l->userLimit("alice"), 3);
  EXPECT_EQ(l->userLimit("bob"), 1);  // "*": every unlisted user
  EXPECT_FALSE(QueueLimits{}.userLimit("bob").has_value());
}

TEST(QueueLimitsTest, ResourceCapForms) {
  EXPECT_EQ(*parseResourceCap("8192mb,4vcores", "f"), Resource(8192, 4));
  EXPECT_EQ(*parseResourceCap("4 vcores 1024 MB", "f"), Resource(1024, 4));
  EXPECT_EQ(*parseResourceCap("memory=1,vcores=1", "f"), Resource(1, 1));
  EXPECT_EQ(parseResourceCap("8192 mb", "f").status().message(),
            "f: expected memory and vcores, e.g. \"8192 mb, 4 vcores\" or "
            "\"memory=8192,vcores=4\"");
  EXPECT_NE(parseResourceCap("8 gb, 1 vcores", "f").status().message().find("unknown unit 'gb'"),
            std::string::npos);
  EXPECT_NE(parseResourceCap("-1 mb, 1 vcores", "f").status().message().find("f: "),
            std::string::npos);
  EXPECT_NE(parseResourceCap("1 mb, 1 mb, 1 vcores", "f").status().message().find("twice"),
            std::string::npos);
}

TEST(QueueLimitsTest, ErrorsNameTheEntryAsWritten) {
  auto unknown = parseQueueLimits({{"root.nope", "1"}}, {}, {}, kPaths);
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      unknown.status().message().rfind("scheduler.max-running-apps.root.nope: unknown queue", 0),
      0u)
      << unknown.status().message();
  auto bad = parseQueueLimits({{"root.dev", "two"}}, {}, {}, kPaths);
  EXPECT_EQ(bad.status().message(),
            "scheduler.max-running-apps.root.dev: 'two' is not a whole number of applications "
            ">= 0");
  auto neg = parseQueueLimits({}, {}, {{"alice", "-1"}}, kPaths);
  EXPECT_NE(neg.status().message().find("scheduler.user-max-running-apps.alice"),
            std::string::npos);
  auto cap = parseQueueLimits({}, {{"root.dev", "lots"}}, {}, kPaths);
  EXPECT_NE(cap.status().message().find("scheduler.max-resources.root.dev"), std::string::npos)
      << cap.status().message();
  auto capq = parseQueueLimits({}, {{"root.x", "1 mb, 1 vcores"}}, {}, kPaths);
  EXPECT_NE(capq.status().message().find("scheduler.max-resources.root.x: unknown queue"),
            std::string::npos);
}

AdmissionApp app(const std::string& id, const std::string& user, const std::string& queue,
                 bool started = false) {
  return {AppId(id), user, queue, started};
}

TEST(QueueLimitsTest, QueueLimitHoldsBackLaterAppsInOrder) {
  QueueLimits l;
  l.max_running_apps["root.dev.a"] = 1;
  auto w = admit(
      {app("1", "u", "root.dev.a"), app("2", "u", "root.dev.a"), app("3", "u", "root.dev.b")}, l);
  ASSERT_EQ(w.size(), 1u);
  ASSERT_TRUE(w.count(AppId("2")));
  EXPECT_EQ(w[AppId("2")],
            "waiting: queue root.dev.a runs 1 of its 1 application(s) "
            "(scheduler.max-running-apps); starts when one of them ends");
  // A started app holds its place wherever it is in the order.
  w = admit({app("1", "u", "root.dev.a"), app("2", "u", "root.dev.a", true)}, l);
  EXPECT_EQ(w.size(), 1u);
  EXPECT_TRUE(w.count(AppId("1")));
  // Over the limit already (the limit was lowered): nothing new starts.
  w = admit({app("1", "u", "root.dev.a", true), app("2", "u", "root.dev.a", true),
             app("3", "u", "root.dev.a")},
            l);
  EXPECT_TRUE(w.count(AppId("3")));
}

TEST(QueueLimitsTest, ParentLimitCoversItsChildren) {
  QueueLimits l;
  l.max_running_apps["root.dev"] = 2;
  auto w = admit({app("1", "u", "root.dev.a"), app("2", "v", "root.dev.b"),
                  app("3", "w", "root.dev.a"), app("4", "w", "root.default")},
                 l);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[AppId("3")].find("queue root.dev runs 2 of its 2"), std::string::npos);
}

TEST(QueueLimitsTest, UserLimitCountsOverAllQueues) {
  QueueLimits l;
  l.user_max_running_apps["alice"] = 1;
  l.user_max_running_apps["*"] = 2;
  auto w = admit({app("1", "alice", "root.dev.a"), app("2", "alice", "root.default"),
                  app("3", "bob", "root.dev.a"), app("4", "bob", "root.default"),
                  app("5", "bob", "root.dev.b")},
                 l);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[AppId("2")],
            "waiting: user alice runs 1 of their 1 application(s) "
            "(scheduler.user-max-running-apps); starts when one of them ends");
  EXPECT_TRUE(w.count(AppId("5")));
  // A waiting app takes no place: a later app of another user may start.
  EXPECT_TRUE(admit({app("1", "alice", "q", true), app("2", "alice", "q"), app("3", "bob", "q")}, l)
                  .count(AppId("2")));
  EXPECT_TRUE(admit({}, l).empty());
  EXPECT_TRUE(
      admit({app("1", "u", "root.dev.a"), app("2", "u", "root.dev.a")}, QueueLimits{}).empty());
}

TEST(QueueLimitsTest, ZeroHoldsEveryNewApp) {
  QueueLimits l;
  l.max_running_apps["root.dev"] = 0;
  auto w = admit({app("1", "u", "root.dev.a"), app("2", "u", "root.default")}, l);
  EXPECT_EQ(w.size(), 1u);
  EXPECT_TRUE(w.count(AppId("1")));
}

}  // namespace
}  // namespace morpheus::rm
