// Finishes the RM's callback RPCs off the scheduling strand.
// Profiled under many NMs, the strand spent most of its time inside
// ServerUnaryReactor::Finish (docs/experiments/benchmarks.md): gRPC writes the reply to the socket
// inline (HTTP/2 framing, sendmsg) on the thread that finishes the call, and
// only the rest scheduling. Handing Finish to this queue's own thread lets
// the strand go on scheduling while replies are written on the other core.
//
// Order: replies are finished in the order queued. Unbounded: every entry is
// a call the strand already accepted (its bound is rm.strand.max-queued).
//
// Thread-safety: finish() from any thread. stop() finishes what was queued
// and joins; after it (or before start) finish() runs Finish inline.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include "common/mutex.h"

namespace morpheus::rm {

class ReplyQueue {
 public:
  ReplyQueue() = default;
  ~ReplyQueue();  // stop()
  ReplyQueue(const ReplyQueue&) = delete;
  ReplyQueue& operator=(const ReplyQueue&) = delete;

  void start();
  void stop();
  void finish(grpc::ServerUnaryReactor* reactor, grpc::Status status);

 private:
  void loop();

  Mutex mu_;
  CondVar cv_;
  std::deque<std::pair<grpc::ServerUnaryReactor*, grpc::Status>> queue_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace morpheus::rm
