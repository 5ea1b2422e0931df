// Queue and user limits of ad-hoc applications (docs/operator/configuration.md
// "Queue limits"), after the Fair Scheduler's maxRunningApps, maxResources
// and per-user maxRunningApps:
//  - scheduler.max-running-apps {PATH: N}: at most N applications run in
//    queue PATH and its descendants (a parent's limit covers its children);
//  - scheduler.max-resources {PATH: "MEM mb, N vcores"}: the containers of
//    the apps in PATH and its descendants (AMs included) hold at most that;
//  - scheduler.user-max-running-apps {USER: N, "*": N}: at most N
//    applications of USER run at once, over all queues (the Fair Scheduler's
//    user limits, and its userMaxAppsDefault as "*").
// Unlisted queues and users are unlimited. A submission over a running-apps
// limit is accepted and waits (SUBMITTED, YARN's ACCEPTED, with the reason
// admit() gives) until an application under the same limit ends; max-resources
// only caps what the queue's apps are allocated (the scheduler core). Apps
// bound to a reservation are governed by its plan guarantee: they neither
// count against nor wait for these limits.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::rm {

struct QueueLimits {
  std::map<std::string, int64_t> max_running_apps;       // ad-hoc path -> limit (>= 0)
  std::map<std::string, Resource> max_resources;         // ad-hoc path -> cap
  std::map<std::string, int64_t> user_max_running_apps;  // user ("*" = the others) -> limit

  // The running-apps limit of `user`: its own, else "*", else none.
  std::optional<int64_t> userLimit(const std::string& user) const;
  bool operator==(const QueueLimits&) const = default;
};

// Parses the three option maps (as written in the config) against the ad-hoc
// queue paths that exist (`paths`: leaves, parents and "root"). Errors are
// INVALID_ARGUMENT naming the option and entry as written
// ("scheduler.max-running-apps.root.nope: unknown queue ...").
Result<QueueLimits> parseQueueLimits(
    const std::map<std::string, std::string>& max_running_apps,
    const std::map<std::string, std::string>& max_resources,
    const std::map<std::string, std::string>& user_max_running_apps,
    const std::set<std::string>& paths);

// A resource cap as written: the Fair Scheduler's "8192 mb, 4 vcores", or
// "memory=8192,vcores=4"; commas and spaces separate alike (so the command
// line's --set takes "memory=8192 vcores=4"). Both dimensions are required.
// INVALID_ARGUMENT naming `field` otherwise.
Result<Resource> parseResourceCap(const std::string& text, const std::string& field);

// "root.a.b" -> {"root", "root.a", "root.a.b"}.
std::vector<std::string> queueAndAncestors(const std::string& path);

// Every ad-hoc path a limit may name, from scheduler.queues (path -> weight):
// "root", "root.default", and each configured "root.*" queue with its
// ancestors. Paths outside "root" are ignored here as the scheduler ignores
// them.
std::set<std::string> adhocQueuePaths(const std::map<std::string, std::string>& queues);

// One unfinished ad-hoc application as admission sees it.
struct AdmissionApp {
  AppId id;
  std::string user;
  std::string queue;  // ad-hoc leaf path
  // It holds its place already: its AM runs, or it is between AM attempts.
  bool started = false;
};

// The Fair Scheduler's MaxRunningAppsEnforcer over `apps` in admission order
// (the started ones count first, whatever their place; the others are
// admitted in the given order while every limit on them has room). Returns
// the apps that must wait, each with its reason naming the limit and the
// option ("queue root.dev runs 1 of its 1 (scheduler.max-running-apps)").
// O(apps x queue depth).
std::map<AppId, std::string> admit(const std::vector<AdmissionApp>& apps,
                                   const QueueLimits& limits);

}  // namespace morpheus::rm
