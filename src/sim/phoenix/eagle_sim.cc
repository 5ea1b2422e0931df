#include "sim/phoenix/eagle_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <queue>
#include <utility>

#include "sim/workloads/workload_rng.h"

namespace morpheus::sim {

namespace {

// One key per set of hard constraints (soft ones do not restrict probing).
std::string constraintKey(const std::vector<sched::PlacementConstraint>& cs) {
  std::vector<std::string> parts;
  for (const auto& c : cs) {
    if (c.hard) parts.push_back(sched::describeConstraint(c));
  }
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (const auto& p : parts) key += p + ";";
  return key;
}

bool meetsAll(const std::vector<sched::PlacementConstraint>& cs,
              const sched::NodeAttributes& attrs) {
  return std::all_of(cs.begin(), cs.end(), [&attrs](const sched::PlacementConstraint& c) {
    return !c.hard || sched::constraintMatches(c, attrs);
  });
}

}  // namespace

const char* eaglePolicyName(const EagleOptions& opts) {
  switch (opts.order) {
    case EagleQueueOrder::kCrv:
      if (opts.crv_long_steering)
        return opts.crv_placement ? "phoenix-hybrid-placement-steer" : "phoenix-hybrid-steer";
      return opts.crv_placement ? "phoenix-hybrid-placement" : "phoenix-hybrid";
    case EagleQueueOrder::kConstrainedFirst:
      return "phoenix-hybrid-no-crv";
    case EagleQueueOrder::kSrpt:
      break;
  }
  return "eagle-c";
}

EagleCluster::EagleCluster(EagleOptions opts, uint64_t seed) : opts_(opts), seed_(seed) {
  if (opts_.order == EagleQueueOrder::kCrv)
    crv_ = std::make_unique<sched::ConstraintResourceVector>();
}

int32_t EagleCluster::addWorker(sched::NodeAttributes attrs, bool short_partition) {
  Worker w;
  w.attrs = std::move(attrs);
  w.short_partition = short_partition;
  workers_.push_back(std::move(w));
  const auto id = static_cast<int32_t>(workers_.size()) - 1;
  const bool tracking = crv_ && (opts_.crv_placement || opts_.crv_long_steering);
  if (tracking) worker_sets_.emplace_back();
  for (auto& [key, m] : matching_) {  // ids ascend: the lists stay sorted
    if (!meetsAll(m.constraints, workers_.back().attrs)) continue;
    m.workers.push_back(id);
    if (tracking && m.constrained) worker_sets_.back().push_back(&m);
  }
  idle_.insert(id);
  if (crv_) {
    crv_nodes_.push_back(
        crv_->addNode(NodeId("w" + std::to_string(id)), workers_.back().attrs, /*free_vcores=*/1));
  }
  return id;
}

EagleCluster::MatchSet& EagleCluster::matching(const std::string& key,
                                               const std::vector<sched::PlacementConstraint>& cs) {
  auto it = matching_.find(key);
  if (it != matching_.end()) return it->second;
  MatchSet m;
  m.constraints = cs;
  m.constrained = std::any_of(cs.begin(), cs.end(), [](const auto& c) { return c.hard; });
  for (size_t i = 0; i < workers_.size(); i++) {
    if (meetsAll(cs, workers_[i].attrs)) m.workers.push_back(static_cast<int32_t>(i));
  }
  MatchSet& set = matching_.emplace(key, std::move(m)).first->second;
  if (crv_ && (opts_.crv_placement || opts_.crv_long_steering) && set.constrained) {
    for (int32_t w : set.workers) worker_sets_[static_cast<size_t>(w)].push_back(&set);
  }
  return set;
}

// probe_ratio x tasks distinct random matching workers, chosen first among
// those not running long tasks (SSS: the short partition and idle or
// short-busy general workers); only when these are too few, the rest among
// matching workers running long tasks (the probe waits for the long task:
// the head-of-line blocking Phoenix's reordering addresses). phoenix-hybrid
// splits the first group: workers without another constrained resource
// under pressure first (eagle_sim.h); Eagle-C's draws are unchanged (the
// middle pool is empty and draws nothing).
std::vector<int32_t> EagleCluster::probeTargets(size_t job, const std::vector<int32_t>& match) {
  std::vector<int32_t> free, pressured, behind_long;
  const JobState& j = jobs_.at(job);
  const bool placing = crv_ && opts_.crv_placement;
  if (placing) {  // CRV-aware placement: calm workers first
    for (auto& [key, m] : matching_) {
      m.pressured =
          m.constrained && &m != j.set && crv_->estimatedWait(m.constraints, m.crv_ids) > Millis(0);
    }
  }
  for (int32_t w : match) {
    if (workers_[static_cast<size_t>(w)].running_long) {
      behind_long.push_back(w);
    } else if (placing && std::any_of(worker_sets_[static_cast<size_t>(w)].begin(),
                                      worker_sets_[static_cast<size_t>(w)].end(),
                                      [](const MatchSet* m) { return m->pressured; })) {
      pressured.push_back(w);
    } else {
      free.push_back(w);
    }
  }
  size_t want = static_cast<size_t>(opts_.probe_ratio) * static_cast<size_t>(j.unlaunched);
  rng::Stream s(seed_, job, -1, "eagle-probe");
  uint64_t draw = 0;
  std::vector<int32_t> out;
  for (auto* pool : {&free, &pressured, &behind_long}) {
    const size_t n = std::min(pool->size(), want - out.size());
    for (size_t i = 0; i < n; i++) {
      size_t k = i + static_cast<size_t>(s.below(draw++, static_cast<int64_t>(pool->size() - i)));
      std::swap((*pool)[i], (*pool)[k]);
      out.push_back((*pool)[i]);
    }
  }
  return out;
}

bool EagleCluster::submit(size_t job, bool is_long, int32_t tasks, Millis task_duration,
                          const std::vector<sched::PlacementConstraint>& constraints) {
  MatchSet& set = matching(constraintKey(constraints), constraints);
  const std::vector<int32_t>& match = set.workers;
  if (match.empty() || tasks <= 0) return false;
  if (is_long && std::all_of(match.begin(), match.end(), [this](int32_t w) {
        return workers_[static_cast<size_t>(w)].short_partition;
      })) {
    return false;  // only short-partition workers match: no worker may run it
  }
  jobs_[job] = JobState{is_long, tasks, task_duration, next_seq_++, &set};
  if (crv_) crv_->changeDemand(set.constraints, 1, task_duration, tasks);
  if (is_long) {
    set.long_jobs.push_back(job);
    return true;
  }
  for (int32_t w : probeTargets(job, match)) {
    workers_[static_cast<size_t>(w)].probes.push_back(Probe{job, 0});
  }
  return true;
}

void EagleCluster::taskFinished(int32_t worker) {
  Worker& w = workers_[static_cast<size_t>(worker)];
  if (!w.running) return;
  if (!w.running_long) w.sticky = w.running;  // SBP: the probe stays
  w.running.reset();
  w.running_long = false;
  idle_.insert(worker);
  if (crv_) crv_->nodeFreeChanged(crv_nodes_[static_cast<size_t>(worker)], 1);
}

int32_t EagleCluster::unlaunched(size_t job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.unlaunched;
}

Millis EagleCluster::estimatedWait(size_t job) const {
  auto it = jobs_.find(job);
  if (!crv_ || it == jobs_.end()) return Millis(0);
  return crv_->estimatedWait(it->second.set->constraints, it->second.set->crv_ids);
}

int64_t EagleCluster::probeKey(const JobState& j) const {
  const int64_t work = j.unlaunched * j.task_duration.count();
  switch (opts_.order) {
    case EagleQueueOrder::kCrv:
      return work - crv_->estimatedWait(j.set->constraints, j.set->crv_ids).count();
    case EagleQueueOrder::kConstrainedFirst:
      // Unconstrained work after every constrained one (remaining work stays
      // far below 2^62 ms).
      return j.set->constrained ? work : work + (int64_t{1} << 62);
    case EagleQueueOrder::kSrpt:
      break;
  }
  return work;
}

// SRPT (or Phoenix's key, probeKey) with starvation prevention; late
// binding drops probes of jobs with nothing left to launch. Dropping them all
// first picks the same probe as dropping them one by one when reached: a dead
// probe never launches a task and its job never gains one, so it only ever
// leaves the queue, whichever order reaches it; in one scan.
std::optional<size_t> EagleCluster::takeProbe(Worker& w) {
  std::erase_if(w.probes, [this](const Probe& p) { return jobs_.at(p.job).unlaunched == 0; });
  if (w.probes.empty()) return std::nullopt;
  auto pick = w.probes.end();
  int64_t pick_work = 0;
  for (auto it = w.probes.begin(); it != w.probes.end(); ++it) {
    if (it->bypassed >= opts_.starvation_bound) {
      pick = it;  // the oldest starving probe
      break;
    }
    const int64_t work = probeKey(jobs_.at(it->job));
    if (pick == w.probes.end() || work < pick_work) {
      pick = it;
      pick_work = work;
    }
  }
  const size_t job = pick->job;
  w.probes.erase(pick);
  for (auto& p : w.probes) p.bypassed++;
  return job;
}

// The centralized scheduler: the first queued long job with a task left whose
// constraints `worker` meets — the earliest head among the constraint sets
// the worker meets (finished jobs leave the queues on the way).
std::optional<size_t> EagleCluster::nextLong(int32_t worker, bool constrained_only) {
  std::optional<size_t> best;
  for (auto& [key, m] : matching_) {
    while (!m.long_jobs.empty() && jobs_.at(m.long_jobs.front()).unlaunched == 0)
      m.long_jobs.pop_front();
    if (m.long_jobs.empty() || (constrained_only && !m.constrained) ||
        !std::binary_search(m.workers.begin(), m.workers.end(), worker))
      continue;
    const size_t head = m.long_jobs.front();
    if (!best || jobs_.at(head).seq < jobs_.at(*best).seq) best = head;
  }
  return best;
}

bool EagleCluster::scarcePressured(int32_t worker) {
  if (!crv_ || !opts_.crv_long_steering) return false;
  for (MatchSet* m : worker_sets_[static_cast<size_t>(worker)]) {
    if (2 * m->workers.size() < workers_.size() &&
        crv_->estimatedWait(m->constraints, m->crv_ids) > Millis(0))
      return true;
  }
  return false;
}

void EagleCluster::start(int32_t worker, size_t job, std::vector<Started>& out) {
  Worker& w = workers_[static_cast<size_t>(worker)];
  JobState& j = jobs_.at(job);
  j.unlaunched--;
  w.running = job;
  w.running_long = j.is_long;
  w.sticky.reset();
  if (crv_) {
    crv_->changeDemand(j.set->constraints, 1, j.task_duration, -1);
    crv_->nodeFreeChanged(crv_nodes_[static_cast<size_t>(worker)], -1);
  }
  out.push_back(Started{job, worker});
}

std::vector<EagleCluster::Started> EagleCluster::dispatch() {
  std::vector<Started> out;
  // Only idle workers take work, in worker order (as a scan over all would).
  for (auto it = idle_.begin(); it != idle_.end();) {
    const int32_t wi = *it;
    Worker& w = workers_[static_cast<size_t>(wi)];
    const size_t before = out.size();
    if (w.sticky && jobs_.at(*w.sticky).unlaunched > 0) {
      start(wi, *w.sticky, out);
    } else {
      w.sticky.reset();
      if (auto job = takeProbe(w)) {
        start(wi, *job, out);
      } else if (!w.short_partition) {
        if (auto long_job = nextLong(wi, scarcePressured(wi))) start(wi, *long_job, out);
      }
    }
    it = out.size() > before ? idle_.erase(it) : std::next(it);
  }
  return out;
}

Result<PhoenixSimResult> runEagleSim(const PhoenixSimOptions& opts, const EagleOptions& eagle) {
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixOptions(opts));
  if (!(eagle.short_partition >= 0 && eagle.short_partition < 1))
    return invalidArgument("short_partition", "must be in [0, 1)");
  if (eagle.probe_ratio < 1) return invalidArgument("probe_ratio", "must be >= 1");
  if (eagle.starvation_bound < 0) return invalidArgument("starvation_bound", "must be >= 0");
  const auto wall0 = std::chrono::steady_clock::now();
  PhoenixSimResult out;
  out.policy = eaglePolicyName(eagle);
  EagleCluster cluster(eagle, opts.seed);
  const int64_t slots =
      std::min<int64_t>(opts.node_size.vcores(), opts.node_size.memoryMib() / 2048);
  for (int32_t n = 0; n < opts.nodes; n++) {
    const auto attrs = phoenixNodeAttributes(opts, n);
    const bool in_short = inShortPartition(n, eagle.short_partition);
    for (int64_t k = 0; k < slots; k++) cluster.addWorker(attrs, in_short);
  }
  const TimePoint t0 = fromEpochMs(0);
  std::vector<PhoenixJob> jobs = makePhoenixJobs(opts, t0);
  out.jobs = static_cast<int64_t>(jobs.size());
  using End = std::pair<TimePoint, int32_t>;  // (finish, worker)
  std::priority_queue<End, std::vector<End>, std::greater<>> ends;
  size_t next = 0, finished = 0;
  TimePoint now = t0;
  PhoenixProgress progress(opts.progress, out.policy, jobs.size());
  KindLongOccupancy occupancy(opts, t0);
  bool dirty = true;  // something arrived, finished or started since the last round
  while (finished < jobs.size()) {
    for (; next < jobs.size() && jobs[next].submit <= now; next++) {
      dirty = true;
      PhoenixJob& j = jobs[next];
      if (!cluster.submit(next, !j.is_short, j.tasks, j.duration, j.constraints)) {
        j.rejected = true;
        out.rejected++;
        finished++;
      }
    }
    while (!ends.empty() && ends.top().first <= now) {
      dirty = true;
      const int32_t w = ends.top().second;
      ends.pop();
      PhoenixJob& j = jobs[*cluster.worker(w).running];
      if (!j.is_short) occupancy.change(static_cast<int32_t>(w / slots), -1, now);
      cluster.taskFinished(w);
      if (++j.done == j.tasks) {
        j.finish = now;
        finished++;
      }
    }
    if (dirty) {
      const auto started = cluster.dispatch();
      dirty = !started.empty();
      for (const auto& st : started) {
        PhoenixJob& j = jobs[st.job];
        if (!j.is_short) occupancy.change(static_cast<int32_t>(st.worker / slots), 1, now);
        ends.emplace(now + phoenixTaskRunTime(opts.seed, st.job, j.started++, j.duration),
                     st.worker);
      }
    }
    progress.at(now - t0, finished);
    if (dirty) {
      now += Seconds(1);
      continue;
    }
    MORPHEUS_ASSIGN_OR_RETURN(
        std::optional<TimePoint> tick,
        nextEventTick("eagle sim", t0, now,
                      next < jobs.size() ? std::optional(jobs[next].submit) : std::nullopt,
                      ends.empty() ? std::nullopt : std::optional(ends.top().first), finished,
                      jobs.size()));
    if (!tick) break;
    now = *tick;
  }
  summarisePhoenixJobs(jobs, opts.kinds.size(), out);
  occupancy.finish(now, out);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace morpheus::sim
