// StateStore on etcd v3 (issue #16, DESIGN.md §9 HA). Records live under
// `prefix` + ns + "/" + key; commit() is one etcd Txn (atomic, and durable
// once a quorum has it — the contract of state_store.h).
//
// Fencing: with a fence, every commit's Txn also compares the create revision
// of the leader key (leader_election.h) with the one this RM created when it
// won. A deposed leader's key is gone or re-created by the successor, so its
// writes fail with kInfeasible ("fenced") and change nothing.
//
// Limits: a batch may touch at most kMaxEtcdBatch distinct records (etcd's
// default --max-txn-ops is 128, one op is the fence); larger batches are
// INVALID_ARGUMENT naming "batch". A namespace must be non-empty and contain
// no '/' (INVALID_ARGUMENT naming "ns").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "store/etcd_client.h"
#include "store/etcd_state_mirror.h"
#include "store/state_store.h"

namespace morpheus::store {

constexpr size_t kMaxEtcdBatch = 127;

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
std::unique_ptr<StateStore> makeEtcdStateStore(std::shared_ptr<EtcdClient> client,
                                               std::string prefix, std::optional<EtcdFence> fence,
                                               std::shared_ptr<EtcdStateMirror> mirror = nullptr);

}  // namespace morpheus::store
