#include "common/clock.h"

#include <vector>

namespace morpheus {

namespace {

// Removes timer `id` from a queue keyed by (deadline, id); false if absent.
template <typename Queue>
bool eraseTimer(Queue& q, TimerId id) {
  for (auto it = q.begin(); it != q.end(); ++it) {
    if (it->first.second == id) {
      q.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace

RealClock::RealClock() : thread_([this] { run(); }) {}

RealClock::~RealClock() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

TimePoint RealClock::now() const {
  return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
}

TimerId RealClock::schedule(TimePoint at, std::function<void()> fn) {
  TimerId id;
  {
    MutexLock lk(mu_);
    id = next_id_++;
    q_.emplace(std::make_pair(at, id), std::move(fn));
  }
  cv_.notify_all();
  return id;
}

bool RealClock::cancel(TimerId id) {
  MutexLock lk(mu_);
  return eraseTimer(q_, id);
}

bool RealClock::cancelAndWait(TimerId id) {
  MutexLock lk(mu_);
  const bool cancelled = eraseTimer(q_, id);
  if (std::this_thread::get_id() != thread_.get_id()) {
    done_.wait(mu_, [&]() REQUIRES(mu_) { return id == 0 || running_ != id; });
  }
  return cancelled;
}

void RealClock::run() {
  MutexLock lk(mu_);
  while (!stopping_) {
    if (q_.empty()) {
      cv_.wait(mu_);
      continue;
    }
    auto due = q_.begin()->first.first;
    if (now() < due) {
      cv_.waitUntil(mu_, std::chrono::system_clock::time_point(due));
      continue;
    }
    running_ = q_.begin()->first.second;
    auto fn = std::move(q_.begin()->second);
    q_.erase(q_.begin());
    lk.unlock();
    fn();
    fn = nullptr;  // what the callback captured is released before waiters wake
    lk.lock();
    running_ = 0;
    done_.notify_all();
  }
}

TimePoint VirtualClock::now() const {
  MutexLock lk(mu_);
  return now_;
}

TimerId VirtualClock::schedule(TimePoint at, std::function<void()> fn) {
  MutexLock lk(mu_);
  TimerId id = next_id_++;
  q_.emplace(std::make_pair(at < now_ ? now_ : at, id), std::move(fn));
  return id;
}

bool VirtualClock::cancel(TimerId id) {
  MutexLock lk(mu_);
  return eraseTimer(q_, id);
}

bool VirtualClock::cancelAndWait(TimerId id) {
  MutexLock lk(mu_);
  const bool cancelled = eraseTimer(q_, id);
  if (std::this_thread::get_id() != runner_) {
    done_.wait(mu_, [&]() REQUIRES(mu_) { return id == 0 || running_ != id; });
  }
  return cancelled;
}

void VirtualClock::advance(Millis d) {
  TimePoint target;
  {
    MutexLock lk(mu_);
    target = now_ + d;
  }
  for (;;) {
    std::function<void()> fn;
    {
      MutexLock lk(mu_);
      if (q_.empty() || q_.begin()->first.first > target) {
        now_ = target;
        return;
      }
      now_ = q_.begin()->first.first;
      running_ = q_.begin()->first.second;
      runner_ = std::this_thread::get_id();
      fn = std::move(q_.begin()->second);
      q_.erase(q_.begin());
    }
    fn();
    fn = nullptr;
    MutexLock lk(mu_);
    running_ = 0;
    runner_ = std::thread::id();
    done_.notify_all();
  }
}

size_t VirtualClock::pendingTimers() const {
  MutexLock lk(mu_);
  return q_.size();
}

}  // namespace morpheus
