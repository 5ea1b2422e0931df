#include "rm/runtime/reply_queue.h"

namespace morpheus::rm {

ReplyQueue::~ReplyQueue() { stop(); }

void ReplyQueue::start() {
  MutexLock lk(mu_);
  if (running_ || stopping_) return;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void ReplyQueue::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReplyQueue::finish(grpc::ServerUnaryReactor* reactor, grpc::Status status) {
  {
    MutexLock lk(mu_);
    if (running_ && !stopping_) {
      queue_.emplace_back(reactor, std::move(status));
      cv_.notify_one();
      return;
    }
  }
  reactor->Finish(status);
}

// Takes everything queued at once and finishes it outside the lock; on stop,
// drains the queue before returning.
void ReplyQueue::loop() {
  std::deque<std::pair<grpc::ServerUnaryReactor*, grpc::Status>> batch;
  for (;;) {
    {
      MutexLock lk(mu_);
      cv_.wait(mu_, [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        running_ = false;
        return;
      }
      batch.swap(queue_);
    }
    for (auto& [reactor, status] : batch) reactor->Finish(status);
    batch.clear();
  }
}

}  // namespace morpheus::rm
