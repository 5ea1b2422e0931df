#include "rm/runtime/harvest_tracker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/config.h"
#include "harvest/harvest_selection.h"

namespace morpheus::rm {
namespace {

// The scheduler core's ask identity, as runtime.cc's askKey: the request id,
// or the priority when it is empty.
std::string harvestAskKey(const sched::ResourceRequest& a) {
  return a.request_id.empty() ? "\x01p" + std::to_string(a.priority) : a.request_id;
}

// The rise quantile of the hold's prediction (morpheus-harvest-sim's
// default, --history-rise-quantile).
constexpr double kHoldRiseQuantile = 0.9;

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "none" : out;
}

// The log line of a job's fallback class changing from `from` to `to`
// ("" for none) while its chosen `classes` have no room, or room again.
std::string fallbackNote(const AppId& app, JobLength type, const std::string& name,
                         const std::vector<std::string>& classes, const Resource& container,
                         const std::string& from, const std::string& to) {
  if (to.empty()) {
    return fmt::format("harvesting: {}: classes {} have room again; fallback {} dropped",
                       app.value(), joined(classes), from);
  }
  return fmt::format(
      "harvesting: {} ({} job '{}'): classes {} have no room for a container of {}; falls back "
      "to class {} (ranked)",
      app.value(), jobLengthName(type), name, joined(classes), container.toString(), to);
}

}  // namespace

HarvestTracker::HarvestTracker(HarvestRmOptions opts, Clock& clock)
    : opts_(std::move(opts)), clock_(clock) {}

HarvestTracker::~HarvestTracker() { halt(); }

void HarvestTracker::setStore(store::StateStore* store) {
  MutexLock lk(mu_);
  store_ = store;
}

void HarvestTracker::start(std::function<Status()> recluster) {
  if (!classesOn()) return;
  MutexLock lk(mu_);
  if (!stopped_) return;
  stopped_ = false;
  recluster_ = std::move(recluster);
  cluster_timer_ = clock_.scheduleAfter(Millis(0), [this] { clusterTick(); });
  if (opts_.save_every > Millis(0)) {
    save_timer_ = clock_.scheduleAfter(opts_.save_every, [this] { saveTick(); });
  }
}

void HarvestTracker::halt() {
  MutexLock lk(mu_);
  stopped_ = true;
  clock_.cancel(cluster_timer_);
  clock_.cancel(save_timer_);
  idle_.wait(mu_, [this]() REQUIRES(mu_) { return running_ == 0; });
}

void HarvestTracker::stop() {
  halt();
  saveUsage();
}

// On the clock's timer thread, never on the scheduler strand.
void HarvestTracker::clusterTick() {
  std::function<Status()> recluster;
  {
    MutexLock lk(mu_);
    if (stopped_) return;
    running_++;
    recluster = recluster_;
  }
  if (Status st = recluster(); !st.isOk()) {
    spdlog::warn("harvesting: primary tenants not clustered: {}", st.message());
  }
  MutexLock lk(mu_);
  running_--;
  if (!stopped_) {
    cluster_timer_ = clock_.scheduleAfter(opts_.cluster_every, [this] { clusterTick(); });
  }
  idle_.notify_all();
}

void HarvestTracker::saveTick() {
  {
    MutexLock lk(mu_);
    if (stopped_) return;
    running_++;
  }
  saveUsage();
  MutexLock lk(mu_);
  running_--;
  if (!stopped_) save_timer_ = clock_.scheduleAfter(opts_.save_every, [this] { saveTick(); });
  idle_.notify_all();
}

void HarvestTracker::saveUsage() {
  store::StateStore* store = nullptr;
  std::vector<store::StateWrite> batch;
  {
    MutexLock lk(mu_);
    if (store_ == nullptr) return;
    store = store_;
    for (const auto& t : history_.takeChangedTenants()) {
      const UtilSeries* cpu = history_.tenantCpu(t);
      const UtilSeries* mem = history_.tenantMemory(t);
      if (cpu != nullptr && mem != nullptr) {
        batch.push_back({kHarvestUsageTable, t, encodeTenantUsage(*cpu, *mem)});
      }
    }
  }
  size_t failed = 0;
  Status last;
  for (const auto& w : batch) {
    if (Status st = store->commit({w}); !st.isOk()) {
      failed++;
      last = st;
    }
  }
  if (failed > 0) {
    spdlog::warn("harvesting: usage of {} of {} tenant(s) not saved: {}", failed, batch.size(),
                 last.message());
  }
}

Status HarvestTracker::recover() {
  store::StateStore* store = nullptr;
  {
    MutexLock lk(mu_);
    store = store_;
  }
  if (store == nullptr) return Status::ok();
  MORPHEUS_ASSIGN_OR_RETURN(auto rows, store->list(kHarvestRunsTable));
  std::map<std::string, Millis> runs;
  for (const auto& [job, value] : rows) {
    MORPHEUS_ASSIGN_OR_RETURN(Millis length, decodeHarvestRun(job, value));
    runs[job] = length;
  }
  MORPHEUS_ASSIGN_OR_RETURN(auto usage_rows, store->list(kHarvestUsageTable));
  std::vector<std::string> skipped;  // logged after the lock
  {
    MutexLock lk(mu_);
    for (const auto& [tenant, value] : usage_rows) {
      auto u = decodeTenantUsage(tenant, value, history_);
      if (!u.isOk()) {
        skipped.push_back(u.status().message());
        continue;
      }
      history_.restoreTenant(tenant, std::move(u->cpu), std::move(u->memory));
    }
    runs_ = std::move(runs);
  }
  for (const auto& why : skipped) {
    spdlog::warn("harvesting: {}; the tenant's history starts afresh", why);
  }
  return Status::ok();
}

std::optional<std::string> HarvestTracker::record(const NodeId& node, const Resource& total,
                                                  const std::string& tenant, double cpu_vcores,
                                                  int64_t memory_mib, TimePoint now) {
  const double cpu_cap = static_cast<double>(std::max<int64_t>(1, total.vcores()));
  const double mem_cap = static_cast<double>(std::max<int64_t>(1, total.memoryMib()));
  const std::string& who = tenant.empty() ? node.value() : tenant;
  MutexLock lk(mu_);
  history_.record(node, who, now, cpu_vcores / cpu_cap, static_cast<double>(memory_mib) / mem_cap);
  if (classes_.empty()) return std::nullopt;
  auto c = class_of_.find(who);
  return c == class_of_.end() ? "" : c->second;
}

Result<std::optional<std::vector<HarvestClass>>> HarvestTracker::cluster() const {
  std::vector<TenantSeries> series;
  {
    MutexLock lk(mu_);
    for (const auto& t : history_.tenants()) {
      const UtilSeries* s = history_.tenantCpu(t);
      if (s != nullptr && !s->buckets().empty()) series.push_back({t, s->regular()});
    }
  }
  if (series.empty()) return std::optional<std::vector<HarvestClass>>();
  // The FFT and k-means run without the lock.
  MORPHEUS_ASSIGN_OR_RETURN(auto classes, clusterTenants(series, opts_.classifier()));
  for (const auto& c : classes) {
    spdlog::info("harvesting: class {} ({}): average {:.2f}, peak {:.2f}, {} tenant(s)", c.id,
                 patternName(c.pattern), c.average, c.peak, c.tenants.size());
  }
  return std::optional<std::vector<HarvestClass>>(std::move(classes));
}

void HarvestTracker::setClasses(std::vector<HarvestClass> classes) {
  std::map<std::string, std::string> class_of;  // tenant -> class id
  for (const auto& c : classes) {
    for (const auto& t : c.tenants) class_of[t] = c.id;
  }
  MutexLock lk(mu_);
  classes_ = std::move(classes);
  class_of_ = std::move(class_of);
}

std::vector<HarvestClass> HarvestTracker::classes() const {
  MutexLock lk(mu_);
  return classes_;
}

std::string HarvestTracker::classOfNode(const NodeId& node) const {
  MutexLock lk(mu_);
  auto it = class_of_.find(history_.tenantOf(node));
  return it == class_of_.end() ? "" : it->second;
}

std::vector<std::string> HarvestTracker::selectLocked(
    const AppId& app, const Job& job, std::vector<HarvestNode> nodes,
    const std::vector<reprovision::StageState>& stages, std::string* note) const {
  if (classes_.empty() || job.base.empty()) return {};
  Resource container;
  int64_t pending = 0;
  for (const auto& [key, a] : job.base) {
    container = Resource::max(container, a.capability);
    pending += a.count;
  }
  // Breadth-first over the DAG the AM reports; without one, what it asks.
  int64_t concurrent = pending;
  if (!stages.empty()) {
    auto m = maxConcurrentContainers(stageShapes(stages));
    if (m.isOk() && *m > 0) concurrent = *m;
  }
  nodes = withCurrent(std::move(nodes));
  const JobLength type = typeOf(job);
  auto chosen = selectClasses(type, concurrent, classStates(classes_, nodes, container),
                              opts_.selection, harvestDraw(app.value()));
  *note = fmt::format(
      "harvesting: {} ({} job '{}', {} concurrent container(s) of {}) prefers classes {}",
      app.value(), jobLengthName(type), job.name, concurrent, container.toString(), joined(chosen));
  return chosen;
}

JobLength HarvestTracker::typeOf(const Job& job) const {
  auto run = runs_.find(job.name);
  return lengthType(run == runs_.end() ? std::nullopt : std::optional<Millis>(run->second),
                    opts_.selection);
}

std::vector<HarvestNode> HarvestTracker::withCurrent(std::vector<HarvestNode> nodes) const {
  for (auto& n : nodes) {
    const UtilSeries* cpu = history_.nodeCpu(n.id);
    n.current = cpu != nullptr && !cpu->buckets().empty() ? cpu->buckets().back().avg : 0;
  }
  return nodes;
}

std::vector<sched::PlacementConstraint> HarvestTracker::constraintsOf(const Job& job) {
  std::vector<std::string> classes = job.classes;
  if (!job.fallback.empty()) classes.push_back(job.fallback);
  std::vector<sched::PlacementConstraint> out;
  if (auto c = harvestConstraint(classes)) out.push_back(*c);
  if (job.fit) {
    // Held: a value no node has ("" is no node id), so no node matches.
    out.push_back({kHarvestNodeAttribute,
                   job.fit->empty() ? std::vector<std::string>{""} : *job.fit, true,
                   sched::ConstraintOp::kIn});
  }
  return out;
}

std::vector<sched::ResourceRequest> HarvestTracker::constrained(const Job& job) {
  const auto cs = constraintsOf(job);
  std::vector<sched::ResourceRequest> asks;
  for (const auto& [key, a] : job.base) {
    asks.push_back(a);
    asks.back().constraints.insert(asks.back().constraints.end(), cs.begin(), cs.end());
  }
  return asks;
}

bool HarvestTracker::noteAsks(const AppRecord& rec,
                              const std::vector<sched::ResourceRequest>& asks) {
  std::string name = harvestJobName(rec.spec.name, rec.spec.recurrence_key.value());
  MutexLock lk(mu_);
  Job& job = jobs_[rec.id];
  job.name = std::move(name);
  for (const auto& a : asks) {
    if (a.count <= 0) {
      job.base.erase(harvestAskKey(a));
    } else {
      job.base[harvestAskKey(a)] = a;
    }
  }
  return !job.selected && !classes_.empty() && !job.base.empty();
}

std::string HarvestTracker::select(const AppId& app, const std::vector<HarvestNode>& nodes,
                                   const std::vector<reprovision::StageState>& stages) {
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  if (it == jobs_.end() || it->second.selected || classes_.empty() || it->second.base.empty()) {
    return "";
  }
  std::string note;
  it->second.classes = selectLocked(app, it->second, nodes, stages, &note);
  it->second.selected = true;
  return note;
}

void HarvestTracker::constrain(const AppId& app, std::vector<sched::ResourceRequest>* asks) const {
  std::vector<sched::PlacementConstraint> cs;
  {
    MutexLock lk(mu_);
    auto it = jobs_.find(app);
    if (it == jobs_.end()) return;
    cs = constraintsOf(it->second);
  }
  if (cs.empty()) return;
  for (auto& a : *asks) {
    if (a.count > 0) a.constraints.insert(a.constraints.end(), cs.begin(), cs.end());
  }
}

std::vector<AppId> HarvestTracker::jobs() const {
  MutexLock lk(mu_);
  std::vector<AppId> out;
  out.reserve(jobs_.size());
  for (const auto& [app, _] : jobs_) out.push_back(app);
  return out;
}

void HarvestTracker::forgetJob(const AppId& app) {
  MutexLock lk(mu_);
  jobs_.erase(app);
}

HarvestTracker::Reselection HarvestTracker::reselect(
    const AppId& app, const std::map<std::string, int32_t>& pending,
    const std::vector<HarvestNode>& nodes, const std::vector<reprovision::StageState>& stages) {
  Reselection out;
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  if (it == jobs_.end()) return out;
  Job& job = it->second;
  // What is still pending of each ask (the core granted the rest).
  for (auto b = job.base.begin(); b != job.base.end();) {
    auto p = pending.find(b->first);
    if (p == pending.end()) {
      b = job.base.erase(b);
    } else {
      b->second.count = p->second;
      ++b;
    }
  }
  auto chosen = selectLocked(app, job, nodes, stages, &out.note);
  job.selected = true;
  if (chosen == job.classes) return out;
  // New classes start without a fallback (the next fallBack() adds one if due).
  job.classes = std::move(chosen);
  job.fallback.clear();
  if (!job.base.empty()) out.asks = constrained(job);
  return out;
}

bool HarvestTracker::fallbackDue(const AppId& app) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  return it != jobs_.end() && it->second.selected && !it->second.base.empty() && !classes_.empty();
}

HarvestTracker::Reselection HarvestTracker::fallBack(const AppId& app,
                                                     const std::map<std::string, int32_t>& pending,
                                                     const std::vector<HarvestNode>& nodes) {
  Reselection out;
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  if (it == jobs_.end() || !it->second.selected || classes_.empty()) return out;
  Job& job = it->second;
  for (auto b = job.base.begin(); b != job.base.end();) {
    auto p = pending.find(b->first);
    if (p == pending.end() || p->second <= 0) {
      b = job.base.erase(b);
    } else {
      b->second.count = p->second;
      ++b;
    }
  }
  if (job.base.empty()) {
    // Nothing pending: the next asks start a new hold.
    job.held_since.reset();
    job.held = false;
    job.hold_over = false;
    return out;
  }
  Resource container;
  for (const auto& [key, a] : job.base) container = Resource::max(container, a.capability);
  const JobLength type = typeOf(job);
  std::string hold_note;  // the hold ran out now: logged before the fallback's line
  if (opts_.hold > Millis(0) && !job.hold_over) {
    const auto fit = job.fit;
    const std::string fallback = job.fallback;
    if (holdLocked(app, job, type, container, withCurrent(nodes), &out.note)) {
      if (job.fit != fit || job.fallback != fallback) out.asks = constrained(job);
      return out;
    }
    hold_note = std::move(out.note);
    out.note.clear();
  }
  const auto states = classStates(classes_, withCurrent(nodes), container);
  auto chosen = [&job](const std::string& id) {
    return std::find(job.classes.begin(), job.classes.end(), id) != job.classes.end();
  };
  bool room = false;
  for (const auto& st : states) {
    if (!chosen(st.cls.id)) continue;
    for (const auto& n : st.nodes) room = room || openSlots(n) >= 1;
  }
  std::string next;  // stays "" when a chosen class has room
  if (!room) {
    for (const auto& id : rankedFallback(type, states, opts_.selection)) {
      if (!chosen(id)) {
        next = id;
        break;
      }
    }
    // No class has room now: the class constraint stays as it is.
    if (next.empty()) next = job.fallback;
  }
  if (next == job.fallback && hold_note.empty()) return out;
  if (next == job.fallback) {
    out.note = std::move(hold_note);
    out.asks = constrained(job);
    return out;
  }
  if (!hold_note.empty()) hold_note += "; ";
  out.note =
      hold_note + fallbackNote(app, type, job.name, job.classes, container, job.fallback, next);
  job.fallback = std::move(next);
  out.asks = constrained(job);
  return out;
}

bool HarvestTracker::holdLocked(const AppId& app, Job& job, JobLength type,
                                const Resource& container, const std::vector<HarvestNode>& nodes,
                                std::string* note) {
  const TimePoint now = clock_.now();
  const Millis run = expectedRun(job);
  std::map<std::string, UtilPattern> pattern_of;
  for (const auto& c : classes_) pattern_of[c.id] = c.pattern;
  auto chosen = [&job](const std::string& id) {
    return std::find(job.classes.begin(), job.classes.end(), id) != job.classes.end();
  };
  std::vector<std::string> fit;
  bool open_in_class = false, open_any = false;
  std::string best;  // the class of the fitting node ranked first outside the chosen ones
  double best_weight = 0, best_margin = 0;
  for (const auto& n : nodes) {
    auto p = pattern_of.find(n.cls);
    if (p == pattern_of.end()) continue;
    TenantForecast* f = forecastOf(history_.tenantOf(n.id));
    if (f == nullptr) continue;
    const double margin = harvestNodeMargin(*f, p->second, n, container, now, run);
    if (margin < 1) continue;
    fit.push_back(n.id.value());
    if (n.free && containersIn(Resource::max(*n.free, Resource()), container) < 1) continue;
    open_any = true;
    if (chosen(n.cls)) {
      open_in_class = true;
      continue;
    }
    const double w = rankingWeight(opts_.selection, type, p->second);
    if (best.empty() || ranksBefore(w, margin, best_weight, best_margin) ||
        (w == best_weight && margin == best_margin && n.cls < best)) {
      best = n.cls;
      best_weight = w;
      best_margin = margin;
    }
  }
  std::sort(fit.begin(), fit.end());
  const std::string what =
      fmt::format("harvesting: {} ({} job '{}', container {}, expected run {})", app.value(),
                  jobLengthName(type), job.name, container.toString(), formatDuration(run));
  if (!open_any) {
    if (!job.held_since) job.held_since = now;
    if (now - *job.held_since >= opts_.hold) {
      *note = fmt::format(
          "{}: held {} with no node predicted to fit; hold over (rm.harvest.hold "
          "{}), the ranked fallback applies",
          what, formatDuration(now - *job.held_since), formatDuration(opts_.hold));
      job.hold_over = true;
      job.held = false;
      job.fit.reset();
      return false;
    }
    if (!job.held) {
      *note = fmt::format(
          "{}: no node with room predicted to leave it a core for its expected run "
          "({} predicted to fit); held for at most {} more",
          what, fit.size(), formatDuration(opts_.hold - (now - *job.held_since)));
    }
    job.held = true;
    job.fallback.clear();
    job.fit = std::move(fit);
    return true;
  }
  std::vector<std::string> notes;
  if (job.held) {
    notes.push_back(fmt::format("{}: {} node(s) predicted to fit; released after {} held", what,
                                fit.size(), formatDuration(now - *job.held_since)));
  }
  std::string next = open_in_class ? "" : best;
  if (next != job.fallback) {
    notes.push_back(fallbackNote(app, type, job.name, job.classes, container, job.fallback, next));
  }
  for (const auto& n : notes) *note += (note->empty() ? "" : "; ") + n;
  job.held = false;
  job.fit = std::move(fit);
  job.fallback = std::move(next);
  return true;
}

Millis HarvestTracker::expectedRun(const Job& job) const {
  Millis longest{0};
  for (const auto& [key, a] : job.base) longest = std::max(longest, a.expected_duration);
  if (longest > Millis(0)) return longest;
  auto run = runs_.find(job.name);
  return run != runs_.end() ? run->second : opts_.selection.long_min;
}

TenantForecast* HarvestTracker::forecastOf(const std::string& tenant) {
  const UtilSeries* s = history_.tenantCpu(tenant);
  if (s == nullptr || s->buckets().empty()) return nullptr;
  const TimePoint last = s->buckets().back().start;
  auto it = forecasts_.find(tenant);
  if (it != forecasts_.end() && it->second.last == last && it->second.step == s->step()) {
    return &it->second.forecast;
  }
  if (it != forecasts_.end()) forecasts_.erase(it);
  auto added =
      forecasts_.emplace(tenant, Forecast{last, s->step(),
                                          TenantForecast(s->regular(), s->buckets().front().start,
                                                         s->step(), kHoldRiseQuantile)});
  return &added.first->second.forecast;
}

std::optional<std::vector<std::string>> HarvestTracker::holdNodes(const AppId& app) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  return it == jobs_.end() ? std::nullopt : it->second.fit;
}

std::string HarvestTracker::fallbackClass(const AppId& app) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  return it == jobs_.end() ? "" : it->second.fallback;
}

std::vector<std::string> HarvestTracker::selection(const AppId& app) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(app);
  return it == jobs_.end() ? std::vector<std::string>() : it->second.classes;
}

std::optional<store::StateWrite> HarvestTracker::recordRun(const AppRecord& rec,
                                                           AppState final_state) {
  std::string job = harvestJobName(rec.spec.name, rec.spec.recurrence_key.value());
  MutexLock lk(mu_);
  jobs_.erase(rec.id);
  if (final_state != AppState::kFinished || job.empty() || rec.finish <= rec.start) {
    return std::nullopt;
  }
  const Millis length = rec.finish - rec.start;
  runs_[job] = length;
  return store::StateWrite{kHarvestRunsTable, job, encodeHarvestRun(length)};
}

std::optional<Millis> HarvestTracker::lastRun(const std::string& job) const {
  MutexLock lk(mu_);
  auto it = runs_.find(job);
  return it == runs_.end() ? std::nullopt : std::optional<Millis>(it->second);
}

}  // namespace morpheus::rm
