#include "sim/phoenix/eagle_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <queue>
#include <tuple>
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

// wait_breakdown: over virtual time (ms since t0), when a constraint set had
// an idle worker; the state sampled after each dispatch round holds until
// the next round.
class IdleLog {
 public:
  void sample(int64_t now, bool idle) {
    if (!t_.empty() && idle == state_.back()) return;
    cum_.push_back(cumAt(now));
    t_.push_back(now);
    state_.push_back(idle);
  }
  // Milliseconds in [a, b] with an idle worker (0 before the first sample).
  int64_t idleBetween(int64_t a, int64_t b) const { return cumAt(b) - cumAt(a); }

 private:
  int64_t cumAt(int64_t x) const {
    auto it = std::upper_bound(t_.begin(), t_.end(), x);
    if (it == t_.begin()) return 0;
    const size_t i = static_cast<size_t>(std::distance(t_.begin(), it)) - 1;
    return cum_[i] + (state_[i] ? x - t_[i] : 0);
  }
  std::vector<int64_t> t_, cum_;
  std::vector<bool> state_;
};

// wait_breakdown: one task as a worker ran it (ms since t0).
struct TaskSpan {
  int64_t start = 0, end = 0;
  size_t job = 0;
};

}  // namespace

ShortWaitSummary summariseShortWaits(const std::vector<ShortJobWait>& waits, double q) {
  ShortWaitSummary out;
  if (waits.empty()) return out;
  std::vector<double> r;
  for (const auto& w : waits) r.push_back(w.response_s);
  std::sort(r.begin(), r.end());
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(r.size()))) - 1;
  out.threshold_s = r[std::min(i, r.size() - 1)];
  int64_t probes = 0, behind = 0;
  ShortJobWait& m = out.mean;
  for (const auto& w : waits) {
    if (w.response_s < out.threshold_s) continue;
    out.jobs++;
    if (w.constrained) out.constrained++;
    out.tasks += w.tasks;
    out.long_starts_while_waiting += static_cast<double>(w.long_starts_while_waiting);
    probes += w.probes;
    behind += w.probes_behind_long;
    m.response_s += w.response_s;
    m.behind_long_full_s += w.behind_long_full_s;
    m.behind_long_free_s += w.behind_long_free_s;
    m.behind_short_full_s += w.behind_short_full_s;
    m.behind_short_free_s += w.behind_short_free_s;
    m.own_tasks_s += w.own_tasks_s;
    m.dispatch_s += w.dispatch_s;
    m.run_s += w.run_s;
  }
  const auto n = static_cast<double>(out.jobs);
  out.tasks /= n;
  out.long_starts_while_waiting /= n;
  out.probes_behind_long_share =
      probes > 0 ? static_cast<double>(behind) / static_cast<double>(probes) : 0;
  for (double* x :
       {&m.response_s, &m.behind_long_full_s, &m.behind_long_free_s, &m.behind_short_full_s,
        &m.behind_short_free_s, &m.own_tasks_s, &m.dispatch_s, &m.run_s})
    *x /= n;
  return out;
}

const char* eaglePolicyName(const EagleOptions& opts) {
  switch (opts.order) {
    case EagleQueueOrder::kCrv:
      if (opts.steal) return "phoenix-hybrid-steal";
      if (opts.crv_long_steering)
        return opts.crv_placement ? "phoenix-hybrid-placement-steer" : "phoenix-hybrid-steer";
      return opts.crv_placement ? "phoenix-hybrid-placement" : "phoenix-hybrid";
    case EagleQueueOrder::kConstrainedFirst:
      return "phoenix-hybrid-no-crv";
    case EagleQueueOrder::kOracle:
      return "queue-order-oracle";
    case EagleQueueOrder::kSrpt:
      break;
  }
  return opts.steal ? "eagle-c-steal" : "eagle-c";
}

EagleCluster::EagleCluster(EagleOptions opts, uint64_t seed)
    : opts_(opts), seed_(seed), members_(opts.wait_breakdown || opts.steal) {
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
  if (members_) member_of_.emplace_back();
  for (auto& [key, m] : matching_) {  // ids ascend: the lists stay sorted
    if (!meetsAll(m.constraints, workers_.back().attrs)) continue;
    m.workers.push_back(id);
    if (tracking && m.constrained) worker_sets_.back().push_back(&m);
    if (members_) member_of_.back().push_back(&m);
  }
  idle_.insert(id);
  idleChanged(id, 1);
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
  m.index = set_list_.size();
  MatchSet& set = matching_.emplace(key, std::move(m)).first->second;
  set_list_.push_back(&set);
  if (crv_ && (opts_.crv_placement || opts_.crv_long_steering) && set.constrained) {
    for (int32_t w : set.workers) worker_sets_[static_cast<size_t>(w)].push_back(&set);
  }
  if (members_) {
    for (int32_t w : set.workers) {
      member_of_[static_cast<size_t>(w)].push_back(&set);
      if (idle_.count(w) > 0) set.idle++;
    }
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
  JobState& js = jobs_[job];
  js.is_long = is_long;
  js.unlaunched = tasks;
  js.task_duration = task_duration;
  js.seq = next_seq_++;
  js.set = &set;
  if (crv_) crv_->changeDemand(set.constraints, 1, task_duration, tasks);
  if (is_long) {
    set.long_jobs.push_back(job);
    return true;
  }
  if (opts_.steal) set.waiting.emplace(js.seq, job);
  for (int32_t w : probeTargets(job, match)) {
    Worker& target = workers_[static_cast<size_t>(w)];
    target.probes.push_back(Probe{job, 0});
    if (opts_.job_bounds) js.probed.push_back(w);
    js.probes++;
    if (target.running_long) js.probes_behind_long++;
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
  idleChanged(worker, 1);
  if (crv_) crv_->nodeFreeChanged(crv_nodes_[static_cast<size_t>(worker)], 1);
}

int32_t EagleCluster::unlaunched(size_t job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.unlaunched;
}

size_t EagleCluster::matchSetOf(size_t job) const { return jobs_.at(job).set->index; }

std::vector<size_t> EagleCluster::matchSetsOf(int32_t worker) const {
  std::vector<size_t> out;
  for (const MatchSet* m : member_of_[static_cast<size_t>(worker)]) out.push_back(m->index);
  return out;
}

std::pair<int32_t, int32_t> EagleCluster::probesSent(size_t job) const {
  const JobState& j = jobs_.at(job);
  return {j.probes, j.probes_behind_long};
}

void EagleCluster::idleChanged(int32_t worker, int32_t delta) {
  if (!members_) return;
  for (MatchSet* m : member_of_[static_cast<size_t>(worker)]) m->idle += delta;
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
    case EagleQueueOrder::kOracle:  // takeProbe orders by (class, work)
      break;
  }
  return work;
}

int64_t EagleCluster::oracleClass(size_t job) const {
  const auto& keys = *opts_.oracle_key;
  return job < keys.size() ? keys[job] : INT64_MAX;
}

// SRPT (or Phoenix's key, probeKey) with starvation prevention; late
// binding drops probes of jobs with nothing left to launch. Dropping them all
// first picks the same probe as dropping them one by one when reached: a dead
// probe never launches a task and its job never gains one, so it only ever
// leaves the queue, whichever order reaches it; in one scan.
std::optional<size_t> EagleCluster::takeProbe(Worker& w) {
  std::erase_if(w.probes, [this](const Probe& p) { return jobs_.at(p.job).unlaunched == 0; });
  if (w.probes.empty()) return std::nullopt;
  if (opts_.order == EagleQueueOrder::kOracle) {  // (class, work, oldest); no starvation bound
    auto key = [this](const Probe& p) {
      return std::pair(oracleClass(p.job), probeKey(jobs_.at(p.job)));
    };
    auto best = w.probes.begin();
    auto best_key = key(*best);
    for (auto it = std::next(best); it != w.probes.end(); ++it) {
      if (auto k = key(*it); k < best_key) {
        best = it;
        best_key = k;
      }
    }
    const size_t job = best->job;
    w.probes.erase(best);
    return job;
  }
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

std::optional<size_t> EagleCluster::stealable(int32_t worker) const {
  std::optional<std::pair<uint64_t, size_t>> best;
  for (const MatchSet* m : member_of_[static_cast<size_t>(worker)]) {
    if (!m->waiting.empty() && (!best || m->waiting.begin()->first < best->first))
      best = *m->waiting.begin();
  }
  if (!best) return std::nullopt;
  return best->second;
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
  if (opts_.steal && !j.is_long && j.unlaunched == 0) j.set->waiting.erase(j.seq);
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
      } else if (auto stolen = opts_.steal ? stealable(wi) : std::nullopt) {
        start(wi, *stolen, out);
      } else if (!w.short_partition) {
        if (auto long_job = nextLong(wi, scarcePressured(wi))) start(wi, *long_job, out);
      }
    }
    if (out.size() > before) {
      idleChanged(wi, -1);
      it = idle_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

Result<PhoenixSimResult> runEagleSim(const PhoenixSimOptions& opts, const EagleOptions& eagle) {
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixOptions(opts));
  if (!(eagle.short_partition >= 0 && eagle.short_partition < 1))
    return invalidArgument("short_partition", "must be in [0, 1)");
  if (eagle.probe_ratio < 1) return invalidArgument("probe_ratio", "must be >= 1");
  if (eagle.starvation_bound < 0) return invalidArgument("starvation_bound", "must be >= 0");
  if (eagle.steal && (eagle.crv_placement || eagle.crv_long_steering ||
                      eagle.order == EagleQueueOrder::kConstrainedFirst ||
                      eagle.order == EagleQueueOrder::kOracle))
    return invalidArgument("steal", "combines with kSrpt or kCrv alone");
  if (eagle.order == EagleQueueOrder::kOracle && !eagle.oracle_key)
    return invalidArgument("oracle_key", "required with kOracle");
  const auto wall0 = std::chrono::steady_clock::now();
  PhoenixSimResult out;
  out.policy = eaglePolicyName(eagle);
  EagleCluster cluster(eagle, opts.seed);
  const int64_t slots =
      std::min<int64_t>(opts.node_size.vcores(), opts.node_size.memoryMib() / 2048);
  const std::vector<sched::NodeAttributes> node_attrs = phoenixClusterAttributes(opts);
  for (int32_t n = 0; n < opts.nodes; n++) {
    const auto& attrs = node_attrs[static_cast<size_t>(n)];
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
  // wait_breakdown: each worker's tasks in start order, each job's critical
  // task (its latest end, then latest start) and worker, each set's idle log.
  const bool breakdown = eagle.wait_breakdown;
  std::vector<std::vector<TaskSpan>> spans(breakdown ? cluster.workerCount() : 0);
  struct Critical {
    int64_t start = -1, end = -1;
    int32_t worker = -1;
  };
  std::vector<Critical> critical(breakdown ? jobs.size() : 0);
  std::vector<IdleLog> idle_logs;
  // Per set, (round ms, long tasks started on its workers up to that round).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> long_starts;
  auto ms = [t0](TimePoint t) { return (t - t0).count(); };
  // job_bounds: when the long task each worker runs ends; each job's bound.
  const bool bounds = eagle.job_bounds;
  std::vector<TimePoint> long_end(bounds ? cluster.workerCount() : 0, t0);
  std::vector<double> bound_s(bounds ? jobs.size() : 0, -1);
  bool dirty = true;  // something arrived, finished or started since the last round
  while (finished < jobs.size()) {
    for (; next < jobs.size() && jobs[next].submit <= now; next++) {
      dirty = true;
      PhoenixJob& j = jobs[next];
      if (!cluster.submit(next, !j.is_short, j.tasks, j.duration, j.constraints)) {
        j.rejected = true;
        out.rejected++;
        finished++;
      } else if (bounds && j.is_short) {
        std::vector<int64_t> free_at, runs;
        for (int32_t w : cluster.probedWorkers(next)) {
          const TimePoint f = cluster.worker(w).running_long
                                  ? std::max(now, long_end[static_cast<size_t>(w)])
                                  : now;
          free_at.push_back((f - j.submit).count());
        }
        for (int32_t k = 0; k < j.tasks; k++)
          runs.push_back(phoenixTaskRunTime(opts.seed, next, k, j.duration).count());
        bound_s[next] = static_cast<double>(placementBoundMs(std::move(free_at), runs)) / 1000.0;
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
        const TimePoint end = now + phoenixTaskRunTime(opts.seed, st.job, j.started++, j.duration);
        ends.emplace(end, st.worker);
        if (bounds && !j.is_short) long_end[static_cast<size_t>(st.worker)] = end;
        if (breakdown) {
          if (!j.is_short) {
            long_starts.resize(cluster.matchSetCount());
            for (size_t k : cluster.matchSetsOf(st.worker)) {
              auto& v = long_starts[k];
              if (v.empty() || v.back().first != ms(now))
                v.emplace_back(ms(now), v.empty() ? 0 : v.back().second);
              v.back().second++;
            }
          }
          spans[static_cast<size_t>(st.worker)].push_back(TaskSpan{ms(now), ms(end), st.job});
          Critical& c = critical[st.job];
          if (ms(end) >= c.end) c = Critical{ms(now), ms(end), st.worker};
        }
      }
      if (breakdown) {
        idle_logs.resize(cluster.matchSetCount());
        for (size_t k = 0; k < idle_logs.size(); k++)
          idle_logs[k].sample(ms(now), cluster.matchSetHasIdle(k));
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
  if (bounds) {
    out.job_response_s.assign(jobs.size(), -1);
    out.job_bound_s.assign(jobs.size(), -1);
    std::vector<double> short_bounds;
    for (size_t ji = 0; ji < jobs.size(); ji++) {
      const PhoenixJob& j = jobs[ji];
      if (j.rejected || !j.is_short) continue;
      out.job_response_s[ji] = static_cast<double>((j.finish - j.submit).count()) / 1000.0;
      out.job_bound_s[ji] = bound_s[ji];
      short_bounds.push_back(bound_s[ji]);
    }
    out.bound_short_p99_s = percentilesOf(std::move(short_bounds)).p99;
  }
  for (size_t ji = 0; breakdown && ji < jobs.size(); ji++) {
    const PhoenixJob& j = jobs[ji];
    if (j.rejected || !j.is_short) continue;
    const Critical& c = critical[ji];
    const IdleLog& idle = idle_logs[cluster.matchSetOf(ji)];
    ShortJobWait w;
    w.job = ji;
    w.kind = j.kind;
    w.constrained = !j.constraints.empty();
    w.tasks = j.tasks;
    std::tie(w.probes, w.probes_behind_long) = cluster.probesSent(ji);
    const int64_t submit = ms(j.submit);
    int64_t dispatch = ms(j.finish) - c.end, own = 0, long_full = 0, long_free = 0, short_full = 0,
            short_free = 0;
    // What the critical worker ran in [submit, c.start]; the gaps are idle.
    const auto& ws = spans[static_cast<size_t>(c.worker)];
    auto it = std::upper_bound(ws.begin(), ws.end(), submit,
                               [](int64_t t, const TaskSpan& sp) { return t < sp.end; });
    int64_t at = submit;
    for (; it != ws.end() && it->start < c.start; ++it) {
      const int64_t a = std::max(it->start, submit), b = std::min(it->end, c.start);
      dispatch += a - at;
      at = b;
      if (it->job == ji) {
        own += b - a;
        continue;
      }
      const int64_t free_ms = idle.idleBetween(a, b);
      if (jobs[it->job].is_short) {
        short_free += free_ms;
        short_full += b - a - free_ms;
      } else {
        long_free += free_ms;
        long_full += b - a - free_ms;
      }
    }
    dispatch += c.start - at;
    // Long starts on its workers in [submit, c.start): up to the round before
    // c.start minus up to the round before submit.
    if (const size_t k = cluster.matchSetOf(ji); k < long_starts.size()) {
      auto upTo = [&v = long_starts[k]](int64_t t) -> int64_t {
        auto i = std::lower_bound(v.begin(), v.end(), std::pair<int64_t, int64_t>(t, INT64_MIN));
        return i == v.begin() ? 0 : std::prev(i)->second;
      };
      w.long_starts_while_waiting = upTo(c.start) - upTo(submit);
    }
    auto sec = [](int64_t v) { return static_cast<double>(v) / 1000.0; };
    w.response_s = sec(ms(j.finish) - submit);
    w.run_s = sec(c.end - c.start);
    w.own_tasks_s = sec(own);
    w.dispatch_s = sec(dispatch);
    w.behind_long_full_s = sec(long_full);
    w.behind_long_free_s = sec(long_free);
    w.behind_short_full_s = sec(short_full);
    w.behind_short_free_s = sec(short_free);
    out.short_waits.push_back(w);
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

int64_t placementBoundMs(std::vector<int64_t> free_at, const std::vector<int64_t>& runs) {
  if (free_at.empty() || runs.empty()) return 0;
  std::sort(free_at.begin(), free_at.end());
  int64_t work = 0, longest = 0;
  for (int64_t r : runs) {
    work += r;
    longest = std::max(longest, r);
  }
  // Water level: with the m earliest workers busy from their free times
  // until T, T = (work + their free times) / m; the first m whose T does not
  // reach the next worker's free time.
  int64_t sum = 0, level = 0;
  const auto n = static_cast<int64_t>(free_at.size());
  for (int64_t m = 1; m <= n; m++) {
    sum += free_at[static_cast<size_t>(m - 1)];
    level = (work + sum) / m;
    if (m == n || level <= free_at[static_cast<size_t>(m)]) break;
  }
  return std::max(free_at.front() + longest, level);
}

// sacrifice: added to a sacrificed job's class (far above any time in ms).
constexpr int64_t kSacrificed = int64_t{1} << 50;

Result<PhoenixSimResult> runQueueOrderSearch(const PhoenixSimOptions& opts,
                                             const EagleOptions& eagle, int32_t repair_passes) {
  if (eagle.steal || eagle.crv_placement || eagle.crv_long_steering)
    return invalidArgument("eagle", "steal and the CRV options must be off");
  if (repair_passes < 0) return invalidArgument("repair_passes", "must be >= 0");
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixOptions(opts));
  const std::vector<PhoenixJob> jobs = makePhoenixJobs(opts, fromEpochMs(0));
  std::optional<PhoenixSimResult> best;
  std::vector<QueueOrderPass> passes;
  std::vector<double> last;  // the last pass's job_response_s
  double last_p99 = 0;
  auto pass = [&](const std::string& order, EagleOptions e) -> Status {
    e.job_bounds = true;
    MORPHEUS_ASSIGN_OR_RETURN(PhoenixSimResult r, runEagleSim(opts, e));
    passes.push_back(
        QueueOrderPass{order, r.short_jobs.p99, r.bound_short_p99_s, r.long_unconstrained.mean});
    last = r.job_response_s;
    last_p99 = r.short_jobs.p99;
    if (!best || r.short_jobs.p99 < best->short_jobs.p99) best = std::move(r);
    return Status::ok();
  };
  EagleOptions srpt = eagle;
  srpt.order = EagleQueueOrder::kSrpt;
  srpt.oracle_key.reset();
  MORPHEUS_RETURN_IF_ERROR(pass("srpt", srpt));
  std::vector<int64_t> keys(jobs.size(), 0);  // edf: the floor finish, ms
  for (size_t i = 0; i < jobs.size(); i++) {
    int64_t longest = 0;
    for (int32_t k = 0; k < jobs[i].tasks; k++)
      longest = std::max(longest, phoenixTaskRunTime(opts.seed, i, k, jobs[i].duration).count());
    keys[i] = (jobs[i].submit - fromEpochMs(0)).count() + longest;
  }
  EagleOptions oracle = srpt;
  oracle.order = EagleQueueOrder::kOracle;
  oracle.oracle_key = std::make_shared<const std::vector<int64_t>>(keys);
  MORPHEUS_RETURN_IF_ERROR(pass("edf", oracle));
  // sacrifice: the short jobs of most work (tasks x expected duration), 0.9%
  // of them, after every other job; their response times lie above the p99
  // in any case.
  std::vector<std::pair<int64_t, size_t>> work;
  for (size_t i = 0; i < jobs.size(); i++) {
    if (jobs[i].is_short) work.emplace_back(jobs[i].tasks * jobs[i].duration.count(), i);
  }
  std::sort(work.begin(), work.end(), std::greater<>());
  std::vector<bool> sacrificed(jobs.size(), false);
  const auto n_sacrificed = static_cast<size_t>(0.009 * static_cast<double>(work.size()));
  for (size_t k = 0; k < n_sacrificed; k++) {
    sacrificed[work[k].second] = true;
    keys[work[k].second] += kSacrificed;
  }
  oracle.oracle_key = std::make_shared<const std::vector<int64_t>>(keys);
  MORPHEUS_RETURN_IF_ERROR(pass("sacrifice", oracle));
  for (int32_t k = 1; k <= repair_passes; k++) {
    // The last pass's p95 (nearest rank) over its short jobs.
    std::vector<double> r;
    for (double v : last) {
      if (v >= 0) r.push_back(v);
    }
    if (r.empty()) break;
    std::sort(r.begin(), r.end());
    const double p95 = r[std::min(
        r.size() - 1, static_cast<size_t>(std::ceil(0.95 * static_cast<double>(r.size()))) - 1)];
    for (size_t i = 0; i < jobs.size(); i++) {
      if (last[i] >= last_p99 && !sacrificed[i])
        keys[i] -= static_cast<int64_t>(std::llround((last[i] - p95) * 1000));
    }
    oracle.oracle_key = std::make_shared<const std::vector<int64_t>>(keys);
    MORPHEUS_RETURN_IF_ERROR(pass("repair-" + std::to_string(k), oracle));
  }
  best->policy = "queue-order-bound";
  best->passes = std::move(passes);
  return *std::move(best);
}

}  // namespace morpheus::sim
