// A standby RM's warm copy of the state in etcd (docs/design/ha.md):
// every record under a prefix, kept current by an etcd Watch on a thread, so
// the RM that takes over recovers from memory instead of reading etcd.
//
// Contract: after caughtUpTo(rev) returns true the copy holds exactly the
// records of etcd's revision >= rev under the prefix (etcd delivers a watch's
// events in revision order). The copy learns revisions only from events under
// the prefix (etcd 3.4's progress replies do not wait for a replaying watch),
// so `rev` should be that of a write under the prefix — a writer's own
// commit. A stream that breaks is re-established with a fresh Range, so the
// copy never misses an event.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "store/state/etcd_client.h"

namespace morpheus::store {

class EtcdStateMirror {
 public:
  // Starts following `prefix`; retries every `retry` while etcd is unreachable.
  EtcdStateMirror(std::shared_ptr<EtcdClient> client, std::string prefix, Millis retry);
  ~EtcdStateMirror();
  EtcdStateMirror(const EtcdStateMirror&) = delete;
  EtcdStateMirror& operator=(const EtcdStateMirror&) = delete;

  // Waits up to `timeout` until the copy has its first snapshot and reflects
  // etcd revision `rev`. (A copy is current for a single writer that knows
  // its last revision — the fenced active RM — not for concurrent writers.)
  bool caughtUpTo(int64_t rev, Millis timeout);
  // The value of full key `key` in the copy.
  std::optional<std::string> get(const std::string& key) const;
  // Records whose key starts with `dir`, sorted, with `dir` stripped.
  std::vector<std::pair<std::string, std::string>> list(const std::string& dir) const;
  size_t size() const;
  int64_t revision() const;

 private:
  void run();
  // One Range + Watch session; returns when the stream ends or on stop.
  void follow();
  bool stopping() const;

  std::shared_ptr<EtcdClient> client_;
  std::string prefix_;
  Millis retry_;
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, std::string> records_ GUARDED_BY(mu_);
  int64_t revision_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  grpc::ClientContext* stream_ctx_ GUARDED_BY(mu_) = nullptr;  // to cancel
  std::thread thread_;
};

}  // namespace morpheus::store
