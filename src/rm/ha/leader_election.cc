#include "rm/ha/leader_election.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <ctime>

namespace morpheus::rm {

LeaderElector::LeaderElector(std::shared_ptr<store::EtcdClient> etcd, LeaderElectionOptions opts,
                             Clock& clock)
    : etcd_(std::move(etcd)), opts_(std::move(opts)), clock_(clock) {}

LeaderElector::~LeaderElector() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (keepalive_.joinable()) keepalive_.join();
}

Status LeaderElector::ensureLease() {
  int64_t lease;
  {
    MutexLock lk(mu_);
    lease = lease_;
  }
  if (lease != 0) {
    auto ttl = etcd_->leaseKeepAlive(lease);
    if (ttl.isOk()) return Status::ok();
    if (ttl.status().code() != StatusCode::kNotFound) return ttl.status();
  }
  const int64_t seconds = std::max<int64_t>(1, opts_.lease_ttl.count() / 1000);
  MORPHEUS_ASSIGN_OR_RETURN(lease, etcd_->leaseGrant(seconds));
  MutexLock lk(mu_);
  lease_ = lease;
  return Status::ok();
}

Result<std::optional<store::EtcdFence>> LeaderElector::tryAcquire() {
  MORPHEUS_RETURN_IF_ERROR(ensureLease());
  etcdserverpb::TxnRequest req;
  auto* cmp = req.add_compare();
  cmp->set_key(opts_.key);
  cmp->set_target(etcdserverpb::Compare::CREATE);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_create_revision(0);
  auto* put = req.add_success()->mutable_request_put();
  put->set_key(opts_.key);
  put->set_value(opts_.identity);
  {
    MutexLock lk(mu_);
    put->set_lease(lease_);
  }
  req.add_failure()->mutable_request_range()->set_key(opts_.key);
  MORPHEUS_ASSIGN_OR_RETURN(auto resp, etcd_->txn(req));
  MutexLock lk(mu_);
  if (resp.succeeded()) {
    leader_ = opts_.identity;
    return std::optional<store::EtcdFence>(store::EtcdFence{opts_.key, resp.header().revision()});
  }
  const auto& range = resp.responses(0).response_range();
  leader_ = range.kvs_size() > 0 ? range.kvs(0).value() : "";
  return std::optional<store::EtcdFence>();
}

void LeaderElector::startKeepAlive(std::function<void()> on_lost) {
  keepalive_ = std::thread([this, on_lost = std::move(on_lost)] { keepAliveLoop(on_lost); });
}

void LeaderElector::keepAliveLoop(std::function<void()> on_lost) {
  // Losing etcd's raft leader stalls every renewal for one or more election
  // rounds. Renewing every TTL/6 with attempts bounded to TTL/12 (retried
  // every 100 ms) leaves about half the TTL for etcd to elect before this RM
  // must step down; one hung call never uses the whole budget.
  const Millis period = opts_.lease_ttl / 6;
  const Millis attempt = std::max(Millis(100), opts_.lease_ttl / 12);
  const Millis give_up = opts_.lease_ttl * 2 / 3;
  TimePoint last_ok = clock_.now();
  MutexLock lk(mu_);
  while (!stop_) {
    const int64_t lease = lease_;
    lk.unlock();
    const TimePoint sent = clock_.now();
    auto ttl = etcd_->leaseKeepAlive(lease, attempt);
    if (ttl.isOk()) last_ok = sent;
    const bool expired = !ttl.isOk() && ttl.status().code() == StatusCode::kNotFound;
    if (expired || clock_.now() - last_ok >= give_up) {
      spdlog::error("leadership lost: lease {} {} (last renewed {} ms ago)", lease,
                    expired ? "expired" : "not renewed: " + ttl.status().message(),
                    std::chrono::duration_cast<Millis>(clock_.now() - last_ok).count());
      on_lost();
      return;
    }
    lk.lock();
    cv_.waitFor(mu_, ttl.isOk() ? period : Millis(100), [this]() REQUIRES(mu_) { return stop_; });
  }
}

Status LeaderElector::resign() {
  int64_t lease;
  {
    MutexLock lk(mu_);
    lease = lease_;
    stop_ = true;
  }
  cv_.notify_all();
  if (keepalive_.joinable()) keepalive_.join();
  if (lease == 0) return Status::ok();
  return etcd_->leaseRevoke(lease);
}

std::string LeaderElector::leader() const {
  MutexLock lk(mu_);
  return leader_;
}

std::optional<store::EtcdFence> campaignUntilElected(
    LeaderElector& elector, Millis poll, const std::function<void(const std::string&)>& on_leader) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  std::string shown = "\x01";  // no leader logged yet
  while (true) {
    auto r = elector.tryAcquire();
    if (r.isOk() && r->has_value()) return **r;
    if (!r.isOk()) {
      spdlog::warn("standby: cannot reach etcd: {}", r.status().message());
    } else if (elector.leader() != shown) {
      shown = elector.leader();
      spdlog::info("standby: the active RM is {}", shown.empty() ? "(none yet)" : shown);
      if (on_leader) on_leader(shown);
    }
    timespec ts{static_cast<time_t>(poll.count() / 1000),
                static_cast<long>((poll.count() % 1000) * 1000000)};
    if (sigtimedwait(&set, nullptr, &ts) > 0) return std::nullopt;
  }
}

}  // namespace morpheus::rm
