// Strand: the RM's scheduling thread for node heartbeats.
#include "rm/runtime/strand.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace morpheus::rm {
namespace {

// Tasks run one at a time in the order posted, on one thread.
TEST(StrandTest, TasksRunInPostedOrderOnOneThread) {
  MetricsRegistry metrics;
  Strand strand(metrics, 100);
  strand.start();
  std::mutex mu;
  std::vector<int> order;
  std::set<std::thread::id> threads;
  for (int i = 0; i < 50; i++) {
    ASSERT_TRUE(strand.post([&, i] {
      std::lock_guard<std::mutex> lk(mu);
      order.push_back(i);
      threads.insert(std::this_thread::get_id());
    }));
  }
  strand.stop();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; i++) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_EQ(threads.size(), 1u);
}

// A full queue refuses the task (counted) instead of growing; stop() still
// runs what was accepted and refuses what comes after.
TEST(StrandTest, FullQueueRefusesAndStopRunsWhatWasAccepted) {
  MetricsRegistry metrics;
  Strand strand(metrics, 2);
  int ran = 0;
  EXPECT_TRUE(strand.post([&] { ran++; }));  // not started: both wait
  EXPECT_TRUE(strand.post([&] { ran++; }));
  EXPECT_FALSE(strand.post([&] { ran += 100; }));
  EXPECT_EQ(strand.queued(), 2u);
  EXPECT_EQ(metrics.counter("morpheus_rm_strand_refused_total", "").value(), 1.0);
  EXPECT_EQ(metrics.gauge("morpheus_rm_strand_queued", "").value(), 2.0);
  strand.stop();
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(strand.post([&] { ran++; }));
  EXPECT_EQ(ran, 2);
}

// Asynchronous scheduling: RPC tasks waiting go before
// background ones, one background task per turn, and background work still
// runs while RPC tasks keep coming.
TEST(StrandTest, RpcTasksGoFirstAndBackgroundTasksStillProgress) {
  MetricsRegistry metrics;
  Strand strand(metrics, 100);
  std::vector<std::string> order;  // touched on the strand only, read after stop
  // Not started yet: everything waits, so the first turn sees all of it.
  ASSERT_TRUE(strand.postBackground([&] { order.push_back("b1"); }));
  ASSERT_TRUE(strand.postBackground([&] {
    order.push_back("b2");
    // Posted by a background task while another one waits: runs before b3.
    (void)strand.post([&] { order.push_back("r3"); });
  }));
  std::promise<void> done;
  ASSERT_TRUE(strand.postBackground([&] {
    order.push_back("b3");
    done.set_value();
  }));
  ASSERT_TRUE(strand.post([&] { order.push_back("r1"); }));
  ASSERT_TRUE(strand.post([&] { order.push_back("r2"); }));
  EXPECT_EQ(metrics.gauge("morpheus_rm_strand_background_queued", "").value(), 3.0);
  EXPECT_EQ(strand.queued(), 2u);  // the RPC lane only
  strand.start();
  done.get_future().wait();
  strand.stop();
  EXPECT_EQ(order, (std::vector<std::string>{"r1", "r2", "b1", "b2", "r3", "b3"}));
  EXPECT_EQ(metrics.gauge("morpheus_rm_strand_background_queued", "").value(), 0.0);
  EXPECT_FALSE(strand.postBackground([&] { order.push_back("late"); }));
}

TEST(StrandTest, StopRunsRpcTasksAndDropsBackgroundOnes) {
  MetricsRegistry metrics;
  Strand strand(metrics, 1);
  int rpc = 0, background = 0;
  ASSERT_TRUE(strand.post([&] { rpc++; }));
  ASSERT_TRUE(strand.postBackground([&] { background++; }));
  ASSERT_TRUE(strand.postBackground([&] { background++; }));  // the lane has no bound of 1
  strand.stop();
  EXPECT_EQ(rpc, 1);
  EXPECT_EQ(background, 0);
  EXPECT_EQ(metrics.gauge("morpheus_rm_strand_background_queued", "").value(), 0.0);
}

}  // namespace
}  // namespace morpheus::rm
