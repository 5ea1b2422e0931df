#include "paper_sim.h"

#include "carbyne_v0.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "scheduler/policies/carbyne_policy.h"
#include "scheduler/scheduler.h"
#include "sim/workloads/carbyne_dags.h"
#include "sim/workloads/workload_rng.h"

namespace morpheus::bench {
namespace {

// Critical path of `dag` in ms, each stage one wave of its task duration.
Millis criticalPath(const std::vector<sched::DagStage>& dag) {
  std::vector<Millis> fin(dag.size(), Millis(-1));
  std::function<Millis(size_t)> f = [&](size_t i) -> Millis {
    if (fin[i] >= Millis(0)) return fin[i];
    Millis start(0);
    for (size_t d : dag[i].deps) start = std::max(start, f(d));
    return fin[i] = start + dag[i].task_duration;
  };
  Millis cp(0);
  for (size_t i = 0; i < dag.size(); i++) cp = std::max(cp, f(i));
  return cp;
}

}  // namespace

double TetrisPolicy::score(const Resource& used, double weight, const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

// remaining carries the remaining work in core-milliseconds (bench-local use
// of the hint: only this policy reads it).
sched::AppHint TetrisPolicy::planApp(const std::vector<sched::DagStage>& dag,
                                     const Resource&) const {
  if (dag.empty()) return {};
  int64_t work = 0;
  for (const auto& s : dag) work += s.tasks_left * s.task_duration.count() * s.task.vcores();
  return sched::AppHint{true, Resource(), Millis(work), true};
}

double TetrisPolicy::appScore(const sched::AppInput&) const { return 0.0; }

double TetrisPolicy::packFrom() const { return -std::numeric_limits<double>::infinity(); }

double TetrisPolicy::packScore(const sched::AskInput& in) const {
  const double rem = in.hint.valid ? static_cast<double>(in.hint.remaining.count()) / 1000.0 : 1e18;
  return sched::tetrisAlignment(in.need, in.node_free, in.node_total) + eps_ * w0_ / (w0_ + rem);
}

namespace {

// Forwards every Carbyne interface to the policy itself; a diagnostic
// overrides planApp (and its name) only.
class CarbyneForwarder : public sched::QueueOrderingPolicy,
                         public sched::DagPlanner,
                         public sched::NoDagPlanner,
                         public sched::AppOrdering,
                         public sched::UserOrdering,
                         public sched::AskChooser,
                         public sched::CrossAppPacker {
 public:
  explicit CarbyneForwarder(sched::LeftoverPacking p) : c_(p) {}
  double score(const Resource& used, double weight, const Resource& cluster) const override {
    return c_.score(used, weight, cluster);
  }
  sched::AppHint planWithoutDag(const Resource& s) const override { return c_.planWithoutDag(s); }
  double appScore(const sched::AppInput& in) const override { return c_.appScore(in); }
  double userScore(const Resource& used, double weight, const Resource& cluster,
                   double best_app) const override {
    return c_.userScore(used, weight, cluster, best_app);
  }
  double askScore(const sched::AskInput& in) const override { return c_.askScore(in); }
  double packFrom() const override { return c_.packFrom(); }
  double packScore(const sched::AskInput& in) const override { return c_.packScore(in); }
  // LeftoverPacking::reserve_nodes (`-now` turns it off, `-noneed` keeps it).
  bool reservesNodes() const override { return c_.reservesNodes(); }

 protected:
  sched::CarbyneOrderingPolicy c_;
};

// Diagnostic `carbyne-now`: Carbyne with the strict must-start-now rule
// (only tasks whose latest start is now are needed; carbynePlan's
// must_start_within), everything else the policy's own. Diagnostic
// `carbyne-noneed`: every need zero (below).
class CarbyneNowPolicy final : public CarbyneForwarder {
 public:
  // `no_need`: the diagnostic `carbyne-noneed` instead: every job's need is
  // zero, so every job is in the leftover tier and the whole cluster is
  // packed across jobs by the leftover's score (alignment and the SRTF term
  // on the completion estimate); altruism without the fair-share guarantee.
  explicit CarbyneNowPolicy(sched::LeftoverPacking p, bool no_need = false)
      : CarbyneForwarder(p), no_need_(no_need) {}
  std::string_view name() const override { return no_need_ ? "carbyne-noneed" : "carbyne-now"; }
  sched::AppHint planApp(const std::vector<sched::DagStage>& dag,
                         const Resource& fair_share) const override {
    if (dag.empty()) return {};
    sched::AppHint h = sched::carbyneHint(
        dag, sched::carbynePlan(dag, fair_share, no_need_ ? Millis(-1) : Millis(1)));
    if (no_need_) {
      h.need = Resource();
      h.needed.clear();
      h.needed_tasks.clear();
    }
    return h;
  }

 private:
  bool no_need_ = false;
};

// Diagnostic `carbyne-deadline`: Carbyne whose promise is a deadline, not
// a completion re-estimated from every report. A job's deadline is the
// latest completion its plans have estimated (now + T at the share of the
// moment: set at its first report, moved later when the share shrinks or
// the job falls behind, never earlier), and its need is what keeps that
// deadline (carbynePlan's `slack` = deadline - now - T), so a job ahead of
// its promised completion (leftover it got, a share that grew since) lends
// more. Stateful: the driver names the job and the time before each report
// (PaperRun::before_report); one run at a time.
class CarbyneDeadlinePolicy final : public CarbyneForwarder {
 public:
  explicit CarbyneDeadlinePolicy(sched::LeftoverPacking p) : CarbyneForwarder(p) {}
  std::string_view name() const override { return "carbyne-deadline"; }
  // The job and time of the next planApp.
  void at(size_t job, int64_t now_ms) {
    if (job >= deadline_.size()) deadline_.resize(job + 1, -1);
    job_ = job;
    now_ms_ = now_ms;
  }
  sched::AppHint planApp(const std::vector<sched::DagStage>& dag,
                         const Resource& fair_share) const override {
    if (dag.empty()) return {};
    const sched::CarbynePlan plain = sched::carbynePlan(dag, fair_share);
    int64_t& d = deadline_[job_];
    d = std::max(d, now_ms_ + plain.completion.count());
    const Millis slack(d - now_ms_ - plain.completion.count());
    return sched::carbyneHint(dag, sched::carbynePlan(dag, fair_share, Millis(-1), slack));
  }

 private:
  mutable std::vector<int64_t> deadline_;  // per job, ms; -1 before its first report
  size_t job_ = 0;
  int64_t now_ms_ = 0;
};

}  // namespace

double SjfPolicy::score(const Resource& used, double weight, const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

sched::AppHint SjfPolicy::planApp(const std::vector<sched::DagStage>& dag, const Resource&) const {
  if (dag.empty()) return {};
  if (!by_work_) return sched::AppHint{true, Resource(), criticalPath(dag), true};
  double work_ms = 0;
  for (const auto& s : dag) {
    work_ms += static_cast<double>(s.tasks_left) * static_cast<double>(s.task_duration.count()) *
               s.task.dominantShare(server_);
  }
  return sched::AppHint{true, Resource(), Millis(std::llround(work_ms)), true};
}

double SjfPolicy::appScore(const sched::AppInput& in) const {
  return in.hint.valid ? static_cast<double>(in.hint.remaining.count()) / 1000.0 : 1e18;
}

double SjfPolicy::userScore(const Resource&, double, const Resource&, double best_app) const {
  return best_app;
}

namespace {

// The six dimensions as fractions of one server, in a fixed order: memory,
// vcores, then the four bandwidths (carbyne_dags.h).
constexpr size_t kDims = 6;
constexpr size_t kBw = 2;  // first bandwidth dimension
using Vec = std::array<double, kDims>;
const char* const kBwNames[4] = {sim::kDiskIn, sim::kDiskOut, sim::kNetIn, sim::kNetOut};

Vec asVec(const Resource& r, const Resource& per) {
  auto frac = [](int64_t v, int64_t cap) {
    return cap > 0 ? static_cast<double>(v) / static_cast<double>(cap) : 0.0;
  };
  Vec v{frac(r.memoryMib(), per.memoryMib()), frac(r.vcores(), per.vcores()), 0, 0, 0, 0};
  for (size_t b = 0; b < 4; b++)
    v[kBw + b] = frac(r.extendedValue(kBwNames[b]), per.extendedValue(kBwNames[b]));
  return v;
}

struct Job {
  const sim::AdhocJob* spec = nullptr;
  AppId id;
  std::vector<int64_t> unstarted, left, next_task;
  std::vector<int> parents_left;
  std::vector<int32_t> priority;  // of each stage's ask (PaperRun::critical_path_first)
  std::vector<std::vector<int>> children;
  int64_t stages_left = 0;
  bool active = false;
  double share = 0;  // dominant share of the cluster held now
  Resource used;
  // What the job could use now (its running tasks and every unstarted task
  // of its runnable stages), as fractions of the cluster: what DRF's fair
  // allocation is computed from.
  Vec demand{};
  // PaperRun::ledger: the hint of the last report, its need as fractions of
  // the cluster, and the ledger's per-job figures of that report.
  bool planned = false;
  sched::AppHint hint;
  Vec need{};
  double share_ds = 0, share_drf_ds = 0, need_drf_ds = 0, start_ds = 0, need_strict_ds = 0;
  bool capped = false;
  Vec waiting{};                    // runnable tasks not started, as fractions of the cluster
  std::vector<int64_t> need_tasks;  // per stage: CarbynePlan::need_tasks of the last report
};

struct TaskEnd {
  int64_t at_ms;
  uint64_t seq;
  uint64_t version;  // stale when the task's end moved since (a slowdown changed)
  bool operator>(const TaskEnd& o) const { return std::tie(at_ms, seq) > std::tie(o.at_ms, o.seq); }
};

struct Running {
  int job;
  int stage;
  int node;
  Resource res;  // the task's true demand (all six dimensions)
  ContainerId id;
  double work_ms = 0;  // nominal work left at rate 1, as of `since_ms`
  int64_t since_ms = 0;
  uint64_t version = 0;
};

struct NodeLoad {
  std::array<int64_t, 4> bw{};  // bandwidth demand of the running tasks (MB/s)
  double rate = 1.0;            // progress rate of every task on it (< 1: over-subscribed)
  std::vector<uint64_t> tasks;
};

}  // namespace

double drfFairLevel(const std::vector<std::array<double, 6>>& demand) {
  // Jobs by dominant demand D_i; each resource's total at level L is
  // sum_{D_i <= L} d_i + L x sum_{D_i > L} d_i / D_i, piecewise linear in L.
  std::vector<std::pair<double, size_t>> by;
  for (size_t i = 0; i < demand.size(); i++) {
    double d = 0;
    for (double x : demand[i]) d = std::max(d, x);
    if (d > 0) by.emplace_back(d, i);
  }
  std::sort(by.begin(), by.end());
  Vec below{}, slope{};
  for (const auto& [d, i] : by) {
    for (size_t r = 0; r < kDims; r++) slope[r] += demand[i][r] / d;
  }
  double prev = 0;
  for (size_t k = 0; k < by.size(); k++) {
    const double next = by[k].first;
    // Within [prev, next] the totals are below[r] + L x slope[r].
    double level = next;
    for (size_t r = 0; r < kDims; r++) {
      if (slope[r] > 0) level = std::min(level, (1.0 - below[r]) / slope[r]);
    }
    if (level < next) return std::max(level, prev);
    const size_t i = by[k].second;
    for (size_t r = 0; r < kDims; r++) {
      below[r] += demand[i][r];
      slope[r] -= demand[i][r] / by[k].first;
    }
    prev = next;
  }
  return std::numeric_limits<double>::infinity();  // every job gets all it can use
}

Result<PaperResult> runPaper(const std::vector<sim::AdhocJob>& jobs,
                             std::shared_ptr<const sched::QueueOrderingPolicy> policy,
                             const PaperRun& o) {
  if (o.nodes < 1) return invalidArgument("nodes", "must be >= 1");
  for (size_t i = 0; i < jobs.size(); i++) {
    for (size_t s = 0; s < jobs[i].stages.size(); s++) {
      if (!jobs[i].stages[s].task_resource.fitsIn(o.node))
        return invalidArgument("jobs[" + std::to_string(i) + "].stages[" + std::to_string(s) + "]",
                               "task fits no node");
    }
  }
  // What the scheduler sees of a node or task: all six dimensions, or (as
  // YARN's DRF) memory and vcores only.
  auto seen = [&](const Resource& r) {
    return o.scheduler_sees_bandwidth ? r : Resource(r.memoryMib(), r.vcores());
  };
  sched::SchedulerOptions so;
  so.adhoc_queues.push_back({"root.default", 1.0, std::move(policy)});
  so.node_reservation = o.node_reservation;
  MORPHEUS_ASSIGN_OR_RETURN(auto sch, sched::Scheduler::create(so));
  std::vector<sched::NodeSlot> slots;
  for (int64_t n = 0; n < o.nodes; n++) {
    const NodeId id("n" + std::to_string(n));
    MORPHEUS_RETURN_IF_ERROR(sch->addNode(id, seen(o.node), {}));
    MORPHEUS_ASSIGN_OR_RETURN(auto slot, sch->nodeSlot(id));
    slots.push_back(slot);
  }
  const Resource cluster = o.node * o.nodes;  // all six dimensions, whatever the scheduler sees
  const auto nodes_d = static_cast<double>(o.nodes);
  const int64_t base_ms = 1'000'000'000'000;  // epoch offset of simulated time 0

  std::vector<Job> js(jobs.size());
  PaperResult res;
  res.jct_s.assign(jobs.size(), -1);
  res.est_s.assign(jobs.size(), -1);
  std::priority_queue<TaskEnd, std::vector<TaskEnd>, std::greater<>> ends;
  std::unordered_map<uint64_t, Running> running;
  std::vector<NodeLoad> load(static_cast<size_t>(o.nodes));
  uint64_t seq = 0;
  int64_t pending = 0;  // tasks asked for, not started
  std::vector<int> active;
  // Fairness: each active job's share, and its fair share, integrated over
  // the current window.
  std::vector<double> acc(jobs.size(), 0.0), acc_fair(jobs.size(), 0.0), fair(jobs.size(), 0.0);
  std::vector<char> in_window(jobs.size(), 0);
  std::vector<int> window_jobs;
  bool fair_dirty = true;
  double fair_level = 0;  // refreshFair's drfFairLevel
  // PaperRun::ledger: the current window's integrals and their duration.
  CarbyneLedgerWindow lw;
  double lw_dt = 0, lw_left_rem = 0, lw_left_n = 0, lw_lent_rem = 0;
  double jain_sum = 0, jain_fair_sum = 0;
  int64_t windows = 0, fair_windows = 0;
  // Utilisation: allocated fraction of the cluster per dimension, integrated.
  Vec used_now{}, used_int{};
  double pending_int = 0, active_int = 0, reserved_int = 0;
  const int64_t win = o.fairness_window.count();
  int64_t t = jobs.empty() ? 0 : jobs.front().submit.count();
  int64_t window_end = t + win;
  const int64_t first_submit = t;

  auto closeWindow = [&]() {
    double s = 0, s2 = 0, f = 0, f2 = 0;
    int64_t nf = 0;
    for (int j : window_jobs) {
      const auto ju = static_cast<size_t>(j);
      s += acc[ju];
      s2 += acc[ju] * acc[ju];
      if (acc_fair[ju] > 0) {
        const double x = acc[ju] / acc_fair[ju];
        f += x;
        f2 += x * x;
        nf++;
      }
      acc[ju] = acc_fair[ju] = 0;
      in_window[ju] = 0;
    }
    if (!window_jobs.empty()) {
      jain_sum += s2 > 0 ? s * s / (static_cast<double>(window_jobs.size()) * s2) : 1.0;
      windows++;
    }
    if (nf > 0) {
      jain_fair_sum += f2 > 0 ? f * f / (static_cast<double>(nf) * f2) : 1.0;
      fair_windows++;
    }
    window_jobs.clear();
    for (int j : active) {
      in_window[static_cast<size_t>(j)] = 1;
      window_jobs.push_back(j);
    }
    if (o.ledger && lw_dt > 0) {
      for (double* x :
           {&lw.jobs,           &lw.drf_jobs,       &lw.left_jobs,   &lw.capped_jobs,
            &lw.share,          &lw.need,           &lw.start,       &lw.need_strict,
            &lw.share_drf,      &lw.need_at_drf,    &lw.held,        &lw.drf_held,
            &lw.drf_over_need,  &lw.drf_short,      &lw.left_need,   &lw.lent,
            &lw.vcores,         &lw.demand_vcores,  &lw.lent_shortq, &lw.shortq_waiting_jobs,
            &lw.shortq_waiting, &lw.reserved_nodes, &lw.v_drf,       &lw.v_left_need,
            &lw.v_lent,         &lw.v_lent_behind})
        *x /= lw_dt;
      for (size_t f = 0; f < 5; f++) {
        lw.v_fifth[f] /= lw_dt;
        lw.v_fifth_waiting[f] /= lw_dt;
      }
      lw.left_remaining_s = lw_left_n > 0 ? lw_left_rem / lw_left_n : 0;
      lw.lent_remaining_s = lw.lent > 0 ? lw_lent_rem / (lw.lent * lw_dt) : 0;
      res.ledger.push_back(lw);
    }
    lw = CarbyneLedgerWindow{};
    lw.start_s = static_cast<double>(window_end - first_submit) / 1000.0;
    lw_dt = lw_left_rem = lw_left_n = lw_lent_rem = 0;
  };
  auto refreshFair = [&]() {
    std::vector<Vec> d;
    d.reserve(active.size());
    for (int j : active) d.push_back(js[static_cast<size_t>(j)].demand);
    const double level = drfFairLevel(d);
    fair_level = level;
    for (size_t k = 0; k < active.size(); k++) {
      double dom = 0;
      for (double x : d[k]) dom = std::max(dom, x);
      fair[static_cast<size_t>(active[k])] = std::min(dom, level);
    }
    fair_dirty = false;
  };
  auto advance = [&](int64_t to) {
    if (t < to && fair_dirty) refreshFair();
    while (t < to) {
      const int64_t seg = std::min(to, window_end);
      const auto dt = static_cast<double>(seg - t);
      for (int j : active) {
        const auto ju = static_cast<size_t>(j);
        acc[ju] += js[ju].share * dt;
        acc_fair[ju] += fair[ju] * dt;
      }
      for (size_t r = 0; r < kDims; r++) used_int[r] += used_now[r] * dt;
      const auto reserved_now = static_cast<double>(sch->numReservedNodes());
      reserved_int += reserved_now * dt;
      if (o.ledger && dt > 0) {
        lw_dt += dt;
        lw.reserved_nodes += reserved_now * dt;
        lw.vcores += used_now[1] * dt;
        std::vector<std::pair<int64_t, double>> left_rem;  // leftover tier: (remaining, lent)
        std::vector<double> left_wait;
        std::vector<double> left_lent_v;  // leftover tier: vcores held beyond the need's
        const auto cluster_v = static_cast<double>(cluster.vcores());
        {
          // (remaining work, job) of every active job; CarbyneLedgerWindow::v_fifth.
          std::vector<std::pair<double, int>> by_work;
          for (int ji : active) {
            const Job& j = js[static_cast<size_t>(ji)];
            double w = 0;
            for (size_t s = 0; s < j.left.size(); s++) {
              const sim::SimStage& st = j.spec->stages[s];
              w += static_cast<double>(j.left[s]) * static_cast<double>(st.task_duration.count()) *
                   st.task_resource.dominantShare(o.node);
            }
            by_work.emplace_back(w, ji);
          }
          std::sort(by_work.begin(), by_work.end());
          for (size_t k = 0; k < by_work.size(); k++) {
            const Job& j = js[static_cast<size_t>(by_work[k].second)];
            const size_t f = k * 5 / by_work.size();
            lw.v_fifth[f] += static_cast<double>(j.used.vcores()) / cluster_v * dt;
            double wait_v = 0;
            for (size_t s = 0; s < j.unstarted.size(); s++) {
              if (j.parents_left[s] == 0 && j.unstarted[s] > 0)
                wait_v +=
                    static_cast<double>(j.unstarted[s] * j.spec->stages[s].task_resource.vcores());
            }
            lw.v_fifth_waiting[f] += wait_v / cluster_v * dt;
          }
        }
        for (int ji : active) {
          const Job& j = js[static_cast<size_t>(ji)];
          lw.demand_vcores += j.demand[1] * dt;
          if (!j.planned) continue;
          const Vec u = asVec(j.used, cluster);
          double held = 0, need = 0;
          bool left = true;
          for (size_t d = 0; d < kDims; d++) {
            held = std::max(held, u[d]);
            need = std::max(need, j.need[d]);
            left = left && j.need[d] <= u[d];
          }
          lw.jobs += dt;
          lw.share += j.share_ds * dt;
          lw.need += need * dt;
          lw.start += j.start_ds * dt;
          lw.need_strict += j.need_strict_ds * dt;
          lw.share_drf += j.share_drf_ds * dt;
          lw.need_at_drf += j.need_drf_ds * dt;
          lw.held += held * dt;
          if (j.capped) lw.capped_jobs += dt;
          const double rem_s = static_cast<double>(j.hint.remaining.count()) / 1000.0;
          if (left) {
            lw.left_jobs += dt;
            lw.left_need += need * dt;
            lw.lent += (held - need) * dt;
            lw_lent_rem += (held - need) * rem_s * dt;
            lw_left_rem += rem_s * dt;
            lw_left_n += dt;
            left_rem.emplace_back(j.hint.remaining.count(), held - need);
            left_wait.push_back(*std::max_element(j.waiting.begin(), j.waiting.end()));
            const auto uv = static_cast<double>(j.used.vcores());
            const double nv = std::min(uv, static_cast<double>(j.hint.need.vcores()));
            lw.v_left_need += nv / cluster_v * dt;
            lw.v_lent += (uv - nv) / cluster_v * dt;
            left_lent_v.push_back((uv - nv) / cluster_v);
          } else {
            lw.v_drf += static_cast<double>(j.used.vcores()) / cluster_v * dt;
            lw.drf_jobs += dt;
            lw.drf_held += held * dt;
            lw.drf_over_need += std::max(0.0, held - need) * dt;
            lw.drf_short += std::max(0.0, need - held) * dt;
          }
        }
        if (!left_rem.empty()) {
          std::vector<size_t> order(left_rem.size());
          std::iota(order.begin(), order.end(), 0);
          std::sort(order.begin(), order.end(),
                    [&](size_t a, size_t b) { return left_rem[a].first < left_rem[b].first; });
          bool waiting_before = false;  // a job ahead in SRTF order has tasks not started
          for (size_t k : order) {
            if (waiting_before) lw.v_lent_behind += left_lent_v[k] * dt;
            waiting_before = waiting_before || left_wait[k] > 0;
          }
          for (size_t k = 0; k < (order.size() + 3) / 4; k++) {
            lw.lent_shortq += left_rem[order[k]].second * dt;
            if (left_wait[order[k]] > 0) {
              lw.shortq_waiting_jobs += dt;
              lw.shortq_waiting += left_wait[order[k]] * dt;
            }
          }
        }
      }
      pending_int += static_cast<double>(pending) * dt;
      active_int += static_cast<double>(active.size()) * dt;
      t = seg;
      if (t == window_end) {
        closeWindow();
        window_end += win;
      }
    }
  };
  auto markActive = [&](int j) {
    if (!in_window[static_cast<size_t>(j)]) {
      in_window[static_cast<size_t>(j)] = 1;
      window_jobs.push_back(j);
    }
  };
  // The node's tasks progress at its new rate from `now` on (bandwidth
  // over-subscription slows every task on it in proportion); their ends move.
  auto rerate = [&](size_t n, int64_t now) {
    NodeLoad& l = load[n];
    double rate = 1.0;
    for (size_t b = 0; b < 4; b++) {
      const int64_t cap = o.node.extendedValue(kBwNames[b]);
      if (l.bw[b] > cap)
        rate = std::min(rate, static_cast<double>(cap) / static_cast<double>(l.bw[b]));
    }
    if (rate == l.rate) return;
    for (uint64_t key : l.tasks) {
      Running& r = running.at(key);
      r.work_ms = std::max(0.0, r.work_ms - static_cast<double>(now - r.since_ms) * l.rate);
      r.since_ms = now;
      r.version++;
      ends.push(
          TaskEnd{now + static_cast<int64_t>(std::llround(r.work_ms / rate)), key, r.version});
    }
    l.rate = rate;
  };
  auto addLoad = [&](size_t n, const Resource& r, int64_t sign) {
    for (size_t b = 0; b < 4; b++) load[n].bw[b] += sign * r.extendedValue(kBwNames[b]);
    const Vec v = asVec(r, o.node);
    for (size_t d = 0; d < kDims; d++) used_now[d] += static_cast<double>(sign) * v[d] / nodes_d;
  };
  auto addDemand = [&](Job& j, const Resource& r, int64_t count) {
    const Vec v = asVec(r, o.node);
    for (size_t d = 0; d < kDims; d++) j.demand[d] += static_cast<double>(count) * v[d] / nodes_d;
    fair_dirty = true;
  };

  auto askStage = [&](Job& j, int s) -> Status {
    const sim::SimStage& st = j.spec->stages[static_cast<size_t>(s)];
    sched::ResourceRequest r;
    r.request_id = "s" + std::to_string(s);
    r.priority = j.priority[static_cast<size_t>(s)];
    r.capability = seen(st.task_resource);
    r.count = static_cast<int32_t>(j.unstarted[static_cast<size_t>(s)]);
    r.expected_duration = st.task_duration;
    pending += r.count;
    addDemand(j, st.task_resource, r.count);
    if (o.ledger) {
      const Vec v = asVec(st.task_resource, cluster);
      for (size_t d = 0; d < kDims; d++) j.waiting[d] += static_cast<double>(r.count) * v[d];
    }
    return sch->updateAsks(j.id, {r});
  };
  // PaperRun::ledger, after `j`'s report of `dag`: the hint, the share the
  // scheduler planned at (its equal split of the cluster over the leaf's
  // users, one per active job; Scheduler's adhocFairShare, every dimension
  // scaled by the same fraction), checked by planning again here, and the
  // need at DRF's progressive-filling level instead.
  auto ledgerPlan = [&](Job& j, const std::vector<sched::DagStage>& dag,
                        const std::vector<int64_t>& index) -> Status {
    MORPHEUS_ASSIGN_OR_RETURN(j.hint, sch->appHint(j.id));
    if (!j.hint.valid || !j.hint.from_dag) return Status::ok();
    double& est = res.est_s[static_cast<size_t>(&j - js.data())];
    if (est < 0) est = static_cast<double>(j.hint.remaining.count()) / 1000.0;
    auto scaled = [&](double frac) {
      auto f = [frac](int64_t v) { return static_cast<int64_t>(static_cast<double>(v) * frac); };
      Resource r(f(cluster.memoryMib()), f(cluster.vcores()));
      for (const auto& [name, v] : cluster.extended()) r.setExtended(name, f(v));
      return r;
    };
    const double equal = 1.0 / static_cast<double>(active.size());
    const Resource share = scaled(equal);
    lw.reports++;
    const sched::CarbynePlan plan = sched::carbynePlan(dag, share);
    if (!(plan.need == j.hint.need)) lw.plan_mismatches++;
    j.start_ds = plan.start.dominantShare(cluster);
    j.need_strict_ds = sched::carbynePlan(dag, share, Millis(1)).need.dominantShare(cluster);
    j.need_tasks.assign(index.size(), 0);
    for (size_t st = 0; st < index.size(); st++) {
      if (index[st] >= 0) j.need_tasks[st] = plan.need_tasks[static_cast<size_t>(index[st])];
    }
    j.planned = true;
    j.need = asVec(j.hint.need, cluster);
    j.share_ds = share.dominantShare(cluster);
    j.capped = j.hint.need.dominantShare(cluster) >= 0.99 * j.start_ds;
    if (fair_dirty) refreshFair();
    double level = fair_level;
    if (!std::isfinite(level)) {  // every job's demand fits: what the others leave
      level = 1.0;
      for (int k : active) {
        if (&js[static_cast<size_t>(k)] == &j) continue;
        double dom = 0;
        for (double x : js[static_cast<size_t>(k)].demand) dom = std::max(dom, x);
        level -= dom;
      }
    }
    level = std::min(1.0, std::max(level, equal));
    const Resource drf_share = scaled(level);
    j.share_drf_ds = drf_share.dominantShare(cluster);
    j.need_drf_ds = sched::carbynePlan(dag, drf_share).need.dominantShare(cluster);
    return Status::ok();
  };
  auto reportDag = [&](Job& j) -> Status {
    std::vector<sched::DagStage> dag;
    std::vector<int64_t> index(j.left.size(), -1);
    for (size_t s = 0; s < j.left.size(); s++) {
      if (j.left[s] <= 0) continue;
      const sim::SimStage& st = j.spec->stages[s];
      sched::DagStage d;
      d.tasks_left = j.left[s];
      d.task_duration = st.task_duration;
      d.task = st.task_resource;
      d.request_id = "s" + std::to_string(s);  // askStage's
      for (int p : st.depends_on) {
        if (index[static_cast<size_t>(p)] >= 0)
          d.deps.push_back(static_cast<size_t>(index[static_cast<size_t>(p)]));
      }
      index[s] = static_cast<int64_t>(dag.size());
      dag.push_back(std::move(d));
    }
    if (o.before_report) o.before_report(static_cast<size_t>(&j - js.data()), t);
    MORPHEUS_RETURN_IF_ERROR(sch->reportDag(j.id, dag));
    if (o.ledger) MORPHEUS_RETURN_IF_ERROR(ledgerPlan(j, dag, index));
    if (o.ledger && o.needed_first && j.planned) {
      std::vector<sched::ResourceRequest> asks;
      for (size_t st = 0; st < j.left.size(); st++) {
        if (j.parents_left[st] != 0 || j.unstarted[st] <= 0) continue;
        const bool needed = j.need_tasks[st] > j.left[st] - j.unstarted[st];
        sched::ResourceRequest r;
        r.request_id = "s" + std::to_string(st);
        r.priority = j.priority[st] + (needed ? 0 : 100000);
        r.capability = seen(j.spec->stages[st].task_resource);
        r.count = static_cast<int32_t>(j.unstarted[st]);
        r.expected_duration = j.spec->stages[st].task_duration;
        asks.push_back(std::move(r));
      }
      if (!asks.empty()) MORPHEUS_RETURN_IF_ERROR(sch->updateAsks(j.id, asks));
    }
    return Status::ok();
  };

  // PaperRun::ledger: what runs on each node, and the tier and SRTF rank of
  // each grant (PaperResult::grants_*), before the grant of a task of
  // stage `stage` of job `ji` on node `n`.
  std::vector<Resource> node_used(o.ledger ? slots.size() : 0);
  auto inLeftoverTier = [&](const Job& j) { return j.hint.need.fitsIn(j.used); };
  auto ledgerGrant = [&](int ji, size_t n, size_t stage) {
    const Job& j = js[static_cast<size_t>(ji)];
    if (!inLeftoverTier(j)) {
      res.grants_drf++;
      auto short_of = [&](size_t s) {
        return j.need_tasks[s] > j.left[s] - j.unstarted[s] && j.unstarted[s] > 0;
      };
      if (short_of(stage)) {
        res.grants_drf_needed++;
      } else {
        for (size_t s = 0; s < j.need_tasks.size(); s++) {
          if (short_of(s)) {
            res.grants_drf_slack_first++;
            break;
          }
        }
      }
      return;
    }
    res.grants_left++;
    const Resource free = o.node - node_used[n];  // never negative: the scheduler fits
    int64_t shorter = 0, candidates = 0;
    bool behind = false;
    for (int k : active) {
      const Job& c = js[static_cast<size_t>(k)];
      if (!c.planned || !inLeftoverTier(c)) continue;
      if (!behind && c.hint.remaining < j.hint.remaining) {
        for (size_t s = 0; s < c.unstarted.size() && !behind; s++)
          behind = c.parents_left[s] == 0 && c.unstarted[s] > 0;
      }
      bool fits = false;
      for (size_t s = 0; s < c.unstarted.size() && !fits; s++) {
        fits = c.parents_left[s] == 0 && c.unstarted[s] > 0 &&
               c.spec->stages[s].task_resource.fitsIn(free);
      }
      if (!fits) continue;
      candidates++;
      if (c.hint.remaining < j.hint.remaining) shorter++;
    }
    if (shorter > 0) res.grants_inverted++;
    if (behind) res.grants_behind++;
    if (candidates > 1)
      res.grants_left_rank += static_cast<double>(shorter) / static_cast<double>(candidates - 1);
  };

  size_t next_arrival = 0;
  std::vector<char> dirty(slots.size(), 0);
  std::vector<int> changed;
  std::vector<char> is_changed(jobs.size(), 0);
  size_t rotate = 0;
  size_t finished = 0;
  while (finished < jobs.size()) {
    // Stale ends (their task's end moved) are dropped before choosing the instant.
    while (!ends.empty()) {
      auto it = running.find(ends.top().seq);
      if (it != running.end() && it->second.version == ends.top().version) break;
      ends.pop();
    }
    int64_t now = std::numeric_limits<int64_t>::max();
    if (next_arrival < jobs.size()) now = jobs[next_arrival].submit.count();
    if (!ends.empty()) now = std::min(now, ends.top().at_ms);
    if (now == std::numeric_limits<int64_t>::max()) return internalError("simulation stalled");
    advance(now);
    bool new_asks = false;
    while (next_arrival < jobs.size() && jobs[next_arrival].submit.count() == now) {
      const int ji = static_cast<int>(next_arrival++);
      Job& j = js[static_cast<size_t>(ji)];
      j.spec = &jobs[static_cast<size_t>(ji)];
      j.id = AppId("app" + std::to_string(ji));
      const size_t ns = j.spec->stages.size();
      j.unstarted.assign(ns, 0);
      j.left.assign(ns, 0);
      j.next_task.assign(ns, 0);
      j.parents_left.assign(ns, 0);
      j.children.assign(ns, {});
      j.stages_left = static_cast<int64_t>(ns);
      // Tez's breadth-first order: stages are listed breadth-first, so the
      // index is the priority. Critical path first: by longest path to the
      // job's end (durations), longest first, then by index.
      j.priority.resize(ns);
      std::iota(j.priority.begin(), j.priority.end(), 0);
      if (o.critical_path_first) {
        std::vector<int64_t> to_end(ns, 0);
        for (size_t s = ns; s-- > 0;) {
          to_end[s] += j.spec->stages[s].task_duration.count();
          for (int p : j.spec->stages[s].depends_on)
            to_end[static_cast<size_t>(p)] = std::max(to_end[static_cast<size_t>(p)], to_end[s]);
        }
        std::vector<size_t> order(ns);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return to_end[a] > to_end[b]; });
        for (size_t k = 0; k < ns; k++) j.priority[order[k]] = static_cast<int32_t>(k);
      }
      for (size_t s = 0; s < ns; s++) {
        j.unstarted[s] = j.left[s] = j.spec->stages[s].tasks;
        j.parents_left[s] = static_cast<int>(j.spec->stages[s].depends_on.size());
        for (int p : j.spec->stages[s].depends_on)
          j.children[static_cast<size_t>(p)].push_back(static_cast<int>(s));
      }
      MORPHEUS_RETURN_IF_ERROR(sch->addApp(j.id, UserId("u" + std::to_string(ji)),
                                           sched::QueueRef::adhoc("root.default")));
      for (size_t s = 0; s < ns; s++) {
        if (j.parents_left[s] == 0) MORPHEUS_RETURN_IF_ERROR(askStage(j, static_cast<int>(s)));
      }
      j.active = true;
      active.push_back(ji);
      fair_dirty = true;
      markActive(ji);
      new_asks = true;
      if (!is_changed[static_cast<size_t>(ji)]) {
        is_changed[static_cast<size_t>(ji)] = 1;
        changed.push_back(ji);
      }
    }
    std::vector<size_t> rerated;
    while (!ends.empty() && ends.top().at_ms == now) {
      const uint64_t key = ends.top().seq;
      const uint64_t version = ends.top().version;
      ends.pop();
      auto it = running.find(key);
      if (it == running.end() || it->second.version != version) continue;  // moved
      Running r = std::move(it->second);
      running.erase(it);
      MORPHEUS_RETURN_IF_ERROR(sch->containerCompleted(r.id).status());
      const auto nu = static_cast<size_t>(r.node);
      dirty[nu] = 1;
      auto& on = load[nu].tasks;
      on.erase(std::find(on.begin(), on.end(), key));
      addLoad(nu, r.res, -1);
      if (o.ledger) node_used[nu] -= r.res;
      rerated.push_back(nu);
      Job& j = js[static_cast<size_t>(r.job)];
      j.used -= r.res;
      j.share = j.used.dominantShare(cluster);
      addDemand(j, r.res, -1);
      if (--j.left[static_cast<size_t>(r.stage)] == 0) {
        j.stages_left--;
        for (int c : j.children[static_cast<size_t>(r.stage)]) {
          if (--j.parents_left[static_cast<size_t>(c)] == 0) {
            MORPHEUS_RETURN_IF_ERROR(askStage(j, c));
            new_asks = true;
          }
        }
      }
      if (j.stages_left == 0) {
        MORPHEUS_RETURN_IF_ERROR(sch->removeApp(j.id).status());
        j.active = false;
        active.erase(std::find(active.begin(), active.end(), r.job));
        fair_dirty = true;
        res.jct_s[static_cast<size_t>(r.job)] =
            static_cast<double>(now - j.spec->submit.count()) / 1000.0;
        res.makespan_s = std::max(res.makespan_s, static_cast<double>(now - first_submit) / 1000.0);
        finished++;
      } else if (!is_changed[static_cast<size_t>(r.job)]) {
        is_changed[static_cast<size_t>(r.job)] = 1;
        changed.push_back(r.job);
      }
    }
    for (size_t n : rerated) rerate(n, now);
    for (int ji : changed) {
      is_changed[static_cast<size_t>(ji)] = 0;
      if (js[static_cast<size_t>(ji)].active)
        MORPHEUS_RETURN_IF_ERROR(reportDag(js[static_cast<size_t>(ji)]));
    }
    changed.clear();
    if (pending > 0) {
      const TimePoint tp = fromEpochMs(base_ms + now);
      rotate = (rotate + 7) % slots.size();
      for (size_t k = 0; k < slots.size() && pending > 0; k++) {
        const size_t n = (rotate + k) % slots.size();
        if (!new_asks && !dirty[n]) continue;
        MORPHEUS_ASSIGN_OR_RETURN(auto out, sch->nodeUpdate(slots[n], tp));
        for (const auto& a : out.allocations) {
          const int ji = std::stoi(a.app.value().substr(3));
          Job& j = js[static_cast<size_t>(ji)];
          const int s = std::stoi(a.request_id.substr(1));  // "s<stage>"
          const auto su = static_cast<size_t>(s);
          if (o.ledger && j.planned) ledgerGrant(ji, static_cast<size_t>(n), su);
          const int64_t task = j.next_task[su]++;
          j.unstarted[su]--;
          pending--;
          if (o.ledger) {
            const Vec v = asVec(j.spec->stages[su].task_resource, cluster);
            for (size_t d = 0; d < kDims; d++) j.waiting[d] = std::max(0.0, j.waiting[d] - v[d]);
          }
          const sim::SimStage& st = j.spec->stages[su];
          const sim::rng::Stream draw(o.seed, static_cast<uint64_t>(ji), o.run,
                                      "carbyne-paper-run");
          const double z =
              draw.normal(static_cast<uint64_t>(s) * 1'000'003ULL + static_cast<uint64_t>(task));
          const double f = std::exp(o.duration_cv * z - o.duration_cv * o.duration_cv / 2);
          const int64_t d_ms = std::max<int64_t>(
              1000,
              1000 * std::llround(static_cast<double>(st.task_duration.count()) * f / 1000.0));
          j.used += st.task_resource;
          j.share = j.used.dominantShare(cluster);
          const uint64_t key = ++seq;
          Running run{ji, s, static_cast<int>(n), st.task_resource, a.container};
          run.work_ms = static_cast<double>(d_ms);
          run.since_ms = now;
          addLoad(n, st.task_resource, 1);
          if (o.ledger) node_used[n] += st.task_resource;
          load[n].tasks.push_back(key);
          const double rate = load[n].rate;
          running.emplace(key, std::move(run));
          // At rate 1 the task ends after its duration; a node that is (or
          // becomes) over-subscribed moves the ends of all its tasks.
          const int64_t end_ms =
              rate == 1.0 ? d_ms
                          : static_cast<int64_t>(std::llround(static_cast<double>(d_ms) / rate));
          ends.push(TaskEnd{now + end_ms, key, 0});
          rerate(n, now);
          res.tasks++;
          res.grants++;
        }
      }
    }
    std::fill(dirty.begin(), dirty.end(), 0);
  }
  closeWindow();
  res.jain = windows > 0 ? jain_sum / static_cast<double>(windows) : 1.0;
  res.jain_fair = fair_windows > 0 ? jain_fair_sum / static_cast<double>(fair_windows) : 1.0;
  const double span = static_cast<double>(t - first_submit);
  if (span > 0) {
    for (size_t d = 0; d < kDims; d++) {
      const double u = used_int[d] / span;
      if (d == 1) res.util_vcores = u;
      res.util_busiest = std::max(res.util_busiest, u);
    }
    res.pending_tasks_avg = pending_int / span;
    res.reserved_nodes_avg = reserved_int / span;
    res.active_jobs_avg = active_int / span;
  }
  return res;
}

}  // namespace morpheus::bench

// ---- bench_carbyne --scenario paper ----

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/bench_report.h"
#include "scheduler/policies/carbyne_policy.h"
#include "sim/workloads/carbyne_dags.h"

namespace morpheus::bench {
namespace {

double quantileOf(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}
double meanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// Lower bounds under any policy's JCTs of `jobs` on `nodes` servers:
// the mean (and p95) of the jobs' critical paths (one wave per stage, as
// alone on the cluster; every job takes at least that), and for each
// resource the mean flow time of shortest remaining work first on the
// cluster as one preemptive machine of that resource's capacity, with the
// jobs' submit times as release dates (SRPT minimises the mean flow there,
// and every real schedule is feasible in that relaxation). The average
// floor is the largest of these.
struct Floors {
  double avg = 0, p95 = 0;
};
Floors jctFloors(const std::vector<sim::AdhocJob>& jobs, const Resource& server, int64_t nodes) {
  std::vector<double> cp;
  std::map<std::string, std::vector<std::pair<double, double>>> work;  // resource -> (release, s)
  for (const auto& j : jobs) {
    cp.push_back(sim::dagShape(j).alone_s);
    std::map<std::string, double> w;
    for (const auto& st : j.stages) {
      const double ts =
          static_cast<double>(st.tasks) * static_cast<double>(st.task_duration.count()) / 1000.0;
      w["memory"] += ts * static_cast<double>(st.task_resource.memoryMib()) /
                     static_cast<double>(server.memoryMib());
      w["vcores"] += ts * static_cast<double>(st.task_resource.vcores()) /
                     static_cast<double>(server.vcores());
      for (const auto& [name, v] : st.task_resource.extended())
        w[name] += ts * static_cast<double>(v) / static_cast<double>(server.extendedValue(name));
    }
    for (const auto& [name, x] : w) {
      work[name].emplace_back(static_cast<double>(j.submit.count()) / 1000.0,
                              x / static_cast<double>(nodes));
    }
  }
  Floors f;
  double avg = 0;
  for (double x : cp) avg += x;
  f.avg = cp.empty() ? 0 : avg / static_cast<double>(cp.size());
  std::sort(cp.begin(), cp.end());
  if (!cp.empty()) {
    f.p95 = cp[std::min(cp.size() - 1,
                        static_cast<size_t>(std::ceil(0.95 * static_cast<double>(cp.size()))) - 1)];
  }
  for (auto& [name, js] : work) {
    std::sort(js.begin(), js.end());
    std::priority_queue<std::pair<double, size_t>, std::vector<std::pair<double, size_t>>,
                        std::greater<>>
        ready;
    double t = 0, flow = 0;
    size_t next = 0;
    while (next < js.size() || !ready.empty()) {
      if (ready.empty()) t = std::max(t, js[next].first);
      for (; next < js.size() && js[next].first <= t; next++) ready.emplace(js[next].second, next);
      auto [rem, i] = ready.top();
      ready.pop();
      const double until = next < js.size() ? js[next].first : 1e300;
      if (t + rem <= until) {
        t += rem;
        flow += t - js[i].first;
      } else {
        ready.emplace(rem - (until - t), i);
        t = until;
      }
    }
    f.avg = std::max(f.avg, flow / static_cast<double>(js.size()));
  }
  return f;
}

template <typename T>
std::vector<T> splitList(const std::string& text) {
  std::vector<T> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if constexpr (std::is_same_v<T, std::string>) {
      out.push_back(item);
    } else {
      out.push_back(static_cast<T>(std::stod(item)));
    }
  }
  return out;
}

// --ledger: one run's windows, then their mean (every window counts once).
void printLedger(const std::vector<CarbyneLedgerWindow>& w, const std::string& mode, double load,
                 uint64_t seed, int64_t run, const std::string& policy) {
  std::printf(
      "\n== ledger: %s, load %gx, seed %llu run %lld, %s (sums over active jobs of dominant "
      "shares of the cluster, time averages per window) ==\n",
      mode.c_str(), load, static_cast<unsigned long long>(seed), static_cast<long long>(run),
      policy.c_str());
  std::printf(
      "%7s %6s %6s %6s %6s | %6s %6s %6s %6s | %6s %6s %6s | %6s %6s %6s %6s %6s %6s | %6s %6s | "
      "%7s "
      "%7s | %6s %6s %6s | %5s %4s\n",
      "t s", "jobs", "drfT", "leftT", "noslak", "share", "start", "need", "free", "shDRF", "ndDRF",
      "ndNow", "held", "drfH", "drf>nd", "drfShr", "leftNd", "lent", "vcores", "demand", "remLT s",
      "remLent", "lentQ", "Qwait", "QwaitR", "rep", "mis");
  CarbyneLedgerWindow m;
  int64_t reports = 0, mis = 0;
  auto row = [](const CarbyneLedgerWindow& x, const char* label) {
    std::printf(
        "%7s %6.1f %6.1f %6.1f %6.1f | %6.3f %6.3f %6.3f %6.3f | %6.3f %6.3f %6.3f | %6.3f %6.3f "
        "%6.3f %6.3f "
        "%6.3f %6.3f | %6.3f %6.3f | %7.0f %7.0f | %6.3f %6.1f %6.3f |",
        label, x.jobs, x.drf_jobs, x.left_jobs, x.capped_jobs, x.share, x.start, x.need,
        x.share - x.need, x.share_drf, x.need_at_drf, x.need_strict, x.held, x.drf_held,
        x.drf_over_need, x.drf_short, x.left_need, x.lent, x.vcores, x.demand_vcores,
        x.left_remaining_s, x.lent_remaining_s, x.lent_shortq, x.shortq_waiting_jobs,
        x.shortq_waiting);
  };
  for (const auto& x : w) {
    row(x, std::to_string(static_cast<int64_t>(x.start_s)).c_str());
    std::printf(" %5lld %4lld\n", static_cast<long long>(x.reports),
                static_cast<long long>(x.plan_mismatches));
    reports += x.reports;
    mis += x.plan_mismatches;
    const auto k = static_cast<double>(w.size());
    for (auto [to, from] : std::initializer_list<std::pair<double*, double>>{
             {&m.jobs, x.jobs},
             {&m.drf_jobs, x.drf_jobs},
             {&m.left_jobs, x.left_jobs},
             {&m.capped_jobs, x.capped_jobs},
             {&m.share, x.share},
             {&m.start, x.start},
             {&m.need, x.need},
             {&m.share_drf, x.share_drf},
             {&m.need_at_drf, x.need_at_drf},
             {&m.need_strict, x.need_strict},
             {&m.held, x.held},
             {&m.drf_held, x.drf_held},
             {&m.drf_over_need, x.drf_over_need},
             {&m.drf_short, x.drf_short},
             {&m.left_need, x.left_need},
             {&m.lent, x.lent},
             {&m.vcores, x.vcores},
             {&m.demand_vcores, x.demand_vcores},
             {&m.left_remaining_s, x.left_remaining_s},
             {&m.lent_remaining_s, x.lent_remaining_s},
             {&m.lent_shortq, x.lent_shortq},
             {&m.shortq_waiting_jobs, x.shortq_waiting_jobs},
             {&m.shortq_waiting, x.shortq_waiting},
             {&m.reserved_nodes, x.reserved_nodes},
             {&m.v_drf, x.v_drf},
             {&m.v_left_need, x.v_left_need},
             {&m.v_lent, x.v_lent},
             {&m.v_lent_behind, x.v_lent_behind}})
      *to += from / k;
    for (size_t f = 0; f < 5; f++) {
      m.v_fifth[f] += x.v_fifth[f] / k;
      m.v_fifth_waiting[f] += x.v_fifth_waiting[f] / k;
    }
  }
  row(m, "mean");
  std::printf(" %5lld %4lld\n", static_cast<long long>(reports), static_cast<long long>(mis));
  std::printf("  nodes reserved for a job (node reservations), mean over the windows: %.2f\n",
              m.reserved_nodes);
  std::printf(
      "  the cluster's vcores, mean over the windows: DRF-tier jobs %.3f; leftover-tier jobs up to "
      "their need %.3f, beyond it (lent) %.3f, of which %.3f to a job behind one in SRTF order "
      "with tasks not started; idle %.3f\n",
      m.v_drf, m.v_left_need, m.v_lent, m.v_lent_behind, 1.0 - m.vcores);
  std::printf(
      "  the cluster's vcores held by the active jobs in fifths by remaining work (least first), "
      "mean over the windows: %.3f %.3f %.3f %.3f %.3f; their runnable tasks not started: %.3f "
      "%.3f %.3f %.3f %.3f\n",
      m.v_fifth[0], m.v_fifth[1], m.v_fifth[2], m.v_fifth[3], m.v_fifth[4], m.v_fifth_waiting[0],
      m.v_fifth_waiting[1], m.v_fifth_waiting[2], m.v_fifth_waiting[3], m.v_fifth_waiting[4]);
  std::printf(
      "  jobs: active (planned), in the DRF tier (need not held), in the leftover tier, whose need "
      "is all the forward packing starts now (no slack found); share: the plans' share (equal "
      "split); start: what the plans' forward packing starts now; need: their needs; free: share "
      "- need; shDRF, ndDRF: DRF's progressive-filling level and the need a plan finds at it; "
      "ndNow: the need when only tasks whose latest start is now must start; "
      "held: what the jobs hold; drfH, drf>nd, drfShr: held by DRF-tier jobs, beyond and short of "
      "their needs; leftNd, lent: leftover-tier jobs' needs and what they hold beyond them; "
      "vcores, demand: allocated and wanted (running + runnable) vcores over the cluster's; "
      "remLT, remLent: leftover-tier jobs' mean estimated remaining time, plain and weighted by "
      "what each is lent; lentQ, Qwait, QwaitR: the quarter of the leftover-tier jobs with the "
      "least remaining time: what they are lent, how many have runnable tasks not started, and "
      "those tasks' dominant shares; rep, mis: reports, and plans at the bench's share that differ "
      "from the "
      "scheduler's\n");
}

// One policy's figures for one seed (means over the runs; per-job JCTs
// averaged over the runs).
struct SeedFigures {
  double avg = 0, p95 = 0, median = 0, makespan = 0, jain = 0, jain_fair = 0;
  double util_vcores = 0, util_busiest = 0, pending = 0, active = 0;
  std::vector<double> per_job;
  std::vector<double> per_job_est;  // PaperResult::est_s, mean over the runs
};

// One `carbyne` policy of --policies: "carbyne" and any of the suffixes
// -noresv, -resv-all, -now, -noneed, -deadline, -decline, -nodecline, -count,
// -nocount
// ("carbyne-count-decline"); the policy's defaults for the rest.
struct CarbyneVariant {
  sched::LeftoverPacking packing;  // eps and tau from the flags
  bool now = false;                // CarbyneNowPolicy (no reservations)
  bool resv_all = false;           // the scheduler's reservations for either tier
  bool no_need = false;            // CarbyneNowPolicy's `carbyne-noneed`
  bool deadline = false;           // CarbyneDeadlinePolicy
};

std::optional<CarbyneVariant> parseCarbyneVariant(const std::string& name) {
  static const std::string kBase = "carbyne";
  if (name.compare(0, kBase.size(), kBase) != 0) return std::nullopt;
  CarbyneVariant v;
  std::string rest = name.substr(kBase.size());
  while (!rest.empty()) {
    bool matched = false;
    for (const char* t : {"-noresv", "-resv-all", "-now", "-noneed", "-deadline", "-decline",
                          "-nodecline", "-count", "-nocount"}) {
      const std::string tok = t;
      if (rest.compare(0, tok.size(), tok) != 0) continue;
      if (rest.size() > tok.size() && rest[tok.size()] != '-') continue;
      if (tok == "-noresv") v.packing.reserve_nodes = false;
      if (tok == "-resv-all") {
        v.packing.reserve_nodes = false;
        v.resv_all = true;
      }
      if (tok == "-now") {
        v.packing.reserve_nodes = false;
        v.now = true;
      }
      if (tok == "-noneed") v.no_need = true;
      if (tok == "-deadline") v.deadline = true;
      if (tok == "-decline" || tok == "-nodecline") v.packing.decline_slack = tok == "-decline";
      if (tok == "-count" || tok == "-nocount") v.packing.count_needed = tok == "-count";
      rest = rest.substr(tok.size());
      matched = true;
      break;
    }
    if (!matched) return std::nullopt;
  }
  return v;
}

}  // namespace

int paperMain(int argc, char** argv) {
  BenchReport report("carbyne", &argc, argv);
  CLI::App app{"bench_carbyne --scenario paper: the Carbyne evaluation's setup (OSDI'16 §5)"};
  std::string scenario = "paper", mix_name = "tpcds", modes_text = "offline,online",
              loads_text = "1,2,4", seeds_text = "1,2,3,4,5",
              policies_text = "drf,drf2,tetris,sjf,sjfw,carbyne";
  int64_t jobs_n = 250, nodes = 100, runs = 3, interarrival_s = 20;
  bool describe = false, ledger = false, needed_first = false;
  std::string jobs_out_path;
  sched::NodeReservationOptions resv;
  double resv_timeout_s = static_cast<double>(resv.timeout.count()) / 1000.0;
  double size_sigma = 0, size_scale = 1;
  double cv = 0.1, tetris_eps = 0.1, carbyne_eps = sched::LeftoverPacking{}.eps,
         carbyne_tau = sched::LeftoverPacking{}.tau_s;
  app.add_option("--scenario", scenario, "paper")->capture_default_str();
  app.add_option("--mix", mix_name, "tpcds, tpch or bigbench")->capture_default_str();
  app.add_option("--modes", modes_text, "offline (all at 0) and/or online (Poisson)")
      ->capture_default_str();
  app.add_option("--loads", loads_text, "load factors: the cluster has --nodes / load servers")
      ->capture_default_str();
  app.add_option("--seeds", seeds_text, "workload seeds")->capture_default_str();
  app.add_option("--runs", runs, "runs per seed (task durations redrawn)")->capture_default_str();
  app.add_option("--jobs", jobs_n, "jobs per run")->capture_default_str();
  app.add_option("--nodes", nodes, "servers at load 1")->capture_default_str();
  app.add_option("--interarrival", interarrival_s, "online: mean inter-arrival, seconds")
      ->capture_default_str();
  app.add_option(
         "--size-sigma", size_sigma,
         "spread of job sizes: each job's scans read f x the tasks drawn, f log-normal "
         "with mean --size-scale and this sigma, in [0, 3] (sim::DagJobsOptions::size_sigma)")
      ->capture_default_str();
  app.add_option("--size-scale", size_scale,
                 "mean of that factor, in (0, 10] (sim::DagJobsOptions::size_scale)")
      ->capture_default_str();
  app.add_option("--duration-cv", cv, "spread of realised task durations around the estimate")
      ->capture_default_str();
  app.add_option("--tetris-eps", tetris_eps, "Tetris: weight of the SRTF term")
      ->capture_default_str();
  app.add_option("--carbyne-eps", carbyne_eps, "Carbyne leftover packing: weight of the SRTF term")
      ->capture_default_str();
  app.add_option("--carbyne-tau", carbyne_tau, "Carbyne leftover packing: SRTF scale, seconds")
      ->capture_default_str();
  app.add_flag("--describe", describe,
               "print the generator's fit, offered load and JCT floors, then exit");
  app.add_flag("--ledger", ledger,
               "per run of a planning policy (carbyne): per 60 s window, the shares its plans "
               "were given, their needs, the tiers and the leftover lent (CarbyneLedgerWindow)");
  app.add_option("--jobs-out", jobs_out_path,
                 "write one CSV row per (cell, seed, policy, job): mode, load, seed, policy, job, "
                 "submit_s, stages, critical_path (stages), sources, tasks, alone_s, "
                 "work_core_s, jct_s (the mean over runs), est_s (with --ledger: the policy's "
                 "estimated remaining time at the job's first report, mean over runs; else -1)");
  app.add_flag("--needed-first", needed_first,
               "diagnostic, with --ledger: the AM re-ranks its asks after every report, the stages "
               "its plan needs now first (PaperRun::needed_first)");
  app.add_option(
         "--policies", policies_text,
         "drf, drf2 (DRF seeing CPU and memory only, as YARN's), drfcp (DRF, stages "
         "critical path first), tetris, sjf (by critical path), sjfw (by remaining work), "
         "carbyne0 (before cross-job packing), carbyne (the policy's default: node "
         "reservations for the leftover tier's shortest job, kept from the leftover tier "
         "only), drf-resv (drf with YARN-style node reservations); carbyne takes any of "
         "the suffixes -noresv (without reservations), -resv-all (reserving for the first "
         "job in Carbyne's order, DRF tier included), -now (diagnostic: only tasks whose "
         "latest start is now are needed, no reservations), -noneed (diagnostic: every "
         "need zero, the whole cluster packed as leftover), -deadline (diagnostic: the need "
         "keeps the latest completion the job's plans estimated, not a fresh one), "
         "-decline / -nodecline (jobs "
         "below their need decline, or take, the tasks of stages with slack on their "
         "share), -count / -nocount (a needed stage's tasks beyond the count its plan "
         "runs now have slack, or not), e.g. carbyne-count-decline; reservations' bounds: "
         "--resv-nodes, --resv-timeout")
      ->capture_default_str();
  app.add_option("--resv-nodes", resv.reservable_nodes,
                 "carbyne, drf-resv: fraction of the nodes one job may hold reserved, (0, 1]")
      ->capture_default_str();
  app.add_option("--resv-timeout", resv_timeout_s,
                 "carbyne, drf-resv: a node reservation ends after this many seconds, > 0")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!(resv.reservable_nodes > 0 && resv.reservable_nodes <= 1)) {
    std::cerr << "bench_carbyne: --resv-nodes: must be in (0, 1], got " << resv.reservable_nodes
              << "\n";
    return 2;
  }
  if (!(resv_timeout_s > 0)) {
    std::cerr << "bench_carbyne: --resv-timeout: must be > 0, got " << resv_timeout_s << "\n";
    return 2;
  }
  resv.timeout = Millis(std::llround(resv_timeout_s * 1000));
  if (!(size_sigma >= 0 && size_sigma <= 3)) {
    std::cerr << "bench_carbyne: --size-sigma: must be in [0, 3], got " << size_sigma << "\n";
    return 2;
  }
  if (!(size_scale > 0 && size_scale <= 10)) {
    std::cerr << "bench_carbyne: --size-scale: must be in (0, 10], got " << size_scale << "\n";
    return 2;
  }
  std::ofstream jobs_out;
  if (!jobs_out_path.empty()) {
    jobs_out.open(jobs_out_path);
    if (!jobs_out) {
      std::cerr << "bench_carbyne: --jobs-out: cannot write " << jobs_out_path << "\n";
      return 2;
    }
    jobs_out << "mode,load,seed,policy,job,submit_s,stages,critical_path,sources,tasks,alone_s,"
                "work_core_s,jct_s,est_s\n";
  }
  auto mix = sim::parseDagMix(mix_name, "--mix");
  if (!mix.isOk()) {
    std::cerr << "bench_carbyne: " << mix.status().message() << "\n";
    return 2;
  }
  const auto modes = splitList<std::string>(modes_text);
  const auto loads = splitList<double>(loads_text);
  const auto seeds = splitList<uint64_t>(seeds_text);
  const auto policies = splitList<std::string>(policies_text);
  for (const auto& m : modes) {
    if (m != "offline" && m != "online") {
      std::cerr << "bench_carbyne: --modes: offline or online, got '" << m << "'\n";
      return 2;
    }
  }
  for (const auto& p : policies) {
    if (p != "drf" && p != "drf2" && p != "drfcp" && p != "tetris" && p != "sjf" && p != "sjfw" &&
        p != "carbyne0" && p != "drf-resv" && !parseCarbyneVariant(p).has_value()) {
      std::cerr << "bench_carbyne: --policies: drf, drf2, drfcp, tetris, sjf, sjfw, carbyne0, "
                   "drf-resv, or carbyne with any of the suffixes -noresv, -resv-all, -now, "
                   "-noneed, -deadline, -decline, -nodecline, -count, -nocount, got '"
                << p << "'\n";
      return 2;
    }
  }
  for (double l : loads) {
    if (!(l > 0) || static_cast<int64_t>(std::llround(static_cast<double>(nodes) / l)) < 1) {
      std::cerr << "bench_carbyne: --loads: each must leave at least one server, got " << l << "\n";
      return 2;
    }
  }
  if (runs < 1 || jobs_n < 1 || nodes < 1 || interarrival_s <= 0) {
    std::cerr << "bench_carbyne: --runs, --jobs, --nodes and --interarrival must be >= 1\n";
    return 2;
  }
  const Resource server = sim::carbyneServer();
  const auto wall0 = std::chrono::steady_clock::now();
  const int64_t total =
      static_cast<int64_t>(modes.size() * loads.size() * seeds.size() * policies.size()) * runs;
  int64_t done = 0;

  // Generator fit (the TPC-DS-like mix is fitted to the paper's figures).
  {
    std::vector<double> st, cp, src, bar, alone, tasks;
    // Offered load of the online arrivals at load 1: per resource, the work
    // (tasks x duration x demand) over the capacity during the arrivals.
    std::map<std::string, double> work;
    for (uint64_t seed : seeds) {
      sim::DagJobsOptions g;
      g.mix = *mix;
      g.jobs = jobs_n;
      g.seed = seed;
      g.size_sigma = size_sigma;
      g.size_scale = size_scale;
      auto js = sim::generateDagJobs(g);
      if (!js.isOk()) {
        std::cerr << "bench_carbyne: " << js.status().message() << "\n";
        return 2;
      }
      for (const auto& j : *js) {
        const sim::DagShape s = sim::dagShape(j);
        st.push_back(static_cast<double>(s.stages));
        cp.push_back(static_cast<double>(s.critical_path));
        src.push_back(static_cast<double>(s.sources));
        bar.push_back(static_cast<double>(s.barriers));
        alone.push_back(s.alone_s);
        tasks.push_back(static_cast<double>(s.tasks));
        for (const auto& stg : j.stages) {
          const double ts = static_cast<double>(stg.tasks) *
                            static_cast<double>(stg.task_duration.count()) / 1000.0;
          work["memory"] += ts * static_cast<double>(stg.task_resource.memoryMib()) /
                            static_cast<double>(server.memoryMib());
          work["vcores"] += ts * static_cast<double>(stg.task_resource.vcores()) /
                            static_cast<double>(server.vcores());
          for (const auto& [name, v] : stg.task_resource.extended())
            work[name] +=
                ts * static_cast<double>(v) / static_cast<double>(server.extendedValue(name));
        }
      }
    }
    std::string load_text;
    double offered = 0;
    for (auto& [name, w] : work) {
      // server-seconds per seed over nodes x the arrival span (jobs x gap).
      const double l = w / static_cast<double>(seeds.size()) /
                       (static_cast<double>(nodes) * static_cast<double>(jobs_n * interarrival_s));
      offered = std::max(offered, l);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.2f", load_text.empty() ? "" : ", ", name.c_str(), l);
      load_text += buf;
    }
    std::printf("offered load of the online arrivals at load 1x, per resource: %s\n",
                load_text.c_str());
    report.figures()["generator"]["offered_load_online_1x"] = offered;
    std::printf(
        "mix %s, %lld jobs x %zu seeds: stages median %.0f p95 %.0f (paper: >= 7, 23); critical "
        "path median %.0f (5); disjoint paths (scans) median %.0f; barriers median %.0f; tasks "
        "median %.0f p95 %.0f; alone on the cluster median %.0f s, p5 %.0f s, p95 %.0f s\n",
        mix_name.c_str(), static_cast<long long>(jobs_n), seeds.size(), quantileOf(st, 0.5),
        quantileOf(st, 0.95), quantileOf(cp, 0.5), quantileOf(src, 0.5), quantileOf(bar, 0.5),
        quantileOf(tasks, 0.5), quantileOf(tasks, 0.95), quantileOf(alone, 0.5),
        quantileOf(alone, 0.05), quantileOf(alone, 0.95));
    report.figures()["generator"].update(
        nlohmann::json{{"stages_median", quantileOf(st, 0.5)},
                       {"stages_p95", quantileOf(st, 0.95)},
                       {"critical_path_median", quantileOf(cp, 0.5)},
                       {"sources_median", quantileOf(src, 0.5)},
                       {"barriers_median", quantileOf(bar, 0.5)},
                       {"alone_s_median", quantileOf(alone, 0.5)}});
    std::fflush(stdout);
    if (describe) {
      // Floors under any policy's average and p95 JCT, per mode and load
      // (medians over the seeds).
      for (const auto& mode : modes) {
        for (double load : loads) {
          const int64_t n = std::max<int64_t>(1, std::llround(static_cast<double>(nodes) / load));
          std::vector<double> a, q;
          for (uint64_t seed : seeds) {
            sim::DagJobsOptions g;
            g.mix = *mix;
            g.jobs = jobs_n;
            g.seed = seed;
            g.size_sigma = size_sigma;
            g.size_scale = size_scale;
            g.mean_interarrival = mode == "online" ? Millis(interarrival_s * 1000) : Millis(0);
            auto js = sim::generateDagJobs(g);
            if (!js.isOk()) return 2;
            const Floors f = jctFloors(*js, server, n);
            a.push_back(f.avg);
            q.push_back(f.p95);
          }
          std::printf("floors, %s load %gx: average JCT %.0f s, p95 JCT %.0f s\n", mode.c_str(),
                      load, quantileOf(a, 0.5), quantileOf(q, 0.5));
        }
      }
      report.emit();
      return 0;
    }
  }

  nlohmann::json cells = nlohmann::json::array();
  for (const auto& mode : modes) {
    for (double load : loads) {
      const int64_t n = std::max<int64_t>(1, std::llround(static_cast<double>(nodes) / load));
      // figures[policy][seed index]
      std::map<std::string, std::vector<SeedFigures>> fig;
      std::vector<double> floor_avg, floor_p95;  // per seed (jctFloors)
      for (uint64_t seed : seeds) {
        sim::DagJobsOptions g;
        g.mix = *mix;
        g.jobs = jobs_n;
        g.seed = seed;
        g.size_sigma = size_sigma;
        g.size_scale = size_scale;
        g.users = jobs_n;  // one job per user: DRF across jobs, as YARN's DRF in the paper
        g.mean_interarrival = mode == "online" ? Millis(interarrival_s * 1000) : Millis(0);
        auto js = sim::generateDagJobs(g);
        if (!js.isOk()) {
          std::cerr << "bench_carbyne: " << js.status().message() << "\n";
          return 2;
        }
        double w0 = 0;
        for (const auto& j : *js) w0 += sim::dagShape(j).work_core_s;
        w0 /= static_cast<double>(js->size());
        const Floors fl = jctFloors(*js, server, n);
        floor_avg.push_back(fl.avg);
        floor_p95.push_back(fl.p95);
        for (const auto& pname : policies) {
          std::shared_ptr<const sched::QueueOrderingPolicy> pol;
          if (pname == "drf" || pname == "drf2" || pname == "drfcp" || pname == "drf-resv")
            pol = std::make_shared<sched::DrfOrderingPolicy>();
          if (pname == "tetris") pol = std::make_shared<TetrisPolicy>(tetris_eps, w0);
          if (pname == "sjf") pol = std::make_shared<SjfPolicy>();
          if (pname == "sjfw") pol = std::make_shared<SjfPolicy>(server);
          if (pname == "carbyne0") pol = std::make_shared<v0::CarbyneV0Policy>();
          // The carbyne variants (parseCarbyneVariant).
          const std::optional<CarbyneVariant> cv_opt = parseCarbyneVariant(pname);
          std::shared_ptr<CarbyneDeadlinePolicy> deadline_pol;
          if (cv_opt.has_value()) {
            sched::LeftoverPacking lp = cv_opt->packing;
            lp.eps = carbyne_eps;
            lp.tau_s = carbyne_tau;
            if (cv_opt->deadline) {
              deadline_pol = std::make_shared<CarbyneDeadlinePolicy>(lp);
              pol = deadline_pol;
            } else if (cv_opt->now || cv_opt->no_need) {
              pol = std::make_shared<CarbyneNowPolicy>(lp, cv_opt->no_need);
            } else {
              pol = std::make_shared<sched::CarbyneOrderingPolicy>(lp);
            }
          }
          SeedFigures sf;
          sf.per_job.assign(js->size(), 0.0);
          sf.per_job_est.assign(js->size(), 0.0);
          for (int64_t r = 0; r < runs; r++) {
            PaperRun po;
            po.nodes = n;
            po.node = server;
            po.seed = seed;
            po.run = r;
            po.duration_cv = cv;
            po.scheduler_sees_bandwidth = pname != "drf2";
            po.critical_path_first = pname == "drfcp";
            po.ledger = ledger;
            po.needed_first = needed_first;
            po.node_reservation = resv;
            const bool resv_all = cv_opt.has_value() && cv_opt->resv_all;
            po.node_reservation.enabled = resv_all || pname == "drf-resv";
            po.node_reservation.packing_tier_only = !resv_all;
            std::shared_ptr<CarbyneDeadlinePolicy> run_pol;
            if (deadline_pol) {  // a fresh policy (its deadlines) per run
              run_pol = std::make_shared<CarbyneDeadlinePolicy>(*deadline_pol);
              po.before_report = [run_pol](size_t job, int64_t now_ms) {
                run_pol->at(job, now_ms);
              };
            }
            const auto t0 = std::chrono::steady_clock::now();
            auto out = runPaper(*js, run_pol ? run_pol : pol, po);
            if (!out.isOk()) {
              std::cerr << "bench_carbyne: " << out.status().message() << "\n";
              return 2;
            }
            const double wall =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const bool planned = std::any_of(out->ledger.begin(), out->ledger.end(),
                                             [](const auto& w) { return w.reports > 0; });
            if (planned) {
              printLedger(out->ledger, mode, load, seed, r, pname);
              std::printf(
                  "  grants: %lld to DRF-tier jobs, %lld to leftover-tier jobs, of which %lld "
                  "(%.1f%%) while a leftover-tier job with less remaining time had a runnable task "
                  "fitting the node and %lld (%.1f%%) while one had a runnable task at all; chosen "
                  "job's mean rank among those %.3f (0 shortest, 1 longest); of the DRF-tier "
                  "grants %lld of a stage short of its need, %lld of another stage while one was\n",
                  static_cast<long long>(out->grants_drf), static_cast<long long>(out->grants_left),
                  static_cast<long long>(out->grants_inverted),
                  100.0 * static_cast<double>(out->grants_inverted) /
                      static_cast<double>(std::max<int64_t>(1, out->grants_left)),
                  static_cast<long long>(out->grants_behind),
                  100.0 * static_cast<double>(out->grants_behind) /
                      static_cast<double>(std::max<int64_t>(1, out->grants_left)),
                  out->grants_left_rank /
                      static_cast<double>(std::max<int64_t>(1, out->grants_left)),
                  static_cast<long long>(out->grants_drf_needed),
                  static_cast<long long>(out->grants_drf_slack_first));
            }
            const auto k = static_cast<double>(runs);
            sf.avg += meanOf(out->jct_s) / k;
            sf.p95 += quantileOf(out->jct_s, 0.95) / k;
            sf.median += quantileOf(out->jct_s, 0.5) / k;
            sf.makespan += out->makespan_s / k;
            sf.jain += out->jain / k;
            sf.jain_fair += out->jain_fair / k;
            sf.util_vcores += out->util_vcores / k;
            sf.util_busiest += out->util_busiest / k;
            sf.pending += out->pending_tasks_avg / k;
            sf.active += out->active_jobs_avg / k;
            for (size_t i = 0; i < js->size(); i++) {
              sf.per_job[i] += out->jct_s[i] / k;
              sf.per_job_est[i] += out->est_s[i] / k;
            }
            done++;
            std::fprintf(stderr,
                         "[%lld/%lld] %s load %gx (%lld servers) seed %llu run %lld %s: avg JCT "
                         "%.0f s, makespan %.0f s, Jain %.3f / fair %.3f, vcores used %.2f, "
                         "nodes reserved %.1f (%.1f s wall)\n",
                         static_cast<long long>(done), static_cast<long long>(total), mode.c_str(),
                         load, static_cast<long long>(n), static_cast<unsigned long long>(seed),
                         static_cast<long long>(r), pname.c_str(), meanOf(out->jct_s),
                         out->makespan_s, out->jain, out->jain_fair, out->util_vcores,
                         out->reserved_nodes_avg, wall);
          }
          if (jobs_out.is_open()) {
            for (size_t i = 0; i < js->size(); i++) {
              const sim::AdhocJob& job = (*js)[i];
              const sim::DagShape sh = sim::dagShape(job);
              jobs_out << mode << ',' << load << ',' << seed << ',' << pname << ',' << i << ','
                       << static_cast<double>(job.submit.count()) / 1000.0 << ',' << sh.stages
                       << ',' << sh.critical_path << ',' << sh.sources << ',' << sh.tasks << ','
                       << sh.alone_s << ',' << sh.work_core_s << ',' << sf.per_job[i] << ','
                       << sf.per_job_est[i] << '\n';
            }
          }
          fig[pname].push_back(std::move(sf));
        }
      }
      // Per seed ratios, then the median over seeds.
      auto med = [&](const std::string& p, auto get) {
        std::vector<double> v;
        for (size_t s = 0; s < seeds.size(); s++) v.push_back(get(fig[p][s], s));
        return quantileOf(v, 0.5);
      };
      const bool has_drf = fig.count("drf") > 0, has_sjf = fig.count("sjf") > 0,
                 has_tetris = fig.count("tetris") > 0;
      std::printf("\n== %s, load %gx (%lld servers x 20 cores), %zu seeds x %lld runs ==\n",
                  mode.c_str(), load, static_cast<long long>(n), seeds.size(),
                  static_cast<long long>(runs));
      const double f_avg = quantileOf(floor_avg, 0.5), f_p95 = quantileOf(floor_p95, 0.5);
      std::printf("%-8s %10s %8s %8s %7s | %10s %8s %8s %7s | %9s | %10s %9s | %6s %7s | %9s\n",
                  "policy", "avg JCT s", "DRF/x", "x/SJF", "x/floor", "p95 JCT s", "DRF/x", "x/SJF",
                  "x/floor", "median s", "makespan s", "x/Tetris", "Jain", "-DRF", "job x/DRF");
      std::string second;  // the second table's rows
      nlohmann::json cell = {{"mode", mode}, {"load", load}, {"servers", n}};
      for (const auto& p : policies) {
        auto ratio = [&](const std::string& a, const std::string& b, auto get) {
          if (!fig.count(a) || !fig.count(b)) return std::nan("");
          return med(p, [&](const SeedFigures&, size_t s) {
            return get(fig[a][s]) / std::max(get(fig[b][s]), 1e-9);
          });
        };
        auto avg = [](const SeedFigures& f) { return f.avg; };
        auto p95 = [](const SeedFigures& f) { return f.p95; };
        auto mk = [](const SeedFigures& f) { return f.makespan; };
        const double a = med(p, [](const SeedFigures& f, size_t) { return f.avg; });
        const double q = med(p, [](const SeedFigures& f, size_t) { return f.p95; });
        const double md = med(p, [](const SeedFigures& f, size_t) { return f.median; });
        const double m = med(p, [](const SeedFigures& f, size_t) { return f.makespan; });
        const double jn = med(p, [](const SeedFigures& f, size_t) { return f.jain; });
        const double jf = med(p, [](const SeedFigures& f, size_t) { return f.jain_fair; });
        const double a_floor = med(p, [&](const SeedFigures& f, size_t s) {
          return f.avg / std::max(floor_avg[s], 1e-9);
        });
        const double q_floor = med(p, [&](const SeedFigures& f, size_t s) {
          return f.p95 / std::max(floor_p95[s], 1e-9);
        });
        const double a_gain = has_drf ? ratio("drf", p, avg) : std::nan("");
        const double a_sjf = has_sjf ? ratio(p, "sjf", avg) : std::nan("");
        const double q_gain = has_drf ? ratio("drf", p, p95) : std::nan("");
        const double q_sjf = has_sjf ? ratio(p, "sjf", p95) : std::nan("");
        const double m_tet = has_tetris ? ratio(p, "tetris", mk) : std::nan("");
        const double j_drf = has_drf ? med(p, [&](const SeedFigures& f,
                                                  size_t s) { return f.jain - fig["drf"][s].jain; })
                                     : std::nan("");
        const double jf_drf =
            has_drf ? med(p, [&](const SeedFigures& f,
                                 size_t s) { return f.jain_fair - fig["drf"][s].jain_fair; })
                    : std::nan("");
        const bool has_drf2 = fig.count("drf2") > 0;
        const double a_gain2 = has_drf2 ? ratio("drf2", p, avg) : std::nan("");
        const double q_gain2 = has_drf2 ? ratio("drf2", p, p95) : std::nan("");
        const double jf_drf2 =
            has_drf2 ? med(p, [&](const SeedFigures& f,
                                  size_t s) { return f.jain_fair - fig["drf2"][s].jain_fair; })
                     : std::nan("");
        const double a_sjfw = fig.count("sjfw") > 0 ? ratio(p, "sjfw", avg) : std::nan("");
        const double uv = med(p, [](const SeedFigures& f, size_t) { return f.util_vcores; });
        const double ub = med(p, [](const SeedFigures& f, size_t) { return f.util_busiest; });
        const double pend = med(p, [](const SeedFigures& f, size_t) { return f.pending; });
        const double act = med(p, [](const SeedFigures& f, size_t) { return f.active; });
        // The median job's slowdown against DRF: per seed, the median over jobs
        // of JCT under p / JCT under DRF.
        const double slow =
            has_drf ? med(p,
                          [&](const SeedFigures& f, size_t s) {
                            std::vector<double> v;
                            for (size_t i = 0; i < f.per_job.size(); i++)
                              v.push_back(f.per_job[i] / std::max(fig["drf"][s].per_job[i], 1e-9));
                            return quantileOf(v, 0.5);
                          })
                    : std::nan("");
        std::printf(
            "%-8s %10.0f %8.2f %8.2f %7.2f | %10.0f %8.2f %8.2f %7.2f | %9.0f | %10.0f %9.3f | "
            "%6.3f "
            "%+7.3f | %9.3f\n",
            p.c_str(), a, a_gain, a_sjf, a_floor, q, q_gain, q_sjf, q_floor, md, m, m_tet, jn,
            j_drf, slow);
        char row[256];
        std::snprintf(
            row, sizeof row,
            "%-8s %9.3f %+7.3f %+8.3f | %8.2f %8.2f | %8.2f | %7.2f %8.2f | %9.0f %8.1f\n",
            p.c_str(), jf, jf_drf, jf_drf2, a_gain2, q_gain2, a_sjfw, uv, ub, pend, act);
        second += row;
        auto num = [](double x) {
          return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x);
        };
        cell[p] = {{"avg_jct_s", a},
                   {"avg_gain_vs_drf", num(a_gain)},
                   {"avg_over_sjf", num(a_sjf)},
                   {"p95_jct_s", q},
                   {"p95_gain_vs_drf", num(q_gain)},
                   {"p95_over_sjf", num(q_sjf)},
                   {"median_jct_s", md},
                   {"makespan_s", m},
                   {"makespan_over_tetris", num(m_tet)},
                   {"jain", jn},
                   {"jain_minus_drf", num(j_drf)},
                   {"median_job_slowdown_vs_drf", num(slow)},
                   {"avg_over_floor", a_floor},
                   {"p95_over_floor", q_floor},
                   {"jain_fair", jf},
                   {"jain_fair_minus_drf", num(jf_drf)},
                   {"jain_fair_minus_drf2", num(jf_drf2)},
                   {"avg_gain_vs_drf2", num(a_gain2)},
                   {"p95_gain_vs_drf2", num(q_gain2)},
                   {"avg_over_sjfw", num(a_sjfw)},
                   {"util_vcores", uv},
                   {"util_busiest", ub},
                   {"pending_tasks_avg", pend},
                   {"active_jobs_avg", act}};
      }
      cell["floor_avg_jct_s"] = f_avg;
      cell["floor_p95_jct_s"] = f_p95;
      std::printf(
          "  floors (any policy, median over seeds): average JCT %.0f s, p95 JCT %.0f s (x/floor "
          "above); SJF by critical path is the paper's reference (x/SJF); Tetris the makespan "
          "reference (x/Tetris)\n",
          f_avg, f_p95);
      std::printf("%-8s %9s %7s %8s | %8s %8s | %8s | %7s %8s | %9s %8s\n", "policy", "Jain/fair",
                  "-DRF", "-DRF2", "DRF2/x", "p95", "x/SJFw", "vcores", "busiest", "waiting",
                  "jobs");
      std::printf("%s", second.c_str());
      std::printf(
          "  Jain/fair: Jain's index of each job's share over its DRF fair share; DRF2/x: DRF "
          "seeing CPU and memory only (as YARN's) over the policy, average and p95 JCT; x/SJFw: "
          "average JCT over SJF by remaining work's; vcores, "
          "busiest: mean allocated fraction of the cluster; waiting: mean runnable tasks not "
          "started; jobs: mean jobs in the system\n");
      std::fflush(stdout);
      cells.push_back(std::move(cell));
    }
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::printf("wall time %.0f s\n", wall_s);
  report.figures()["scenario"] = "paper";
  report.figures()["mix"] = mix_name;
  report.figures()["size_sigma"] = size_sigma;
  report.figures()["size_scale"] = size_scale;
  report.figures()["jobs"] = jobs_n;
  report.figures()["runs"] = runs;
  report.figures()["seeds"] = seeds;
  report.figures()["cells"] = cells;
  report.figures()["wall_s"] = wall_s;
  report.targets()["offline_avg_gain_vs_drf_min"] = 1.5;
  report.targets()["online_avg_gain_vs_drf_min"] = 1.36;
  report.targets()["online_p95_gain_vs_drf_min"] = 1.88;
  report.targets()["makespan_over_tetris_max"] = 1.05;
  report.targets()["jain_minus_drf_min"] = -0.06;
  report.targets()["median_job_slowdown_vs_drf_max"] = 1.0;
  report.emit();
  return 0;
}

}  // namespace morpheus::bench
