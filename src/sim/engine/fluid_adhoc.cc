#include "sim/engine/fluid_adhoc.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace morpheus::sim {

namespace {
// Work below this (task-ms) counts as done: guards floating-point residue.
constexpr double kDoneEpsilonMs = 1e-6;
}  // namespace

void FluidPool::add(int64_t index, const std::vector<SimStage>& stages) {
  Job job;
  job.index = index;
  job.stages.resize(stages.size());
  job.stages_left = stages.size();
  for (size_t s = 0; s < stages.size(); s++) {
    Stage& st = job.stages[s];
    st.duration_ms = std::max<int64_t>(1, stages[s].task_duration.count());
    st.tasks = std::max<int64_t>(0, stages[s].tasks);
    st.work_ms = static_cast<double>(std::max<int64_t>(0, stages[s].tasks)) *
                 static_cast<double>(std::max<int64_t>(0, stages[s].task_duration.count()));
    st.unmet = static_cast<int64_t>(stages[s].depends_on.size());
    for (int d : stages[s].depends_on) job.stages[static_cast<size_t>(d)].dependents.push_back(s);
  }
  jobs_.push_back(std::move(job));
}

int64_t FluidPool::stageDemand(const Stage& s) {
  if (s.done || s.unmet > 0 || s.work_ms <= kDoneEpsilonMs) return 0;
  // Within its first task duration every task of the stage is still running
  // (each needs duration - elapsed more); after it, whole tasks are left.
  const int64_t left_ms =
      s.elapsed_ms < s.duration_ms ? s.duration_ms - s.elapsed_ms : s.duration_ms;
  const auto need =
      static_cast<int64_t>(std::ceil(s.work_ms / static_cast<double>(left_ms) - 1e-9));
  // Tasks that ran in the last step keep running (a last wave of partly done
  // tasks is not fewer tasks).
  return std::min(s.tasks, std::max(need, s.last_running));
}

int64_t FluidPool::jobDemand(const Job& j) {
  int64_t d = 0;
  for (const Stage& s : j.stages) d += stageDemand(s);
  return d;
}

int64_t FluidPool::demand() const {
  int64_t d = 0;
  for (const Job& j : jobs_) d += jobDemand(j);
  return d;
}

std::vector<double> FluidPool::waterFill(const std::vector<int64_t>& want, double held) {
  std::vector<double> out(want.size(), 0.0);
  std::vector<size_t> order(want.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return want[a] < want[b]; });
  double left = held;
  size_t remaining = order.size();
  for (size_t i : order) {
    const double level = left / static_cast<double>(remaining);
    out[i] = std::min(static_cast<double>(want[i]), level);
    left -= out[i];
    remaining--;
  }
  return out;
}

void FluidPool::finishStage(Job& job, size_t s) {
  Stage& st = job.stages[s];
  st.done = true;
  st.work_ms = 0;
  job.stages_left--;
  for (size_t d : st.dependents) job.stages[d].unmet--;
}

bool FluidPool::runJob(Job& job, double alloc, Millis dt, double& completions) {
  // Stages ready at the start of the step share it; stages released by a
  // stage finishing in this step start at the next one.
  std::vector<size_t> ready;
  for (size_t s = 0; s < job.stages.size(); s++) {
    const Stage& st = job.stages[s];
    if (!st.done && st.unmet == 0) ready.push_back(s);
  }
  for (size_t s : ready) {
    Stage& st = job.stages[s];
    const double r = std::min(alloc, static_cast<double>(stageDemand(st)));
    alloc -= r;
    st.work_ms -= r * static_cast<double>(dt.count());
    completions += r * static_cast<double>(dt.count()) / static_cast<double>(st.duration_ms);
    st.elapsed_ms += dt.count();
    st.last_running = static_cast<int64_t>(std::ceil(r - 1e-9));
    if (st.work_ms <= kDoneEpsilonMs) finishStage(job, s);
  }
  // Stages with no work (zero tasks) that became ready finish at once.
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t s = 0; s < job.stages.size(); s++) {
      Stage& st = job.stages[s];
      if (!st.done && st.unmet == 0 && st.work_ms <= kDoneEpsilonMs) {
        finishStage(job, s);
        changed = true;
      }
    }
  }
  return job.stages_left == 0;
}

std::vector<FluidFinished> FluidPool::advance(TimePoint now, Millis dt, int64_t held) {
  return advanceMean(now, dt, static_cast<double>(std::max<int64_t>(0, held)));
}

std::vector<FluidFinished> FluidPool::advanceMean(TimePoint now, Millis dt, double held) {
  std::vector<int64_t> want(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); i++) want[i] = jobDemand(jobs_[i]);
  const std::vector<double> share = waterFill(want, std::max(0.0, held));
  last_completions_ = 0;
  std::vector<FluidFinished> done;
  std::vector<Job> live;
  live.reserve(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); i++) {
    if (runJob(jobs_[i], share[i], dt, last_completions_)) {
      done.push_back(FluidFinished{jobs_[i].index, now});
    } else {
      live.push_back(std::move(jobs_[i]));
    }
  }
  jobs_ = std::move(live);
  return done;
}

std::vector<int64_t> FluidPool::unfinished() const {
  std::vector<int64_t> out;
  out.reserve(jobs_.size());
  for (const Job& j : jobs_) out.push_back(j.index);
  return out;
}

}  // namespace morpheus::sim
