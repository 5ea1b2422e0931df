// Removes the logs of finished containers older than nm.log-retention, so
// that a node's disk does not fill with the stdout and stderr of every
// container it ever ran (YARN's yarn.nodemanager.log.retain-seconds).
//
// What a sweep does with each <local-dir>/containers/<id>/ (the layout is
// ContainerRuntime's, container_runtime.h):
//  - a container the runtime runs or is launching is never touched
//    (ContainerRuntime::claimForRemoval refuses it);
//  - a record (container.json, container.acked.json) without a completion is
//    kept: the container may still run (an NM that re-attaches to it);
//  - a container that completed (the record's completed.end_ms) at least
//    `retention` ago loses its logs and files (stdout, stderr, work/, token
//    files); the record stays with the marker
//    ContainerRuntime::kLogsRemovedMarker (GetContainerLogs then says why)
//    until the container token it was started with has expired too (the
//    record's token_expires_ms; absent = expired): until then the record
//    makes StartContainers refuse a replay of that token (ALREADY_EXISTS).
//    Then the whole directory goes;
//  - a directory with no record (a launch that failed before recording, or
//    leftovers) goes whole once it is `retention` old (its mtime).
// Removal never follows a symbolic link (what a container left in its work
// dir cannot redirect it) and stops at kMaxDepth levels of directories.
//
// Periodic: start() sweeps at once on a thread of its own, then every
// min(retention, 10 min) (at least every second). A retention of 0 keeps
// everything: start() then does nothing.
//
// Thread-safety: sweepOnce() may run concurrently with the runtime and with
// GetContainerLogs; start() and stop() from one thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "nodemanager/container_runtime.h"

namespace morpheus::nm {

class LogRetention {
 public:
  static constexpr int kMaxDepth = 64;

  // `runtime` and `clock` must outlive this object.
  LogRetention(ContainerRuntime& runtime, Millis retention, const Clock& clock)
      : runtime_(runtime), retention_(retention), clock_(clock) {}
  ~LogRetention() { stop(); }

  struct Sweep {
    int logs_removed = 0;  // containers whose logs went, the record kept
    int dirs_removed = 0;  // container directories that went whole
    int kept = 0;          // directories left as they were
    int failed = 0;        // could not be (fully) removed; logged
  };
  // One pass over the containers directory at clock.now().
  Sweep sweepOnce();

  // How often start() sweeps.
  Millis interval() const;
  void start();
  void stop();

 private:
  // The verdict for one directory (see the file comment).
  enum class Action { kKeep, kRemoveLogs, kRemoveAll };
  Action decide(const std::string& dir, TimePoint now) const;

  ContainerRuntime& runtime_;
  const Millis retention_;
  const Clock& clock_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace morpheus::nm
