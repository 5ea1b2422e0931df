#include "scheduler/policies/carbyne_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

namespace morpheus::sched {
namespace {

// Tasks of `task` that fit in `share` at once (at least 1: a stage always progresses).
int64_t slotsFor(const Resource& share, const Resource& task) {
  return std::max<int64_t>(1, share.countFitting(task));
}

// One group of tasks a list packing started together.
struct Group {
  size_t stage;
  int64_t count;
  Millis start;
};

// The share and the stages' tasks as rows of one integer table, one column
// per dimension any of them uses (memory, vcores, then the extended
// resources by name; a dimension a resource does not list is zero). The
// list packing's arithmetic on it is exact and gives what Resource's
// operators give, without Resource's lookups of extended resources by name
// (the packing does up to stages x groups of them per plan).
struct Dims {
  size_t width = 2;
  std::vector<int64_t> share;  // width
  std::vector<int64_t> task;   // stages x width, stage-major

  Dims(const std::vector<DagStage>& dag, const Resource& fair_share) {
    std::vector<std::string> names;
    auto collect = [&names](const Resource& r) {
      for (const auto& [name, v] : r.extended()) names.push_back(name);
    };
    collect(fair_share);
    for (const DagStage& st : dag) collect(st.task);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    width = 2 + names.size();
    auto row = [&](const Resource& r, int64_t* out) {
      out[0] = r.memoryMib();
      out[1] = r.vcores();
      for (const auto& [name, v] : r.extended()) {
        out[2 + static_cast<size_t>(std::lower_bound(names.begin(), names.end(), name) -
                                    names.begin())] = v;
      }
    };
    share.assign(width, 0);
    row(fair_share, share.data());
    task.assign(dag.size() * width, 0);
    for (size_t i = 0; i < dag.size(); i++) {
      MORPHEUS_CHECK(!dag[i].task.isZero() && !dag[i].task.anyNegative(),
                     "countFitting: unit must be positive");
      row(dag[i].task, &task[i * width]);
    }
  }
  const int64_t* of(size_t stage) const { return &task[stage * width]; }
};

// List packing of `dag` within `share` (Carbyne §4.2, after Tetris): at
// time 0 and at every task end, the stages whose predecessors (`preds`)
// have finished start as many tasks as fit in what the share has left, in
// priority order (higher `prio` first, then index). When nothing runs and
// no ready task fits (a share smaller than one task), the first ready
// stage runs one task at a time. Returns the groups started, in start
// order, and the time the last task ends in `makespan`. O(groups x stages
// x dimensions). `dims` holds the share and the tasks of `dag` (Dims).
std::vector<Group> listPack(const std::vector<DagStage>& dag,
                            const std::vector<std::vector<size_t>>& preds,
                            const std::vector<Millis>& prio, const Dims& dims, Millis* makespan) {
  const size_t n = dag.size();
  const size_t w = dims.width;
  std::vector<size_t> waiting(n);
  std::vector<std::vector<size_t>> succs(n);
  for (size_t i = 0; i < n; i++) {
    waiting[i] = preds[i].size();
    for (size_t p : preds[i]) succs[p].push_back(i);
  }
  std::vector<int64_t> left(n), running(n, 0);
  for (size_t i = 0; i < n; i++) left[i] = dag[i].tasks_left;
  std::vector<size_t> ready;
  auto byPrio = [&](size_t a, size_t b) { return prio[a] != prio[b] ? prio[a] > prio[b] : a < b; };
  for (size_t i = 0; i < n; i++) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::sort(ready.begin(), ready.end(), byPrio);
  struct End {
    Millis at;
    size_t stage;
    int64_t count;
    bool operator>(const End& o) const { return std::tie(at, stage) > std::tie(o.at, o.stage); }
  };
  std::priority_queue<End, std::vector<End>, std::greater<>> ends;
  std::vector<Group> groups;
  std::vector<int64_t> free = dims.share;
  // Resource::anyNegative and countFitting on the table's rows.
  auto anyNegative = [&]() {
    for (size_t d = 0; d < w; d++) {
      if (free[d] < 0) return true;
    }
    return false;
  };
  auto countFitting = [&](const int64_t* unit) {
    int64_t fit = std::numeric_limits<int64_t>::max();
    for (size_t d = 0; d < w; d++) {
      if (unit[d] > 0) fit = std::min(fit, free[d] <= 0 ? 0 : free[d] / unit[d]);
    }
    return fit;
  };
  Millis t(0);
  while (true) {
    for (size_t i : ready) {
      if (left[i] == 0) continue;
      const bool negative = anyNegative();
      // Nothing more starts this instant: free stays negative (no stage
      // starts at k = 0) and something runs (no one-at-a-time start).
      if (negative && !ends.empty()) break;
      int64_t k = negative ? 0 : std::min(left[i], countFitting(dims.of(i)));
      if (k <= 0 && ends.empty()) k = 1;  // a share below one task: one at a time
      if (k <= 0) continue;
      const int64_t* task = dims.of(i);
      for (size_t d = 0; d < w; d++) free[d] -= task[d] * k;
      left[i] -= k;
      running[i] += k;
      groups.push_back({i, k, t});
      ends.push({t + dag[i].task_duration, i, k});
    }
    if (ends.empty()) break;
    t = ends.top().at;
    bool newly_ready = false, stage_done = false;
    while (!ends.empty() && ends.top().at == t) {
      const End e = ends.top();
      ends.pop();
      const int64_t* task = dims.of(e.stage);
      for (size_t d = 0; d < w; d++) free[d] += task[d] * e.count;
      running[e.stage] -= e.count;
      if (left[e.stage] == 0 && running[e.stage] == 0) {
        stage_done = true;
        for (size_t c : succs[e.stage]) {
          if (--waiting[c] == 0) {
            ready.push_back(c);
            newly_ready = true;
          }
        }
      }
    }
    if (newly_ready) std::sort(ready.begin(), ready.end(), byPrio);
    // Only a stage whose last task ended this instant leaves the list.
    if (stage_done) {
      ready.erase(std::remove_if(ready.begin(), ready.end(),
                                 [&](size_t i) { return left[i] == 0 && running[i] == 0; }),
                  ready.end());
    }
  }
  *makespan = t;
  return groups;
}

// Longest path through every stage, its own duration included: from the
// sources (`up`: its predecessors' side) or to the sinks.
std::vector<Millis> pathLengths(const std::vector<DagStage>& dag,
                                const std::vector<std::vector<size_t>>& preds) {
  std::vector<Millis> len(dag.size(), Millis(-1));
  std::function<Millis(size_t)> f = [&](size_t i) -> Millis {
    if (len[i] >= Millis(0)) return len[i];
    Millis before(0);
    for (size_t p : preds[i]) before = std::max(before, f(p));
    return len[i] = before + dag[i].task_duration;
  };
  for (size_t i = 0; i < dag.size(); i++) f(i);
  return len;
}

}  // namespace

CarbynePlan carbynePlan(const std::vector<DagStage>& dag, const Resource& fair_share,
                        Millis must_start_within, Millis slack) {
  CarbynePlan p;
  const size_t n = dag.size();
  std::vector<std::vector<size_t>> preds(n), succs(n);
  for (size_t i = 0; i < n; i++) {
    preds[i] = dag[i].deps;
    for (size_t d : dag[i].deps) succs[d].push_back(i);
  }
  // Forward: T, the remaining DAG packed at the share, critical stages
  // (longest path to the end) first.
  const Dims dims(dag, fair_share);
  for (const Group& g : listPack(dag, preds, pathLengths(dag, succs), dims, &p.completion)) {
    if (g.start == Millis(0)) p.start += dag[g.stage].task * g.count;
  }
  // Reverse: the DAG packed backwards from T (the stages farthest from now
  // placed latest), so a task starts at T - its reverse end: as late as the
  // share allows without passing T.
  Millis reverse_len(0);
  const std::vector<Group> rev = listPack(dag, succs, pathLengths(dag, preds), dims, &reverse_len);
  p.latest_finish.assign(n, p.completion);
  p.need_tasks.assign(n, 0);
  std::vector<Millis> first_start(n, Millis::max());
  for (const Group& g : rev) {
    const Millis end = g.start + dag[g.stage].task_duration;
    const Millis start = p.completion - end;  // forward start
    first_start[g.stage] = std::min(first_start[g.stage], start);
    p.latest_finish[g.stage] = std::min(p.latest_finish[g.stage], p.completion - g.start);
    // A runnable stage's tasks that must start within their first duration.
    const Millis within =
        must_start_within < Millis(0) ? dag[g.stage].task_duration : must_start_within;
    if (dag[g.stage].deps.empty() && start + slack < within) p.need_tasks[g.stage] += g.count;
  }
  int64_t needed = 0;
  for (size_t i = 0; i < n; i++) {
    if (!dag[i].deps.empty()) continue;
    p.need_tasks[i] = std::min(p.need_tasks[i], slotsFor(fair_share, dag[i].task));
    needed += p.need_tasks[i];
  }
  // A job never plans to hold nothing (it would not be re-planned until
  // something of its own ends): the runnable stage that must start first
  // keeps one task.
  if (needed == 0) {
    size_t first = n;
    for (size_t i = 0; i < n; i++) {
      if (dag[i].deps.empty() && (first == n || first_start[i] < first_start[first])) first = i;
    }
    if (first < n) p.need_tasks[first] = 1;
  }
  for (size_t i = 0; i < n; i++) p.need += dag[i].task * p.need_tasks[i];
  if (!fair_share.isZero()) p.need = Resource::min(p.need, fair_share);
  return p;
}

double CarbyneOrderingPolicy::score(const Resource& used, double weight,
                                    const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

AppHint carbyneHint(const std::vector<DagStage>& dag, CarbynePlan plan) {
  AppHint h{true, std::move(plan.need), plan.completion};
  std::vector<std::pair<std::string, int64_t>> named;
  for (size_t i = 0; i < dag.size() && i < plan.need_tasks.size(); i++) {
    if (plan.need_tasks[i] > 0 && !dag[i].request_id.empty())
      named.emplace_back(dag[i].request_id, plan.need_tasks[i]);
  }
  std::sort(named.begin(), named.end());
  for (const auto& [id, tasks] : named) {
    if (!h.needed.empty() && h.needed.back() == id) {
      h.needed_tasks.back() += tasks;
    } else {
      h.needed.push_back(id);
      h.needed_tasks.push_back(tasks);
    }
  }
  return h;
}

AppHint CarbyneOrderingPolicy::planApp(const std::vector<DagStage>& dag,
                                       const Resource& fair_share) const {
  if (dag.empty()) return {};
  return carbyneHint(dag, carbynePlan(dag, fair_share));
}

AppHint CarbyneOrderingPolicy::planWithoutDag(const Resource& fair_share) const {
  AppHint h;
  h.valid = true;
  h.from_dag = false;
  h.need = fair_share;
  h.remaining = Millis::max();
  return h;
}

double CarbyneOrderingPolicy::appScore(const AppInput& in) const {
  if (!in.hint.valid || !in.hint.need.fitsIn(in.used)) return in.used.dominantShare(in.cluster);
  return kLeftoverTier + static_cast<double>(in.hint.remaining.count()) / 1000.0;
}

double CarbyneOrderingPolicy::userScore(const Resource& used, double weight,
                                        const Resource& cluster, double best_app) const {
  if (best_app >= kLeftoverTier) return best_app;
  return used.dominantShare(cluster) / weight;
}

double CarbyneOrderingPolicy::askScore(const AskInput& in) const {
  if (!in.hint.valid) return 0.0;
  if (!in.hint.need.fitsIn(in.used)) {
    // Below the need: the need is the tasks the reverse packing starts now
    // (§4.2), so the asks of those stages come first; a stage with slack
    // runs on this allocation only when none of them is placeable here.
    // With count_needed, once the stage runs the tasks its plan needs now
    // its further tasks have slack.
    const auto& n = in.hint.needed;
    const auto it = std::lower_bound(n.begin(), n.end(), in.request_id);
    if (it != n.end() && *it == in.request_id) {
      const auto k = static_cast<size_t>(it - n.begin());
      const auto& counts = in.hint.needed_tasks;
      if (!packing_.count_needed || counts.size() != n.size() || in.running < counts[k]) return 1.0;
    }
    return packing_.decline_slack && !n.empty() && !in.request_id.empty() ? kDecline : 0.0;
  }
  return tetrisAlignment(in.need, in.node_free, in.node_total);
}

double CarbyneOrderingPolicy::packFrom() const { return kLeftoverTier; }

double CarbyneOrderingPolicy::packScore(const AskInput& in) const {
  const double align = tetrisAlignment(in.need, in.node_free, in.node_total);
  if (!in.hint.valid || in.hint.remaining == Millis::max()) return align - kNoEstimatePenalty;
  const double rem_s = static_cast<double>(in.hint.remaining.count()) / 1000.0;
  return align - packing_.eps * std::log1p(rem_s / packing_.tau_s);
}

double tetrisAlignment(const Resource& need, const Resource& free, const Resource& total) {
  auto term = [](int64_t n, int64_t f, int64_t t) {
    if (t <= 0) return 0.0;
    const double td = static_cast<double>(t);
    return (static_cast<double>(n) / td) * (static_cast<double>(f) / td);
  };
  double sum = term(need.memoryMib(), free.memoryMib(), total.memoryMib()) +
               term(need.vcores(), free.vcores(), total.vcores());
  // Extended resources are sorted by name in each Resource: one merge walk
  // finds need's in free and total (what extendedValue finds, in need's order).
  const auto& fe = free.extended();
  const auto& te = total.extended();
  auto fi = fe.begin();
  auto ti = te.begin();
  for (const auto& [name, v] : need.extended()) {
    // Usually the same names in the same places: equality first, the
    // ordered search only when it misses.
    if (fi == fe.end() || fi->first != name) {
      while (fi != fe.end() && fi->first < name) ++fi;
    }
    if (ti == te.end() || ti->first != name) {
      while (ti != te.end() && ti->first < name) ++ti;
    }
    const int64_t f = fi != fe.end() && fi->first == name ? fi->second : 0;
    const int64_t t = ti != te.end() && ti->first == name ? ti->second : 0;
    sum += term(v, f, t);
  }
  return sum;
}

}  // namespace morpheus::sched
