#include "rm/runtime/runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/ignore.h"
#include "common/token.h"
#include "common/wire.h"

namespace morpheus::rm {

namespace {

// The request id of the ask the core holds for a submitted app's AM: it makes
// a reservation's unplaced AM count as demand (and so preempt borrowers).
const std::string kAmAsk = std::string("\x01") + "am";

// Container ids are "<app>_<epoch>_<suffix>" (the core's format, AM containers
// "<app>_<epoch>_am<attempt>"; RMs before the core used "<app>_c<epoch>_<seq>",
// which parses alike): the app id is all before the last two '_'.
AppId appOfContainer(const std::string& id) {
  auto p = id.rfind('_');
  if (p == std::string::npos || p == 0) return AppId("");
  auto q = id.rfind('_', p - 1);
  return AppId(q == std::string::npos ? "" : id.substr(0, q));
}

// The core's ask identity: the request id, or the priority when it is empty.
std::string askKey(const std::string& request_id, int32_t priority) {
  return request_id.empty() ? "\x01p" + std::to_string(priority) : request_id;
}

// A completed container's status as its AM gets it (state COMPLETE).
CompletedContainer completedOf(const ContainerReport& st) {
  CompletedContainer out;
  out.id = st.id;
  out.exit_status = st.exit_status;
  out.exit_reason = st.exit_reason;
  out.diagnostics = st.diagnostics;
  out.rss_mib = st.rss_mib;
  out.cpu_vcores = st.cpu_vcores;
  out.start = st.start;
  out.end = st.end;
  out.resource = st.resource;
  return out;
}

// What the RM decided about a container of its own (released, lost, its
// launch failed): COMPLETE with `reason` and `diagnostics`, nothing measured.
ContainerReport endedByRm(const ContainerId& id, v1::ContainerExitReason reason,
                          std::string diagnostics) {
  ContainerReport out;
  out.id = id;
  out.complete = true;
  out.exit_reason = reason;
  out.diagnostics = std::move(diagnostics);
  return out;
}

// Stage name -> measured mean task duration, for the stages that have one.
std::map<std::string, Millis> stageProfile(const std::vector<reprovision::StageState>& stages) {
  std::map<std::string, Millis> out;
  for (const auto& st : stages) {
    if (st.task_duration.count() > 0) out[st.name] = st.task_duration;
  }
  return out;
}

// The core's ad-hoc hierarchy from the configured weights. "root.default"
// (the AppManager's default leaf) is added unless configured as a parent.
std::vector<sched::AdhocQueueConfig> adhocQueues(const std::map<std::string, double>& weights) {
  std::vector<sched::AdhocQueueConfig> out;
  bool default_ok = true;
  for (const auto& [path, w] : weights) {
    if (path.rfind("root.", 0) != 0 || path.back() == '.' || path.find("..") != std::string::npos) {
      spdlog::warn("ad-hoc queue '{}' ignored: paths start at root", path);
      continue;
    }
    if (path == "root.default" || path.rfind("root.default.", 0) == 0) default_ok = false;
    out.push_back({path, w > 0 ? w : 1.0});
  }
  if (default_ok) out.push_back({"root.default", 1.0});
  return out;
}

// Each leaf's configured ordering policy (scheduler.policy).
void applyQueuePolicies(
    std::vector<sched::AdhocQueueConfig>& queues,
    const std::map<std::string, std::shared_ptr<const sched::QueueOrderingPolicy>>& policies) {
  for (auto& q : queues) {
    auto it = policies.find(q.path);
    if (it != policies.end()) q.policy = it->second;
  }
}

AmLauncherOptions launchOptions(const RuntimeOptions& opts) {
  AmLauncherOptions out = opts.launch;
  out.tls = opts.tls;
  return out;
}

}  // namespace

// The lock primitive itself: the analysis checks its users, not its body.
RmRuntime::Guard::Guard(const RmRuntime& rt) NO_THREAD_SAFETY_ANALYSIS : rt_(rt) { rt_.mu_.lock(); }

RmRuntime::Guard::~Guard() NO_THREAD_SAFETY_ANALYSIS { release(); }

void RmRuntime::Guard::release() NO_THREAD_SAFETY_ANALYSIS {
  if (!held_) return;
  held_ = false;
  std::vector<std::pair<spdlog::level::level_enum, std::string>> logs;
  logs.swap(rt_.pending_logs_);
  rt_.mu_.unlock();
  for (const auto& [level, line] : logs) spdlog::log(level, "{}", line);
}

RmRuntime::RmRuntime(RuntimeOptions opts, RmCore& core, AppManager& apps, Clock& clock,
                     MetricsRegistry& metrics, TelemetryForwarder* telemetry,
                     ReservationKind periodic, Guarantee guarantee)
    : opts_(opts),
      core_(core),
      apps_(apps),
      clock_(clock),
      metrics_(metrics),
      telemetry_(telemetry),
      periodic_(std::move(periodic)),
      guarantee_(std::move(guarantee)),
      started_ms_(toEpochMs(clock.now())),
      m_(metrics),
      allocated_total_(m_.containers_allocated),
      harvest_(opts_.harvest, clock_),
      launcher_(launchOptions(opts_),
                [this](const AmLaunch& l, const std::string& error) { onLaunched(l, error); }) {
  sched::SchedulerOptions so;
  so.adhoc_queues = adhocQueues(opts_.queue_weights);
  applyQueuePolicies(so.adhoc_queues, opts_.queue_policies);
  so.preemption_grace = opts_.preemption_grace;
  so.preemption_interval = opts_.preemption_interval;
  so.node_reservation = opts_.node_reservation;
  so.soft_constraint_delay = std::max(Millis(1000), core_.heartbeatInterval() * 3);
  so.container_id_epoch = started_ms_;
  // As before the core: a reservation beyond its guarantee (its window over,
  // say) shares with the ad-hoc queues rather than waiting behind them.
  so.borrowing_reservations_share = true;
  auto s = sched::Scheduler::create(so);
  MORPHEUS_CHECK(s.isOk(), "scheduler options: " + s.status().toString());
  sched_ = std::move(s).value();
  Status caps = setQueueMaxResources(opts_.queue_max_resources);
  MORPHEUS_CHECK(caps.isOk(), caps.toString());
}

RmRuntime::~RmRuntime() { stop(); }

void RmRuntime::setAmAddress(std::string address) {
  Guard lk(*this);
  am_address_ = std::move(address);
}

void RmRuntime::start() {
  launcher_.start();
  harvest_.start([this] { return recomputeHarvestClasses(); });
}

void RmRuntime::stop() {
  harvest_.stop();
  launcher_.stop();
}

void RmRuntime::onNodeRegistered(const NodeRegistration& reg) {
  const NodeId& id = reg.id;
  const bool drained = core_.nodeAdmin(id).state != NodeAdminState::kInService;
  Guard lk(*this);
  auto [it, added] = nodes_.try_emplace(id);
  Node& n = it->second;
  if (added || !n.live) live_nodes_++;
  n.id = id;
  n.address = reg.container_manager_address;
  n.total = reg.total;
  n.offer.reset();  // the core takes the registered total until the next offer
  // The harvest class is the RM's own attribute: kept across a
  // re-registration until the next clustering.
  auto cls = n.attributes.find(kHarvestClassAttribute);
  std::string harvest_class = cls != n.attributes.end() ? cls->second : "";
  n.attributes = reg.attributes;
  if (!harvest_class.empty()) {
    n.attributes[kHarvestClassAttribute] = harvest_class;
    n.attributes[kHarvestNodeAttribute] = id.value();
  }
  n.live = true;
  // (Re-)registration: the core takes the node as announced, with the
  // containers this RM knows running there.
  if (sched_->nodeUsed(id).isOk()) {
    MORPHEUS_IGNORE_NOT_FOUND(sched_->removeNode(id), "the core knows the node (nodeUsed)");
  }
  if (Status st = sched_->addNode(id, n.total, n.attributes); !st.isOk()) {
    logLater(spdlog::level::warn, "node {} not schedulable: {}", id.value(), st.message());
    return;
  }
  n.drained = drained;
  if (drained) MORPHEUS_IGNORE_NOT_FOUND(sched_->setNodeTotal(id, Resource()), "added above");
  for (const auto& [cid, c] : containers_) {
    if (c.node == id && c.running) account(c);
  }
}

void RmRuntime::refresh(const AppId& app) {
  AppRt& rt = rt_[app];
  auto rec = apps_.get(app);
  if (!rec.isOk()) return;
  rt.cached = true;
  rt.state = rec->state;
  rt.queue = rec->queue;
  rt.user = rec->spec.user.value();
  rt.reservation = rec->reservation;
}

RmRuntime::AppRt& RmRuntime::appRt(const AppId& app) {
  AppRt& rt = rt_[app];
  if (!rt.cached) refresh(app);
  return rt;
}

// The core hears of a guarantee only when it changed: setting
// an equal one would re-key the reservation in the core's heaps for nothing.
void RmRuntime::pushGuarantee(const ReservationId& id, TimePoint now) {
  auto kind = periodic_(id) ? sched::ReservationKind::kPeriodic : sched::ReservationKind::kOneOff;
  Resource guaranteed = guarantee_(id, now);
  auto it = pushed_.find(id);
  if (it != pushed_.end() && it->second.first == kind && it->second.second == guaranteed) return;
  if (Status st = sched_->setReservation(id, kind, guaranteed); !st.isOk()) {
    logLater(spdlog::level::warn, "reservation {}: {}", id.value(), st.message());
    pushed_.erase(id);
    return;
  }
  pushed_[id] = {kind, guaranteed};
}

// The plan follower: each bound reservation's guarantee as of now. (Read on
// every heartbeat: the plan changes with admissions and DRA grants, which do
// not tell the runtime; a read is a lookup, the push is what costs.)
void RmRuntime::followPlan(TimePoint now) {
  for (const auto& [id, _] : bound_) pushGuarantee(id, now);
}

// Adds the app to the core (its reservation queue first) if not there yet.
bool RmRuntime::ensureApp(const AppId& app, TimePoint now) {
  AppRt& rt = appRt(app);
  if (rt.in_sched) return true;
  if (!rt.cached || isFinal(rt.state)) return false;
  Status st;
  if (!rt.reservation.empty()) {
    pushGuarantee(rt.reservation, now);
    st = sched_->addApp(app, UserId(rt.user), sched::QueueRef::reservation(rt.reservation));
    if (st.isOk()) bound_[rt.reservation]++;
  } else {
    st = sched_->addApp(app, UserId(rt.user), sched::QueueRef::adhoc(rt.queue));
    if (!st.isOk() && rt.queue != "root.default") {
      logLater(spdlog::level::warn, "app {}: {}; scheduled in root.default", app.value(),
               st.message());
      st = sched_->addApp(app, UserId(rt.user), sched::QueueRef::adhoc("root.default"));
    }
  }
  if (!st.isOk()) {
    logLater(spdlog::level::err, "app {} not schedulable: {}", app.value(), st.message());
    return false;
  }
  rt.in_sched = true;
  return true;
}

// A final app leaves the core once nothing of it runs any more (its
// containers stay accounted on their nodes until the NMs report them gone).
void RmRuntime::forgetIfDone(const AppId& app) {
  auto it = rt_.find(app);
  if (it == rt_.end()) return;
  AppRt& rt = it->second;
  if (!rt.in_sched || !isFinal(rt.state) || rt.running > 0) return;
  MORPHEUS_IGNORE_NOT_FOUND(sched_->removeApp(app), "in_sched: the core has the app");
  rt.in_sched = false;
  am_asks_.erase(app);
  rt.am_ask = false;
  if (auto b = bound_.find(rt.reservation); b != bound_.end() && --b->second <= 0) {
    MORPHEUS_IGNORE_NOT_FOUND(sched_->removeReservation(rt.reservation),
                              "the reservation ended and left the core first");
    pushed_.erase(rt.reservation);
    bound_.erase(b);
  }
}

void RmRuntime::withdrawAsks(const AppId& app) {
  AppRt& rt = rt_[app];
  std::vector<sched::ResourceRequest> off;
  for (const auto& [_, a] : rt.asks) {
    sched::ResourceRequest r;
    r.request_id = a.request_id;
    r.priority = a.priority;
    off.push_back(std::move(r));
  }
  if (rt.am_ask) {
    sched::ResourceRequest r;
    r.request_id = kAmAsk;
    off.push_back(std::move(r));
    rt.am_ask = false;
    am_asks_.erase(app);
  }
  rt.asks.clear();
  if (rt.in_sched && !off.empty()) {
    MORPHEUS_IGNORE_NOT_FOUND(sched_->updateAsks(app, off),
                              "withdrawals only; in_sched: the core has the app");
  }
}

// Puts a container this RM knows into the core's accounts (node
// re-registration, re-adoption after an RM restart, AM placement).
void RmRuntime::account(const Cont& c) {
  sched::Allocation a;
  a.container = c.id;
  a.app = c.app;
  a.node = c.node;
  a.resource = c.resource;
  a.am = c.am;
  if (Status st = sched_->recoverContainer(a); !st.isOk()) {
    logLater(spdlog::level::warn, "container {} not accounted: {}", c.id.value(), st.message());
  }
}

void RmRuntime::containerDone(Cont& c, const ContainerReport& st) {
  if (!c.running) return;
  c.running = false;
  c.end = clock_.now();
  done_.insert(c.id);
  const bool preempted = preempted_.count(c.id) > 0;
  history_.completed(
      c.history, c.end, st.exit_status, preempted ? v1::EXIT_REASON_PREEMPTED : st.exit_reason,
      preempted ? "preempted: capacity taken back by a reservation" : st.diagnostics);
  c.history = {};
  MORPHEUS_IGNORE_NOT_FOUND(sched_->containerCompleted(c.id), "released or its node removed");
  AppRt& rt = appRt(c.app);
  track(rt, c, -1);
  const int64_t lived_ms = std::max<int64_t>(0, (c.end - c.start).count());
  apps_.addUsage(c.app, c.resource.memoryMib() * lived_ms, c.resource.vcores() * lived_ms);
  rt.intervals.push_back({c.start, c.end, c.resource, c.am});
  if (c.am) {
    rt.am_pending = false;
    auto app = apps_.get(c.app);
    if (app.isOk() && !isFinal(app->state) && app->am_container == c.id) {
      std::string why = st.diagnostics.empty()
                            ? "AM container exited with status " + std::to_string(st.exit_status)
                            : st.diagnostics;
      auto r = apps_.amAttemptFailed(c.app, why);
      refresh(c.app);
      // A failed attempt's containers go with it (YARN semantics).
      killAppContainers(c.app);
      withdrawAsks(c.app);
      rt.allocated.clear();
      rt.completed.clear();
      m_.am_attempts_failed.inc();
      (void)r;
    }
    forgetIfDone(c.app);
    return;
  }
  CompletedContainer out = completedOf(st);
  if (preempted_.erase(c.id) > 0) {
    out.exit_reason = v1::EXIT_REASON_PREEMPTED;
    out.diagnostics = "preempted: capacity taken back by a reservation";
    m_.containers_preempted.inc();
  }
  if (!isFinal(rt.state)) rt.completed.push_back(std::move(out));
  forgetIfDone(c.app);
}

void RmRuntime::killAppContainers(const AppId& app) {
  for (auto& [id, c] : containers_) {
    if (c.app != app || !c.running) continue;
    to_kill_[c.node].insert(id);
    // A grant its node has not reported yet may never start (its AM is
    // gone, or going): it is done for the RM now, as a release is; no node
    // reports a grant that never started, so nothing else would end it. If
    // it starts after all, its node's report is answered with a kill
    // (onNodeReport).
    if (!c.reported && !c.am) {
      MORPHEUS_IGNORE_NOT_FOUND(sched_->release(app, id), "its node was removed from the core");
      containerDone(c, endedByRm(id, v1::EXIT_REASON_KILLED,
                                 "its application ended before the container started"));
    }
  }
}

// An AM container that ended while no RM knew of it: it exited during an RM
// restart or HA failover, and its NM reported the exit only after
// re-registering. The attempt ended all the same, so it is adopted and ended
// like one this RM watched (containerDone: next attempt or app failed);
// without this the app would stay RUNNING with no AM. Any other unknown
// completed container is only acknowledged.
void RmRuntime::endUnknownAmContainer(const NodeId& nid, const ContainerReport& st, TimePoint now) {
  const ContainerId& cid = st.id;
  AppId app = appOfContainer(cid.value());
  auto rec = apps_.get(app);
  if (!rec.isOk() || isFinal(rec->state) || rec->am_container != cid) return;
  const Resource& r = st.resource;
  const TimePoint start = toEpochMs(st.start) > 0 ? st.start : now;
  Cont c{cid, app, nid, r, true, true, start, {}, false, {}};
  c.history = history_.allocated(app, cid, nid, r, /*am=*/true, c.start, /*running=*/true);
  if (ensureApp(app, now)) account(c);
  track(rt_[app], c, +1);
  logLater(spdlog::level::info, "AM container {} of {} ended while no RM watched it", cid.value(),
           app.value());
  containerDone(c, st);
}

NodeHeartbeatAnswer RmRuntime::onNodeHeartbeat(NodeHeartbeatCall call) {
  NodeHeartbeatAnswer answer;
  NodeId nid = call.node;
  onNodeReport(std::move(call), &answer);  // scheduled right below either way
  scheduleNode(nid);
  Guard lk(*this);
  if (nodes_.count(nid) != 0) flushNodeAnswer(nid, &answer);  // the kills scheduling chose
  return answer;
}

bool RmRuntime::onNodeReport(NodeHeartbeatCall call, NodeHeartbeatAnswer* answer) {
  Guard lk(*this);
  const NodeId& nid = call.node;
  auto nit = nodes_.find(nid);
  if (nit == nodes_.end()) return false;
  Node& node = nit->second;
  const TimePoint now = clock_.now();
  if (!node.live) {
    node.live = true;
    live_nodes_++;
    if (Status st = sched_->addNode(nid, node.total, node.attributes); !st.isOk()) {
      logLater(spdlog::level::warn, "node {} not schedulable: {}", nid.value(), st.message());
    } else if (node.drained) {
      MORPHEUS_IGNORE_NOT_FOUND(sched_->setNodeTotal(nid, Resource()), "added above");
    }
  }
  applyContainerStatuses(nid, call.containers, now);
  onHarvestReport(node, call, now);
  flushNodeAnswer(nid, answer);
  if (node.schedule_pending) return false;
  node.schedule_pending = true;
  return true;
}

// A report's id is moved into the answer or the kills once it is last used.
void RmRuntime::applyContainerStatuses(const NodeId& nid, std::vector<ContainerReport>& reports,
                                       TimePoint now) {
  for (auto& st : reports) {
    const ContainerId& cid = st.id;
    auto it = containers_.find(cid);
    // A node speaks only for containers the RM allocated to it: a status for
    // one this RM placed on another node (or an AM it launched elsewhere) is
    // ignored, so one node's token cannot end another node's work.
    if (!reportedByItsNode(nid, cid, it)) {
      m_.container_statuses_refused.inc();
      logLater(spdlog::level::warn,
               "node {} reported container {} which runs on another node; ignored", nid.value(),
               cid.value());
      continue;
    }
    if (st.complete) {
      if (it == containers_.end() && !done_.count(cid)) endUnknownAmContainer(nid, st, now);
      if (it != containers_.end()) {
        AppId app = it->second.app;
        containerDone(it->second, st);
        // Acknowledged now: the NM forgets it, and so do we.
        containers_.erase(it);
        auto r = rt_.find(app);
        if (r != rt_.end() && r->second.running <= 0 && isFinal(r->second.state) &&
            r->second.allocated.empty()) {
          rt_.erase(r);  // a finished app with nothing left on any node
        }
      }
      done_.erase(cid);
      to_ack_[nid].push_back(std::move(st.id));
      continue;
    }
    if (it == containers_.end() && !done_.count(cid)) {
      // Running but unknown (reported after an RM restart): re-adopt it if its
      // app still runs, else stop it.
      AppId app = appOfContainer(cid.value());
      auto rec = apps_.get(app);
      if (!rec.isOk() || isFinal(rec->state)) {
        to_kill_[nid].insert(std::move(st.id));
        continue;
      }
      const Resource& r = st.resource;
      Cont c{cid,
             app,
             nid,
             r,
             rec->am_container == cid,
             true,
             toEpochMs(st.start) > 0 ? st.start : now,
             {},
             false,
             {}};
      c.reported = true;
      c.history = history_.allocated(app, cid, nid, r, c.am, c.start, /*running=*/true);
      containers_[cid] = c;
      if (ensureApp(app, now)) account(c);
      track(rt_[app], c, +1);
      logLater(spdlog::level::info, "re-adopted running container {} of {} on {}", cid.value(),
               app.value(), nid.value());
    } else if (it != containers_.end() && !it->second.running) {
      to_kill_[nid].insert(std::move(st.id));  // we consider it done (e.g. node was lost): stop it
    } else if (it != containers_.end() && !it->second.reported) {
      it->second.reported = true;
      history_.running(it->second.history);
      // Its app ended before the node first reported it: the kill went out
      // while the container was not started there yet (its AM's start raced
      // the kill), and the node dropped it as unknown. Stop it now.
      auto rec = apps_.get(it->second.app);
      if (!rec.isOk() || isFinal(rec->state)) to_kill_[nid].insert(cid);
    }
  }
}

bool RmRuntime::reportedByItsNode(const NodeId& nid, const ContainerId& cid,
                                  std::unordered_map<ContainerId, Cont>::const_iterator it) const {
  if (it != containers_.end()) return it->second.node == nid;
  // Unknown to this RM's memory (it restarted or failed over): an AM
  // container's node is in the app's record; a task's is not recorded and a
  // node may re-adopt or end it (it can only hold one that its own key signed).
  auto rec = apps_.get(appOfContainer(cid.value()));
  if (!rec.isOk() || rec->am_container != cid || rec->am_node.value().empty()) return true;
  return rec->am_node == nid;
}

// Moved, not copied: the kills leave their set node by node (in its order),
// the acknowledgements their vector, which keeps its capacity for the node's
// next report.
void RmRuntime::flushNodeAnswer(const NodeId& nid, NodeHeartbeatAnswer* answer) {
  std::set<ContainerId>& kills = to_kill_[nid];
  answer->to_kill.reserve(answer->to_kill.size() + kills.size());
  while (!kills.empty()) answer->to_kill.push_back(std::move(kills.extract(kills.begin()).value()));
  std::vector<ContainerId>& acks = to_ack_[nid];
  answer->to_acknowledge.insert(answer->to_acknowledge.end(), std::make_move_iterator(acks.begin()),
                                std::make_move_iterator(acks.end()));
  acks.clear();
}

void RmRuntime::scheduleNode(const NodeId& nid) {
  Guard lk(*this);
  auto nit = nodes_.find(nid);
  if (nit == nodes_.end()) return;
  Node& node = nit->second;
  node.schedule_pending = false;
  if (!node.live) return;
  const TimePoint now = clock_.now();
  followPlan(now);
  if (!node.drained) placeAms(node, now);
  auto result = sched_->nodeUpdate(nid, now);
  if (result.isOk()) {
    for (const auto& a : result->allocations) {
      if (a.request_id != kAmAsk) {
        grantTask(node, a);
        continue;
      }
      // The core placed an AM (its ask is there so that a reservation's AM
      // counts as demand): launch it, accounted as an AM container.
      MORPHEUS_IGNORE_NOT_FOUND(sched_->release(a.app, a.container),
                                "the core placed it this call");
      AppRt& rt = rt_[a.app];
      rt.am_ask = false;
      am_asks_.erase(a.app);
      auto rec = apps_.get(a.app);
      if (rec.isOk() && rec->state == AppState::kSubmitted && !rt.am_pending) {
        startAm(node, *rec, a.container);  // false: not launched (e.g. killed meanwhile), logged
      }
    }
    for (const auto& k : result->to_kill) {
      to_kill_[nid].insert(k.container);
      preempted_.insert(k.container);
    }
  }
}

// AM containers of submitted apps go first, reservation-bound first, then by
// submission. The list is re-read when any app changed.
void RmRuntime::placeAms(Node& node, TimePoint now) {
  if (apps_.version() != submitted_version_) {
    submitted_version_ = apps_.version();
    // Apps held back by a running-apps limit get no AM (queue_limits.h).
    submitted_ = apps_.startable();
    std::stable_sort(submitted_.begin(), submitted_.end(),
                     [](const AppRecord& a, const AppRecord& b) {
                       return !a.reservation.empty() && b.reservation.empty();
                     });
    std::set<AppId> waiting;
    for (const auto& a : submitted_) {
      refresh(a.id);
      AppRt& rt = rt_[a.id];
      if (rt.am_pending || !ensureApp(a.id, now)) continue;
      waiting.insert(a.id);
      if (rt.am_ask) continue;
      sched::ResourceRequest r;
      r.request_id = kAmAsk;
      r.priority = std::numeric_limits<int32_t>::min();
      r.capability = a.spec.am_resource;
      r.count = 1;
      if (sched_->updateAsks(a.id, {r}).isOk()) {
        rt.am_ask = true;
        am_asks_.insert(a.id);
      }
    }
    // Apps no longer waiting for an AM (killed, say) give their AM ask back.
    std::vector<AppId> stale;
    for (const auto& id : am_asks_) {
      if (!waiting.count(id)) stale.push_back(id);
    }
    for (const auto& id : stale) {
      refresh(id);
      AppRt& rt = rt_[id];
      sched::ResourceRequest r;
      r.request_id = kAmAsk;
      MORPHEUS_IGNORE_NOT_FOUND(sched_->updateAsks(id, {r}),
                                "an AM ask withdrawal; the app may have left the core");
      rt.am_ask = false;
      am_asks_.erase(id);
      forgetIfDone(id);
    }
  }
  if (submitted_.empty()) return;
  auto used = sched_->nodeUsed(node.id);
  if (!used.isOk()) return;
  // An AM gets only what the node may run for secondary work: a node whose
  // primary tenant leaves no room (an offer of zero) starts no AM, which its
  // NM would throttle or kill.
  Resource free = Resource::max(node.schedulable() - *used, Resource());
  for (auto it = submitted_.begin(); it != submitted_.end();) {
    const AppRecord a = *it;
    if (rt_[a.id].am_pending || !a.spec.am_resource.fitsIn(free) ||
        !sched_->withinQueueMax(a.id, a.spec.am_resource)) {
      ++it;
      continue;
    }
    it = submitted_.erase(it);
    ContainerId cid(a.id.value() + "_" + std::to_string(started_ms_) + "_am" +
                    std::to_string(a.attempt + 1));
    if (startAm(node, a, cid)) free -= a.spec.am_resource;
  }
}

// Starts attempt a.attempt + 1 of `a`'s AM in container `cid` on `node`: the
// core accounts it as an AM container, the launcher thread calls the NM.
bool RmRuntime::startAm(Node& node, const AppRecord& a, const ContainerId& cid) {
  AppRt& rt = rt_[a.id];
  if (rt.am_ask && rt.in_sched) {
    sched::ResourceRequest r;
    r.request_id = kAmAsk;
    MORPHEUS_IGNORE_NOT_FOUND(sched_->updateAsks(a.id, {r}),
                              "an AM ask withdrawal; in_sched: the core has the app");
  }
  rt.am_ask = false;
  am_asks_.erase(a.id);
  if (Status st = apps_.amLaunched(a.id, cid, node.id); !st.isOk()) {
    // E.g. killed meanwhile.
    logLater(spdlog::level::warn, "app {}: AM not launched: {}", a.id.value(), st.message());
    refresh(a.id);
    forgetIfDone(a.id);
    return false;
  }
  refresh(a.id);
  TimePoint now = clock_.now();
  Cont c{cid, a.id, node.id, a.spec.am_resource, true, true, now, {}, false, {}};
  c.history = history_.allocated(a.id, cid, node.id, c.resource, /*am=*/true, now,
                                 /*running=*/false);
  containers_[cid] = c;
  if (ensureApp(a.id, now)) account(c);
  track(rt, c, +1);
  rt.am_pending = true;
  // The launch request is the runtime's own outgoing call to the NM's
  // ContainerManager (through the AmLauncher), so it is built as the wire
  // message here; the AM container's token is signed here too, because it
  // goes to the NM in this request and never into a reply of the edge.
  v1::Container out;
  out.set_container_id(cid.value());
  out.set_node_id(node.id.value());
  out.set_node_address(node.address);
  toProto(c.resource, out.mutable_resource());
  out.set_token(
      core_.issueContainerToken({cid, a.id, node.id, c.resource, {}, a.spec.user.value()}));
  allocated_total_.inc();
  AmLaunch l{a.id, node.id, node.address, {}};
  auto* r = l.request.add_requests();
  *r->mutable_container() = std::move(out);
  if (!r->mutable_launch_context()->ParseFromString(a.spec.am_launch_context)) {
    logLater(spdlog::level::err, "app {}: corrupt AM launch context", a.id.value());
  }
  auto& env = *r->mutable_launch_context()->mutable_env();
  env["MORPHEUS_RM_AM_ADDRESS"] = am_address_;
  env["MORPHEUS_APP_ID"] = a.id.value();
  env["MORPHEUS_AM_TOKEN"] = apps_.amToken(a.id, a.attempt + 1);
  env["MORPHEUS_AM_ATTEMPT"] = std::to_string(a.attempt + 1);
  launcher_.submit(std::move(l));
  return true;
}

// A task container the core granted: recorded and buffered for the AM.
void RmRuntime::grantTask(Node& node, const sched::Allocation& a) {
  Cont c{a.container, a.app, node.id, a.resource, false, true, clock_.now(), {}, false, {}};
  c.history = history_.allocated(a.app, a.container, node.id, a.resource, /*am=*/false, c.start,
                                 /*running=*/false);
  containers_[a.container] = c;
  AppRt& rt = rt_[a.app];
  track(rt, c, +1);
  if (auto p = rt.asks.find(askKey(a.request_id, a.priority)); p != rt.asks.end()) {
    if (--p->second.count <= 0) rt.asks.erase(p);
  }
  // Its token is signed by the gRPC edge when the AM's allocate collects it.
  rt.allocated.push_back(
      {a.container, node.id, node.address, a.resource, a.priority, a.request_id});
  allocated_total_.inc();
}

void RmRuntime::setNodeDrained(const NodeId& node, bool drained) {
  Guard lk(*this);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end() || nit->second.drained == drained) return;
  Node& n = nit->second;
  n.drained = drained;
  n.offer.reset();
  // The harvest offer of the node's next heartbeat caps it again when undrained.
  if (n.live && sched_->nodeUsed(node).isOk()) {
    if (Status st = sched_->setNodeTotal(node, drained ? Resource() : n.total); !st.isOk()) {
      logLater(spdlog::level::warn, "node {}: {}", node.value(), st.message());
    }
  }
  logLater(spdlog::level::info, "node {} {}", node.value(),
           drained ? "drained: no new containers are placed there" : "back in service");
}

int RmRuntime::runningOn(const NodeId& node) const {
  Guard lk(*this);
  int n = 0;
  for (const auto& [_, c] : containers_) n += c.node == node && c.running ? 1 : 0;
  return n;
}

void RmRuntime::onNodeLost(const NodeId& node, const std::string& why) {
  Guard lk(*this);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end()) return;
  if (nit->second.live) live_nodes_--;
  nit->second.live = false;
  // Its containers are no longer accounted anywhere.
  MORPHEUS_IGNORE_NOT_FOUND(sched_->removeNode(node), "a node whose registration the core refused");
  for (auto& [id, c] : containers_) {
    if (c.node != node || !c.running) continue;
    ContainerReport st = endedByRm(id, v1::EXIT_REASON_NODE_LOST,
                                   why.empty() ? "node " + node.value() + " lost" : why);
    st.exit_status = -100;
    st.start = c.start;
    st.end = clock_.now();
    containerDone(c, st);
  }
  to_kill_.erase(node);
}

void RmRuntime::onAppKilled(const AppId& app) {
  Guard lk(*this);
  refresh(app);
  killAppContainers(app);
  withdrawAsks(app);
  forgetIfDone(app);
}

std::optional<NodeId> RmRuntime::nodeOf(const ContainerId& container) const {
  Guard lk(*this);
  auto it = containers_.find(container);
  if (it == containers_.end()) return std::nullopt;
  return it->second.node;
}

AppId RmRuntime::appOf(const std::string& container_id) { return appOfContainer(container_id); }

ContainerHistory::AppView RmRuntime::containerHistory(const AppId& app) const {
  Guard lk(*this);
  return history_.of(app);
}

std::vector<std::string> RmRuntime::pendingReasons(const AppId& app) const {
  Guard lk(*this);
  auto r = sched_->pendingReasons(app);
  return r.isOk() ? *r : std::vector<std::string>{};
}

sched::AppHint RmRuntime::appHint(const AppId& app) const {
  Guard lk(*this);
  auto h = sched_->appHint(app);
  return h.isOk() ? *h : sched::AppHint{};
}

void RmRuntime::usage(const AppId& app, int32_t* containers, Resource* used) const {
  Guard lk(*this);
  auto it = rt_.find(app);
  *containers = it == rt_.end() ? 0 : it->second.running;
  *used = it == rt_.end() ? Resource() : it->second.used;
}

void RmRuntime::track(AppRt& rt, const Cont& c, int sign) {
  const int64_t since = toEpochMs(c.start) - started_ms_;
  if (sign > 0) {
    rt.used += c.resource;
    rt.running++;
    rt.mem_start_sum += c.resource.memoryMib() * since;
    rt.vcore_start_sum += c.resource.vcores() * since;
  } else {
    rt.used -= c.resource;
    rt.running--;
    rt.mem_start_sum -= c.resource.memoryMib() * since;
    rt.vcore_start_sum -= c.resource.vcores() * since;
  }
}

std::pair<int64_t, int64_t> RmRuntime::runningUsage(const AppId& app) const {
  Guard lk(*this);
  auto it = rt_.find(app);
  if (it == rt_.end() || it->second.running <= 0) return {0, 0};
  const AppRt& rt = it->second;
  const int64_t now = toEpochMs(clock_.now()) - started_ms_;
  return {std::max<int64_t>(0, rt.used.memoryMib() * now - rt.mem_start_sum),
          std::max<int64_t>(0, rt.used.vcores() * now - rt.vcore_start_sum)};
}

Status RmRuntime::setQueueMaxResources(const std::map<std::string, Resource>& caps) {
  Guard lk(*this);
  std::set<std::string> known;
  for (const auto& q : sched_->queues()) {
    if (!q.ref.isReservation()) known.insert(q.ref.adhocPath());
  }
  for (const auto& [path, cap] : caps) {
    if (!known.count(path))
      return invalidArgument("scheduler.max-resources." + path, "unknown queue");
  }
  for (const auto& path : known) {
    auto it = caps.find(path);
    std::optional<Resource> cap;
    if (it != caps.end()) cap = it->second;
    MORPHEUS_RETURN_IF_ERROR(sched_->setQueueMaxResources(path, cap));
  }
  return Status::ok();
}

std::map<ReservationId, ReservationDemand> RmRuntime::reservationDemand() const {
  auto bound = apps_.list({AppState::kSubmitted, AppState::kRunning}, "");
  Guard lk(*this);
  std::map<ReservationId, ReservationDemand> out;
  for (const auto& a : bound) {
    if (a.reservation.empty()) continue;
    ReservationDemand& d = out[a.reservation];
    d.apps.push_back(a.id);
    auto it = rt_.find(a.id);
    bool am_pending = it != rt_.end() && it->second.am_pending;
    if (a.state == AppState::kSubmitted && !am_pending) {
      d.pending += a.spec.am_resource;
    }
    if (it == rt_.end()) continue;
    d.used += it->second.used;
    if (auto c = containers_.find(a.am_container); c != containers_.end() && c->second.running) {
      d.am += c->second.resource;
    }
    // Jockey: this app's stages after those of the apps before it.
    const size_t base = d.stages.size();
    auto hist = a.spec.recurrence_key.empty() ? stage_history_.end()
                                              : stage_history_.find(a.spec.recurrence_key.value());
    for (auto st : it->second.stages) {
      for (auto& dep : st.deps) dep += base;
      if (st.task_duration.count() <= 0 && hist != stage_history_.end()) {
        if (auto h = hist->second.find(st.name); h != hist->second.end())
          st.task_duration = h->second;
      }
      d.stages.push_back(std::move(st));
    }
    for (const auto& [_, ask] : it->second.asks) d.pending += ask.capability * ask.count;
  }
  return out;
}

Result<RegisterAmOutcome> RmRuntime::registerAm(const RegisterAmCall& call) {
  const AppId& app = call.app;
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, runningAm(app, call.am_token));
  RegisterAmOutcome out;
  out.queue = rec.queue;
  out.reservation = rec.reservation;
  Guard lk(*this);
  for (const auto& [_, n] : nodes_) {
    if (n.live && !n.drained && n.total.memoryMib() >= out.max_container.memoryMib())
      out.max_container = n.total;
  }
  for (const auto& [id, c] : containers_) {
    if (c.app != app || !c.running || c.am) continue;
    auto n = nodes_.find(c.node);
    out.running.push_back(
        {id, c.node, n != nodes_.end() ? n->second.address : std::string(), c.resource});
  }
  rt_[app].registered = true;
  refresh(app);
  ensureApp(app, clock_.now());  // false: final or not cached; the AM's next allocate retries
  logLater(spdlog::level::info, "AM of {} registered (attempt {})", app.value(), rec.attempt);
  return out;
}

Result<AllocateOutcome> RmRuntime::allocate(AllocateCall call) {
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, runningAm(call.app, call.am_token));
  if (call.progress >= 0) apps_.setProgress(call.app, call.progress);
  AllocateOutcome out;
  out.user = rec.spec.user;
  Guard lk(*this);
  AppRt& rt = rt_[call.app];
  if (!rt.registered) {
    out.unregistered = true;
    out.resync = resyncDue();
    return out;
  }
  MORPHEUS_RETURN_IF_ERROR(reportStages(call.app, rt, call));
  MORPHEUS_RETURN_IF_ERROR(recordAsks(rec, rt, std::move(call.asks)));
  applyHarvestFallback(call.app, rt);
  MORPHEUS_RETURN_IF_ERROR(releaseContainers(call.app, call.releases));
  collectForAm(call.app, rt, &out);
  lk.release();
  // Logging needs none of the runtime's state (the edge signs the tokens).
  for (const auto& n : out.preemptions) {
    spdlog::info("preempting {} of {} by {}: {}", n.container.value(), call.app.value(),
                 toEpochMs(n.deadline), n.reason);
  }
  return out;
}

Status RmRuntime::authorizeAm(const AppId& app, const std::string& am_token, bool running) const {
  if (!running) return apps_.checkAmToken(app, am_token);
  return runningAm(app, am_token).status();
}

Result<AppRecord> RmRuntime::runningAm(const AppId& app, const std::string& am_token) const {
  MORPHEUS_RETURN_IF_ERROR(apps_.checkAmToken(app, am_token));
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, apps_.get(app));
  if (rec.state != AppState::kRunning)
    return infeasible("application " + app.value() + " is " + toString(rec.state));
  return rec;
}

// Work-preserving restart: this RM incarnation has not seen the AM register.
// Give the NMs a few heartbeats to re-report their running containers, then
// order a resync (the AM registers again and learns which containers
// survived).
bool RmRuntime::resyncDue() const {
  Millis grace = std::max(Millis(1000), core_.heartbeatInterval() * 3);
  return clock_.now() - fromEpochMs(started_ms_) >= grace;
}

// Before the asks, so a refused report (a cycle) changes nothing.
Status RmRuntime::reportStages(const AppId& app, AppRt& rt, AllocateCall& call) {
  if (!call.stages.empty() && (rt.in_sched || !call.asks.empty())) {
    if (!ensureApp(app, clock_.now()))
      return infeasible("application " + app.value() + " is not schedulable");
    MORPHEUS_RETURN_IF_ERROR(sched_->reportDag(app, call.dag));
  }
  rt.stages = std::move(call.stages);
  return Status::ok();
}

Status RmRuntime::recordAsks(const AppRecord& rec, AppRt& rt,
                             std::vector<sched::ResourceRequest> asks) {
  if (asks.empty()) return Status::ok();
  const AppId& app = rec.id;
  if (!ensureApp(app, clock_.now()))
    return infeasible("application " + app.value() + " is not schedulable");
  discountUndelivered(rt, &asks);
  harvestAsks(rec, rt, &asks);  // The job's harvest classes, a soft constraint
  MORPHEUS_RETURN_IF_ERROR(sched_->updateAsks(app, asks));
  for (const auto& a : asks) {
    std::string key = askKey(a.request_id, a.priority);
    if (a.count <= 0) {
      rt.asks.erase(key);
    } else {
      rt.asks[key] = {a.request_id, a.priority, a.capability, a.count};
    }
  }
  return Status::ok();
}

Status RmRuntime::releaseContainers(const AppId& app, const std::vector<ContainerId>& releases) {
  for (const auto& id : releases) {
    auto it = containers_.find(id);
    if (it == containers_.end() || it->second.app != app) {
      return invalidArgument("releases",
                             "container " + id.value() + " is not a container of " + app.value());
    }
    if (!it->second.running) continue;
    // Free for the core at once.
    MORPHEUS_IGNORE_NOT_FOUND(sched_->release(app, it->first),
                              "its node was removed from the core");
    to_kill_[it->second.node].insert(id);
    // Released is done for the RM at once (YARN): the app's usage, DRA's
    // `used` and the telemetry interval end now. A surplus grant the AM never
    // launched gets no COMPLETE from any NM, and would otherwise count as in
    // use until the app ends; a launched one's later COMPLETE is acknowledged.
    containerDone(it->second,
                  endedByRm(id, v1::EXIT_REASON_KILLED, "released by the application master"));
  }
  return Status::ok();
}

void RmRuntime::collectForAm(const AppId& app, AppRt& rt, AllocateOutcome* out) {
  out->allocated.swap(rt.allocated);
  out->completed.swap(rt.completed);
  // Notices are advisory (the scheduler withdraws one no longer needed at its
  // deadline): a container counts as preempted once it is sent to
  // kill, not when noticed.
  out->preemptions = sched_->takePreemptionNotices(app);
  out->num_cluster_nodes = live_nodes_;
  out->available = Resource::max(sched_->clusterTotal() - sched_->clusterUsed(), Resource());
}

Status RmRuntime::finishAm(FinishAmCall call) {
  const AppId& app = call.app;
  MORPHEUS_RETURN_IF_ERROR(authorizeAm(app, call.am_token, /*running=*/false));
  MORPHEUS_RETURN_IF_ERROR(apps_.finish(app, call.final_state, call.diagnostics));
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, apps_.get(app));
  AppTelemetryRecord t;
  std::map<std::string, Millis> profile;
  std::optional<store::StateWrite> harvest_run;  // The job's run length
  {
    Guard lk(*this);
    AppRt& rt = windDown(app);
    profile = recordStageHistory(rec, call.final_state, call.stages, rt);
    harvest_run = harvest_.recordRun(rec, call.final_state);
    t = finishedTelemetry(rec, call.final_state, rt);
  }
  t.files = std::move(call.files);
  persistFinished(t, profile, harvest_run);
  {
    Guard lk(*this);
    finished_.push_back(t);
    if (finished_.size() > 100000) finished_.pop_front();
  }
  if (telemetry_) telemetry_->enqueue(std::move(t));
  return Status::ok();
}

RmRuntime::AppRt& RmRuntime::windDown(const AppId& app) {
  refresh(app);
  AppRt& rt = rt_[app];
  withdrawAsks(app);
  forgetIfDone(app);  // nothing left running (the AM usually still is)
  // Task containers still running are stopped; the AM exits on its own.
  for (const auto& [id, c] : containers_) {
    if (c.app == app && c.running && !c.am) to_kill_[c.node].insert(id);
  }
  return rt;
}

std::map<std::string, Millis> RmRuntime::recordStageHistory(
    const AppRecord& rec, AppState final_state,
    const std::vector<reprovision::StageState>& final_stages, const AppRt& rt) {
  std::map<std::string, Millis> profile;
  if (final_state == AppState::kFinished && !rec.spec.recurrence_key.empty()) {
    profile = stageProfile(!final_stages.empty() ? final_stages : rt.stages);
    if (!profile.empty()) stage_history_[rec.spec.recurrence_key.value()] = profile;
  }
  return profile;
}

AppTelemetryRecord RmRuntime::finishedTelemetry(const AppRecord& rec, AppState final_state,
                                                const AppRt& rt) const {
  // The skyline counts every container of the app, its AM's included (as
  // ReservationDemand::used does): the AM holds reservation capacity for
  // the whole run, so the plan must cover it.
  std::vector<ContainerInterval> intervals = rt.intervals;
  for (const auto& [id, c] : containers_) {
    if (c.app == rec.id && c.running) intervals.push_back({c.start, rec.finish, c.resource, c.am});
  }
  AppTelemetryRecord t;
  t.app = rec.id;
  t.recurrence_key = rec.spec.recurrence_key;
  t.user = rec.spec.user;
  t.submit = rec.submit;
  t.start = rec.start;
  t.finish = rec.finish;
  t.step = opts_.telemetry_step;
  t.outcome = final_state == AppState::kFinished ? AppOutcome::kSucceeded
              : final_state == AppState::kFailed ? AppOutcome::kFailed
                                                 : AppOutcome::kKilled;
  t.container = typicalContainer(intervals);
  t.skyline = computeSkyline(intervals, rec.start, rec.finish, opts_.telemetry_step, t.container);
  return t;
}

void RmRuntime::persistFinished(const AppTelemetryRecord& t,
                                const std::map<std::string, Millis>& profile,
                                const std::optional<store::StateWrite>& harvest_run) {
  if (!store_) return;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : t.files)
    files.push_back({{"path", f.path}, {"time_ms", toEpochMs(f.time)}, {"write", f.write}});
  nlohmann::json j = {{"app", t.app.value()},
                      {"key", t.recurrence_key.value()},
                      {"user", t.user.value()},
                      {"submit_ms", toEpochMs(t.submit)},
                      {"start_ms", toEpochMs(t.start)},
                      {"finish_ms", toEpochMs(t.finish)},
                      {"step_ms", t.step.count()},
                      {"skyline", t.skyline},
                      {"memory_mib", t.container.memoryMib()},
                      {"vcores", t.container.vcores()},
                      {"status", static_cast<int>(t.outcome)},
                      {"files", files}};
  std::vector<store::StateWrite> batch = {{"telemetry", t.app.value(), j.dump()}};
  if (!profile.empty()) {
    nlohmann::json p = nlohmann::json::object();
    for (const auto& [name, d] : profile) p[name] = d.count();
    batch.push_back({"stage-history", t.recurrence_key.value(), p.dump()});
  }
  if (harvest_run) batch.push_back(*harvest_run);
  if (Status st = store_->commit(batch); !st.isOk()) {
    spdlog::warn("telemetry of {} not persisted: {}", t.app.value(), st.message());
  }
}

void RmRuntime::setStore(store::StateStore* store) {
  store_ = store;
  harvest_.setStore(store);
}

Status RmRuntime::recoverTelemetry() {
  if (!store_) return Status::ok();
  MORPHEUS_ASSIGN_OR_RETURN(auto rows, store_->list("telemetry"));
  std::vector<AppTelemetryRecord> recs;
  for (const auto& [key, value] : rows) {
    auto j = nlohmann::json::parse(value, nullptr, false);
    if (j.is_discarded()) return internalError("corrupt telemetry record " + key);
    try {
      AppTelemetryRecord t;
      t.app = AppId(j.at("app").get<std::string>());
      t.recurrence_key = JobKey(j.at("key").get<std::string>());
      t.user = UserId(j.at("user").get<std::string>());
      t.submit = fromEpochMs(j.at("submit_ms").get<int64_t>());
      t.start = fromEpochMs(j.at("start_ms").get<int64_t>());
      t.finish = fromEpochMs(j.at("finish_ms").get<int64_t>());
      t.step = Millis(j.at("step_ms").get<int64_t>());
      t.skyline = j.at("skyline").get<std::vector<double>>();
      t.container = Resource(j.at("memory_mib").get<int64_t>(), j.at("vcores").get<int64_t>());
      // Records persisted before the status was kept are successful runs.
      t.outcome = static_cast<AppOutcome>(std::clamp(j.value("status", 0), 0, 2));
      for (const auto& f : j.at("files")) {
        t.files.push_back({f.at("path").get<std::string>(),
                           fromEpochMs(f.at("time_ms").get<int64_t>()), f.at("write").get<bool>()});
      }
      recs.push_back(std::move(t));
    } catch (const nlohmann::json::exception& e) {
      return internalError("corrupt telemetry record " + key + ": " + e.what());
    }
  }
  std::sort(recs.begin(), recs.end(),
            [](const auto& a, const auto& b) { return a.finish < b.finish; });
  MORPHEUS_ASSIGN_OR_RETURN(auto hist_rows, store_->list("stage-history"));
  std::map<std::string, std::map<std::string, Millis>> history;
  for (const auto& [key, value] : hist_rows) {
    auto j = nlohmann::json::parse(value, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return internalError("corrupt stage history " + key);
    for (const auto& [name, ms] : j.items()) {
      if (!ms.is_number_integer() || ms.get<int64_t>() <= 0)
        return internalError("corrupt stage history " + key + ": stage " + name);
      history[key][name] = Millis(ms.get<int64_t>());
    }
  }
  MORPHEUS_RETURN_IF_ERROR(harvest_.recover());
  Guard lk(*this);
  finished_.assign(recs.begin(), recs.end());
  stage_history_ = std::move(history);
  return Status::ok();
}

std::vector<AppTelemetryRecord> RmRuntime::telemetry(const std::string& key) const {
  Guard lk(*this);
  std::vector<AppTelemetryRecord> out;
  for (const auto& t : finished_) {
    if (key.empty() || t.recurrence_key.value() == key) out.push_back(t);
  }
  return out;
}

// The AmLauncher's verdict on a launch (its dispatcher thread): a failed
// launch completes the AM container, so the app retries or fails. (It reads
// back the launch request startAm built.)
void RmRuntime::onLaunched(const AmLaunch& l, const std::string& error) {
  const auto& c = l.request.requests(0).container();
  const std::string attempt =
      l.request.requests(0).launch_context().env().at("MORPHEUS_AM_ATTEMPT");
  if (error.empty()) {
    spdlog::info("app {}: AM attempt {} started in {} on {}", l.app.value(), attempt,
                 c.container_id(), c.node_id());
    return;
  }
  spdlog::warn("app {}: AM launch failed: {}", l.app.value(), error);
  Guard lk(*this);
  auto it = containers_.find(ContainerId(c.container_id()));
  if (it == containers_.end()) return;
  containerDone(it->second,
                endedByRm(it->first, v1::EXIT_REASON_LAUNCH_FAILED, "AM launch failed: " + error));
}

Status RmRuntime::setQueueConfig(
    const std::map<std::string, double>& weights,
    const std::map<std::string, std::shared_ptr<const sched::QueueOrderingPolicy>>& policies) {
  std::vector<sched::AdhocQueueConfig> queues = adhocQueues(weights);
  applyQueuePolicies(queues, policies);
  Guard lk(*this);
  return sched_->setAdhocQueues(queues);
}

std::vector<sched::QueueView> RmRuntime::queues() const {
  Guard lk(*this);
  return sched_->queues();
}

RmRuntime::SchedulerTotals RmRuntime::schedulerTotals() const {
  Guard lk(*this);
  return {sched_->clusterUsed(), sched_->numContainers(), sched_->queues(),
          sched_->numReservedNodes()};
}

// ---- Harvesting (OSDI'16 §3 and §4.1): the HarvestTracker decides, these
// apply its decisions to the nodes and the scheduler core. ----

void RmRuntime::onHarvestReport(Node& node, const NodeHeartbeatCall& call, TimePoint now) {
  if (call.primary_usage) {
    const PrimaryUsageReport& u = *call.primary_usage;
    if (auto cls =
            harvest_.record(node.id, node.total, u.tenant, u.cpu_vcores, u.memory_mib, now)) {
      auto a = node.attributes.find(kHarvestClassAttribute);
      if (*cls != (a == node.attributes.end() ? "" : a->second)) setHarvestClass(node, *cls);
    }
  }
  // An offer without usage: the NM cannot see its primary now (zero).
  if (!call.harvest_offer || node.drained) return;  // a drained node stays at zero
  // Secondary containers get only what the primary tenant leaves: the
  // scheduler places nothing beyond the NM's offer (never beyond the
  // registered total).
  Resource offer = Resource::min(*call.harvest_offer, node.total);
  if (Status st = sched_->setNodeTotal(node.id, offer); !st.isOk()) {
    logLater(spdlog::level::warn, "node {}: harvest offer {} not applied: {}", node.id.value(),
             offer.toString(), st.message());
    return;
  }
  node.offer = offer;
}

void RmRuntime::setHarvestClass(Node& node, const std::string& cls) {
  // A node with a class also carries its own id (harvest-node), which the
  // hold's hard constraint names.
  if (cls.empty()) {
    node.attributes.erase(kHarvestClassAttribute);
    node.attributes.erase(kHarvestNodeAttribute);
  } else {
    node.attributes[kHarvestClassAttribute] = cls;
    node.attributes[kHarvestNodeAttribute] = node.id.value();
  }
  if (!node.live) return;  // re-added with its attributes when it comes back
  Status st = sched_->setNodeAttribute(node.id, kHarvestClassAttribute, cls);
  if (st.isOk()) {
    st = sched_->setNodeAttribute(node.id, kHarvestNodeAttribute,
                                  cls.empty() ? "" : node.id.value());
  }
  if (!st.isOk()) {
    logLater(spdlog::level::warn, "node {}: harvest class not set: {}", node.id.value(),
             st.message());
  }
}

std::vector<HarvestNode> RmRuntime::harvestNodes() const {
  std::vector<HarvestNode> out;
  for (const auto& [id, n] : nodes_) {
    auto a = n.attributes.find(kHarvestClassAttribute);
    if (!n.live || a == n.attributes.end()) continue;
    auto used = sched_->nodeUsed(id);
    const Resource u = used.isOk() ? *used : Resource();
    out.push_back({id, a->second, n.total, 0, u, Resource::max(n.schedulable() - u, Resource())});
  }
  return out;
}

void RmRuntime::applyHarvestFallback(const AppId& app, const AppRt& rt) {
  if (!harvest_.classesOn() || !rt.in_sched || rt.asks.empty() || !harvest_.fallbackDue(app)) {
    return;
  }
  std::map<std::string, int32_t> pending;
  for (const auto& [key, a] : rt.asks) pending[key] = a.count;
  auto re = harvest_.fallBack(app, pending, harvestNodes());
  if (!re.note.empty()) logLater(spdlog::level::info, "{}", re.note);
  if (!re.asks) return;
  if (Status st = sched_->updateAsks(app, *re.asks); !st.isOk()) {
    logLater(spdlog::level::warn, "harvesting: asks of {} not re-constrained: {}", app.value(),
             st.message());
  }
}

void RmRuntime::discountUndelivered(const AppRt& rt,
                                    std::vector<sched::ResourceRequest>* asks) const {
  if (rt.allocated.empty()) return;
  std::map<std::string, int32_t> undelivered;
  for (const auto& g : rt.allocated) undelivered[askKey(g.request_id, g.priority)]++;
  for (auto& a : *asks) {
    if (a.count <= 0) continue;
    auto it = undelivered.find(askKey(a.request_id, a.priority));
    if (it == undelivered.end()) continue;
    const int32_t left = std::max(0, a.count - it->second);
    if (a.gang_size > 1 && left % a.gang_size != 0) continue;
    a.count = left;
  }
}

void RmRuntime::harvestAsks(const AppRecord& rec, const AppRt& rt,
                            std::vector<sched::ResourceRequest>* asks) {
  if (!harvest_.classesOn()) return;
  if (harvest_.noteAsks(rec, *asks)) {
    std::string note = harvest_.select(rec.id, harvestNodes(), rt.stages);
    if (!note.empty()) logLater(spdlog::level::info, "{}", note);
  }
  harvest_.constrain(rec.id, asks);
}

// On the clock's timer thread (HarvestTracker::start), never on the
// scheduler strand.
Status RmRuntime::recomputeHarvestClasses() {
  MORPHEUS_ASSIGN_OR_RETURN(auto classes, harvest_.cluster());
  const bool clustered = classes.has_value();
  Guard lk(*this);
  std::vector<HarvestNode> nodes;
  if (clustered) {
    harvest_.setClasses(std::move(*classes));
    for (auto& [id, node] : nodes_) setHarvestClass(node, harvest_.classOfNode(id));
    nodes = harvestNodes();
  }
  // The jobs of apps that left the scheduler without finishAm (killed) go,
  // classes or not; the others are selected anew.
  for (const AppId& app : harvest_.jobs()) {
    auto r = rt_.find(app);
    if (r == rt_.end() || !r->second.in_sched) {
      harvest_.forgetJob(app);
      continue;
    }
    if (!clustered) continue;
    std::map<std::string, int32_t> pending;
    for (const auto& [key, a] : r->second.asks) pending[key] = a.count;
    auto re = harvest_.reselect(app, pending, nodes, r->second.stages);
    if (!re.note.empty()) logLater(spdlog::level::info, "{}", re.note);
    if (!re.asks) continue;
    if (Status st = sched_->updateAsks(app, *re.asks); !st.isOk()) {
      logLater(spdlog::level::warn, "harvesting: asks of {} not re-constrained: {}", app.value(),
               st.message());
    }
  }
  return Status::ok();
}

std::vector<RmRuntime::HarvestClassView> RmRuntime::harvestClasses() const {
  Guard lk(*this);
  std::vector<HarvestClassView> out;
  for (auto& c : harvest_.classes()) {
    HarvestClassView v{std::move(c), {}};
    for (const auto& [id, n] : nodes_) {
      auto a = n.attributes.find(kHarvestClassAttribute);
      if (a != n.attributes.end() && a->second == v.cls.id) v.nodes.push_back(id);
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string RmRuntime::harvestClassOf(const NodeId& node) const {
  Guard lk(*this);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return "";
  auto a = it->second.attributes.find(kHarvestClassAttribute);
  return a == it->second.attributes.end() ? "" : a->second;
}

}  // namespace morpheus::rm
