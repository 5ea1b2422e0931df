// morpheus-nm options for harvesting a primary tenant's spare resources
// (Zhang et al. OSDI'16 §3), with meaning, unit and default.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"

namespace morpheus::nm {

struct HarvestOptions {
  std::string source = "none";                       // nm.harvest.source
  std::string tenant;                                // nm.harvest.tenant
  std::string file;                                  // nm.harvest.file
  std::string cgroup;                                // nm.harvest.cgroup
  std::vector<std::string> processes;                // nm.harvest.processes
  Resource reserve{512, 1};                          // nm.harvest.reserve
  Millis cpu_kill_after{5000};                       // nm.harvest.cpu-kill-after
  Millis interval{1000};                             // nm.harvest.interval
  std::string cpu_cgroup_v1 = "/sys/fs/cgroup/cpu";  // nm.harvest.cpu-cgroup-v1
};

inline void declareHarvestOptions(ConfigSchema& s, HarvestOptions* o) {
  s.addString("nm.harvest.source", &o->source, "none",
              "Where the primary tenant's usage comes from. none: no primary tenant, containers "
              "get nm.resources. file: nm.harvest.file, rewritten by the tenant's agent (lines "
              "'cpu_vcores 2.5' and 'memory_mib 3072'). cgroup: the cgroup nm.harvest.cgroup "
              "(v2 cpu.stat + memory.current, or v1 cpuacct.usage + memory.usage_in_bytes). "
              "processes: the processes named in nm.harvest.processes (/proc/<pid>/comm).",
              {"none", "file", "cgroup", "processes"});
  s.addString("nm.harvest.tenant", &o->tenant, "",
              "Name of this machine's primary tenant (the RM keeps a usage history per tenant); "
              "\"\" = the node id.");
  s.addString("nm.harvest.file", &o->file, "",
              "Usage file of nm.harvest.source: file (the agent should write a temp file and "
              "rename it).");
  s.addString("nm.harvest.cgroup", &o->cgroup, "",
              "Absolute path of the primary tenant's cgroup directory for nm.harvest.source: "
              "cgroup, e.g. /sys/fs/cgroup/system.slice/websearch.service.");
  s.addStringList("nm.harvest.processes", &o->processes, {},
                  "Process names (as in /proc/<pid>/comm) that make up the primary tenant for "
                  "nm.harvest.source: processes.");
  s.addResource("nm.harvest.reserve", &o->reserve, Resource(512, 1),
                "Headroom kept free for the primary tenant's growth: secondary (batch) containers "
                "get nm.resources minus the primary's usage minus this (MiB, vcores).");
  s.addDuration("nm.harvest.cpu-kill-after", &o->cpu_kill_after, Millis(5000), Millis(0),
                "How long secondary containers stay CPU-throttled while the primary needs more "
                "CPU than is left before the newest are killed. Memory cannot be throttled: a "
                "memory overlap kills at once.");
  s.addDuration("nm.harvest.interval", &o->interval, Millis(1000), Millis(10),
                "How often the primary's usage is sampled and the secondary containers fitted "
                "to what it leaves.");
  s.addString("nm.harvest.cpu-cgroup-v1", &o->cpu_cgroup_v1, "/sys/fs/cgroup/cpu",
              "Where secondary containers are CPU-throttled when the containers do not run in "
              "cgroup v2 cgroups with the cpu controller: a cgroup v1 cpu hierarchy (the NM, "
              "as root, creates morpheus-harvest-<tenant>-<pid> there, one cgroup per container "
              "with cpu.cfs_quota_us, and removes them). \"\" = no v1 throttling (CPU overlap "
              "is then only killed after nm.harvest.cpu-kill-after).");
}

}  // namespace morpheus::nm
