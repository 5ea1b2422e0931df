// The RM's scheduling strand (docs/design/conventions.md "One thread owns each
// piece of mutable state"): one thread that runs posted tasks in order. The
// heartbeat RPCs (gRPC callback API, resource_tracker_service.h) post their
// scheduling work here, so no gRPC thread waits for the scheduler and the
// scheduler core runs on one thread at a time.
//
// Bounded: post() refuses a task when `max_queued` tasks wait (the caller
// answers UNAVAILABLE; an NM retries at its next heartbeat), so overload shows
// as refusals and as the queue-depth gauge, never as unbounded memory.
//
// Two lanes (YARN's asynchronous scheduling): post() for RPC work
// whose caller waits for an answer, postBackground() for work nobody waits on
// (scheduling a node after its heartbeat was answered). Each turn runs every
// waiting RPC task, then one background task, so an answer never waits
// behind more than one background task and background work still progresses
// when RPCs keep coming. The background lane is unbounded: its callers keep
// it bounded (RmRuntime posts at most one per node).
//
// Thread-safety: post() from any thread. stop() runs the RPC tasks queued
// before it (their callers wait for answers), drops the background tasks
// still waiting (a scheduling pass is not owed to anyone, and must not launch
// AMs while the RM shuts down), and joins; tasks posted afterwards are
// refused.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/metrics.h"
#include "common/mutex.h"
#include "rm/core/rm_metrics.h"

namespace morpheus::rm {

class Strand {
 public:
  // `max_queued` >= 1: RPC tasks waiting at most (not counting the running
  // one). Exports morpheus_rm_strand_queued (RPC tasks posted and not yet
  // finished, a gauge: the RM's backlog), morpheus_rm_strand_background_queued
  // (background tasks waiting) and morpheus_rm_strand_refused_total to
  // `metrics`.
  Strand(MetricsRegistry& metrics, size_t max_queued);
  ~Strand();  // stop()
  Strand(const Strand&) = delete;
  Strand& operator=(const Strand&) = delete;

  void start();
  void stop();
  // false (and `task` not run) when the queue is full or the strand stopped.
  bool post(std::function<void()> task);
  // false (and `task` not run) only when the strand stopped.
  bool postBackground(std::function<void()> task);
  size_t queued() const;  // RPC lane

 private:
  void loop();

  const size_t max_queued_;
  StrandMetrics m_;
  Gauge& queued_gauge_;
  Gauge& background_gauge_;
  Counter& refused_;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  std::deque<std::function<void()>> background_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<int64_t> outstanding_{0};  // posted, not finished
  std::thread thread_;
};

}  // namespace morpheus::rm
