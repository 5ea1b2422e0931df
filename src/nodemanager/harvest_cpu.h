// CPU caps of secondary (batch) containers while the primary tenant needs
// the CPU back (Zhang et al., OSDI'16 §3: secondary tasks are
// throttled before they are killed). One interface, one implementation per
// kernel interface:
//  - cgroup v2: the container runtime's cgroup per container,
//    <parent>/<container>/cpu.max = "<quota> <period>" ("max <period>" = no
//    cap); needs the cpu controller in <parent>/cgroup.subtree_control.
//  - cgroup v1: a cpu-controller hierarchy (e.g. /sys/fs/cgroup/cpu) apart
//    from the runtime's (memory) cgroups. The throttle owns
//    <root>/<group>/<container>, and <root>/<group> only while some container
//    is capped (an NM killed with SIGKILL leaves it: removeStaleCpuGroups at
//    the next start removes it). limit() creates it, moves every process of
//    the container's session into it (again on each call, so processes the
//    container started since are caught; their children inherit it) and
//    writes cpu.cfs_period_us and cpu.cfs_quota_us (-1 = no cap).
//    prune() and the destructor remove what it created, moving processes
//    still there back to <root>.
// Both write a container's cap only when it differs from the one they last
// wrote (prune() forgets it): writing the quota refills the period's budget,
// so rewriting an unchanged cap at every pass would let a capped container
// run past its cap.
// Quota: vcores x period (100 ms), at least 1 ms so a capped container still
// progresses. Thread-safety: none (the HarvestMonitor calls it under its own
// serialisation: one pass at a time).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"

namespace morpheus::nm {

class CpuThrottle {
 public:
  static constexpr int64_t kPeriodUs = 100000;
  virtual ~CpuThrottle() = default;
  // "cgroup v2 cpu.max under <parent>" / "cgroup v1 cpu.cfs_quota_us under <dir>".
  virtual std::string describe() const = 0;
  // Caps the container at `vcores` (nullopt = no cap). `session`: the
  // container's session id (its processes; v1 moves them). UNAVAILABLE with
  // the path when the kernel refused a write.
  virtual Status limit(const ContainerId& id, int session, std::optional<double> vcores) = 0;
  // Forgets every container not in `live` (removes their v1 cgroups).
  virtual void prune(const std::vector<ContainerId>& live) = 0;
};

// Removes the groups <root>/<prefix>...-<pid> (and their container cgroups,
// moving processes left to <root>) whose process <pid> no longer runs: what
// an NM killed with SIGKILL left behind. Returns how many were removed.
int removeStaleCpuGroups(const std::string& root, const std::string& prefix);

// Quota in microseconds per kPeriodUs for `vcores` (>= 1 ms).
int64_t cpuQuotaUs(double vcores);

// `parent`: the container runtime's cgroup parent (cgroup v2).
std::unique_ptr<CpuThrottle> makeCgroupV2CpuThrottle(std::string parent);

// `root`: a mounted cgroup v1 hierarchy with the cpu controller; the
// throttle creates <root>/<group>. UNAVAILABLE naming the path when `root`
// has no cpu.cfs_quota_us or the group cannot be created (not root, read-
// only; probed by creating and removing it); nothing is left behind.
Result<std::unique_ptr<CpuThrottle>> makeCgroupV1CpuThrottle(const std::string& root,
                                                             const std::string& group);

}  // namespace morpheus::nm
