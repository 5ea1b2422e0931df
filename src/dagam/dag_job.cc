#include "dagam/dag_job.h"

#include <algorithm>
#include <functional>

namespace morpheus::dagam {

namespace {

// Reruns that do not count as attempts (preemption, node loss, kills) are
// still bounded so a job cannot loop forever on a cluster that keeps killing it.
constexpr int kMaxUncountedLaunchesPerAttempt = 10;

std::string taskName(const JobSpec& spec, int stage, int index) {
  return spec.stages[stage].name + "[" + std::to_string(index) + "]";
}

}  // namespace

const char* taskStateName(TaskState s) {
  switch (s) {
    case TaskState::kWaiting:
      return "WAITING";
    case TaskState::kPending:
      return "PENDING";
    case TaskState::kLaunching:
      return "LAUNCHING";
    case TaskState::kRunning:
      return "RUNNING";
    case TaskState::kSucceeded:
      return "SUCCEEDED";
    case TaskState::kFailed:
      return "FAILED";
  }
  return "?";
}

DagJob::DagJob(JobSpec spec, std::string app_id, const Clock& clock)
    : spec_(std::move(spec)), app_id_(std::move(app_id)), clock_(clock) {
  const int n = static_cast<int>(spec_.stages.size());
  MORPHEUS_CHECK(n > 0, "DagJob requires at least one stage");
  stage_start_.resize(n);
  stage_end_.resize(n);
  for (int s = 0; s < n; ++s) {
    MORPHEUS_CHECK(spec_.stages[s].tasks > 0, "stage without tasks: " + spec_.stages[s].name);
    stage_offset_.push_back(static_cast<int>(tasks_.size()));
    for (int i = 0; i < spec_.stages[s].tasks; ++i) {
      Task t;
      t.stage = s;
      t.index = i;
      tasks_.push_back(t);
    }
  }
  refreshRunnable();
}

void DagJob::setMaxContainer(const Resource& max) {
  if (max.isZero() || failed_) return;
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    const auto& r = spec_.stages[s].resources;
    if (!r.fitsIn(max)) {
      fail("stages[" + std::to_string(s) + "].resources: " + r.toString() +
           " exceeds the largest container the cluster grants " + max.toString());
      return;
    }
  }
}

const Task& DagJob::task(int stage, int index) const {
  MORPHEUS_CHECK(stage >= 0 && stage < static_cast<int>(spec_.stages.size()), "bad stage");
  MORPHEUS_CHECK(index >= 0 && index < spec_.stages[stage].tasks, "bad task index");
  return tasks_[taskIndex(stage, index)];
}

int DagJob::stageSucceeded(int stage) const {
  int done = 0;
  for (int i = 0; i < spec_.stages[stage].tasks; ++i) {
    if (tasks_[taskIndex(stage, i)].state == TaskState::kSucceeded) ++done;
  }
  return done;
}

bool DagJob::stageCompleted(int stage) const {
  return stageSucceeded(stage) == spec_.stages[stage].tasks;
}

bool DagJob::stageRunnable(int stage) const {
  for (int d : spec_.stages[stage].deps) {
    if (!stageCompleted(d)) return false;
  }
  return true;
}

void DagJob::refreshRunnable() {
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    int st = static_cast<int>(s);
    if (!stageRunnable(st)) continue;
    bool any = false;
    for (int i = 0; i < spec_.stages[s].tasks; ++i) {
      Task& t = tasks_[taskIndex(st, i)];
      if (t.state == TaskState::kWaiting) {
        t.state = TaskState::kPending;
        any = true;
      }
    }
    if (any) {
      events_.push_back("stage " + spec_.stages[s].name + " runnable: asking for " +
                        std::to_string(spec_.stages[s].tasks) + " container(s) of " +
                        spec_.stages[s].resources.toString());
    }
  }
}

int DagJob::stageForGrant(const Grant& g) const {
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    if (spec_.stages[s].name == g.request_id) return static_cast<int>(s);
  }
  if (g.request_id.empty() && g.priority >= 0 &&
      g.priority < static_cast<int>(spec_.stages.size())) {
    return g.priority;
  }
  return -1;
}

std::vector<Launch> DagJob::onAllocated(const std::vector<Grant>& grants) {
  std::vector<Launch> out;
  for (const auto& g : grants) {
    if (by_container_.count(g.container_id)) continue;  // duplicate delivery
    int s = finished() ? -1 : stageForGrant(g);
    int chosen = -1;
    if (s >= 0) {
      for (int i = 0; i < spec_.stages[s].tasks; ++i) {
        if (tasks_[taskIndex(s, i)].state == TaskState::kPending) {
          chosen = taskIndex(s, i);
          break;
        }
      }
    }
    if (chosen < 0) {
      events_.push_back("releasing surplus container " + g.container_id + " (request '" +
                        g.request_id + "')");
      release(g.container_id);
      continue;
    }
    Task& t = tasks_[chosen];
    const StageSpec& stage = spec_.stages[s];
    t.state = TaskState::kLaunching;
    t.container_id = g.container_id;
    t.preemption_noted = false;
    t.launched = clock_.now();
    ++t.launches;
    by_container_[g.container_id] = chosen;
    if (!stage_start_[s]) stage_start_[s] = clock_.now();

    Launch l;
    l.container_id = g.container_id;
    l.node_address = g.node_address;
    l.stage = s;
    l.index = t.index;
    l.attempt = t.launches;
    l.command = stage.command;
    l.env = stage.env;
    l.env["MORPHEUS_TASK_INDEX"] = std::to_string(t.index);
    l.env["MORPHEUS_STAGE"] = stage.name;
    l.env["MORPHEUS_ATTEMPT"] = std::to_string(t.launches);
    l.env["MORPHEUS_APP_ID"] = app_id_;
    l.env["MORPHEUS_CONTAINER_ID"] = g.container_id;
    l.env["MORPHEUS_JOB_NAME"] = spec_.name;
    events_.push_back("task " + taskName(spec_, s, t.index) + " attempt " +
                      std::to_string(t.launches) + " -> container " + g.container_id + " on node " +
                      g.node_id);
    out.push_back(std::move(l));
  }
  return out;
}

void DagJob::onLaunchSucceeded(const std::string& container_id) {
  auto it = by_container_.find(container_id);
  if (it == by_container_.end()) return;
  Task& t = tasks_[it->second];
  if (t.state == TaskState::kLaunching) t.state = TaskState::kRunning;
}

void DagJob::onLaunchFailed(const std::string& container_id, bool counts_as_attempt,
                            const std::string& message) {
  auto it = by_container_.find(container_id);
  if (it == by_container_.end()) return;
  int t = it->second;
  release(container_id);
  released_.insert(container_id);
  taskEnded(t, counts_as_attempt, "launch failed: " + message);
}

void DagJob::taskEnded(int ti, bool counts, const std::string& why) {
  Task& t = tasks_[ti];
  by_container_.erase(t.container_id);
  t.container_id.clear();
  t.launched.reset();
  t.last_diagnostics = why;
  const StageSpec& stage = spec_.stages[t.stage];
  std::string name = taskName(spec_, t.stage, t.index);
  if (failed_) {
    t.state = TaskState::kPending;
    return;
  }
  if (counts) {
    ++t.failed_attempts;
    if (t.failed_attempts >= stage.max_attempts) {
      t.state = TaskState::kFailed;
      fail("task " + name + " failed " + std::to_string(t.failed_attempts) +
           " attempt(s) (max_attempts " + std::to_string(stage.max_attempts) + "): " + why);
      return;
    }
    events_.push_back("task " + name + " failed attempt " + std::to_string(t.failed_attempts) +
                      "/" + std::to_string(stage.max_attempts) + ", retrying: " + why);
  } else {
    if (t.launches >= kMaxUncountedLaunchesPerAttempt * stage.max_attempts) {
      t.state = TaskState::kFailed;
      fail("task " + name + " was killed " + std::to_string(t.launches) +
           " times without finishing: " + why);
      return;
    }
    events_.push_back("task " + name + " will rerun (not counted as a failed attempt): " + why);
  }
  t.state = TaskState::kPending;
}

void DagJob::onCompleted(const std::vector<Completion>& completions) {
  for (const auto& c : completions) {
    auto it = by_container_.find(c.container_id);
    if (it == by_container_.end()) {
      released_.erase(c.container_id);
      continue;  // released by us, or not ours: nothing to do
    }
    int ti = it->second;
    Task& t = tasks_[ti];
    std::string detail = c.diagnostics.empty() ? "" : " (" + c.diagnostics + ")";
    switch (c.kind) {
      case ExitKind::kSuccess:
        break;
      case ExitKind::kUnknown:
        if (c.exit_status == 0) break;
        [[fallthrough]];
      case ExitKind::kFailure:
        taskEnded(ti, true, "exit status " + std::to_string(c.exit_status) + detail);
        continue;
      case ExitKind::kMemoryExceeded:
        taskEnded(ti, true, "killed for exceeding its memory limit" + detail);
        continue;
      case ExitKind::kLaunchFailed:
        taskEnded(ti, true, "launch failed" + detail);
        continue;
      case ExitKind::kPreempted:
        taskEnded(ti, false, "preempted" + detail);
        continue;
      case ExitKind::kNodeLost:
        taskEnded(ti, false, "node lost" + detail);
        continue;
      case ExitKind::kKilled:
        taskEnded(ti, false, std::string(t.preemption_noted ? "preempted" : "killed") + detail);
        continue;
    }
    // Success.
    by_container_.erase(it);
    t.container_id.clear();
    t.state = TaskState::kSucceeded;
    if (t.launched) t.ran = clock_.now() - *t.launched;
    if (failed_) continue;
    if (stageCompleted(t.stage)) {
      stage_end_[t.stage] = clock_.now();
      events_.push_back("stage " + spec_.stages[t.stage].name + " completed (" +
                        std::to_string(spec_.stages[t.stage].tasks) + " task(s))");
      refreshRunnable();
    }
  }
}

void DagJob::onPreemptionNotice(const std::string& container_id, const std::string& reason) {
  auto it = by_container_.find(container_id);
  if (it == by_container_.end()) return;
  Task& t = tasks_[it->second];
  if (t.preemption_noted) return;
  t.preemption_noted = true;
  events_.push_back("preemption notice for container " + container_id + " (task " +
                    taskName(spec_, t.stage, t.index) + "): " + reason +
                    "; the task reruns if it is killed (the RM may withdraw a notice)");
}

void DagJob::onResync(const std::set<std::string>& running) {
  std::vector<int> lost;
  for (const auto& [cid, ti] : by_container_) {
    if (!running.count(cid)) lost.push_back(ti);
  }
  for (int ti : lost) taskEnded(ti, false, "container not running after RM restart");
  int kept = 0;
  for (const auto& cid : running) {
    if (by_container_.count(cid)) {
      ++kept;
    } else {
      release(cid);
      released_.insert(cid);
    }
  }
  events_.push_back("resync: kept " + std::to_string(kept) + " running container(s), " +
                    std::to_string(lost.size()) + " task(s) to rerun");
}

std::vector<Ask> DagJob::asks() const {
  std::vector<Ask> out;
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    int st = static_cast<int>(s);
    if (!stageRunnable(st) || stageCompleted(st)) continue;
    const StageSpec& stage = spec_.stages[s];
    int pending = 0;
    if (!failed_) {
      for (int i = 0; i < stage.tasks; ++i) {
        if (tasks_[taskIndex(st, i)].state == TaskState::kPending) ++pending;
      }
    }
    Ask a;
    a.request_id = stage.name;
    a.priority = st;
    a.capability = stage.resources;
    a.count = pending;
    // A gang never asks for more than what is still missing (retries of a
    // single task of a gang stage go out as smaller groups).
    a.gang_size = pending > 0 ? std::min(stage.gang, pending) : stage.gang;
    a.constraints = stage.constraints;
    a.expected_ms = stage.expected_task_ms;
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<std::string> DagJob::takeReleases() {
  std::vector<std::string> out;
  out.swap(releases_);
  return out;
}

std::vector<std::string> DagJob::takeEvents() {
  std::vector<std::string> out;
  out.swap(events_);
  return out;
}

double DagJob::progress() const {
  int done = 0;
  for (const auto& t : tasks_) {
    if (t.state == TaskState::kSucceeded) ++done;
  }
  return tasks_.empty() ? 1.0 : static_cast<double>(done) / static_cast<double>(tasks_.size());
}

std::vector<StageReport> DagJob::stageReports() const {
  const TimePoint now = clock_.now();
  std::vector<StageReport> out(spec_.stages.size());
  std::vector<int64_t> ran_sum(spec_.stages.size(), 0), ran_k(spec_.stages.size(), 0);
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    out[s].name = spec_.stages[s].name;
    out[s].depends_on = spec_.stages[s].depends_on;
    out[s].tasks = spec_.stages[s].tasks;
    out[s].task_resource = spec_.stages[s].resources;
    out[s].estimated_task = spec_.stages[s].estimated_task;
  }
  for (const auto& t : tasks_) {
    StageReport& r = out[static_cast<size_t>(t.stage)];
    if (t.state == TaskState::kSucceeded) {
      r.completed++;
      if (t.ran) {
        ran_sum[static_cast<size_t>(t.stage)] += t.ran->count();
        ran_k[static_cast<size_t>(t.stage)]++;
      }
    } else if (t.launched && (t.state == TaskState::kRunning || t.state == TaskState::kLaunching)) {
      r.running_elapsed.push_back(std::max(Millis(0), now - *t.launched));
    }
  }
  for (size_t s = 0; s < out.size(); ++s) {
    if (ran_k[s] > 0) out[s].mean_task = Millis(ran_sum[s] / ran_k[s]);
  }
  return out;
}

std::map<std::string, double> DagJob::stageProgress() const {
  std::map<std::string, double> out;
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    out[spec_.stages[s].name] = static_cast<double>(stageSucceeded(static_cast<int>(s))) /
                                static_cast<double>(spec_.stages[s].tasks);
  }
  return out;
}

bool DagJob::succeeded() const {
  if (failed_) return false;
  return std::all_of(tasks_.begin(), tasks_.end(),
                     [](const Task& t) { return t.state == TaskState::kSucceeded; });
}

int DagJob::runningContainers() const { return static_cast<int>(by_container_.size()); }

void DagJob::fail(const std::string& why) {
  if (failed_) return;
  failed_ = true;
  diagnostics_ = why;
  events_.push_back("job failed: " + why);
  // Give back every container still running: the job will not use their work.
  for (const auto& [cid, ti] : by_container_) {
    release(cid);
    released_.insert(cid);
    tasks_[ti].container_id.clear();
    if (tasks_[ti].state != TaskState::kFailed) tasks_[ti].state = TaskState::kPending;
  }
  by_container_.clear();
}

std::vector<FileEvent> DagJob::filesRead() const {
  std::map<std::string, TimePoint> first;
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    if (!stage_start_[s]) continue;
    for (const auto& p : spec_.stages[s].reads) {
      auto it = first.find(p);
      if (it == first.end() || *stage_start_[s] < it->second) first[p] = *stage_start_[s];
    }
  }
  std::vector<FileEvent> out;
  for (const auto& [p, t] : first) out.push_back({p, t});
  return out;
}

std::vector<FileEvent> DagJob::filesWritten() const {
  std::map<std::string, TimePoint> last;
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    if (!stage_end_[s]) continue;
    for (const auto& p : spec_.stages[s].writes) {
      auto it = last.find(p);
      if (it == last.end() || it->second < *stage_end_[s]) last[p] = *stage_end_[s];
    }
  }
  std::vector<FileEvent> out;
  for (const auto& [p, t] : last) out.push_back({p, t});
  return out;
}

std::string DagJob::summary() const {
  std::string out;
  for (size_t s = 0; s < spec_.stages.size(); ++s) {
    int st = static_cast<int>(s);
    int running = 0;
    for (int i = 0; i < spec_.stages[s].tasks; ++i) {
      auto state = tasks_[taskIndex(st, i)].state;
      if (state == TaskState::kLaunching || state == TaskState::kRunning) ++running;
    }
    if (!out.empty()) out += ", ";
    out += spec_.stages[s].name + " " + std::to_string(stageSucceeded(st)) + "/" +
           std::to_string(spec_.stages[s].tasks);
    if (running > 0) out += " (" + std::to_string(running) + " running)";
  }
  return out;
}

}  // namespace morpheus::dagam
