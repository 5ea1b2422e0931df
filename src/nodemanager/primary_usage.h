// Where the NM learns what the machine's primary tenant uses (Zhang et al.,
// "History-Based Harvesting of Spare Cycles and Storage in
// Large-Scale Datacenters", OSDI'16 §3: batch work runs on the resources the
// primary tenant leaves). Three sources, one small interface:
//
//  - file: a file the tenant's agent rewrites (atomically: write + rename),
//    lines "key value" ('#' starts a comment), keys
//      cpu_vcores   CPU in use, vcores (a decimal, >= 0)       required
//      memory_mib   memory in use, MiB (an integer, >= 0)      required
//    e.g. "cpu_vcores 2.5\nmemory_mib 3072\n". Unknown keys are errors.
//  - cgroup: the tenant's cgroup directory. cgroup v2: CPU from cpu.stat's
//    usage_usec, memory from memory.current; cgroup v1 (when those are
//    absent): cpuacct.usage (ns) and memory.usage_in_bytes of that directory.
//  - processes: every process whose /proc/<pid>/comm is one of the names;
//    CPU from utime+stime, memory from RSS.
// CPU sources that read a cumulative counter report the rate since the
// previous sample (0 on the first).
//
// Errors: a source that cannot be read returns UNAVAILABLE (the file is being
// replaced, the cgroup is gone) or INVALID_ARGUMENT naming the field of a
// malformed file; the caller keeps its last good sample. Not thread-safe: one
// caller (the harvest monitor thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace morpheus::nm {

struct PrimaryUsage {
  double cpu_vcores = 0;
  int64_t memory_mib = 0;
};

class PrimaryUsageSource {
 public:
  virtual ~PrimaryUsageSource() = default;
  // The primary tenant's usage now; `now` times the CPU rate.
  virtual Result<PrimaryUsage> sample(TimePoint now) = 0;
};

// Parses the file source's text (see above). INVALID_ARGUMENT naming the key
// ("nm.harvest.file: cpu_vcores ...") for a bad line or a missing key.
Result<PrimaryUsage> parsePrimaryUsageFile(const std::string& text);

std::unique_ptr<PrimaryUsageSource> makeFileUsageSource(std::string path);
std::unique_ptr<PrimaryUsageSource> makeCgroupUsageSource(std::string cgroup_dir);
std::unique_ptr<PrimaryUsageSource> makeProcessSetUsageSource(std::vector<std::string> names,
                                                              std::string proc_root = "/proc");

}  // namespace morpheus::nm
