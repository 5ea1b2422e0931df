// The RM's core object: owns cluster state and serialises access to it.
// gRPC/HTTP services translate protobuf to the core's types and call in.
//
// Thread-safety: every public method takes mu_; the liveness check runs from
// the clock's timer thread through the same lock.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/token.h"
#include "rm/core/node_registry.h"
#include "rm/core/rm_metrics.h"
#include "rm/core/rm_options.h"
#include "store/state/state_store.h"

namespace morpheus::rm {

// Reads <data_dir>/token-secret, creating it (mode 0600) with a random key on
// first start, so tokens issued before an RM restart still verify after it.
Result<std::string> loadOrCreateSecret(const std::string& data_dir);
// Whether `data_dir` already holds a token secret (an RM ran with it before).
bool hasSecret(const std::string& data_dir);

struct ClusterSummary {
  int live_nodes = 0;
  int lost_nodes = 0;
  int decommissioning_nodes = 0;
  int decommissioned_nodes = 0;
  Resource total;
  Resource used;
};

class RmCore {
 public:
  // `clock` and `metrics` must outlive the core.
  // `token_secret` is the RM's persistent token key (see loadOrCreateSecret).
  RmCore(const RmOptions& opts, Clock& clock, MetricsRegistry& metrics, std::string token_secret);
  ~RmCore();

  // Starts the periodic liveness check.
  void start();
  void stop();

  const std::string& epoch() const { return epoch_; }
  // The master key: signs AM tokens. Its secret never leaves the RM (NMs get
  // per-node keys, see nodeKey).
  const TokenSigner& signer() const { return signer_; }
  // The container-token key of `node` (deriveNodeKey of the master secret).
  // For the registration reply of that node's authenticated NM only.
  std::string nodeKey(const NodeId& node) const;
  // A container token for `info` (its `expires` is ignored), signed with the
  // key of info.node and valid for rm.container-token-expiry from now. Thread-
  // safe. Keeps each node's derived key (one entry per node id it signed for;
  // ids are those of registered nodes), so a token costs one HMAC, not two.
  std::string issueContainerToken(const ContainerTokenInfo& info) const;
  Millis heartbeatInterval() const { return opts_.heartbeat_interval; }
  // The RM's latency histograms (rm_metrics.h), for the RPC edge to time.
  RmLatencyMetrics& latency() { return latency_; }

  // ALREADY_EXISTS when the node id is live at another container-manager
  // address (an impostor, or a second NM configured with the same id): see
  // NodeRegistry::registerNode. Nothing changes on failure.
  Status registerNode(NodeInfo info);
  // NOT_FOUND means "resync": the node must register again.
  Status nodeHeartbeat(const NodeId& id, int64_t sequence, const Resource& used, int64_t rss_mib,
                       double cpu_vcores, int32_t num_containers);
  // The node leaves at once; its containers are lost as on expiry (the
  // NodeLostListener is called).
  Status unregisterNode(const NodeId& id);

  // ---- Operator controls (node_registry.h's admin states) ----
  // Each is durable when it returns OK: the new state is committed to the
  // store (setStore; table "node-admin") before it applies, so it survives an
  // RM restart and an HA failover (recoverNodeAdmin). The capacity listener
  // hears the new capacity and the admin listener the new state (both as
  // usual: the capacity one under the lock, the admin one without it).
  // Errors: NOT_FOUND for a node never seen, INFEASIBLE for a drain of a
  // decommissioning node (nextAdminState), UNAVAILABLE when the store
  // refuses the write (nothing changes then). Returns the node's record.
  Result<NodeInfo> drainNode(const NodeId& id);
  Result<NodeInfo> undrainNode(const NodeId& id);
  // DECOMMISSIONING until the node runs no container (RunningContainers) or
  // `timeout` from now has passed (during the start-up grace of one node
  // expiry, while NMs re-report their containers, only the timeout counts); then its remaining
  // containers are lost (NodeLostListener with a reason naming the decommission), it is
  // DECOMMISSIONED and refused from then on. Checked on every liveness pass.
  Result<NodeInfo> decommissionNode(const NodeId& id, Millis timeout);
  // Where the admin states are kept; call before recoverNodeAdmin and start.
  void setStore(store::StateStore* store);
  // Loads the admin states committed by this or an earlier RM.
  // INTERNAL naming the record when one is corrupt.
  Status recoverNodeAdmin();
  // The node's admin state (IN_SERVICE when none).
  NodeAdmin nodeAdmin(const NodeId& id) const;
  // How many containers the RM's runtime still runs on a node (decommission
  // waits for 0). Called without the core's lock. Unset: the count the node
  // reported in its last heartbeat.
  using RunningContainers = std::function<int(const NodeId& node)>;
  void setRunningContainers(RunningContainers probe);
  // Called (without the core's lock) after a node's admin state changed.
  using AdminListener = std::function<void(const NodeId& node, NodeAdminState state)>;
  void setAdminListener(AdminListener listener);

  std::vector<NodeInfo> nodes(bool include_lost) const;
  ClusterSummary summary() const;

  // Runs one liveness pass now (also called by the timer).
  void checkLiveness();

  // Called (under the core's lock) whenever the live capacity may have
  // changed. `allow_drop` is false during the start-up grace (one node
  // expiry) while NMs re-register after an RM restart, so a restarted RM never
  // drops reservations because its nodes have not reported yet.
  using CapacityListener = std::function<void(const Resource& live, bool allow_drop)>;
  void setCapacityListener(CapacityListener listener);
  // Called (without the core's lock) with each node the liveness check
  // declares lost, that unregisters or whose decommission ends; its containers
  // are then lost too. `why` is "" for a lost or unregistered node, else the
  // diagnostic for its containers ("node nm1 decommissioned").
  using NodeLostListener = std::function<void(const NodeId& node, const std::string& why)>;
  void setNodeLostListener(NodeLostListener listener);

 private:
  void scheduleLiveness();
  void updateNodeGauges() REQUIRES(mu_);
  void notifyCapacity() REQUIRES(mu_);
  // Plans `op`, commits it to the store and applies it.
  Result<NodeInfo> changeAdmin(const NodeId& id, NodeAdminOp op, TimePoint deadline) EXCLUDES(mu_);
  Status persistAdmin(const NodeId& id, const NodeAdmin& admin) REQUIRES(mu_);
  // Ends the decommissions that are due (liveness pass).
  void checkDecommissions() EXCLUDES(mu_);

  // Constant after construction.
  const RmOptions opts_;
  Clock& clock_;
  const std::string epoch_;
  const TokenSigner signer_;
  const TimePoint started_;
  RmLatencyMetrics latency_;
  RmNodeMetrics node_metrics_;

  // The per-node signers: a leaf, never held with mu_.
  mutable Mutex keys_mu_;
  mutable std::unordered_map<NodeId, TokenSigner> node_signers_ GUARDED_BY(keys_mu_);

  mutable Mutex mu_;
  NodeRegistry nodes_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  TimerId liveness_timer_ GUARDED_BY(mu_) = 0;
  CapacityListener capacity_listener_ GUARDED_BY(mu_);
  NodeLostListener lost_listener_ GUARDED_BY(mu_);
  RunningContainers running_probe_ GUARDED_BY(mu_);
  AdminListener admin_listener_ GUARDED_BY(mu_);
  store::StateStore* store_ GUARDED_BY(mu_) = nullptr;
};

}  // namespace morpheus::rm
