// The one clock (docs/design/conventions.md "Time"). Daemons use RealClock; tests and
// morpheus-sim use VirtualClock and advance it explicitly, after which every
// timer that became due has run, in deadline order (ties: scheduling order).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include "common/mutex.h"

namespace morpheus {

using Millis = std::chrono::milliseconds;
using Seconds = std::chrono::seconds;
// Absolute time: milliseconds since the Unix epoch (the wire representation).
using TimePoint = std::chrono::time_point<std::chrono::system_clock, Millis>;

inline int64_t toEpochMs(TimePoint t) { return t.time_since_epoch().count(); }
inline TimePoint fromEpochMs(int64_t ms) { return TimePoint(Millis(ms)); }

using TimerId = uint64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Runs `fn` once at or after `at`. Thread-safe. The callback runs on the
  // clock's timer thread (RealClock) or inside advance() (VirtualClock); it
  // must not block for long.
  virtual TimerId schedule(TimePoint at, std::function<void()> fn) = 0;
  TimerId scheduleAfter(Millis delay, std::function<void()> fn) {
    return schedule(now() + delay, std::move(fn));
  }
  // Returns true if the timer had not yet run and will now never run. False
  // also while its callback is running on another thread: cancel() does not
  // wait for it (use cancelAndWait() before freeing what the callback uses).
  virtual bool cancel(TimerId id) = 0;
  // cancel(), then, if the callback of `id` is running on another thread,
  // blocks until it has returned. After it returns the callback neither runs
  // nor is running, so an owner's stop() can free what the callback uses.
  // Called from inside that callback it does not wait (it would never
  // return). The caller must not hold a lock the callback takes. Id 0 (never
  // issued: ids start at 1) names no timer and returns false at once.
  virtual bool cancelAndWait(TimerId id) = 0;
};

// Wall-clock time with one timer thread. Destruction stops the thread; timers
// still pending are dropped.
class RealClock final : public Clock {
 public:
  RealClock();
  ~RealClock() override;
  RealClock(const RealClock&) = delete;
  RealClock& operator=(const RealClock&) = delete;

  TimePoint now() const override;
  TimerId schedule(TimePoint at, std::function<void()> fn) override;
  bool cancel(TimerId id) override;
  bool cancelAndWait(TimerId id) override;

 private:
  void run();

  Mutex mu_;
  CondVar cv_;
  CondVar done_;  // signalled when a callback returns
  bool stopping_ GUARDED_BY(mu_) = false;
  TimerId next_id_ GUARDED_BY(mu_) = 1;
  TimerId running_ GUARDED_BY(mu_) = 0;  // the callback run() is in, 0 if none
  std::multimap<std::pair<TimePoint, TimerId>, std::function<void()>> q_ GUARDED_BY(mu_);
  std::thread thread_;
};

// Deterministic time for tests and the simulator. Starts at `start`.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(TimePoint start = fromEpochMs(0)) : now_(start) {}

  TimePoint now() const override;
  TimerId schedule(TimePoint at, std::function<void()> fn) override;
  bool cancel(TimerId id) override;
  bool cancelAndWait(TimerId id) override;

  // Moves time forward by `d`, running every timer due at or before the new
  // time in deadline order; `now()` inside a callback is that timer's deadline.
  // Timers scheduled by callbacks that fall inside the window also run.
  void advance(Millis d);
  // Runs timers due at the current time without moving it.
  void settle() { advance(Millis(0)); }
  size_t pendingTimers() const;

 private:
  mutable Mutex mu_;
  CondVar done_;  // signalled when a callback returns
  TimePoint now_;
  TimerId next_id_ = 1;
  std::map<std::pair<TimePoint, TimerId>, std::function<void()>> q_;
  // The callback advance() is in and the thread running it (advance() may be
  // called from a test's worker thread while another thread stops an owner).
  TimerId running_ GUARDED_BY(mu_) = 0;
  std::thread::id runner_ GUARDED_BY(mu_);
};

}  // namespace morpheus
