#include "rm/ha/ha_session.h"

#include <spdlog/spdlog.h>

#include "store/state/etcd_state_store.h"

namespace morpheus::rm {

Result<std::optional<std::unique_ptr<HaSession>>> HaSession::becomeActive(const HaOptions& opts,
                                                                          Clock& clock) {
  if (opts.endpoints.empty()) {
    return invalidArgument("state-store.location", "is required for etcd (endpoint list)");
  }
  // Calls must fail well inside a renewal period (leader_election.h).
  const Millis timeout = std::min(Millis(2000), opts.election.lease_ttl / 3);
  MORPHEUS_ASSIGN_OR_RETURN(
      std::shared_ptr<store::EtcdClient> etcd,
      store::EtcdClient::connect(opts.endpoints, "state-store.location", timeout));
  // The warm copy a standby keeps while it waits (served to recovery on takeover).
  auto mirror =
      std::make_shared<store::EtcdStateMirror>(etcd, store::kEtcdStatePrefix, Millis(500));
  auto elector = std::make_unique<LeaderElector>(etcd, opts.election, clock);
  spdlog::info("HA: campaigning for {} as {} (etcd {})", opts.election.key, opts.election.identity,
               opts.endpoints);
  auto fence = campaignUntilElected(*elector, opts.election.lease_ttl / 5, opts.on_leader_change);
  if (!fence) return std::optional<std::unique_ptr<HaSession>>();
  spdlog::info(
      "HA: this RM is active (leader key revision {}); warm copy: {} record(s) at "
      "revision {}",
      fence->create_revision, mirror->size(), mirror->revision());
  auto store =
      store::makeEtcdStateStore(etcd, store::kEtcdStatePrefix, *fence, mirror, opts.max_txn_ops);
  // The first fenced write, under the state prefix: it proves the fence and
  // gives the warm copy an event to catch up to before recovery reads from it.
  MORPHEUS_RETURN_IF_ERROR(store->commit({{"rm-ha", "active", opts.election.identity}}));
  return std::optional<std::unique_ptr<HaSession>>(
      std::unique_ptr<HaSession>(new HaSession(std::move(elector), std::move(store))));
}

Result<std::string> HaSession::sharedTokenSecret(const std::string& local) {
  MORPHEUS_ASSIGN_OR_RETURN(auto stored, store_->get("rm-ha", "token-secret"));
  if (stored && !stored->empty()) return *stored;
  MORPHEUS_RETURN_IF_ERROR(store_->commit({{"rm-ha", "token-secret", local}}));
  return local;
}

}  // namespace morpheus::rm
