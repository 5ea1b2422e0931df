// The RM's config reload without a restart (`morpheusctl admin reload`,
// AdminService.ReloadConfig, and SIGHUP; docs/operator/node-operations.md).
//
// A reload reads the --config file again and applies the command line's
// overrides over it, as start-up did, then:
//  - validates everything first: the schema (unknown keys, types, ranges),
//    and the options it applies (queue weights, policies, ACLs, the token
//    file's mode and content); the first error is INVALID_ARGUMENT naming the
//    option as written ("scheduler.queues.root.prod: ...") and nothing
//    changes;
//  - applies, all together, what may change at runtime (kReloadableOptions):
//    scheduler.queues weights and scheduler.policy, the queue and user limits
//    (scheduler.max-running-apps, scheduler.max-resources,
//    scheduler.user-max-running-apps: apps waiting for a limit start as soon
//    as the new one allows; a lower limit stops no running app, it holds new
//    ones back until usage falls under it), rm.queue-acls.*, rm.admins, and
//    rm.token-file (re-read even when its path is unchanged,
//    so a rotated token file takes effect);
//  - reports every other option whose value in the file changed as needing
//    a restart (ports, state store, TLS, ...), and leaves it as it was.
//    Adding or removing an ad-hoc queue is such a change too (the
//    applications' queue set is fixed at start-up): scheduler.queues is then
//    reported and none of its weights change.
// Thread-safety: reload() is serialised internally; the targets are
// internally synchronised and must outlive the reloader.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/daemon.h"
#include "common/mutex.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/rm_metrics.h"
#include "rm/core/rm_options.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// The options a reload applies (file comment).
extern const std::vector<std::string> kReloadableOptions;

// scheduler.queues as weights: INVALID_ARGUMENT naming
// "scheduler.queues.<path>" for a weight that is not a number > 0.
Result<std::map<std::string, double>> parseQueueWeights(
    const std::map<std::string, std::string>& queues);
// The leaf queues of scheduler.queues (a path that prefixes another is a
// parent); {"root.default"} when there are none.
std::set<std::string> leafQueues(const std::map<std::string, std::string>& queues);

struct ReloadReport {
  std::string config_file;                    // "" = command line only
  std::vector<std::string> changed;           // options applied
  std::vector<std::string> restart_required;  // changed in the file, not applied
};

struct ReloadTargets {
  Authenticator* auth = nullptr;  // rm.token-file
  RmAccess* access = nullptr;     // rm.admins, rm.queue-acls.*
  RmRuntime* runtime = nullptr;   // scheduler.queues weights, scheduler.policy,
                                  // scheduler.max-resources
  AppManager* apps = nullptr;     // scheduler.max-running-apps, user-max-running-apps
};

class ConfigReloader {
 public:
  // `running`: the options the RM started with; `source`: where they came
  // from (parseDaemonCommandLine).
  // Counts reloads on `metrics` (ConfigReloadMetrics).
  ConfigReloader(RmOptions running, DaemonConfigSource source, ReloadTargets targets,
                 MetricsRegistry& metrics);

  // One reload (file comment). The outcome is logged either way.
  Result<ReloadReport> reload();

 private:
  Result<ReloadReport> reloadLocked() REQUIRES(mu_);

  Mutex mu_;
  const DaemonConfigSource source_;
  const ReloadTargets targets_;
  ConfigReloadMetrics metrics_;
  RmOptions current_ GUARDED_BY(mu_);  // as last applied
  // The config file the running options came from: a changed option that
  // needs a restart is reported on every reload until the RM restarts.
  std::string file_text_ GUARDED_BY(mu_);
  std::string token_text_ GUARDED_BY(mu_);  // the token file as last applied
};

}  // namespace morpheus::rm
