#include "store/state/etcd_state_mirror.h"

#include <spdlog/spdlog.h>

#include <grpcpp/grpcpp.h>

namespace morpheus::store {

EtcdStateMirror::EtcdStateMirror(std::shared_ptr<EtcdClient> client, std::string prefix,
                                 Millis retry)
    : client_(std::move(client)), prefix_(std::move(prefix)), retry_(retry) {
  thread_ = std::thread([this] { run(); });
}

EtcdStateMirror::~EtcdStateMirror() {
  {
    MutexLock lk(mu_);
    stop_ = true;
    if (stream_ctx_) stream_ctx_->TryCancel();
  }
  cv_.notify_all();
  thread_.join();
}

bool EtcdStateMirror::stopping() const {
  MutexLock lk(mu_);
  return stop_;
}

void EtcdStateMirror::run() {
  while (!stopping()) {
    follow();
    MutexLock lk(mu_);
    cv_.waitFor(mu_, retry_, [this]() REQUIRES(mu_) { return stop_; });
  }
}

void EtcdStateMirror::follow() {
  etcdserverpb::RangeRequest range;
  range.set_key(prefix_);
  range.set_range_end(prefixRangeEnd(prefix_));
  auto snap = client_->range(range);
  if (!snap.isOk()) {
    spdlog::warn("state mirror: {}", snap.status().message());
    return;
  }
  grpc::ClientContext ctx;
  auto stream = client_->watch(&ctx);
  {
    MutexLock lk(mu_);
    if (stop_) return;
    records_.clear();
    for (const auto& kv : snap->kvs()) records_[kv.key()] = kv.value();
    revision_ = snap->header().revision();
    stream_ctx_ = &ctx;
  }
  cv_.notify_all();
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key(prefix_);
  create.mutable_create_request()->set_range_end(prefixRangeEnd(prefix_));
  create.mutable_create_request()->set_start_revision(snap->header().revision() + 1);
  etcdserverpb::WatchResponse resp;
  if (stream->Write(create)) {
    while (stream->Read(&resp)) {
      if (resp.canceled()) break;  // e.g. compacted: start again from a Range
      // Only events move the copy's revision: the "created" reply and etcd
      // 3.4's progress replies carry etcd's current revision even while the
      // watch is still replaying older events.
      if (resp.events_size() == 0) continue;
      MutexLock lk(mu_);
      for (const auto& ev : resp.events()) {
        if (ev.type() == mvccpb::Event::PUT) {
          records_[ev.kv().key()] = ev.kv().value();
        } else {
          records_.erase(ev.kv().key());
        }
      }
      revision_ = std::max(revision_, resp.events(resp.events_size() - 1).kv().mod_revision());
      cv_.notify_all();
    }
  }
  {
    MutexLock lk(mu_);
    stream_ctx_ = nullptr;
  }
  ctx.TryCancel();
  stream->Finish();
}

bool EtcdStateMirror::caughtUpTo(int64_t rev, Millis timeout) {
  MutexLock lk(mu_);
  auto ready = [&]() REQUIRES(mu_) {
    return revision_ > 0 && revision_ >= rev;
  };  // > 0: first Range done
  if (ready()) return true;
  return cv_.waitFor(mu_, timeout, ready);
}

std::optional<std::string> EtcdStateMirror::get(const std::string& key) const {
  MutexLock lk(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> EtcdStateMirror::list(
    const std::string& dir) const {
  MutexLock lk(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = records_.lower_bound(dir); it != records_.end() && it->first.rfind(dir, 0) == 0;
       ++it) {
    out.emplace_back(it->first.substr(dir.size()), it->second);
  }
  return out;
}

size_t EtcdStateMirror::size() const {
  MutexLock lk(mu_);
  return records_.size();
}

int64_t EtcdStateMirror::revision() const {
  MutexLock lk(mu_);
  return revision_;
}

}  // namespace morpheus::store
