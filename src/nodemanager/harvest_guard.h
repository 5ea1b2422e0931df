// Keeps secondary (batch) containers inside what the machine's primary tenant
// leaves (Zhang et al., OSDI'16 §3: "the primary tenant has
// priority; secondary tasks are throttled, then killed, when it needs its
// resources back").
//
// decideHarvest is the policy (pure, no I/O): offer = capacity - primary -
// reserve per dimension (never below 0; vcores rounded down). Memory cannot be
// taken back without killing: while the secondary containers' allocations
// exceed the offered memory, the newest are killed until they fit. CPU can:
// secondary containers are first throttled to the CPU left (harvest_cpu.h:
// cgroup v2 cpu.max, else cgroup v1 cpu.cfs_quota_us);
// when that has lasted `cpu_kill_after`, the newest are killed until their
// vcores fit.
//
// HarvestMonitor applies it every nm.harvest.interval on its own thread:
// samples the source, throttles and kills through ContainerRuntime (kills
// are ExitReason::kPreempted, so the RM and the AM see a preemption, not a
// task failure; the diagnostic says the primary tenant needed the
// resources), and hands the last sample and offer to the heartbeat.
// Thread-safety: HarvestMonitor is internally locked.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/resource.h"
#include "morpheus/v1/resource_tracker.pb.h"
#include "nodemanager/container_runtime.h"
#include "nodemanager/harvest_cpu.h"
#include "nodemanager/harvest_options.h"
#include "nodemanager/nm_metrics.h"
#include "nodemanager/primary_usage.h"

namespace morpheus::nm {

struct HarvestLimits {
  Resource capacity;  // nm.resources
  Resource reserve;   // nm.harvest.reserve
  Millis cpu_kill_after{5000};
};

struct SecondaryContainer {
  ContainerId id;
  Resource resource;  // allocation
  TimePoint start;
  int session = 0;  // its processes' session (cgroup v1 throttling moves them)
};

struct HarvestDecision {
  Resource offer;                 // what secondary containers may be allocated now
  double cpu_left = 0;            // vcores the primary leaves (after the reserve), may be < 0
  bool throttle = false;          // secondary CPU must be capped at cpu_left
  std::vector<ContainerId> kill;  // newest first
  std::string why;                // diagnostic for the killed containers
};

// `cpu_over_for`: how long the secondary vcores have exceeded the CPU left
// (0 = not before this call). `running` in any order.
HarvestDecision decideHarvest(const HarvestLimits& limits, const std::string& tenant,
                              const PrimaryUsage& primary, std::vector<SecondaryContainer> running,
                              Millis cpu_over_for);

class HarvestMonitor {
 public:
  HarvestMonitor(HarvestOptions opts, std::string tenant, Resource capacity,
                 std::unique_ptr<PrimaryUsageSource> source, ContainerRuntime& runtime,
                 MetricsRegistry& metrics, const Clock& clock);
  ~HarvestMonitor();

  // Picks the CPU throttle: cgroup v2 when the runtime uses cgroups and the
  // cpu controller can be enabled for them, else cgroup v1 under
  // nm.harvest.cpu-cgroup-v1 (best effort: without either, CPU overlap is
  // only killed), then starts the thread.
  void start();
  void stop();
  // One pass: sample, decide, throttle, kill.
  void checkOnce();
  // Adds the last good sample and the offer to a heartbeat; an offer of
  // zero (and no sample) before the first good sample and while the last
  // one is more than kStaleSamples intervals old.
  void fillHeartbeat(v1::NodeHeartbeatRequest* req) const;
  static constexpr int kStaleSamples = 3;

 private:
  void applyThrottle(const HarvestDecision& d, const std::vector<SecondaryContainer>& running);
  std::unique_ptr<CpuThrottle> pickThrottle() const;

  const HarvestOptions opts_;
  const std::string tenant_;
  const HarvestLimits limits_;
  std::unique_ptr<PrimaryUsageSource> source_;  // used only by checkOnce's caller
  ContainerRuntime& runtime_;
  HarvestMetrics metrics_;
  const Clock& clock_;
  std::unique_ptr<CpuThrottle> throttle_;  // null = none; written before the thread starts

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::optional<PrimaryUsage> last_ GUARDED_BY(mu_);
  TimePoint last_at_ GUARDED_BY(mu_);
  Resource offer_ GUARDED_BY(mu_);
  std::optional<TimePoint> cpu_over_since_ GUARDED_BY(mu_);
  bool throttled_ GUARDED_BY(mu_) = false;
  std::set<ContainerId> killed_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace morpheus::nm

namespace morpheus::nm {

// OK when `opts` are usable, else INVALID_ARGUMENT naming the option as
// written: an unknown nm.harvest.source, a negative nm.harvest.reserve, or the
// option a source needs and lacks (nm.harvest.file, nm.harvest.cgroup,
// nm.harvest.processes). morpheus-nm checks them before it starts serving.
Status validateHarvestOptions(const HarvestOptions& opts);

// The monitor morpheus-nm runs for `opts` (null for nm.harvest.source: none),
// or validateHarvestOptions' error.
Result<std::unique_ptr<HarvestMonitor>> makeHarvestMonitor(
    const HarvestOptions& opts, const std::string& node_id, const Resource& capacity,
    ContainerRuntime& runtime, MetricsRegistry& metrics, const Clock& clock);

}  // namespace morpheus::nm
