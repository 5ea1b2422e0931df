// YARN's read-only ResourceManager REST API on the RM's HTTP port,
// with YARN's JSON shapes and field names so existing YARN dashboards and
// scripts read them (Hadoop "ResourceManager REST API's"):
//   GET /ws/v1/cluster, /ws/v1/cluster/info    {"clusterInfo": {...}}
//   GET /ws/v1/cluster/metrics                 {"clusterMetrics": {...}}
//   GET /ws/v1/cluster/nodes[?states=RUNNING,LOST]  {"nodes": {"node": [...]}}
//   GET /ws/v1/cluster/nodes/{id}              {"node": {...}}
//   GET /ws/v1/cluster/apps[?states=&queue=&user=&limit=]  {"apps": {"app": [...]}}
//   GET /ws/v1/cluster/apps/{id}               {"app": {...}}
//       An app carries YARN's memorySeconds / vcoreSeconds (its containers'
//       resource x lifetime, running ones up to now) and, while it waits for
//       a queue or user limit, the reason first in its diagnostics.
//   GET /ws/v1/cluster/scheduler               Fair Scheduler shape (weights, DRF,
//       maxResources / maxApps from the queue limits):
//       {"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": {...}}}}
//   GET /ws/v1/cluster/harvest-classes         Morpheus only: the primary-
//       tenant classes of the last clustering, {"harvestClasses": {"harvestClass":
//       [{"id", "pattern", "average", "peak", "tenants": [...], "nodeIds": [...]}]}}
// Differences from YARN: an empty list is [] (YARN writes null); node ids
// are the NMs' ids; an app's state is ACCEPTED until its AM runs; reservation
// queues are children of the root queue named by reservation id (YARN puts
// them under their plan queue); extension fields start with "morpheus".
//
// Every request needs a valid user token (authenticatedRest: 401/403), and
// any user may read the whole view: an endpoint acts as nobody, so YARN's
// `user.name` is ignored (only writes, on the reservation REST, act as the
// user it names). Handlers run on the HTTP worker pool and only read (no
// planning). Bad filters get 400 and unknown ids 404, both as YARN's
// RemoteException JSON naming the parameter; so do the server's own answers
// under /ws/ (yarnErrorAnswer: unknown paths 404, other methods 405 with
// Allow, undecodable query text 400).
#pragma once

#include "common/clock.h"
#include "common/http_server.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// What the endpoints read. Every reference must outlive the HTTP server.
struct ClusterRestSources {
  RmCore& core;
  AppManager& apps;
  RmRuntime& runtime;
  const ReservationManager& reservations;
  const RmAccess& access;
  Clock& clock;
  TimePoint started;  // the RM's start: clusterInfo.id and startedOn
};

void registerClusterRest(HttpServer& http, const ClusterRestSources& sources);

}  // namespace morpheus::rm
