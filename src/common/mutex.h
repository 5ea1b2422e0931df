// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with
// clang's thread-safety attributes (common/thread_annotations.h), so
// `GUARDED_BY(mu_)` and `REQUIRES(mu_)` are checked at compile time.
// std::mutex itself carries no attributes in libstdc++, so a member guarded
// by one cannot be checked.
//
// Zero cost over the std types: Mutex is a std::mutex, MutexLock a
// lock_guard, CondVar waits on the std::mutex inside.
//
// Thread-safety: as std::mutex; a Mutex is neither copyable nor movable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace morpheus {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock where it cannot see it
  // (a callback the lock holder runs); checks nothing at run time.
  void assertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope (std::lock_guard). `unlock()`/`lock()` let a scope
// drop the lock around a call that must not run under it (I/O, a callback
// that takes other locks) and take it back.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() {
    held_ = false;
    mu_.unlock();
  }
  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable waited on with a Mutex held (the caller's MutexLock).
// As std::condition_variable: waits release the mutex and hold it again on
// return; predicates run with it held.
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu.mu_, std::adopt_lock);
    cv_.wait(lk);
    lk.release();
  }
  template <class Pred>
  void wait(Mutex& mu, Pred pred) REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu.mu_, std::adopt_lock);
    cv_.wait(lk, std::move(pred));
    lk.release();
  }
  // True if woken (or `pred` held) before the time passed.
  template <class Clock, class Duration>
  std::cv_status waitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& t)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu.mu_, std::adopt_lock);
    std::cv_status st = cv_.wait_until(lk, t);
    lk.release();
    return st;
  }
  template <class Clock, class Duration, class Pred>
  bool waitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& t, Pred pred)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu.mu_, std::adopt_lock);
    bool ok = cv_.wait_until(lk, t, std::move(pred));
    lk.release();
    return ok;
  }
  template <class Rep, class Period, class Pred>
  bool waitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& d, Pred pred) REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu.mu_, std::adopt_lock);
    bool ok = cv_.wait_for(lk, d, std::move(pred));
    lk.release();
    return ok;
  }
  template <class Rep, class Period>
  std::cv_status waitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& d) REQUIRES(mu) {
    std::unique_lock<std::mutex> lk(mu.mu_, std::adopt_lock);
    std::cv_status st = cv_.wait_for(lk, d);
    lk.release();
    return st;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace morpheus
