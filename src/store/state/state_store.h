// The RM's durable state (docs/design/ha.md): a small transactional key-value
// store of namespaced records (reservations, apps, DRA budget use). Values are
// opaque bytes; the RM encodes them.
//
// Contract: commit() is atomic (all writes of a batch or none) and durable
// when it returns OK (a crash afterwards loses nothing). Implementations are
// chosen by name: "sqlite" (default) and "etcd" (HA).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace morpheus::store {

struct StateWrite {
  std::string ns;
  std::string key;
  std::optional<std::string> value;  // nullopt = delete
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  virtual Status commit(const std::vector<StateWrite>& batch) = 0;
  virtual Result<std::optional<std::string>> get(const std::string& ns, const std::string& key) = 0;
  // All records of a namespace, sorted by key.
  virtual Result<std::vector<std::pair<std::string, std::string>>> list(const std::string& ns) = 0;
  virtual std::string name() const = 0;
};

struct StateStoreOptions {
  // sqlite: accept an existing 0-byte database file and initialise it
  // (state-store.init). Off by default: a database that lost its contents
  // must not silently start an RM with no reservations.
  bool init = false;
  // sqlite: the RM ran with this data dir before (it holds the RM's
  // token-secret), so the database must exist: a missing file is refused
  // unless `init`, as a 0-byte one is. False: a missing file is created.
  bool must_exist = false;
};

// kind "sqlite": `location` is the database file (created if missing). The
// store holds an exclusive flock on the file for its lifetime, so a second
// store on the same file (any path to it, this or another process) is
// refused.
// kind "etcd": `location` is the comma-separated endpoint list of the etcd
// cluster (host:port or http://host:port); records under kEtcdStatePrefix, no
// leader fence (see etcd_state_store.h); an unreachable cluster is refused.
// INVALID_ARGUMENT naming "state-store.kind" for an
// unknown or unavailable kind, naming "state-store.location" for an unusable,
// locked or (without opts.init) 0-byte database file, or a missing one when
// opts.must_exist.
Result<std::unique_ptr<StateStore>> openStateStore(const std::string& kind,
                                                   const std::string& location,
                                                   const StateStoreOptions& opts = {});

}  // namespace morpheus::store
