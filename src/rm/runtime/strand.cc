#include "rm/runtime/strand.h"

#include <algorithm>

namespace morpheus::rm {

Strand::Strand(MetricsRegistry& metrics, size_t max_queued)
    : max_queued_(std::max<size_t>(1, max_queued)),
      m_(metrics),
      queued_gauge_(m_.queued),
      background_gauge_(m_.background_queued),
      refused_(m_.refused) {}

Strand::~Strand() { stop(); }

void Strand::start() {
  MutexLock lk(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { loop(); });
}

void Strand::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Never started: what was posted still runs (its callers wait for it).
  std::deque<std::function<void()>> left, dropped;
  {
    MutexLock lk(mu_);
    left.swap(tasks_);
    dropped.swap(background_);  // nobody waits for them (strand.h)
    background_gauge_.set(0);
  }
  for (auto& t : left) {
    t();
    queued_gauge_.set(static_cast<double>(--outstanding_));
  }
}

bool Strand::post(std::function<void()> task) {
  {
    MutexLock lk(mu_);
    if (stopping_ || tasks_.size() >= max_queued_) {
      refused_.inc();
      return false;
    }
    tasks_.push_back(std::move(task));
    queued_gauge_.set(static_cast<double>(++outstanding_));
  }
  cv_.notify_one();
  return true;
}

bool Strand::postBackground(std::function<void()> task) {
  {
    MutexLock lk(mu_);
    if (stopping_) return false;
    background_.push_back(std::move(task));
    background_gauge_.set(static_cast<double>(background_.size()));
  }
  cv_.notify_one();
  return true;
}

size_t Strand::queued() const {
  MutexLock lk(mu_);
  return tasks_.size();
}

// Takes all waiting RPC tasks at once and runs them in order outside the
// lock, then one background task (strand.h: the two lanes).
void Strand::loop() {
  std::deque<std::function<void()>> batch;
  std::function<void()> background;
  for (;;) {
    {
      MutexLock lk(mu_);
      cv_.wait(mu_, [this]() REQUIRES(mu_) {
        return stopping_ || !tasks_.empty() || !background_.empty();
      });
      if (tasks_.empty() && (stopping_ || background_.empty())) return;  // stopping
      batch.swap(tasks_);
      if (!stopping_ && !background_.empty()) {  // stopping: only RPC tasks still run
        background = std::move(background_.front());
        background_.pop_front();
        background_gauge_.set(static_cast<double>(background_.size()));
      }
    }
    for (auto& t : batch) {
      t();
      queued_gauge_.set(static_cast<double>(--outstanding_));
    }
    batch.clear();
    if (background) {
      background();
      background = nullptr;
    }
  }
}

}  // namespace morpheus::rm
