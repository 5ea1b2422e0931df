#include "rm/runtime/am_launcher.h"

#include <algorithm>

#include "common/wire.h"

namespace morpheus::rm {

// One StartContainers call in flight: owned by running_ from its start until
// the dispatcher has run its Done.
struct AmLauncher::Call {
  AmLaunch launch;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ContainerManager::Stub> stub;
  grpc::ClientContext ctx;
  v1::StartContainersResponse response;
  grpc::Status status;
};

AmLauncher::AmLauncher(AmLauncherOptions opts, Done done) : opts_(std::move(opts)), done_(done) {}

AmLauncher::~AmLauncher() { stop(); }

void AmLauncher::start() {
  MutexLock lk(mu_);
  if (dispatcher_.joinable() || stopping_) return;
  dispatcher_ = std::thread([this] { loop(); });
}

void AmLauncher::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
    nodes_.clear();
    ready_.clear();
  }
  cv_.notify_all();
  if (dispatcher_.joinable()) dispatcher_.join();
}

void AmLauncher::submit(AmLaunch launch) {
  {
    MutexLock lk(mu_);
    if (stopping_) return;
    NodeQueue& q = nodes_[launch.node];
    const NodeId node = launch.node;
    q.waiting.push_back(std::move(launch));
    if (!q.in_ready && q.in_flight < std::max(1, opts_.per_node_in_flight)) {
      q.in_ready = true;
      ready_.push_back(node);
    }
  }
  cv_.notify_all();
}

int AmLauncher::inFlight() const {
  MutexLock lk(mu_);
  return in_flight_;
}

uint64_t AmLauncher::verdicts() const {
  MutexLock lk(mu_);
  return verdicts_;
}

size_t AmLauncher::queued() const {
  MutexLock lk(mu_);
  size_t n = 0;
  for (const auto& [_, q] : nodes_) n += q.waiting.size();
  return n;
}

bool AmLauncher::startable() const {
  return !stopping_ && in_flight_ < std::max(1, opts_.max_in_flight) && !ready_.empty();
}

// Takes launches round robin over the ready nodes while both bounds allow;
// each becomes a Call owned by running_.
std::vector<AmLauncher::Call*> AmLauncher::takeStartable() {
  std::vector<Call*> out;
  const int per_node = std::max(1, opts_.per_node_in_flight);
  while (startable()) {
    NodeId node = ready_.front();
    ready_.pop_front();
    NodeQueue& q = nodes_[node];
    q.in_ready = false;
    if (q.waiting.empty() || q.in_flight >= per_node) continue;  // re-queued on completion
    auto call = std::make_unique<Call>();
    call->launch = std::move(q.waiting.front());
    q.waiting.pop_front();
    q.in_flight++;
    in_flight_++;
    if (!q.waiting.empty() && q.in_flight < per_node) {
      q.in_ready = true;
      ready_.push_back(node);
    }
    call->channel = channelFor(call->launch.node_address);
    Call* raw = call.get();
    running_[raw] = std::move(call);
    out.push_back(raw);
  }
  return out;
}

std::shared_ptr<grpc::Channel> AmLauncher::channelFor(const std::string& address) {
  if (auto it = channels_.find(address); it != channels_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.channel;
  }
  lru_.push_front(address);
  auto channel = makeChannel(address, opts_.tls);
  channels_[address] = {channel, lru_.begin()};
  while (channels_.size() > std::max<size_t>(1, opts_.max_channels)) {
    channels_.erase(lru_.back());  // calls still using it hold their own reference
    lru_.pop_back();
  }
  return channel;
}

// Starts the asynchronous call; its completion is handed to the dispatcher.
void AmLauncher::issue(Call* call) {
  call->stub = v1::ContainerManager::NewStub(call->channel);
  call->ctx.set_deadline(std::chrono::system_clock::now() + opts_.timeout);
  call->stub->async()->StartContainers(&call->ctx, &call->launch.request, &call->response,
                                       [this, call](grpc::Status st) {
                                         {
                                           MutexLock lk(mu_);
                                           call->status = std::move(st);
                                           completed_.push_back(call);
                                         }
                                         cv_.notify_all();
                                       });
}

// Frees the call's slots (the node is ready again when it has launches
// waiting), then runs its Done.
void AmLauncher::finish(std::unique_ptr<Call> call) {
  const AmLaunch& l = call->launch;
  std::string error;
  if (!call->status.ok()) {
    error = "cannot reach node " + l.node.value() + " at " + l.node_address + ": " +
            call->status.error_message();
  } else if (call->response.failed_size() > 0) {
    // The NM's refusal, with the node it came from (the app's diagnostic is
    // built from this and names no node otherwise).
    error = "node " + l.node.value() + " at " + l.node_address +
            " refused it: " + call->response.failed(0).code() + ": " +
            call->response.failed(0).message();
  }
  {
    MutexLock lk(mu_);
    in_flight_--;
    auto it = nodes_.find(l.node);
    if (it != nodes_.end()) {  // else dropped by stop()
      NodeQueue& q = it->second;
      q.in_flight--;
      if (!q.waiting.empty() && !q.in_ready) {
        q.in_ready = true;
        ready_.push_back(l.node);
      } else if (q.waiting.empty() && q.in_flight == 0) {
        nodes_.erase(it);
      }
    }
  }
  done_(l, error);
  MutexLock lk(mu_);
  verdicts_++;
}

// The dispatcher: runs completions, starts what the bounds allow and, once
// stopping, cancels what is in flight and returns when all of it completed.
void AmLauncher::loop() {
  bool cancelled = false;
  for (;;) {
    std::vector<std::unique_ptr<Call>> done;
    std::vector<Call*> to_start, to_cancel;
    {
      MutexLock lk(mu_);
      cv_.wait(mu_, [&]() REQUIRES(mu_) {
        return !completed_.empty() || startable() || (stopping_ && !cancelled) ||
               (stopping_ && running_.empty());
      });
      for (Call* c : completed_) {
        auto it = running_.find(c);
        done.push_back(std::move(it->second));
        running_.erase(it);
      }
      completed_.clear();
      if (stopping_ && running_.empty() && done.empty()) return;
      if (stopping_ && !cancelled) {
        cancelled = true;
        for (const auto& [c, _] : running_) to_cancel.push_back(c);
      }
      to_start = takeStartable();
    }
    // Only this thread frees calls, so the pointers stay valid without the lock
    // (TryCancel may complete a call inline, which takes mu_).
    for (Call* c : to_cancel) c->ctx.TryCancel();
    for (auto& c : done) finish(std::move(c));
    for (Call* c : to_start) issue(c);
  }
}

}  // namespace morpheus::rm
