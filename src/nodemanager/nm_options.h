// Every option of morpheus-nm, with meaning, unit and default.
#pragma once

#include <map>
#include <string>

#include "common/config.h"
#include "common/daemon.h"
#include "nodemanager/run_as.h"

namespace morpheus::nm {

struct NmOptions {
  DaemonOptions daemon;
  std::string rm_address;                         // nm.rm-address
  Resource resources;                             // nm.resources
  std::string node_id;                            // nm.node-id
  std::map<std::string, std::string> attributes;  // nm.attributes
  std::string local_dir;                          // nm.local-dir
  Millis heartbeat_interval{1000};                // nm.heartbeat-interval
  Millis monitor_interval{1000};                  // nm.monitor-interval
  Millis kill_grace{5000};                        // nm.kill-grace
  std::string memory_enforcement;                 // nm.memory-enforcement
  std::string cgroup_root;                        // nm.cgroup-root
  std::string cgroup_parent;                      // nm.cgroup-parent
  std::string token_file;                         // nm.token-file
  bool auth_disabled = false;                     // nm.auth-disabled
  int64_t full_report_every = 10;                 // nm.full-report-every
  RunAsOptions run_as;                            // nm.run-as*, nm.allow-root-containers
  Millis expired_token_grace{3600000};            // nm.expired-token-grace
  Millis log_retention{7 * 24 * 3600 * 1000};     // nm.log-retention
};

inline constexpr int64_t kDefaultNmGrpcPort = 8040;
inline constexpr int64_t kDefaultNmHttpPort = 8042;

inline void declareNmOptions(ConfigSchema& s, NmOptions* o) {
  addDaemonOptions(s, &o->daemon, kDefaultNmGrpcPort, kDefaultNmHttpPort, "./var/nm",
                   TlsClientCerts::kRequest);  // AMs hold no certificate (common/tls.h)
  s.addString("nm.rm-address", &o->rm_address, "127.0.0.1:8030",
              "host:port of the RM's gRPC endpoint (ResourceTracker); for active/standby RMs "
              "a comma-separated list of all of them: the NM follows the active one.");
  s.addResource("nm.resources", &o->resources, Resource(8192, 8),
                "Resources this node offers to containers.");
  s.addString("nm.node-id", &o->node_id, "",
              "Stable node id; \"\" = <grpc.host>:<bound gRPC port>.");
  s.addStringMap("nm.attributes", &o->attributes,
                 "Node attributes (key: value) used by placement constraints, e.g. rack: r1. "
                 "Added to the attributes detected at start (isa, kernel, cores, memory_mib, "
                 "disks, disk_kind, network_gbps, gpus, gpu_vendor; "
                 "nodemanager/node_attributes_detect.h), overriding them key by key; an empty "
                 "value removes a detected key.");
  s.addString("nm.local-dir", &o->local_dir, "",
              "Where container working dirs, logs and the recovery state live; \"\" = "
              "<data-dir>/local.");
  s.addDuration("nm.heartbeat-interval", &o->heartbeat_interval, Millis(1000), Millis(10),
                "Heartbeat interval until the RM says otherwise.");
  s.addInt("nm.full-report-every", &o->full_report_every, 10, 1, 1000000, "heartbeats",
           "Heartbeats per full container report. Between full reports a heartbeat "
           "lists only completed containers not yet acknowledged and running ones the RM has "
           "not received since this registration; 1 = list every container on "
           "every heartbeat. A registration is always followed by a full report.");
  s.addDuration("nm.monitor-interval", &o->monitor_interval, Millis(1000), Millis(10),
                "How often container memory/CPU is sampled and limits enforced.");
  s.addString(
      "nm.memory-enforcement", &o->memory_enforcement, "auto",
      "auto: a cgroup v2 memory.max per container when nm.cgroup-root is a writable cgroup v2 "
      "hierarchy with the memory controller, else rlimits plus monitoring; cgroup or monitor force "
      "one (cgroup fails at start when unusable). Monitoring kills a container over its memory "
      "in every mode.",
      {"auto", "cgroup", "monitor"});
  s.addString("nm.cgroup-root", &o->cgroup_root, "/sys/fs/cgroup",
              "cgroup v2 mount the NM's container cgroups are in.");
  s.addString("nm.cgroup-parent", &o->cgroup_parent, "root",
              "Where container cgroups go. root: <nm.cgroup-root>/morpheus-nm/<container>, "
              "enabling the memory controller in the root's cgroup.subtree_control. own: below "
              "the NM's own cgroup (/proc/self/cgroup), delegated to it (systemd Delegate=yes, "
              "as deploy/systemd/morpheus-nm.service sets, or a cgroup namespace): the NM moves "
              "itself to <own>/supervisor and creates <own>/containers/<container>, never "
              "writing above <own>.",
              {"root", "own"});
  s.addDuration("nm.kill-grace", &o->kill_grace, Millis(5000), Millis(0),
                "Time between SIGTERM and SIGKILL when a container is stopped.");
  s.addString("nm.token-file", &o->token_file, "",
              "File holding this node's bearer token (one line: the token), sent to the RM on "
              "every RPC; the RM's rm.token-file lists it as 'TOKEN <nm.node-id> node'. Keep it "
              "mode 0600. Required unless nm.auth-disabled is true.");
  s.addString(
      "nm.run-as", &o->run_as.mode, "auto",
      "Which local account containers run as. mapped: each container runs as the local "
      "account of the user who submitted its application (the user the RM signed into the "
      "container token; nm.run-as-map, else the account of the same name with "
      "nm.run-as-same-name), through the privileged morpheus-container-launch, which checks "
      "the account and drops to it before exec; needs the NM to run as root. nm-user: every "
      "container runs as the NM's own account, so containers of different users can read each "
      "other's files and tokens (single-user machines only); refused when the NM runs as root "
      "unless nm.allow-root-containers is true. auto: mapped when the NM runs as root, else "
      "nm-user.",
      {"auto", "mapped", "nm-user"});
  s.addStringMap("nm.run-as-map", &o->run_as.user_map,
                 "nm.run-as: mapped: submitting user -> local account to run that user's "
                 "containers as, e.g. alice: alice or ci-bot: svc-ci. Two users mapped to one "
                 "account share everything.");
  s.addBool("nm.run-as-same-name", &o->run_as.same_name, true,
            "nm.run-as: mapped: a submitter not in nm.run-as-map runs as the local account of "
            "the same name; false: such a submitter's containers are refused "
            "(PERMISSION_DENIED).");
  s.addInt("nm.run-as-min-uid", &o->run_as.min_uid, 1000, 1, 2147483647, "uid",
           "nm.run-as: mapped: containers never run as an account with a smaller uid (root, "
           "system and daemon accounts); the launcher checks it again.");
  s.addBool("nm.allow-root-containers", &o->run_as.allow_root, false,
            "Let an NM running as root run containers as root (nm.run-as: nm-user). Any "
            "container can then read every other container's files and tokens and own the "
            "machine; logged as a warning at start. For throw-away single-user machines only.");
  s.addDuration("nm.expired-token-grace", &o->expired_token_grace, Millis(3600000), Millis(0),
                "How long after its expiry a container token still stops its application's "
                "containers, lists them and reads their logs (starting one always needs an "
                "unexpired token); 0 = never.");
  s.addDuration("nm.log-retention", &o->log_retention, Millis(7 * 24 * 3600 * 1000), Millis(0),
                "How long the stdout, stderr and working dir of a finished container stay in "
                "nm.local-dir (readable with morpheusctl app logs, also after an NM restart): "
                "checked at start, then every nm.log-retention clamped to between 1s and 10m; "
                "running containers' logs are never removed. A finished container's "
                "small record stays until its "
                "container token has expired too (a replayed token cannot start it again). "
                "0 = keep everything.");
  s.addBool("nm.auth-disabled", &o->auth_disabled, false,
            "Talk to the RM without a token (an RM with rm.auth-disabled: true). For tests and "
            "single-user development only; logged as a warning.");
}

}  // namespace morpheus::nm
