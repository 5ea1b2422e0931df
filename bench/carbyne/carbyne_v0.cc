// Carbyne as it stood before cross-job leftover packing and the completion
// estimate by packing at the share (the policy of carbyne_policy.cc at the
// start of this evaluation, kept verbatim but renamed), so bench_carbyne
// --scenario paper can show both on the same runs (policy carbyne0).
#include "carbyne_v0.h"

#include "scheduler/policies/carbyne_policy.h"

#include <algorithm>
#include <limits>

namespace morpheus::bench::v0 {
using namespace morpheus::sched;
namespace {

// Tasks of `task` that fit in `share` at once (at least 1: a stage always progresses).
int64_t slotsFor(const Resource& share, const Resource& task) {
  return std::max<int64_t>(1, share.countFitting(task));
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Length of stage `s` at `share`: its tasks in waves of the slots that fit.
Millis stageLength(const DagStage& s, const Resource& share) {
  return s.task_duration * ceilDiv(s.tasks_left, slotsFor(share, s.task));
}

// Earliest finish of every stage (forward packing, dependencies first).
std::vector<Millis> earliestFinish(const std::vector<DagStage>& dag, const Resource& share) {
  std::vector<Millis> ef(dag.size(), Millis(-1));
  // Iterative DFS in dependency order; `dag` is acyclic.
  for (size_t root = 0; root < dag.size(); root++) {
    std::vector<size_t> stack{root};
    while (!stack.empty()) {
      size_t i = stack.back();
      if (ef[i] >= Millis(0)) {
        stack.pop_back();
        continue;
      }
      Millis start{0};
      bool ready = true;
      for (size_t d : dag[i].deps) {
        if (ef[d] < Millis(0)) {
          stack.push_back(d);
          ready = false;
        } else {
          start = std::max(start, ef[d]);
        }
      }
      if (!ready) continue;
      ef[i] = start + stageLength(dag[i], share);
      stack.pop_back();
    }
  }
  return ef;
}

// Latest finish of every stage that keeps completion `t` (reverse packing
// from the sinks: a stage must end before each dependent's latest start).
std::vector<Millis> latestFinish(const std::vector<DagStage>& dag, const Resource& share,
                                 const std::vector<Millis>& ef, Millis t) {
  std::vector<size_t> order(dag.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  // Dependents finish after their dependencies: later earliest finish first.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ef[a] > ef[b]; });
  std::vector<Millis> lf(dag.size(), t);
  for (size_t i : order) {
    const Millis latest_start = lf[i] - stageLength(dag[i], share);
    for (size_t d : dag[i].deps) lf[d] = std::min(lf[d], latest_start);
  }
  return lf;
}

// Reverse packing of one runnable stage (Carbyne §4.2): from its latest
// finish LF backwards, waves of the tasks that fit in the fair share fill the
// floor(LF / d) wave slots latest first, so only the remainder the later
// waves cannot hold must run now: N - slots * (waves - 1), at most one wave;
// 0 when the later waves hold every task (the stage has slack: reverse
// packing places it later, and it runs now only on leftover). The first
// stage of the critical path has LF = its own length, ceil(N / slots)
// waves, so it needs 1 to `slots` tasks: a job always holds a task and its
// AM keeps reporting (a job holding nothing would never be re-planned).
int64_t tasksNeededNow(const DagStage& s, const Resource& share, Millis latest_finish) {
  const int64_t waves = std::max<int64_t>(1, latest_finish / s.task_duration);
  const int64_t slots = slotsFor(share, s.task);
  const int64_t cap = std::min(s.tasks_left, slots);
  return std::clamp<int64_t>(s.tasks_left - slots * (waves - 1), 0, cap);
}

}  // namespace

CarbynePlan carbynePlanV0(const std::vector<DagStage>& dag, const Resource& fair_share) {
  CarbynePlan p;
  const std::vector<Millis> ef = earliestFinish(dag, fair_share);
  for (Millis f : ef) p.completion = std::max(p.completion, f);
  p.latest_finish = latestFinish(dag, fair_share, ef, p.completion);
  p.need_tasks.assign(dag.size(), 0);
  for (size_t i = 0; i < dag.size(); i++) {
    if (!dag[i].deps.empty()) continue;  // waits for another stage: needs nothing now
    p.need_tasks[i] = tasksNeededNow(dag[i], fair_share, p.latest_finish[i]);
    p.need += dag[i].task * p.need_tasks[i];
  }
  if (!fair_share.isZero()) p.need = Resource::min(p.need, fair_share);
  return p;
}

double CarbyneV0Policy::score(const Resource& used, double weight, const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

AppHint CarbyneV0Policy::planApp(const std::vector<DagStage>& dag,
                                 const Resource& fair_share) const {
  if (dag.empty()) return {};
  CarbynePlan p = carbynePlanV0(dag, fair_share);
  return AppHint{true, std::move(p.need), p.completion};
}

AppHint CarbyneV0Policy::planWithoutDag(const Resource& fair_share) const {
  AppHint h;
  h.valid = true;
  h.from_dag = false;
  h.need = fair_share;
  h.remaining = Millis::max();
  return h;
}

double CarbyneV0Policy::appScore(const AppInput& in) const {
  if (!in.hint.valid || !in.hint.need.fitsIn(in.used)) return in.used.dominantShare(in.cluster);
  return CarbyneOrderingPolicy::kLeftoverTier +
         static_cast<double>(in.hint.remaining.count()) / 1000.0;
}

double CarbyneV0Policy::userScore(const Resource& used, double weight, const Resource& cluster,
                                  double best_app) const {
  if (best_app >= CarbyneOrderingPolicy::kLeftoverTier) return best_app;
  return used.dominantShare(cluster) / weight;
}

double CarbyneV0Policy::askScore(const AskInput& in) const {
  if (!in.hint.valid || !in.hint.need.fitsIn(in.used)) return 0.0;
  return sched::tetrisAlignment(in.need, in.node_free, in.node_total);
}

}  // namespace morpheus::bench::v0
