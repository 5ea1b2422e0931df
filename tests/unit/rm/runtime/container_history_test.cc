// ContainerHistory: the per-application container list behind
// ListContainers, its states and its bounds.
#include "rm/runtime/container_history.h"

#include <gtest/gtest.h>

#include <string>

namespace morpheus::rm {
namespace {

using State = ContainerHistoryEntry::State;

TimePoint at(int64_t ms) { return fromEpochMs(ms); }

TEST(ContainerHistoryTest, FollowsEachContainerFromAllocationToCompletion) {
  ContainerHistory h;
  const AppId app("app_1");
  h.allocated(app, ContainerId("app_1_9_am1"), NodeId("nm1"), Resource(256, 1), true, at(10),
              false);
  h.allocated(app, ContainerId("app_1_9_1"), NodeId("nm2"), Resource(384, 3), false, at(20), false);
  h.running(app, ContainerId("app_1_9_am1"));
  // A second allocation of a known id changes nothing.
  h.allocated(app, ContainerId("app_1_9_1"), NodeId("nm3"), Resource(1, 1), false, at(30), true);
  h.completed(app, ContainerId("app_1_9_1"), NodeId("nm2"), Resource(384, 3), false, at(20), at(40),
              3, 2, "exited with status 3");
  // A completion repeated (the node reports it again) keeps the first.
  h.completed(app, ContainerId("app_1_9_1"), NodeId("nm2"), Resource(384, 3), false, at(20), at(99),
              0, 1, "");

  auto v = h.of(app);
  ASSERT_TRUE(v.known);
  ASSERT_EQ(v.containers.size(), 2u);
  const auto& am = v.containers[0];
  EXPECT_EQ(am.id.value(), "app_1_9_am1");
  EXPECT_TRUE(am.am);
  EXPECT_EQ(am.node.value(), "nm1");
  EXPECT_EQ(am.state, State::kRunning);
  const auto& task = v.containers[1];
  EXPECT_EQ(task.state, State::kComplete);
  EXPECT_EQ(task.node.value(), "nm2");
  EXPECT_EQ(task.resource, Resource(384, 3));
  EXPECT_EQ(task.exit_status, 3);
  EXPECT_EQ(task.exit_reason, 2);
  EXPECT_EQ(task.diagnostics, "exited with status 3");
  EXPECT_EQ(task.start, at(20));
  EXPECT_EQ(task.end, at(40));
  EXPECT_EQ(v.omitted, 0);
  // Running after complete does not bring it back.
  h.running(app, ContainerId("app_1_9_1"));
  EXPECT_EQ(h.of(app).containers[1].state, State::kComplete);

  EXPECT_FALSE(h.of(AppId("app_2")).known);
}

// The runtime keeps the Ref allocated() returns and reaches the entry through
// it: the same states as by id, a known complete id gives a null Ref, and a
// Ref stays on its entry while other entries of the app are dropped.
TEST(ContainerHistoryTest, ARefFollowsItsEntryAndAKnownCompleteIdGivesNone) {
  ContainerHistory h;
  const AppId app("app_1");
  auto ref = h.allocated(app, ContainerId("app_1_1_1"), NodeId("nm1"), Resource(256, 1), false,
                         at(1), false);
  ASSERT_FALSE(ref.isNull());
  // A second allocation of the known id hands out the same entry.
  auto again =
      h.allocated(app, ContainerId("app_1_1_1"), NodeId("nm9"), Resource(1, 1), false, at(5), true);
  ASSERT_FALSE(again.isNull());
  h.running(again);
  EXPECT_EQ(h.of(app).containers[0].state, State::kRunning);
  EXPECT_EQ(h.of(app).containers[0].node.value(), "nm1");
  // Fill the app to its bound with completed containers and go past it: the
  // oldest complete ones go, the open one stays and its Ref still works.
  for (size_t i = 0; i < ContainerHistory::kMaxPerApp + 5; ++i) {
    auto r = h.allocated(app, ContainerId("app_1_1_x" + std::to_string(i)), NodeId("nm1"),
                         Resource(1, 1), false, at(2), false);
    h.completed(r, at(3), 0, 1, "");
  }
  h.completed(ref, at(7), 4, 2, "done");
  auto v = h.of(app);
  ASSERT_EQ(v.containers.size(), ContainerHistory::kMaxPerApp);
  EXPECT_EQ(v.containers[0].id.value(), "app_1_1_1");
  EXPECT_EQ(v.containers[0].state, State::kComplete);
  EXPECT_EQ(v.containers[0].exit_status, 4);
  EXPECT_EQ(v.containers[0].end, at(7));
  EXPECT_EQ(v.omitted, 6);
  // The completed id allocated again: no Ref, and completing through it or by
  // id keeps the first end.
  auto none =
      h.allocated(app, ContainerId("app_1_1_1"), NodeId("nm1"), Resource(1, 1), false, at(8), true);
  EXPECT_TRUE(none.isNull());
  h.completed(none, at(9), 0, 1, "");
  h.completed(app, ContainerId("app_1_1_1"), NodeId("nm1"), Resource(1, 1), false, at(8), at(9), 0,
              1, "");
  EXPECT_EQ(h.of(app).containers[0].end, at(7));
}

// An AM container that ended while no RM watched it is known by its end.
TEST(ContainerHistoryTest, ACompletionOfAnUnknownContainerIsRecorded) {
  ContainerHistory h;
  const AppId app("app_1");
  h.completed(app, ContainerId("app_1_5_am2"), NodeId("nm1"), Resource(256, 1), true, at(1), at(2),
              137, 3, "killed");
  auto v = h.of(app);
  ASSERT_EQ(v.containers.size(), 1u);
  EXPECT_EQ(v.containers[0].state, State::kComplete);
  EXPECT_EQ(v.containers[0].exit_status, 137);
  EXPECT_TRUE(v.containers[0].am);
}

// Beyond kMaxPerApp the oldest finished container goes (counted); running
// ones never do.
TEST(ContainerHistoryTest, BoundsEachApplication) {
  ContainerHistory h;
  const AppId app("app_1");
  h.allocated(app, ContainerId("app_1_1_am1"), NodeId("nm1"), Resource(1, 1), true, at(0), true);
  const size_t n = ContainerHistory::kMaxPerApp + 5;
  for (size_t i = 0; i < n; i++) {
    ContainerId id("app_1_1_" + std::to_string(i));
    h.allocated(app, id, NodeId("nm1"), Resource(1, 1), false, at(1), false);
    h.completed(app, id, NodeId("nm1"), Resource(1, 1), false, at(1), at(2), 0, 1, "");
  }
  auto v = h.of(app);
  EXPECT_EQ(v.containers.size(), ContainerHistory::kMaxPerApp);
  EXPECT_EQ(v.omitted, 6);  // 6 finished ones made room for the running AM
  EXPECT_EQ(v.containers.front().id.value(), "app_1_1_am1");
  EXPECT_EQ(v.containers[1].id.value(), "app_1_1_6");
  EXPECT_EQ(v.containers.back().id.value(), "app_1_1_" + std::to_string(n - 1));
}

// Beyond kMaxApps the first-recorded app with nothing running goes whole.
TEST(ContainerHistoryTest, BoundsTheNumberOfApplications) {
  ContainerHistory h;
  // app_0 keeps a running container; app_1.. finish theirs.
  h.allocated(AppId("app_0"), ContainerId("app_0_1_am1"), NodeId("nm1"), Resource(1, 1), true,
              at(0), true);
  for (size_t i = 1; i < ContainerHistory::kMaxApps; i++) {
    AppId app("app_" + std::to_string(i));
    ContainerId id(app.value() + "_1_am1");
    h.completed(app, id, NodeId("nm1"), Resource(1, 1), true, at(0), at(1), 0, 1, "");
  }
  EXPECT_EQ(h.apps(), ContainerHistory::kMaxApps);
  h.allocated(AppId("app_new"), ContainerId("app_new_1_am1"), NodeId("nm1"), Resource(1, 1), true,
              at(5), false);
  EXPECT_EQ(h.apps(), ContainerHistory::kMaxApps);
  EXPECT_TRUE(h.of(AppId("app_0")).known) << "an app with a running container stays";
  EXPECT_FALSE(h.of(AppId("app_1")).known) << "the first finished app goes";
  EXPECT_TRUE(h.of(AppId("app_2")).known);
  EXPECT_TRUE(h.of(AppId("app_new")).known);
}

// Beyond kMaxEntries containers in all, whole finished apps go too.
TEST(ContainerHistoryTest, BoundsTheContainersOfAllApplications) {
  ContainerHistory h;
  const size_t apps = ContainerHistory::kMaxEntries / ContainerHistory::kMaxPerApp + 1;
  for (size_t a = 0; a < apps; a++) {
    AppId app("app_" + std::to_string(a));
    for (size_t i = 0; i < ContainerHistory::kMaxPerApp; i++) {
      ContainerId id(app.value() + "_1_" + std::to_string(i));
      h.completed(app, id, NodeId("nm1"), Resource(1, 1), false, at(0), at(1), 0, 1, "");
    }
  }
  EXPECT_LE(h.entries(), ContainerHistory::kMaxEntries);
  EXPECT_FALSE(h.of(AppId("app_0")).known);
  EXPECT_TRUE(h.of(AppId("app_1")).known);
  EXPECT_EQ(h.of(AppId("app_" + std::to_string(apps - 1))).containers.size(),
            ContainerHistory::kMaxPerApp);
}

// Over kMaxEntries while every app still has containers out, nothing can go;
// an app whose containers then all complete goes at the next container
// recorded (the count of finished apps follows each completion).
TEST(ContainerHistoryTest, AnAppThatFinishesWhileOverTheBoundGoesAtTheNextContainer) {
  ContainerHistory h;
  const size_t apps = ContainerHistory::kMaxEntries / ContainerHistory::kMaxPerApp + 1;
  auto id = [](size_t a, size_t i) {
    return ContainerId("app_" + std::to_string(a) + "_1_" + std::to_string(i));
  };
  for (size_t a = 0; a < apps; a++) {
    AppId app("app_" + std::to_string(a));
    for (size_t i = 0; i < ContainerHistory::kMaxPerApp; i++) {
      h.allocated(app, id(a, i), NodeId("nm1"), Resource(1, 1), false, at(0), true);
    }
  }
  ASSERT_GT(h.entries(), ContainerHistory::kMaxEntries) << "running containers are never dropped";
  EXPECT_EQ(h.apps(), apps);
  for (size_t i = 0; i < ContainerHistory::kMaxPerApp; i++) {
    h.completed(AppId("app_5"), id(5, i), NodeId("nm1"), Resource(1, 1), false, at(0), at(1), 0, 1,
                "");
  }
  EXPECT_TRUE(h.of(AppId("app_5")).known) << "nothing recorded since it finished";
  h.allocated(AppId("app_0"), id(0, 5000), NodeId("nm1"), Resource(1, 1), false, at(2), false);
  EXPECT_FALSE(h.of(AppId("app_5")).known) << "the finished app goes at the next container";
  EXPECT_TRUE(h.of(AppId("app_4")).known);
  EXPECT_EQ(h.apps(), apps - 1);
}

}  // namespace
}  // namespace morpheus::rm
