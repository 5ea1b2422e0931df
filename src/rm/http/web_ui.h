// The RM's web UI: the page an operator keeps open at `/` and
// `/ui/` on the RM's HTTP port, and the JSON it polls.
//
// Static assets (GET /, /ui, /ui/, /ui/<file>) are the files of src/rm/http/ui,
// embedded at build time (rm/http/ui_assets.h); they hold no cluster data and are
// served without a token. Every data endpoint needs "Authorization: Bearer
// TOKEN" exactly like the REST surface (401 without valid credentials, 403 for
// a node credential); any user token may read the cluster-wide view (the
// YARN web UI shows every app to every user, too). The page asks the operator
// for the token once and keeps it in sessionStorage (or takes it from the URL
// fragment #token=..., which it then strips).
//
//   GET /ui/api/cluster        nodes, capacity and usage, queues, live apps
//   GET /ui/api/plan           per reservation, its guaranteed capacity (the
//                              placement plus DRA grants) over the LCM day
//                              containing now: the plan's periodic length,
//                              aligned to the epoch like the plan's offsets
//                              (docs/design/planner.md); at most kMaxPlanPoints points,
//                              each the peak over its plan steps
//   GET /ui/api/reservation?id=ID
//                              one reservation: definition, planned
//                              allocation of one instance, the actual
//                              skylines of its finished runs and the live
//                              usage of its running apps, and its DRA history
//                              (Morpheus §7 decisions, granted and denied)
//   GET /ui/api/proposals      pending SLO proposals: the RM reads them from
//                              morpheus-inference (rm.inference-address, with
//                              rm.inference-token-file's token, 2 s deadline,
//                              one read at a time, an answer reused for 3 s);
//                              {"configured": false} when none is configured,
//                              503 naming the address when it cannot be read;
//                              an admin sees every proposal, any other user
//                              only the proposals they own
//
// Errors of the data endpoints are {"error": {"code", "message"}} (jsonError),
// the HTTP server's own under /ui/api/ too (an unknown path 404, another
// method 405 with Allow, undecodable query text 400 naming the parameter);
// the page's own paths answer those in plain text.
//
// Handlers run on the HTTP worker pool, never on the I/O thread.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/http_server.h"
#include "common/tls.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// Most points of one reservation's series in /ui/api/plan.
inline constexpr int64_t kMaxPlanPoints = 720;

// What the UI reads. Every pointer must outlive the HttpServer.
struct WebUiSources {
  RmCore* core = nullptr;
  AppManager* apps = nullptr;
  RmRuntime* runtime = nullptr;
  ReservationManager* reservations = nullptr;
  const RmAccess* access = nullptr;
  Clock* clock = nullptr;
  std::set<std::string> leaf_queues;  // ad-hoc queues accepting apps
  Millis plan_lcm{86'400'000};        // planner.lcm: the chart's window
  Millis plan_step{60'000};           // planner.step
  std::string inference_address;      // "" = no inference service configured
  TlsOptions tls;                     // the RM's TLS, for the inference channel
  std::string inference_token;        // rm.inference-token-file's token
};

void registerWebUi(HttpServer& http, WebUiSources sources);

}  // namespace morpheus::rm
