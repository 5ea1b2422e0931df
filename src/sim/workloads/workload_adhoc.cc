// Ad-hoc background load from a SWIM trace, repeated daily and
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

#include "sim/workloads/swim_trace.h"
#include "sim/workloads/workload.h"
#include "sim/workloads/workload_rng.h"

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

// The task shape of stage `stage` (0 map, 1 reduce) of trace job `index`
// (AdhocOptions::diverse_shapes; `container` when off).
Resource stageShape(const AdhocOptions& o, const Resource& container, size_t index, int stage) {
  if (!o.diverse_shapes) return container;
  const rng::Stream r(o.seed, index, stage, "adhoc.shape");
  const int64_t vcores = int64_t{1} << r.below(0, 3);
  const double mem =
      static_cast<double>(container.memoryMib() * vcores) * r.logUniform(1, 0.25, 2.0);
  return Resource(std::clamp<int64_t>(static_cast<int64_t>(mem), 1, o.node_size.memoryMib()),
                  std::min(vcores, o.node_size.vcores()));
}

// Per trace job: its work weighted by its tasks' dominant share relative to
// `container`'s (1 for every job without diverse shapes).
std::vector<double> weightedWork(const std::vector<SwimJob>& trace, const AdhocOptions& o,
                                 const Resource& container) {
  const Resource cluster = o.node_size * o.nodes;
  const double base = container.dominantShare(cluster);
  std::vector<double> w(trace.size());
  for (size_t i = 0; i < trace.size(); i++) {
    const SwimJob& j = trace[i];
    w[i] = workMs(j);
    if (!o.diverse_shapes) continue;
    w[i] =
        (static_cast<double>(j.map_tasks) * static_cast<double>(j.map_task_duration.count()) *
             stageShape(o, container, i, 0).dominantShare(cluster) +
         static_cast<double>(j.reduce_tasks) * static_cast<double>(j.reduce_task_duration.count()) *
             stageShape(o, container, i, 1).dominantShare(cluster)) /
        base;
  }
  return w;
}

AdhocJob toAdhoc(const SwimJob& j, int64_t widen, const Resource& container, const AdhocOptions& o,
                 size_t index) {
  const uint64_t seed = o.seed;
  AdhocJob a;
  a.user = UserId("adhoc-user-" +
                  std::to_string(rng::Stream(seed, index, -1, "adhoc.user").below(0, kAdhocUsers)));
  SimStage map;
  map.name = "map";
  map.tasks = j.map_tasks * widen;
  map.task_duration = j.map_task_duration;
  map.task_resource = stageShape(o, container, index, 0);
  a.stages.push_back(map);
  if (j.reduce_tasks > 0) {
    SimStage reduce;
    reduce.name = "reduce";
    reduce.tasks = j.reduce_tasks * widen;
    reduce.task_duration = j.reduce_task_duration;
    reduce.task_resource = stageShape(o, container, index, 1);
    reduce.depends_on = {0};
    a.stages.push_back(reduce);
  }
  return a;
}

// Copies of each trace job on `day` (indices parallel to `jobs`).
std::vector<int64_t> copiesOnDay(const std::vector<SwimJob>& jobs, const std::vector<double>& work,
                                 double q, int64_t day, uint64_t seed) {
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
    const double w = work[i];
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
  const std::vector<double> work = weightedWork(trace, options, container);
  double trace_work = 0;
  for (double w : work) trace_work += w;
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
    const std::vector<int64_t> copies = copiesOnDay(trace, work, q, day, options.seed);
    for (size_t i = 0; i < trace.size(); i++) {
      const int64_t submit = day * kDayMs + trace[i].submit.count();
      if (submit >= horizon) continue;
      for (int64_t c = 0; c < copies[i]; c++) {
        AdhocJob a = toAdhoc(trace[i], widen, container, options, i);
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
