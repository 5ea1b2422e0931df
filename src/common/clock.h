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
  // Returns true if the timer had not yet run and will now never run.
  virtual bool cancel(TimerId id) = 0;
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

 private:
  void run();

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  TimerId next_id_ GUARDED_BY(mu_) = 1;
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

  // Moves time forward by `d`, running every timer due at or before the new
  // time in deadline order; `now()` inside a callback is that timer's deadline.
  // Timers scheduled by callbacks that fall inside the window also run.
  void advance(Millis d);
  // Runs timers due at the current time without moving it.
  void settle() { advance(Millis(0)); }
  size_t pendingTimers() const;

 private:
  mutable Mutex mu_;
  TimePoint now_;
  TimerId next_id_ = 1;
  std::map<std::pair<TimePoint, TimerId>, std::function<void()>> q_;
};

}  // namespace morpheus
