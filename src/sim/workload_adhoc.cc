// Ad-hoc background load from a SWIM trace (issue #13), repeated daily and
// scaled to a share of the cluster.
//
// Load: a job's work is its tasks x task durations x the dominant share of
// its container (1 vcore + the node's memory per vcore) in the cluster; the
// load is the total work per day / one day. The trace's own daily load q0 is
// scaled to `load` by q = load / q0:
// - SWIM-style widening first (SWIM scales data sizes with the cluster): when
//   q > 2, every job's map and reduce task counts are multiplied by
//   W = ceil(q / 2), leaving q' = q / W in (1, 2] (so a 50,000-node cluster
//   gets wider jobs, not millions of them);
// - then deterministic replication and sampling: each day every trace job is
//   submitted floor(q') times, plus once more for a fraction frac(q') of the
//   work, chosen by error diffusion over the jobs in a per-day pseudo-random
//   order (take the extra copy when the work taken so far stays within half a
//   job of the work owed). The realised load is then within one job's work
//   per day of the target, whatever the heavy tail of job sizes.
// Copies on a day are submitted at day x 24 h + the trace offset; jobs past
// the last simulated day are dropped. Names: "<trace name>-d<day>[-c<copy>]".
#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/swim_trace.h"
#include "sim/workload.h"
#include "sim/workload_rng.h"

namespace morpheus::sim {

namespace {

constexpr int64_t kDayMs = 24LL * 3600 * 1000;
constexpr double kMaxReplication = 2.0;
// Ad-hoc jobs belong to this many synthetic users (SWIM has no user column).
constexpr int64_t kAdhocUsers = 20;

Status validate(const AdhocOptions& o) {
  if (o.trace_path.empty()) return invalidArgument("trace_path", "must name a SWIM trace file");
  if (o.days < 1) return invalidArgument("days", "must be >= 1");
  if (o.nodes < 1) return invalidArgument("nodes", "must be >= 1");
  if (!(o.load >= 0.0 && o.load <= 1.0)) return invalidArgument("load", "must be in [0, 1]");
  if (o.node_size.memoryMib() < 1 || o.node_size.vcores() < 1) {
    return invalidArgument("node_size", "needs memory >= 1 MiB and vcores >= 1");
  }
  return Status::ok();
}

double workMs(const SwimJob& j) {
  return static_cast<double>(j.map_tasks) * static_cast<double>(j.map_task_duration.count()) +
         static_cast<double>(j.reduce_tasks) * static_cast<double>(j.reduce_task_duration.count());
}

AdhocJob toAdhoc(const SwimJob& j, int64_t widen, const Resource& container, uint64_t seed,
                 size_t index) {
  AdhocJob a;
  a.user = UserId("adhoc-user-" +
                  std::to_string(rng::Stream(seed, index, -1, "adhoc.user").below(0, kAdhocUsers)));
  SimStage map;
  map.name = "map";
  map.tasks = j.map_tasks * widen;
  map.task_duration = j.map_task_duration;
  map.task_resource = container;
  a.stages.push_back(map);
  if (j.reduce_tasks > 0) {
    SimStage reduce;
    reduce.name = "reduce";
    reduce.tasks = j.reduce_tasks * widen;
    reduce.task_duration = j.reduce_task_duration;
    reduce.task_resource = container;
    reduce.depends_on = {0};
    a.stages.push_back(reduce);
  }
  return a;
}

// Copies of each trace job on `day` (indices parallel to `jobs`).
std::vector<int64_t> copiesOnDay(const std::vector<SwimJob>& jobs, double q, int64_t day,
                                 uint64_t seed) {
  const auto whole = static_cast<int64_t>(std::floor(q));
  const double frac = q - static_cast<double>(whole);
  std::vector<int64_t> copies(jobs.size(), whole);
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  const rng::Stream s(seed, 0, day, "adhoc.order");
  std::vector<uint64_t> key(jobs.size());
  for (size_t i = 0; i < jobs.size(); i++) key[i] = s.bits(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  double owed = 0, taken = 0;
  for (size_t i : order) {
    const double w = workMs(jobs[i]);
    owed += frac * w;
    if (taken + 0.5 * w <= owed) {
      copies[i]++;
      taken += w;
    }
  }
  return copies;
}

std::string copyName(const std::string& name, int64_t day, int64_t copy) {
  std::string n = name + "-d" + std::to_string(day);
  if (copy > 0) n += "-c" + std::to_string(copy);
  return n;
}

}  // namespace

Result<std::vector<AdhocJob>> loadAdhoc(const AdhocOptions& options) {
  MORPHEUS_RETURN_IF_ERROR(validate(options));
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<SwimJob> trace,
                            loadSwimTrace(options.trace_path, SwimRates{}));
  std::vector<AdhocJob> out;
  const Resource container(
      std::max<int64_t>(1, options.node_size.memoryMib() / options.node_size.vcores()), 1);
  const double share = container.dominantShare(options.node_size * options.nodes);
  double trace_work = 0;
  for (const auto& j : trace) trace_work += workMs(j);
  const double trace_load = trace_work * share / static_cast<double>(kDayMs);
  if (options.load == 0.0 || trace_load <= 0.0) return out;

  double q = options.load / trace_load;
  int64_t widen = 1;
  if (q > kMaxReplication) {
    widen = static_cast<int64_t>(std::ceil(q / kMaxReplication));
    q /= static_cast<double>(widen);
  }
  const int64_t horizon = options.days * kDayMs;
  for (int64_t day = 0; day < options.days; day++) {
    const std::vector<int64_t> copies = copiesOnDay(trace, q, day, options.seed);
    for (size_t i = 0; i < trace.size(); i++) {
      const int64_t submit = day * kDayMs + trace[i].submit.count();
      if (submit >= horizon) continue;
      for (int64_t c = 0; c < copies[i]; c++) {
        AdhocJob a = toAdhoc(trace[i], widen, container, options.seed, i);
        a.name = copyName(trace[i].name, day, c);
        a.submit = Millis(submit);
        out.push_back(std::move(a));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const AdhocJob& a, const AdhocJob& b) { return a.submit < b.submit; });
  return out;
}

Status addAdhocLoad(Workload& workload, const AdhocOptions& options) {
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<AdhocJob> adhoc, loadAdhoc(options));
  workload.adhoc.insert(workload.adhoc.end(), adhoc.begin(), adhoc.end());
  std::stable_sort(workload.adhoc.begin(), workload.adhoc.end(),
                   [](const AdhocJob& x, const AdhocJob& y) { return x.submit < y.submit; });
  return Status::ok();
}

}  // namespace morpheus::sim
