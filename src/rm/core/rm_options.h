// Every option of morpheus-rm, with meaning, unit and default (declared in
// declareRmOptions). The YAML file uses the same dotted keys.
#pragma once

#include <map>

#include <vector>

#include "common/config.h"
#include "common/daemon.h"
#include "planner/planner.h"
#include "rm/core/dra_monitor.h"
#include "rm/core/harvest_rm.h"

namespace morpheus::rm {

// Settings of the ad-hoc leaves under scheduler.policy carbyne: node
// reservations (sched::LeftoverPacking::reserve_nodes; the bounds are
// sched::NodeReservationOptions'), declining slack and counting needed
// tasks (LeftoverPacking::decline_slack, count_needed; the defaults are the
// policy's). Read at start-up only: a reload reports a change as needing a
// restart.
struct CarbyneRmOptions {
  bool node_reservations = true;           // scheduler.carbyne.node-reservations
  double reservable_nodes = 0.05;          // scheduler.carbyne.reservable-nodes, (0, 1]
  Millis node_reservation_timeout{60000};  // scheduler.carbyne.node-reservation-timeout, > 0
  bool decline_slack = false;              // scheduler.carbyne.decline-slack
  bool count_needed_tasks = false;         // scheduler.carbyne.count-needed-tasks
};

// Settings of the ad-hoc leaves under scheduler.policy phoenix: how much of
// each scarce constraint kind's nodes long work may hold
// (sched::PhoenixLongWork; its defaults, checked by a test).
struct PhoenixRmOptions {
  Millis long_task{0};          // scheduler.phoenix.long-task, >= 0 (0: no cap)
  double long_share = 0.9;      // scheduler.phoenix.long-share, (0, 1]
  double reserve_factor = 3.0;  // scheduler.phoenix.reserve-factor, >= 0
};

struct RmOptions {
  DaemonOptions daemon;
  Millis node_expiry{10000};                                 // rm.node-expiry
  Millis heartbeat_interval{1000};                           // rm.heartbeat-interval
  std::vector<std::string> reservable_queues;                // rm.reservable-queues
  std::vector<std::string> admins;                           // rm.admins
  std::string token_file;                                    // rm.token-file
  bool auth_disabled = false;                                // rm.auth-disabled
  Millis container_token_expiry{600000};                     // rm.container-token-expiry
  std::map<std::string, std::string> queue_acls_submit;      // rm.queue-acls.submit
  std::map<std::string, std::string> queue_acls_administer;  // rm.queue-acls.administer
  std::string inference_token_file;                          // rm.inference-token-file
  std::string state_store;                                   // state-store.kind
  std::string state_store_location;                          // state-store.location
  planner::PlannerOptions planner;                           // planner.*
  int64_t planner_end_points = 8;                            // planner.lowcost.end-points
  std::string planner_tie_break = "earliest";                // planner.tie-break
  std::string inference_address;                             // rm.inference-address
  int64_t max_am_attempts = 2;                               // rm.max-am-attempts
  Millis preemption_grace{15000};                            // rm.preemption-grace
  Millis preemption_interval{3000};                          // rm.preemption-interval
  std::map<std::string, std::string> queues;                 // scheduler.queues (path -> weight)
  std::map<std::string, std::string> queue_policies;         // scheduler.policy (leaf -> name)
  CarbyneRmOptions carbyne;                                  // scheduler.carbyne.*
  PhoenixRmOptions phoenix;                                  // scheduler.phoenix.*
  // Queue and user limits (rm/core/queue_limits.h) and finished-app history.
  std::map<std::string, std::string> queue_max_running_apps;  // scheduler.max-running-apps
  std::map<std::string, std::string> queue_max_resources;     // scheduler.max-resources
  std::map<std::string, std::string> user_max_running_apps;   // scheduler.user-max-running-apps
  int64_t app_history_max_apps = 10000;                       // rm.app-history.max-apps
  Millis app_history_max_age{7LL * 24 * 3600 * 1000};         // rm.app-history.max-age
  DraOptions dra;  // dra.* (interval: dra.interval, 0 = plan step)

  // State database start-up and request size limits.
  bool state_store_init = false;                 // state-store.init
  int64_t max_name_length = 256;                 // rm.max-name-length
  int64_t max_stages = 10000;                    // rm.max-stages
  int64_t max_containers_per_stage = 100000;     // rm.max-containers-per-stage
  int64_t max_containers_per_request = 1000000;  // rm.max-containers-per-request
  int64_t max_reservations_per_user = 1000;      // rm.max-reservations-per-user
  // Planning of reservation requests (rm/core/reservation_manager.h): work per
  // request and requests waiting for or holding the planning lane.
  int64_t max_planning_work = 20000000;      // rm.max-planning-work
  int64_t max_planning_per_user = 1;         // rm.max-planning-requests-per-user
  int64_t max_planning_total = 8;            // rm.max-planning-requests
  int64_t max_unused_reservation_ids = 100;  // rm.max-unused-reservation-ids
  int64_t max_pending_apps_per_user = 200;   // rm.max-pending-apps-per-user
  int64_t max_apps_per_user = 1000;          // rm.max-apps-per-user
  int64_t max_launch_context_bytes = 65536;  // rm.max-launch-context-bytes

  // Active/standby RMs on etcd (state-store.kind etcd).
  Millis ha_lease_ttl{5000};       // rm.ha.lease-ttl
  std::string ha_leader_key;       // rm.ha.leader-key
  std::string ha_rm_addresses;     // rm.ha.rm-addresses
  std::string ha_advertise_host;   // rm.ha.advertise-host
  int64_t etcd_max_txn_ops = 128;  // state-store.etcd.max-txn-ops

  // Limits of the heartbeat strand and of AM launches.
  int64_t strand_max_queued = 2000;       // rm.strand.max-queued
  int64_t am_launch_max_in_flight = 64;   // rm.am-launch.max-in-flight
  int64_t am_launch_per_node = 2;         // rm.am-launch.per-node-in-flight
  Millis am_launch_timeout{10000};        // rm.am-launch.timeout
  int64_t am_launch_max_channels = 1024;  // rm.am-launch.max-channels

  // Primary-tenant classes and class selection (rm/core/harvest_rm.h).
  HarvestRmOptions harvest;  // rm.harvest.*
};

inline constexpr int64_t kDefaultRmGrpcPort = 8030;
inline constexpr int64_t kDefaultRmHttpPort = 8088;

// The scheduling strand's queue and the AmLauncher's limits
// (rm/runtime/strand.h, rm/runtime/am_launcher.h).
inline void declareRmScaleOptions(ConfigSchema& s, RmOptions* o) {
  s.addInt("rm.strand.max-queued", &o->strand_max_queued, 2000, 1, 10000000, "calls",
           "Node heartbeats and AM allocate calls that may wait for the scheduling strand. "
           "Beyond it the RM answers UNAVAILABLE and the caller retries at its next "
           "heartbeat. 2,000 is 0.2 s of a 10,000-node cluster's 1 s heartbeats: every call "
           "in flight slows every other one in Debian's gRPC (a debug scan of the "
           "outstanding calls), so a deep queue turns a burst into a collapse.");
  s.addInt("rm.am-launch.max-in-flight", &o->am_launch_max_in_flight, 64, 1, 100000, "launches",
           "AM container launches (StartContainers calls to NMs) in flight at once, in total.");
  s.addInt("rm.am-launch.per-node-in-flight", &o->am_launch_per_node, 2, 1, 10000, "launches",
           "AM container launches in flight at once to one node: a slow node holds at "
           "most this many of rm.am-launch.max-in-flight.");
  s.addDuration("rm.am-launch.timeout", &o->am_launch_timeout, Millis(10000), Millis(100),
                "Deadline of one AM launch call; a silent node fails the launch then and the "
                "app gets a new AM attempt, up to rm.max-am-attempts.");
  s.addInt("rm.am-launch.max-channels", &o->am_launch_max_channels, 1024, 1, 1000000, "channels",
           "Channels to NMs kept open for reuse by AM launches (the least recently used "
           "is closed beyond it).");
}

// Queue limits (rm/core/queue_limits.h) and how long finished applications
// are kept (AppManagerOptions::history_*).
inline void declareRmQueueLimitOptions(ConfigSchema& s, RmOptions* o) {
  s.addStringMap(
      "scheduler.max-running-apps", &o->queue_max_running_apps,
      "Most applications running at once in an ad-hoc queue and its descendants (the Fair "
      "Scheduler's maxRunningApps), a mapping queue path: N, e.g. {root.dev: 5}; 0 holds every "
      "new application back. A submission over it is accepted and waits (ACCEPTED, with the "
      "reason in its diagnostics) until one of the queue's apps ends. Unlisted queues: "
      "unlimited. Default: {}.");
  s.addStringMap(
      "scheduler.max-resources", &o->queue_max_resources,
      "Most resources the containers of an ad-hoc queue's applications (AMs included) hold "
      "at once, its descendants included (the Fair Scheduler's maxResources), a mapping queue "
      "path: \"MEM mb, N vcores\" (or \"memory=MEM vcores=N\"), e.g. {root.dev: \"8192 mb, "
      "4 vcores\"}. Asks beyond it wait; running containers are never taken back. Unlisted "
      "queues: unlimited. Default: {}.");
  s.addStringMap(
      "scheduler.user-max-running-apps", &o->user_max_running_apps,
      "Most applications one user runs at once over all ad-hoc queues (the Fair Scheduler's "
      "per-user maxRunningApps; \"*\" is its userMaxAppsDefault for every unlisted user), a "
      "mapping user: N, e.g. {alice: 10, \"*\": 3}. Over it a submission is accepted and "
      "waits. Unlike rm.max-apps-per-user, which refuses submissions beyond the apps a user "
      "may have stored, this only delays starts. Default: {} (unlimited).");
  s.addInt("rm.app-history.max-apps", &o->app_history_max_apps, 10000, 1, 100000000, "applications",
           "Most finished (FINISHED, FAILED, KILLED) applications kept in memory and the state "
           "store; beyond it the oldest finished ones are forgotten (their reports and usage "
           "with them). Running and waiting applications are never forgotten.");
  s.addDuration("rm.app-history.max-age", &o->app_history_max_age, Millis(7LL * 24 * 3600 * 1000),
                Millis(1000),
                "How long a finished application is kept after it finished; older ones are "
                "forgotten (checked every max-age / 4, at most every 10 s, and at start).");
}

inline void declareRmOptions(ConfigSchema& s, RmOptions* o) {
  addDaemonOptions(s, &o->daemon, kDefaultRmGrpcPort, kDefaultRmHttpPort, "./var/rm",
                   TlsClientCerts::kRequest);  // AMs hold no certificate (common/tls.h)
  s.addDuration("rm.node-expiry", &o->node_expiry, Millis(10000), Millis(100),
                "A node silent for longer than this is declared lost and its containers are "
                "reported lost to their AMs.");
  s.addDuration("rm.heartbeat-interval", &o->heartbeat_interval, Millis(1000), Millis(10),
                "Interval the RM tells node managers to heartbeat at.");
  s.addStringList("rm.reservable-queues", &o->reservable_queues, {"default"},
                  "Queues that accept reservations; a request naming another queue is refused.");
  s.addString("rm.inference-address", &o->inference_address, "",
              "host:port of morpheus-inference's gRPC endpoint; finished applications' skylines "
              "are forwarded there (retried with backoff, never blocking scheduling), and the web "
              "UI reads pending SLO proposals from it. \"\" = off.");
  s.addInt("rm.max-am-attempts", &o->max_am_attempts, 2, 1, 100, "attempts",
           "How often an application's AM is (re)started before the application fails; an app may "
           "ask for fewer or more.");
  s.addDuration("rm.preemption-grace", &o->preemption_grace, Millis(15000), Millis(0),
                "Time between the preemption notice to an AM and the kill of a borrowed container "
                "a reservation needs back.");
  s.addDuration("rm.preemption-interval", &o->preemption_interval, Millis(3000), Millis(0),
                "How often the scheduler checks whether reservations below their guarantee need "
                "borrowed containers back: at a node heartbeat at least this long after the last "
                "check (as YARN's preemption monitoring interval); 0 = at every heartbeat.");
  s.addStringMap(
      "scheduler.queues", &o->queues,
      "Ad-hoc queue hierarchy and weights, a mapping path: weight (e.g. {root.prod: 3, "
      "root.prod.etl: 2, root.prod.bi: 1, root.dev: 1}); a path that prefixes another is a "
      "parent, the others are leaves that accept apps; unlisted weights are 1; empty = "
      "root.default. Apps name a leaf with --queue (default root.default). Capacity left by "
      "reservations is shared hierarchically by weight, DRF between users inside a leaf.");
  s.addStringMap(
      "scheduler.policy", &o->queue_policies,
      "Ordering of the jobs inside each ad-hoc leaf queue, a mapping leaf path: policy (e.g. "
      "{root.default: carbyne}). drf: dominant resource fairness between users, then apps; "
      "fifo: submission order; carbyne: altruistic scheduling (Grandl et al., OSDI'16) -- "
      "DRF between jobs for the least share that keeps each job's estimated completion "
      "(from its AM's stage reports), the leftover to the jobs closest to completion; "
      "phoenix: constraint-aware (apps by remaining work first: arrival + pending containers x "
      "expected duration - CRV waiting estimate of their hard constraints, the advance held "
      "within 12 h; DRF between users). Unlisted leaves use drf. Default: {} (drf "
      "everywhere).");
  s.addBool("scheduler.carbyne.node-reservations", &o->carbyne.node_reservations, true,
            "carbyne leaves: when the leftover's best job (the least estimated remaining time) "
            "has no task that fits a node's free room, reserve the node for it (YARN's reserved "
            "container): the room that frees there is kept from the leaf's other leftover-tier "
            "jobs until the task fits. Jobs below their altruistic need (new jobs and their AMs "
            "among them) and other queues still use the room. false: no node reservations, the "
            "leftover goes to the shortest job whose task fits the node. Read at start-up.");
  s.addDouble("scheduler.carbyne.reservable-nodes", &o->carbyne.reservable_nodes, 0.05, 0, 1,
              "fraction of the nodes",
              "carbyne leaves: most nodes reserved for one job at once, as a fraction of the "
              "cluster's nodes, rounded up (at least one node; YARN's "
              "yarn.scheduler.fair.reservable-nodes). A node is reserved for one job at a time. "
              "Must be > 0 (scheduler.carbyne.node-reservations: false turns them off). Read at "
              "start-up.");
  s.addDuration("scheduler.carbyne.node-reservation-timeout", &o->carbyne.node_reservation_timeout,
                Millis(60000), Millis(1),
                "carbyne leaves: a node reservation ends after this long if its job's task has "
                "not fitted by then; the node's room then goes to the job first in the leaf's "
                "order at that heartbeat, which may reserve it again. Read at start-up.");
  s.addBool("scheduler.carbyne.decline-slack", &o->carbyne.decline_slack,
            CarbyneRmOptions{}.decline_slack,
            "carbyne leaves: a job below its altruistic need does not run the tasks of stages its "
            "plan does not need now on its fair share: on a node where none of its needed tasks "
            "fits, the room goes to the other jobs below their need, then to the leftover, where "
            "those tasks compete with the other leftover jobs'. false: it runs them there. Read "
            "at start-up.");
  s.addBool("scheduler.carbyne.count-needed-tasks", &o->carbyne.count_needed_tasks,
            CarbyneRmOptions{}.count_needed_tasks,
            "carbyne leaves: a needed stage's tasks count as needed only until as many of them "
            "run as the job's plan runs now; further ones have slack (run after the needed "
            "tasks of its other stages, or declined with scheduler.carbyne.decline-slack). "
            "false: every task of a needed stage counts as needed. Read at start-up.");
  s.addDuration("scheduler.phoenix.long-task", &o->phoenix.long_task, PhoenixRmOptions{}.long_task,
                Millis(0),
                "phoenix leaves: an ask whose expected task duration is above this is long work, "
                "which is kept from a reserve of the vcores of each scarce constraint kind (a "
                "hard constraint some ask has carried that fewer than half of the nodes meet; "
                "scheduler.phoenix.long-share, scheduler.phoenix.reserve-factor), so constrained "
                "short jobs find such nodes free; set it to the workload's short/long cutoff. 0 = "
                "no cap. Read at start-up.");
  s.addDouble("scheduler.phoenix.long-share", &o->phoenix.long_share, PhoenixRmOptions{}.long_share,
              0, 1, "fraction of the vcores",
              "phoenix leaves: the least share of a scarce constraint kind's vcores long work "
              "(above scheduler.phoenix.long-task) may hold, and what it may hold until the "
              "kind's short share is known (scheduler.phoenix.reserve-factor); short work may "
              "use all of them. Must be > 0; 1 = no cap. Read at start-up.");
  s.addDouble("scheduler.phoenix.reserve-factor", &o->phoenix.reserve_factor,
              PhoenixRmOptions{}.reserve_factor, 0, 100, "times the short share",
              "phoenix leaves: the reserve of a scarce constraint kind (the share of its vcores "
              "long work may not hold) is this many times short work's share of the work "
              "granted to asks requiring the kind (vcores x expected duration, decayed with a "
              "half-life of 1 h, known once its grants span 1 h), at most 1 - "
              "scheduler.phoenix.long-share, so a kind whose demand is mostly long keeps little "
              "from long work. 0 = always 1 - scheduler.phoenix.long-share. Read at start-up.");
  s.addStringList("rm.admins", &o->admins, {},
                  "Users who are admins like a token with role admin: they may act for other "
                  "users and kill, change or delete anyone's applications and reservations.");
  s.addString("rm.token-file", &o->token_file, "",
              "Bearer tokens of the RM's callers, one 'TOKEN USER [admin|node]' per line: users "
              "(morpheusctl, REST, AMs' owners), admins, and node managers ('node': USER is the "
              "node id that token may register as). Required unless rm.auth-disabled is true.");
  s.addBool("rm.auth-disabled", &o->auth_disabled, false,
            "Accept every caller as the admin 'anonymous' and nodes without credentials. For "
            "tests and single-user development only; logged as a warning.");
  s.addStringMap(
      "rm.queue-acls.submit", &o->queue_acls_submit,
      "Who may submit applications and reservations to a queue: a mapping queue path -> "
      "space-separated user names ('*' = everyone), e.g. {root.prod: \"alice bob\"}. A "
      "parent's list applies to its children (YARN); \"default\" and \"root.default\" are "
      "one queue. A queue with no list on it or a parent is open to every user. Admins and "
      "the queue's administrators may always submit. Default: {} (all open).");
  s.addStringMap(
      "rm.queue-acls.administer", &o->queue_acls_administer,
      "Who administers a queue: may kill, delete, update and read the logs of anyone's "
      "applications and reservations in it. Same form as rm.queue-acls.submit; a queue with "
      "no list on it or a parent is administered by admins only (token role admin or "
      "rm.admins). Default: {}.");
  s.addString("rm.inference-token-file", &o->inference_token_file, "",
              "File holding the bearer token (first line) the RM sends to morpheus-inference "
              "with application telemetry and the web UI's proposal reads; that token must be "
              "an admin of inference's "
              "inference.token-file. \"\" = send none (only for an inference with "
              "inference.auth-disabled).");
  s.addDuration("rm.container-token-expiry", &o->container_token_expiry, Millis(600000),
                Millis(1000),
                "How long a container token the RM issues may start its container (YARN's "
                "allocation expiry); node managers refuse StartContainers with an older token. "
                "Stopping a container or reading its logs accepts an expired token of its app.");
  s.addString("state-store.kind", &o->state_store, "sqlite",
              "Where RM state (reservations, placements, apps) is kept.", {"sqlite", "etcd"});
  s.addString("state-store.location", &o->state_store_location, "",
              "sqlite: database file (\"\" = <data-dir>/rm-state.db); etcd: comma-separated "
              "host:port (or http://host:port) client endpoints of the etcd cluster. With etcd "
              "the RM runs active/standby (rm.ha.*): it campaigns for leadership first and, as a "
              "standby, answers every client UNAVAILABLE naming the active RM until it is "
              "elected.");
  s.addInt("state-store.etcd.max-txn-ops", &o->etcd_max_txn_ops, 128, 2, 1000000, "operations",
           "state-store.kind etcd: most operations in one etcd transaction; must match the "
           "etcd servers' --max-txn-ops (etcd's default 128). One RM commit is one "
           "transaction of its records plus the leader fence, so a commit of more than this "
           "less one records (a periodic reservation displacing many one-offs) is refused "
           "with INVALID_ARGUMENT before anything is sent; raise both together.");
  s.addBool("state-store.init", &o->state_store_init, false,
            "sqlite: accept an existing empty (0-byte) database file, or a missing one in a data "
            "dir that holds the RM's token-secret (an RM ran there), and start with no state. "
            "Without it both are refused (a state database that lost its contents must not "
            "start an RM that has forgotten every reservation); in a new data dir a missing "
            "file is created.");
  s.addInt("rm.max-name-length", &o->max_name_length, 256, 1, 65536, "bytes",
           "Longest reservation or application name, recurrence key or application tag "
           "accepted.");
  s.addInt("rm.max-stages", &o->max_stages, 10000, 1, 1000000, "stages",
           "Most stages (YARN reservation-requests) in one reservation; a one-day skyline at the "
           "default 60 s step has at most 1440.");
  s.addInt("rm.max-containers-per-stage", &o->max_containers_per_stage, 100000, 1, 1000000000,
           "containers",
           "Largest num-containers of one stage; larger requests are refused "
           "before planning.");
  s.addInt("rm.max-containers-per-request", &o->max_containers_per_request, 1000000, 1, 1000000000,
           "containers", "Largest sum of num-containers over the stages of one reservation.");
  s.addDuration("rm.ha.lease-ttl", &o->ha_lease_ttl, Millis(5000), Millis(1000),
                "state-store.kind etcd: TTL of the etcd lease that holds this RM's leadership "
                "(whole seconds). A standby takes over at most about this long after the active "
                "dies; the active steps down after 2/3 of it without reaching etcd.");
  s.addString("rm.ha.leader-key", &o->ha_leader_key, "/morpheus/rm/leader",
              "state-store.kind etcd: the etcd key the RMs of one cluster compete for; its value "
              "names the active RM.");
  s.addString("rm.ha.rm-addresses", &o->ha_rm_addresses, "",
              "Comma-separated gRPC host:port of every RM of the HA pair, handed to application "
              "masters so they follow whichever is active (\"\" = this RM's own address).");
  s.addString("rm.ha.advertise-host", &o->ha_advertise_host, "",
              "state-store.kind etcd: host name this RM publishes in the leader key while "
              "active, with its bound gRPC and HTTP ports; standbys send it to clients as "
              "the active RM's address (\"\" = grpc.host / http.host, or the machine's host "
              "name when that is a wildcard). Write rm.ha.rm-addresses and the clients' "
              "lists with the same host names so clients follow the hint at once.");
  s.addInt("rm.max-reservations-per-user", &o->max_reservations_per_user, 1000, 1, 100000000,
           "reservations",
           "Most admitted reservations one user may hold; more are refused "
           "(PERMISSION_DENIED / 403).");
  s.addInt("rm.max-planning-work", &o->max_planning_work, 20000000, 1, 1000000000000, "stage-steps",
           "Most planning work of one reservation submit or update: its stages times the plan "
           "steps of its window [arrival, deadline). LowCost scans every stage over the window, "
           "so this bounds how long one request plans; more is refused before planning "
           "(INVALID_ARGUMENT naming definition.stages). The default admits a one-day skyline "
           "at the 60 s step (1440 stages) over the whole 7-day horizon.");
  s.addInt("rm.max-planning-requests-per-user", &o->max_planning_per_user, 1, 1, 1000, "requests",
           "Reservation submits and updates of one user that may wait for or hold the planning "
           "lane (requests are planned one at a time, off the scheduler's lock); more are "
           "refused (UNAVAILABLE / 503) until one is answered.");
  s.addInt("rm.max-planning-requests", &o->max_planning_total, 8, 1, 100000, "requests",
           "Reservation submits and updates of all users that may wait for or hold the planning "
           "lane; more are refused (UNAVAILABLE / 503).");
  s.addInt("rm.max-unused-reservation-ids", &o->max_unused_reservation_ids, 100, 1, 1000000, "ids",
           "Most reservation ids from new-reservation one user may hold without submitting "
           "under them (each id may only be used by the user it was issued to); issuing one "
           "more withdraws that user's oldest unused id.");
  s.addInt("rm.max-pending-apps-per-user", &o->max_pending_apps_per_user, 200, 1, 100000000,
           "applications",
           "Most applications one user may have waiting for their AM (SUBMITTED); a further "
           "submission is refused (PERMISSION_DENIED naming this option) and stores nothing.");
  s.addInt("rm.max-apps-per-user", &o->max_apps_per_user, 1000, 1, 100000000, "applications",
           "Most unfinished applications (SUBMITTED or RUNNING) one user may have; a further "
           "submission is refused (PERMISSION_DENIED naming this option) and stores nothing.");
  s.addInt("rm.max-launch-context-bytes", &o->max_launch_context_bytes, 65536, 256, 4194304,
           "bytes",
           "Largest AM launch context (command, arguments, environment; serialized) of an "
           "application; a larger one is refused with INVALID_ARGUMENT (am_launch_context).");
  s.addDuration("planner.step", &o->planner.step, Millis(60000), Millis(1000),
                "Plan step: the time granularity of reservations.");
  s.addDuration(
      "planner.lcm", &o->planner.lcm, Millis(86400000), Millis(60000),
      "Period of the periodic plan (LCM of reservation periods); a multiple of the step.");
  s.addDuration("planner.one-off-horizon", &o->planner.one_off_horizon, Millis(7 * 86400000LL),
                Millis(60000), "How far ahead one-off reservations may be planned.");
  s.addString("planner.agent", &o->planner.agent, "lowcost",
              "Placement algorithm: LowCost (Morpheus §6) or the YARN-style greedy baseline.",
              {"lowcost", "greedy"});
  s.addInt("planner.lowcost.end-points", &o->planner_end_points, 8, 1, 1000, "",
           "LowCost: end points tried between the earliest end and the deadline.");
  s.addDouble("planner.lowcost.alignment-penalty", &o->planner.agent_options.alignment_penalty, 1.0,
              0, 1e6, "cost units per window",
              "Weight of the alignment penalty for problematic jobs (Morpheus §6).");
  s.addString("planner.tie-break", &o->planner_tie_break, "earliest",
              "LowCost: which of several equally cheap gang positions wins (Morpheus §6, "
              "adjusting LowCost to facilitate reprovisioning). slack: the one ending closest to "
              "deadline - tie-break-slack x window (the earliest when none ends that early), "
              "leaving free steps before the deadline for DRA; latest: against the deadline "
              "(the original rule); earliest (default; fewest deadline violations with DRA "
              "in morpheus-sim): the earliest.",
              {"slack", "latest", "earliest"});
  s.addDouble("planner.tie-break-slack", &o->planner.agent_options.tie_break_slack, 0.2, 0, 0.999,
              "fraction of the reservation window",
              "LowCost, tie-break slack: the room left before the deadline on ties.");
  s.addString("planner.sharing-policy", &o->planner.sharing_policy, "no-overcommit",
              "Admission policy.", {"no-overcommit", "capacity-over-time"});
  s.addDouble("planner.capacity-over-time.instantaneous-max-share",
              &o->planner.sharing.instantaneous_max_share, 1.0, 0, 1, "fraction of capacity",
              "Most of the plan (dominant share) one user may hold at any step.");
  s.addDouble("planner.capacity-over-time.average-share", &o->planner.sharing.average_share, 1.0, 0,
              1, "fraction of capacity",
              "Most of the plan one user may hold on average over the window.");
  s.addDuration("planner.capacity-over-time.window", &o->planner.sharing.average_window,
                Millis(86400000), Millis(60000), "Averaging window of average-share.");
  s.addBool("dra.enabled", &o->dra.enabled, true,
            "Dynamic reprovisioning (Morpheus §7): running reservations whose jobs fall behind "
            "get extra containers where the plan has room, within the owner's budget.");
  s.addString("dra.policy", &o->dra.policy, "morpheus-dra",
              "Reprovisioning policy: Morpheus §7 (demand above the skyline) or Jockey "
              "(EuroSys'12: completion time simulated from the AM's stage reports).",
              {"morpheus-dra", "jockey"});
  s.addDuration("dra.interval", &o->dra.interval, Millis(0), Millis(0),
                "How often running reservations are reviewed; 0 = the plan step (planner.step).");
  s.addDouble("dra.rho", &o->dra.dra.rho, 2.0, 0, 1000, "x max recent skyline",
              "morpheus-dra: a grant is at most rho times the largest skyline step of the last "
              "dra.recent.");
  s.addDuration("dra.extension", &o->dra.dra.extension, Millis(60000), Millis(1000),
                "T: how long a grant lasts before it is re-evaluated (both policies).");
  s.addDuration("dra.recent", &o->dra.dra.recent, Millis(120000), Millis(0),
                "morpheus-dra: the recent window (R_recent) of the rho cap.");
  s.addBool("dra.grant-when-ahead", &o->dra.dra.grant_when_ahead, false,
            "morpheus-dra: also grant to a job that used more than it was guaranteed so far in "
            "its instance (ran ahead on borrowed capacity); off by default, as such grants "
            "mostly preempt other reservations' borrowed containers.");
  s.addDouble("dra.jockey.slack", &o->dra.jockey.slack, 0.2, 0, 10, "fraction of predicted time",
              "jockey: the predicted remaining time is multiplied by 1 + slack before it is "
              "compared with the time left to the deadline (Jockey §4.3).");
  s.addDuration("dra.jockey.dead-zone", &o->dra.jockey.dead_zone, Millis(60000), Millis(0),
                "jockey: the current allocation is kept while it is predicted (with slack) to "
                "finish on time and at most this long before the deadline (Jockey's dead zone).");
  s.addDouble("dra.jockey.hysteresis", &o->dra.jockey.hysteresis, 0.5, 0.01, 1,
              "fraction of the gap",
              "jockey: each review moves the allocation this share of the way from the previous "
              "one to the one the deadline needs (1 = no smoothing; Jockey's hysteresis).");
  declareRmScaleOptions(s, o);
  declareHarvestRmOptions(s, &o->harvest);
  declareRmQueueLimitOptions(s, o);
}

}  // namespace morpheus::rm
