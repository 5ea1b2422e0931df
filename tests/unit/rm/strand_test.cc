// Strand (issue #15): the RM's scheduling thread for node heartbeats.
#include "rm/strand.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
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

}  // namespace
}  // namespace morpheus::rm
