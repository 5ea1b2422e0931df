// The RM's side of active/standby HA on etcd (docs/design/ha.md): what
// main() needs to campaign, open the fenced store once active, share the token
// key between the RMs of a pair, and step down.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rm/ha/leader_election.h"
#include "store/state/state_store.h"

namespace morpheus::rm {

struct HaOptions {
  std::string endpoints;  // state-store.location
  LeaderElectionOptions election;
  size_t max_txn_ops = 128;  // state-store.etcd.max-txn-ops
  // Called from becomeActive with the leader record (election.identity of
  // the active RM, "" = none) whenever it changes while this RM is standby.
  std::function<void(const std::string&)> on_leader_change;
};

class HaSession {
 public:
  // Connects to etcd and campaigns until this RM is active (blocking; a
  // standby logs the active RM's identity and waits). nullopt when SIGTERM or
  // SIGINT arrived while standby. INVALID_ARGUMENT naming
  // state-store.location for a malformed endpoint list.
  static Result<std::optional<std::unique_ptr<HaSession>>> becomeActive(const HaOptions& opts,
                                                                        Clock& clock);
  // The state store, fenced by this RM's leadership.
  store::StateStore& store() { return *store_; }
  // The token key shared by the RMs of the pair (ns "rm-ha", key
  // "token-secret"): the first active stores `local`, later ones adopt the
  // stored key, so AM and container tokens stay valid across a failover.
  Result<std::string> sharedTokenSecret(const std::string& local);
  // Renews the lease; `on_lost` runs once when leadership is lost.
  void keepLeadership(std::function<void()> on_lost) {
    elector_->startKeepAlive(std::move(on_lost));
  }
  // Gives leadership up at once (clean shutdown: the standby need not wait
  // for the lease to expire).
  Status resign() { return elector_->resign(); }

 private:
  HaSession(std::unique_ptr<LeaderElector> e, std::unique_ptr<store::StateStore> s)
      : elector_(std::move(e)), store_(std::move(s)) {}
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<store::StateStore> store_;
};

}  // namespace morpheus::rm
