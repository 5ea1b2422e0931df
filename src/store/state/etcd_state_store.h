// StateStore on etcd v3 (docs/design/ha.md). Records live under
// `prefix` + ns + "/" + key; commit() is one etcd Txn (atomic, and durable
// once a quorum has it — the contract of state_store.h).
//
// Fencing: with a fence, every commit's Txn also compares the create revision
// of the leader key (leader_election.h) with the one this RM created when it
// won. A deposed leader's key is gone or re-created by the successor, so its
// writes fail with kInfeasible ("fenced") and change nothing.
//
// Limits: one Txn carries at most `max_txn_ops` operations, which must match
// the etcd servers' --max-txn-ops (default 128; RM option
// state-store.etcd.max-txn-ops). A fenced store spends one on the fence, so
// a batch may touch at most max_txn_ops - 1 distinct records (127 by
// default); a larger batch is refused before anything is sent,
// INVALID_ARGUMENT naming "batch" and state-store.etcd.max-txn-ops. A
// namespace must be non-empty and contain no '/' (INVALID_ARGUMENT naming "ns").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "store/state/etcd_client.h"
#include "store/state/etcd_state_mirror.h"
#include "store/state/state_store.h"

namespace morpheus::store {

// etcd's default --max-txn-ops.
constexpr size_t kDefaultEtcdMaxTxnOps = 128;
// Records per batch of a fenced store under the default.
constexpr size_t kMaxEtcdBatch = kDefaultEtcdMaxTxnOps - 1;

// Default key prefix of the RM's records in etcd.
inline constexpr const char* kEtcdStatePrefix = "/morpheus/state/";

struct EtcdFence {
  std::string key;          // the leader key
  int64_t create_revision;  // its create revision when this RM won
};

// `mirror` (optional): a warm copy of `prefix` (etcd_state_mirror.h). Reads
// are then served from it once it has caught up with this store's last
// commit (and with the fence's revision), so they see every earlier write of
// the single (fenced) writer; a mirror lagging by more than 0.5 s is bypassed
// for a direct read.
// `max_txn_ops` >= 2.
std::unique_ptr<StateStore> makeEtcdStateStore(std::shared_ptr<EtcdClient> client,
                                               std::string prefix, std::optional<EtcdFence> fence,
                                               std::shared_ptr<EtcdStateMirror> mirror = nullptr,
                                               size_t max_txn_ops = kDefaultEtcdMaxTxnOps);

}  // namespace morpheus::store
