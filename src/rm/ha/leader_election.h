// Active/standby RMs on etcd (docs/design/ha.md; the ZooKeeper
// ActiveStandbyElector of YARN's RM HA, on an etcd lease and transactions).
//
// Every RM holds an etcd lease of `lease_ttl`. Becoming active is one Txn:
// "if the leader key does not exist (create revision 0), put it = my
// identity, attached to my lease". The key's create revision then fences the
// winner's StateStore (etcd_state_store.h): once the lease expires (the
// active died, or cannot reach etcd) the key vanishes, a standby's Txn
// creates it anew with a higher revision, and every later write of the old
// active fails its compare.
//
// Contract: at most one RM holds the key at a time (etcd's linearizable Txn);
// the active calls on_lost and stops serving within 2/3 of the TTL after its
// last successful renewal, i.e. before etcd can expire the lease and let a
// standby win — and its writes are fenced even if it did not stop.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "store/state/etcd_client.h"
#include "store/state/etcd_state_store.h"

namespace morpheus::rm {

struct LeaderElectionOptions {
  std::string key = "/morpheus/rm/leader";  // rm.ha.leader-key
  std::string identity;                     // this RM's client address(es), shown to others
  Millis lease_ttl{5000};                   // rm.ha.lease-ttl (whole seconds, >= 1 s)
};

class LeaderElector {
 public:
  // `etcd` calls should time out well inside lease_ttl / 3.
  LeaderElector(std::shared_ptr<store::EtcdClient> etcd, LeaderElectionOptions opts, Clock& clock);
  // Stops the keep-alive thread; the lease is left to expire (see resign()).
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // One attempt: the fence when this RM is now active, nullopt when another
  // RM holds the key (leader() names it). Renews (or re-grants) this RM's
  // lease. UNAVAILABLE when etcd cannot be reached.
  Result<std::optional<store::EtcdFence>> tryAcquire();
  // After winning: renews the lease every TTL/6 on a thread (attempts of at
  // most TTL/12, retried every 100 ms after a failure); runs `on_lost` once
  // (on that thread) when the lease expired or was not renewed for 2/3 of
  // the TTL.
  void startKeepAlive(std::function<void()> on_lost);
  // Revokes the lease: the key goes at once and a standby can take over.
  Status resign();
  // The identity in the leader key at the last attempt ("" = none seen).
  std::string leader() const;

 private:
  void keepAliveLoop(std::function<void()> on_lost);
  Status ensureLease();

  std::shared_ptr<store::EtcdClient> etcd_;
  LeaderElectionOptions opts_;
  Clock& clock_;
  mutable Mutex mu_;
  CondVar cv_;
  int64_t lease_ GUARDED_BY(mu_) = 0;
  std::string leader_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread keepalive_;
};

// Campaigns until this RM is active: tryAcquire() every `poll`, logging the
// current leader when it changes and passing its record to `on_leader` (if
// set; "" = no leader). Returns the fence, or nullopt when SIGTERM or SIGINT
// arrived first (the signals must be blocked, see blockTerminationSignals;
// the signal is consumed).
std::optional<store::EtcdFence> campaignUntilElected(
    LeaderElector& elector, Millis poll,
    const std::function<void(const std::string&)>& on_leader = nullptr);

}  // namespace morpheus::rm
