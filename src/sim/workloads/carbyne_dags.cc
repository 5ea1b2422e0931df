#include "sim/workloads/carbyne_dags.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "sim/workloads/workload_rng.h"

namespace morpheus::sim {
namespace {

// What a mix draws (carbyne_dags.h). Stage counts are log-normal (median,
// sigma) clamped to [min_stages, max_stages]; the critical path has
// round(cp_coef x stages^0.7 + U(-1, 1)) stages (at least 2, at most all).
struct MixParams {
  double stage_median;
  double stage_sigma;
  int64_t min_stages;
  int64_t max_stages;
  double cp_coef;
  double scan_tasks_lo, scan_tasks_hi;  // tasks of a scan, log-uniform
  double scan_s_lo, scan_s_hi;          // task seconds of a scan
  double mid_s_lo, mid_s_hi;            // of a join or filter
  double udf_share;                     // intermediate stages that are UDF / ML stages
};

// Scan widths set the load: with them, the online arrivals (250 jobs, one
// every 20 s on average) offer about 0.8 of the paper's cluster in the
// busiest resource, vcores (bench_carbyne --scenario paper --describe: 0.82), so load 1x
// is busy but not overloaded and 2x, 4x (a smaller cluster) are.
// TPC-DS: the paper's figures (at least 7 stages at the median, 23 at p95:
// log-normal median 7.5, sigma ln(23 / 7.5) / 1.645, so that the median of
// 250 rounded draws stays at 7 or above for every seed). TPC-H: 2-8 joins per query, so smaller
// plans. BigBench: TPC-DS-sized plans with long UDF and machine-learning stages.
MixParams paramsOf(DagMix mix) {
  switch (mix) {
    case DagMix::kTpcH:
      return {5.0, 0.45, 2, 14, 1.25, 5, 250, 20, 200, 30, 300, 0.0};
    case DagMix::kBigBench:
      return {8.0, 0.5, 3, 30, 1.35, 3, 150, 20, 180, 30, 300, 0.3};
    case DagMix::kTpcDs:
    default:
      return {7.5, 0.68, 3, 40, 1.25, 3, 200, 20, 180, 30, 300, 0.0};
  }
}

enum class Kind { kScan, kMid, kUdf, kSink };

struct Draft {
  Kind kind = Kind::kScan;
  std::vector<int> deps;  // indices into the draft list
};

Resource taskShape(const rng::Stream& r, uint64_t k, Kind kind) {
  auto lu = [&](uint64_t i, double lo, double hi) {
    return static_cast<int64_t>(std::llround(r.logUniform(k + i, lo, hi)));
  };
  Resource t;
  switch (kind) {
    case Kind::kScan:
      t = Resource(lu(0, 1024, 8192), 1 + r.below(k + 1, 2));
      t.setExtended(kDiskIn, lu(2, 40, 250));
      t.setExtended(kDiskOut, lu(3, 1, 20));
      t.setExtended(kNetIn, lu(4, 1, 10));
      t.setExtended(kNetOut, lu(5, 10, 150));
      break;
    case Kind::kMid:
      t = Resource(lu(0, 2048, 16384), int64_t{1} << r.below(k + 1, 3));
      t.setExtended(kDiskIn, lu(2, 1, 30));
      t.setExtended(kDiskOut, lu(3, 10, 120));
      t.setExtended(kNetIn, lu(4, 40, 300));
      t.setExtended(kNetOut, lu(5, 10, 150));
      break;
    case Kind::kUdf:
      t = Resource(lu(0, 8192, 24576), 2 + 2 * r.below(k + 1, 2));
      t.setExtended(kDiskIn, lu(2, 1, 20));
      t.setExtended(kDiskOut, lu(3, 5, 60));
      t.setExtended(kNetIn, lu(4, 5, 60));
      t.setExtended(kNetOut, lu(5, 5, 60));
      break;
    case Kind::kSink:
      t = Resource(lu(0, 2048, 12288), 1 + r.below(k + 1, 2));
      t.setExtended(kDiskIn, lu(2, 1, 10));
      t.setExtended(kDiskOut, lu(3, 10, 60));
      t.setExtended(kNetIn, lu(4, 30, 200));
      t.setExtended(kNetOut, lu(5, 1, 10));
      break;
  }
  return t;
}

// The stages of job `i`: a spine of `cp` stages (a scan, joins, the final
// aggregation) and side branches of 1-3 stages, each starting with its own
// scan, joining the spine at a stage deep enough that the branch does not
// lengthen the critical path.
std::vector<SimStage> drawStages(const MixParams& m, const rng::Stream& r, double size_sigma,
                                 double size_scale) {
  // The job's size factor (DagJobsOptions::size_sigma, size_scale):
  // log-normal with mean size_scale.
  const double f =
      size_scale * (size_sigma > 0
                        ? std::exp(size_sigma * r.normal(5000) - 0.5 * size_sigma * size_sigma)
                        : 1.0);
  const double mid_cap = 400.0 * std::max(1.0, f);
  const double z = r.normal(1);
  const auto stages = std::clamp<int64_t>(
      static_cast<int64_t>(std::llround(m.stage_median * std::exp(m.stage_sigma * z))),
      m.min_stages, m.max_stages);
  const auto cp = std::clamp<int64_t>(
      static_cast<int64_t>(std::llround(m.cp_coef * std::pow(static_cast<double>(stages), 0.7) +
                                        r.uniform(3, -1.0, 1.0))),
      2, stages);
  std::vector<Draft> d;
  for (int64_t s = 0; s < cp; s++) {
    Draft x;
    x.kind = s == 0 ? Kind::kScan : (s == cp - 1 ? Kind::kSink : Kind::kMid);
    if (s > 0) x.deps.push_back(static_cast<int>(s - 1));
    d.push_back(std::move(x));
  }
  int64_t left = stages - cp;
  for (uint64_t b = 0; left > 0; b++) {
    const uint64_t k = 10 + 4 * b;
    const int64_t len = std::min({left, 1 + r.below(k, 3), cp - 1});
    const int64_t join = len + r.below(k + 1, cp - len);  // in [len, cp - 1]
    int prev = -1;
    for (int64_t s = 0; s < len; s++) {
      Draft x;
      x.kind = s == 0 ? Kind::kScan
                      : (r.uniform(k + 2 + static_cast<uint64_t>(s)) < m.udf_share ? Kind::kUdf
                                                                                   : Kind::kMid);
      if (prev >= 0) x.deps.push_back(prev);
      prev = static_cast<int>(d.size());
      d.push_back(std::move(x));
    }
    d[static_cast<size_t>(join)].deps.push_back(prev);
    left -= len;
  }
  for (size_t s = 1; s + 1 < d.size() && static_cast<int64_t>(s) < cp - 1; s++) {
    if (r.uniform(200 + s) < m.udf_share) d[s].kind = Kind::kUdf;
  }
  // Breadth-first order: by depth (longest path from a source), then draft order.
  std::vector<int64_t> depth(d.size(), -1);
  std::function<int64_t(size_t)> depthOf = [&](size_t i) -> int64_t {
    if (depth[i] >= 0) return depth[i];
    int64_t dd = 0;
    for (int p : d[i].deps) dd = std::max(dd, depthOf(static_cast<size_t>(p)) + 1);
    return depth[i] = dd;
  };
  std::vector<size_t> order(d.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i : order) depthOf(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return depth[a] < depth[b]; });
  std::vector<int> pos(d.size());
  for (size_t i = 0; i < order.size(); i++) pos[order[i]] = static_cast<int>(i);
  // Sizes: scans draw their task count; a stage reading others has the
  // parents' tasks over a reduction factor of 1.5-6 (at most 400); the final
  // aggregation 1-10 tasks.
  std::vector<SimStage> out(d.size());
  std::vector<int64_t> tasks(d.size(), 0);
  for (size_t i : order) {  // parents first
    const Draft& x = d[i];
    const uint64_t k = 1000 + 20 * i;
    SimStage& s = out[static_cast<size_t>(pos[i])];
    double lo = m.mid_s_lo, hi = m.mid_s_hi;
    switch (x.kind) {
      case Kind::kScan:
        s.name = "scan";
        tasks[i] = static_cast<int64_t>(r.logUniform(k, m.scan_tasks_lo, m.scan_tasks_hi));
        if (f != 1.0) {
          tasks[i] = std::max<int64_t>(1, std::llround(static_cast<double>(tasks[i]) * f));
        }
        lo = m.scan_s_lo;
        hi = m.scan_s_hi;
        break;
      case Kind::kSink:
        s.name = "aggregate";
        tasks[i] = 1 + r.below(k, 10);
        lo = 10;
        hi = 120;
        break;
      case Kind::kUdf:
      case Kind::kMid: {
        s.name = x.kind == Kind::kUdf ? "udf" : (x.deps.size() > 1 ? "join" : "filter");
        int64_t in = 0;
        for (int p : x.deps) in += tasks[static_cast<size_t>(p)];
        tasks[i] = std::clamp<int64_t>(
            static_cast<int64_t>(static_cast<double>(in) / r.logUniform(k, 1.5, 6.0)), 1,
            static_cast<int64_t>(mid_cap));
        if (x.kind == Kind::kUdf) {
          lo = 300;
          hi = 900;
        }
        break;
      }
    }
    s.name += std::to_string(pos[i]);
    s.tasks = std::max<int64_t>(1, tasks[i]);
    s.task_duration = Millis(static_cast<int64_t>(r.logUniform(k + 1, lo, hi)) * 1000);
    s.task_resource = taskShape(r, k + 2, x.kind);
    for (int p : x.deps) s.depends_on.push_back(pos[static_cast<size_t>(p)]);
    std::sort(s.depends_on.begin(), s.depends_on.end());
  }
  return out;
}

}  // namespace

Resource carbyneServer() {
  Resource r(128 * 1024, 20);
  r.setExtended(kDiskIn, 1000);
  r.setExtended(kDiskOut, 1000);
  r.setExtended(kNetIn, 1250);
  r.setExtended(kNetOut, 1250);
  return r;
}

Result<DagMix> parseDagMix(const std::string& name, const std::string& field) {
  if (name == "tpcds") return DagMix::kTpcDs;
  if (name == "tpch") return DagMix::kTpcH;
  if (name == "bigbench") return DagMix::kBigBench;
  return invalidArgument(field, "unknown mix '" + name + "' (tpcds, tpch or bigbench)");
}

const char* dagMixName(DagMix mix) {
  switch (mix) {
    case DagMix::kTpcH:
      return "tpch";
    case DagMix::kBigBench:
      return "bigbench";
    case DagMix::kTpcDs:
    default:
      return "tpcds";
  }
}

Result<std::vector<AdhocJob>> generateDagJobs(const DagJobsOptions& o) {
  if (o.jobs < 1) return invalidArgument("jobs", "must be >= 1");
  if (o.users < 1) return invalidArgument("users", "must be >= 1");
  if (o.mean_interarrival < Millis(0)) return invalidArgument("mean_interarrival", "must be >= 0");
  if (!(o.size_sigma >= 0 && o.size_sigma <= 3)) {
    return invalidArgument("size_sigma", "must be in [0, 3]");
  }
  if (!(o.size_scale > 0 && o.size_scale <= 10)) {
    return invalidArgument("size_scale", "must be in (0, 10]");
  }
  const MixParams m = paramsOf(o.mix);
  std::vector<AdhocJob> jobs;
  double t_ms = 0;
  for (int64_t i = 0; i < o.jobs; i++) {
    const rng::Stream r(o.seed, static_cast<uint64_t>(i), -1,
                        std::string("carbyne-dags-") + dagMixName(o.mix));
    if (i > 0 && o.mean_interarrival > Millis(0)) {
      t_ms += -static_cast<double>(o.mean_interarrival.count()) * std::log(1.0 - r.uniform(0));
    }
    AdhocJob j;
    j.name = std::string(dagMixName(o.mix)) + "-" + std::to_string(i);
    j.user = UserId("user" + std::to_string(i % o.users));
    j.submit = Millis(static_cast<int64_t>(t_ms));
    j.stages = drawStages(m, r, o.size_sigma, o.size_scale);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

DagShape dagShape(const AdhocJob& job) {
  DagShape s;
  s.stages = static_cast<int64_t>(job.stages.size());
  std::vector<int64_t> len(job.stages.size(), 0);
  std::vector<double> fin(job.stages.size(), 0);
  for (size_t i = 0; i < job.stages.size(); i++) {
    const SimStage& st = job.stages[i];
    int64_t l = 0;
    double start = 0;
    for (int p : st.depends_on) {
      l = std::max(l, len[static_cast<size_t>(p)]);
      start = std::max(start, fin[static_cast<size_t>(p)]);
    }
    len[i] = l + 1;
    fin[i] = start + static_cast<double>(st.task_duration.count()) / 1000.0;
    s.critical_path = std::max(s.critical_path, len[i]);
    s.alone_s = std::max(s.alone_s, fin[i]);
    if (st.depends_on.empty()) s.sources++;
    if (!st.depends_on.empty()) s.barriers++;
    if (st.depends_on.size() > 1) s.joins++;
    s.tasks += st.tasks;
    s.work_core_s += static_cast<double>(st.tasks) * static_cast<double>(st.task_duration.count()) /
                     1000.0 * static_cast<double>(st.task_resource.vcores());
  }
  return s;
}

}  // namespace morpheus::sim
