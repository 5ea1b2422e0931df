#include "rm/runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/token.h"
#include "common/wire.h"

namespace morpheus::rm {

namespace {

AppId appOfContainer(const std::string& id) {
  auto p = id.rfind("_c");
  return AppId(p == std::string::npos ? "" : id.substr(0, p));
}

bool matches(const v1::PlacementConstraint& c, const std::map<std::string, std::string>& attrs) {
  auto it = attrs.find(c.key());
  if (it == attrs.end()) return false;
  return c.values_size() == 0 ||
         std::find(c.values().begin(), c.values().end(), it->second) != c.values().end();
}

// Soft constraints are preferences (delay scheduling): a node that misses one
// is used only once the ask has waited `patience`.
bool softOk(const v1::ResourceRequest& ask, const std::map<std::string, std::string>& attrs,
            bool patient_enough) {
  if (patient_enough) return true;
  for (const auto& c : ask.constraints()) {
    if (!c.hard() && !matches(c, attrs)) return false;
  }
  return true;
}

bool matchesHard(const v1::ResourceRequest& ask, const std::map<std::string, std::string>& attrs) {
  for (const auto& c : ask.constraints()) {
    if (!c.hard()) continue;
    auto it = attrs.find(c.key());
    if (it == attrs.end()) return false;
    if (c.values_size() > 0 &&
        std::find(c.values().begin(), c.values().end(), it->second) == c.values().end()) {
      return false;
    }
  }
  return true;
}

// "root.prod.etl" -> {"root.prod", "root.prod.etl"} (the root is shared by all).
std::vector<std::string> pathPrefixes(const std::string& path) {
  std::vector<std::string> out;
  size_t p = path.find('.');
  if (path.rfind("root.", 0) != 0 || p == std::string::npos) return {path};
  while ((p = path.find('.', p + 1)) != std::string::npos) out.push_back(path.substr(0, p));
  out.push_back(path);
  return out;
}

double dominantShare(const Resource& used, const Resource& total) {
  double m = total.memoryMib() > 0
                 ? static_cast<double>(used.memoryMib()) / static_cast<double>(total.memoryMib())
                 : 0;
  double c = total.vcores() > 0
                 ? static_cast<double>(used.vcores()) / static_cast<double>(total.vcores())
                 : 0;
  return std::max(m, c);
}

}  // namespace

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
      started_ms_(toEpochMs(clock.now())) {}

RmRuntime::~RmRuntime() { stop(); }

void RmRuntime::setAmAddress(std::string address) {
  std::lock_guard<std::mutex> lk(mu_);
  am_address_ = std::move(address);
}

void RmRuntime::start() {
  launcher_ = std::thread([this] { launcherLoop(); });
}

void RmRuntime::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (launcher_.joinable()) launcher_.join();
}

void RmRuntime::onNodeRegistered(const v1::RegisterNodeRequest& req) {
  std::lock_guard<std::mutex> lk(mu_);
  NodeId id(req.node_id());
  Node& n = nodes_[id];
  n.id = id;
  n.address = req.container_manager_address();
  n.total = fromProto(req.total());
  n.attributes.clear();
  for (const auto& a : req.attributes()) n.attributes[a.key()] = a.value();
  n.live = true;
  n.used = Resource();
  for (const auto& [cid, c] : containers_) {
    if (c.node == id && c.running) n.used += c.resource;
  }
  recomputeCluster();
}

void RmRuntime::recomputeCluster() {
  cluster_ = Resource();
  for (const auto& [_, n] : nodes_) {
    if (n.live) cluster_ += n.total;
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

void RmRuntime::containerDone(Cont& c, const v1::ContainerStatus& st) {
  if (!c.running) return;
  c.running = false;
  c.end = clock_.now();
  done_.insert(c.id);
  if (auto n = nodes_.find(c.node); n != nodes_.end()) n->second.used -= c.resource;
  AppRt& rt = appRt(c.app);
  rt.used -= c.resource;
  rt.running--;
  if (c.am) {
    rt.am_pending = false;
    auto app = apps_.get(c.app);
    if (app.isOk() && !isFinal(app->state) && app->am_container == c.id) {
      std::string why = st.diagnostics().empty()
                            ? "AM container exited with status " + std::to_string(st.exit_status())
                            : st.diagnostics();
      auto r = apps_.amAttemptFailed(c.app, why);
      refresh(c.app);
      // A failed attempt's containers go with it (YARN semantics).
      killAppContainers(c.app);
      rt.asks.clear();
      rt.allocated.clear();
      rt.completed.clear();
      metrics_
          .counter("morpheus_rm_am_attempts_failed_total",
                   "AM attempts that ended without finishing")
          .inc();
      (void)r;
    }
    return;
  }
  rt.intervals.push_back({c.start, c.end});
  v1::ContainerStatus out = st;
  if (preempting_.erase(c.id) > 0) {
    out.set_exit_reason(v1::EXIT_REASON_PREEMPTED);
    out.set_diagnostics("preempted: capacity taken back by a reservation");
    metrics_
        .counter("morpheus_rm_containers_preempted_total",
                 "Borrowed containers killed for a reservation")
        .inc();
  }
  if (!isFinal(rt.state)) rt.completed.push_back(out);
}

void RmRuntime::killAppContainers(const AppId& app) {
  for (const auto& [id, c] : containers_) {
    if (c.app == app && c.running) to_kill_[c.node].insert(id.value());
  }
}

void RmRuntime::onNodeHeartbeat(const v1::NodeHeartbeatRequest& req,
                                v1::NodeHeartbeatResponse* resp) {
  std::lock_guard<std::mutex> lk(mu_);
  NodeId nid(req.node_id());
  auto nit = nodes_.find(nid);
  if (nit == nodes_.end()) return;
  Node& node = nit->second;
  if (!node.live) {
    node.live = true;
    recomputeCluster();
  }
  for (const auto& st : req.container_statuses()) {
    ContainerId cid(st.container_id());
    auto it = containers_.find(cid);
    if (st.state() == v1::CONTAINER_COMPLETE) {
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
      to_ack_[nid].push_back(st.container_id());
      continue;
    }
    if (it == containers_.end() && !done_.count(cid)) {
      // Running but unknown (reported after an RM restart): re-adopt it if its
      // app still runs, else stop it.
      AppId app = appOfContainer(st.container_id());
      auto rec = apps_.get(app);
      if (!rec.isOk() || isFinal(rec->state)) {
        to_kill_[nid].insert(st.container_id());
        continue;
      }
      Resource r = fromProto(st.resource());
      Cont c{cid, app, nid, r, rec->am_container == cid, true, fromEpochMs(st.start_ms()), {}};
      containers_[cid] = c;
      node.used += r;
      rt_[app].running++;
      rt_[app].used += r;
      spdlog::info("re-adopted running container {} of {} on {}", cid.value(), app.value(),
                   nid.value());
    } else if (it != containers_.end() && !it->second.running) {
      to_kill_[nid].insert(st.container_id());  // we consider it done (e.g. node was lost): stop it
    }
  }
  if (clock_.now() - last_preemption_pass_ >= Millis(250)) {
    last_preemption_pass_ = clock_.now();
    preemptionPass();
  }
  schedule(node, resp);
  for (const auto& id : to_kill_[nid]) resp->add_containers_to_kill(id);
  to_kill_[nid].clear();
  for (const auto& id : to_ack_[nid]) resp->add_containers_to_acknowledge(id);
  to_ack_[nid].clear();
}

v1::Container RmRuntime::grant(Node& node, const AppId& app, const Resource& r,
                               const v1::ResourceRequest* ask, bool am) {
  // Unique across RM restarts: the RM's start time, then a sequence number.
  char buf[64];
  std::snprintf(buf, sizeof buf, "_c%lld_%06lld", static_cast<long long>(started_ms_),
                static_cast<long long>(seq_++));
  ContainerId cid(app.value() + buf);
  Cont c{cid, app, node.id, r, am, true, clock_.now(), {}};
  containers_[cid] = c;
  node.used += r;
  AppRt& rt = rt_[app];
  rt.used += r;
  rt.running++;
  v1::Container out;
  out.set_container_id(cid.value());
  out.set_node_id(node.id.value());
  out.set_node_address(node.address);
  toProto(r, out.mutable_resource());
  out.set_token(issueContainerToken(core_.signer(), {cid, app, node.id, r}));
  if (ask) {
    out.set_priority(ask->priority());
    out.set_allocation_request_id(ask->request_id());
  }
  metrics_.counter("morpheus_rm_containers_allocated_total", "Containers allocated").inc();
  return out;
}

void RmRuntime::schedule(Node& node, v1::NodeHeartbeatResponse*) {
  const Resource& cluster = cluster_;
  // 1. AM containers of submitted apps, reservation-bound first, then by
  // submission. The list is re-read when any app changed.
  if (apps_.version() != submitted_version_) {
    submitted_version_ = apps_.version();
    submitted_ = apps_.list({AppState::kSubmitted}, "");
    std::stable_sort(submitted_.begin(), submitted_.end(),
                     [](const AppRecord& a, const AppRecord& b) {
                       return !a.reservation.empty() && b.reservation.empty();
                     });
  }
  for (auto it = submitted_.begin(); it != submitted_.end();) {
    const AppRecord a = *it;
    AppRt& rt = rt_[a.id];
    if (rt.am_pending || !a.spec.am_resource.fitsIn(node.total - node.used)) {
      ++it;
      continue;
    }
    it = submitted_.erase(it);
    v1::Container c = grant(node, a.id, a.spec.am_resource, nullptr, true);
    if (Status st = apps_.amLaunched(a.id, ContainerId(c.container_id()), node.id); !st.isOk()) {
      // E.g. killed meanwhile: undo the grant.
      spdlog::warn("app {}: AM not launched: {}", a.id.value(), st.message());
      Resource r = a.spec.am_resource;
      containers_.erase(ContainerId(c.container_id()));
      node.used -= r;
      rt_[a.id].used -= r;
      rt_[a.id].running--;
      continue;
    }
    refresh(a.id);
    rt_[a.id].am_pending = true;
    launches_.push_back({a.id, c, node.address, a.spec.am_launch_context, a.attempt + 1});
    cv_.notify_all();
  }
  // A full node has nothing to offer (the common case in steady state).
  if (!Resource(1, 1).fitsIn(node.total - node.used)) return;
  // 2. Asks of running apps. Apps below their reservation's guarantee first
  // (periodic, then one-off); then everyone else by weighted fair share:
  // the ad-hoc queue (or borrowing reservation) with the smallest dominant
  // share / weight, inside it the user with the smallest dominant share
  // (DRF), one container (or gang) at a time.
  struct Cand {
    int cls;
    AppId app;
    size_t qi, ui;                // indexes into queue_used / user_used
    std::vector<size_t> levels;   // indexes into queue_used of each prefix of the queue path
    std::vector<double> weights;  // weight of each prefix
  };
  std::vector<Cand> cands;
  std::vector<Resource> queue_used, user_used;
  std::map<std::string, size_t> queue_ix;
  std::map<std::pair<std::string, std::string>, size_t> user_ix;
  for (auto& [app, rt0] : rt_) {
    if (rt0.running == 0 && rt0.asks.empty()) continue;
    AppRt& rt = appRt(app);
    if (rt.state != AppState::kRunning) continue;
    int cls = 2;
    std::string queue = rt.queue;
    if (!rt.reservation.empty()) {
      Resource g = guarantee_(rt.reservation, clock_.now());
      bool below = !g.isZero() && !g.fitsIn(rt.used);
      if (below) cls = periodic_(rt.reservation) ? 0 : 1;
      queue = "reservation:" + rt.reservation.value();
    }
    for (const auto& prefix : pathPrefixes(queue)) {
      auto [pit, pnew] = queue_ix.try_emplace(prefix, queue_used.size());
      if (pnew) queue_used.emplace_back();
      if (prefix != queue) queue_used[pit->second] += rt.used;
    }
    auto [qit, qnew] = queue_ix.try_emplace(queue, queue_used.size());
    if (qnew) queue_used.emplace_back();
    auto [uit, unew] = user_ix.try_emplace({queue, rt.user}, user_used.size());
    if (unew) user_used.emplace_back();
    queue_used[qit->second] += rt.used;
    user_used[uit->second] += rt.used;
    if (!rt.asks.empty()) {
      Cand c{cls, app, qit->second, uit->second, {}, {}};
      for (const auto& prefix : pathPrefixes(queue)) {
        auto [pit, pnew] = queue_ix.try_emplace(prefix, queue_used.size());
        if (pnew) queue_used.emplace_back();
        auto w = opts_.queue_weights.find(prefix);
        c.levels.push_back(pit->second);
        c.weights.push_back(w != opts_.queue_weights.end() && w->second > 0 ? w->second : 1.0);
      }
      cands.push_back(std::move(c));
    }
  }
  const Millis soft_patience = std::max(Millis(1000), core_.heartbeatInterval() * 3);
  // Allocates one unit (a container or a gang) of `app`'s most urgent ask
  // that fits this node; false when nothing fits.
  auto allocateOne = [&](const Cand& c) {
    if (!(Resource(1, 1)).fitsIn(node.total - node.used)) return false;  // node full
    AppRt& rt = rt_[c.app];
    v1::ResourceRequest* best = nullptr;
    for (auto& [_, ask] : rt.asks) {
      if (ask.count() <= 0 || !matchesHard(ask, node.attributes)) continue;
      auto since = rt.ask_since.find(ask.request_id());
      bool patient = since == rt.ask_since.end() || clock_.now() - since->second >= soft_patience;
      if (!softOk(ask, node.attributes, patient)) continue;
      Resource cap = fromProto(ask.capability());
      int gang = std::max(1, ask.gang_size());
      if (ask.count() < gang || !(cap * gang).fitsIn(node.total - node.used)) continue;
      if (!best || ask.priority() < best->priority()) best = &ask;
    }
    if (!best) return false;
    Resource cap = fromProto(best->capability());
    int gang = std::max(1, best->gang_size());
    for (int g = 0; g < gang; g++) rt.allocated.push_back(grant(node, c.app, cap, best, false));
    best->set_count(best->count() - gang);
    for (size_t l : c.levels) queue_used[l] += cap * gang;
    user_used[c.ui] += cap * gang;
    return true;
  };
  // Guarantees first.
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Cand& a, const Cand& b) { return a.cls < b.cls; });
  for (const auto& c : cands) {
    if (c.cls < 2) {
      while (allocateOne(c)) {
      }
    }
  }
  // Then fair share among the rest.
  std::vector<Cand> rest;
  for (const auto& c : cands) {
    if (c.cls == 2) rest.push_back(c);
  }
  while (!rest.empty() && Resource(1, 1).fitsIn(node.total - node.used)) {
    // Hierarchical fair share: at the first level where two queue paths
    // differ, the child with the smaller dominant share / weight goes first.
    // Levels beyond 8 compare as equal; the user's share is the last entry.
    using Key = std::array<double, 9>;
    auto key = [&](const Cand& c) {
      Key k{};
      for (size_t i = 0; i < c.levels.size() && i < 8; i++) {
        k[i] = dominantShare(queue_used[c.levels[i]], cluster) / c.weights[i];
      }
      k[8] = dominantShare(user_used[c.ui], cluster);
      return k;
    };
    auto best = rest.begin();
    Key best_key = key(*best);
    for (auto it = std::next(rest.begin()); it != rest.end(); ++it) {
      Key k = key(*it);
      if (k < best_key || (k == best_key && it->app < best->app)) {
        best = it;
        best_key = k;
      }
    }
    if (!allocateOne(*best)) rest.erase(best);
  }
  for (auto& [_, rt] : rt_) {
    for (auto it = rt.asks.begin(); it != rt.asks.end();) {
      if (it->second.count() > 0) {
        ++it;
        continue;
      }
      rt.ask_since.erase(it->first);
      it = rt.asks.erase(it);
    }
  }
}

void RmRuntime::preemptionPass() {
  TimePoint now = clock_.now();
  // Deadlines that passed: kill.
  for (const auto& [cid, deadline] : preempting_) {
    auto it = containers_.find(cid);
    if (it != containers_.end() && it->second.running && now >= deadline)
      to_kill_[it->second.node].insert(cid.value());
  }
  Resource free, coming;
  for (const auto& [_, n] : nodes_) {
    if (n.live) free += n.total - n.used;
  }
  for (const auto& [cid, _] : preempting_) {
    if (auto it = containers_.find(cid); it != containers_.end() && it->second.running)
      coming += it->second.resource;
  }
  // Reservations below their guarantee with unmet demand.
  std::map<ReservationId, Resource> used_by, demand_of;
  std::map<AppId, ReservationId> bound;
  for (const auto& a : apps_.list({AppState::kSubmitted, AppState::kRunning}, "")) {
    if (a.reservation.empty()) continue;
    bound[a.id] = a.reservation;
    AppRt& rt = rt_[a.id];
    used_by[a.reservation] += rt.used;
    if (a.state == AppState::kSubmitted && !rt.am_pending)
      demand_of[a.reservation] += a.spec.am_resource;
    for (const auto& [_, ask] : rt.asks)
      demand_of[a.reservation] += fromProto(ask.capability()) * ask.count();
  }
  Resource need;
  std::map<ReservationId, Resource> guarantees;
  for (const auto& [r, d] : demand_of) {
    Resource g = guarantee_(r, now);
    guarantees[r] = g;
    Resource room = g - used_by[r];
    Resource want(std::max<int64_t>(0, std::min(room.memoryMib(), d.memoryMib())),
                  std::max<int64_t>(0, std::min(room.vcores(), d.vcores())));
    need += want;
  }
  if (need.isZero() || need.fitsIn(free + coming)) return;
  // Victims: running task containers of borrowers (ad hoc, or a reservation
  // beyond its guarantee), newest first.
  std::vector<const Cont*> victims;
  for (const auto& [cid, c] : containers_) {
    if (!c.running || c.am || preempting_.count(cid)) continue;
    auto b = bound.find(c.app);
    if (b != bound.end()) {
      Resource g = guarantees.count(b->second) ? guarantees[b->second] : guarantee_(b->second, now);
      if (used_by[b->second].fitsIn(g)) continue;  // within its own guarantee: not borrowed
    }
    victims.push_back(&c);
  }
  std::sort(victims.begin(), victims.end(),
            [](const Cont* a, const Cont* b) { return a->start > b->start; });
  for (const Cont* v : victims) {
    if (need.fitsIn(free + coming)) break;
    preempting_[v->id] = now + opts_.preemption_grace;
    coming += v->resource;
    v1::PreemptionNotice n;
    n.set_container_id(v->id.value());
    n.set_deadline_ms(toEpochMs(now + opts_.preemption_grace));
    n.set_reason("a reservation reclaims its guaranteed capacity");
    rt_[v->app].preemptions.push_back(n);
    spdlog::info("preempting {} of {} within {} ms: a reservation reclaims its guarantee",
                 v->id.value(), v->app.value(), opts_.preemption_grace.count());
  }
}

void RmRuntime::onNodeLost(const NodeId& node) {
  std::lock_guard<std::mutex> lk(mu_);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end()) return;
  nit->second.live = false;
  recomputeCluster();
  for (auto& [id, c] : containers_) {
    if (c.node != node || !c.running) continue;
    v1::ContainerStatus st;
    st.set_container_id(id.value());
    st.set_state(v1::CONTAINER_COMPLETE);
    st.set_exit_status(-100);
    st.set_exit_reason(v1::EXIT_REASON_NODE_LOST);
    st.set_diagnostics("node " + node.value() + " lost");
    st.set_start_ms(toEpochMs(c.start));
    st.set_end_ms(toEpochMs(clock_.now()));
    containerDone(c, st);
  }
  to_kill_.erase(node);
}

void RmRuntime::onAppKilled(const AppId& app) {
  std::lock_guard<std::mutex> lk(mu_);
  refresh(app);
  killAppContainers(app);
  rt_[app].asks.clear();
}

void RmRuntime::usage(const AppId& app, int32_t* containers, Resource* used) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = rt_.find(app);
  *containers = it == rt_.end() ? 0 : it->second.running;
  *used = it == rt_.end() ? Resource() : it->second.used;
}

std::map<ReservationId, ReservationDemand> RmRuntime::reservationDemand() const {
  auto bound = apps_.list({AppState::kSubmitted, AppState::kRunning}, "");
  std::lock_guard<std::mutex> lk(mu_);
  std::map<ReservationId, ReservationDemand> out;
  for (const auto& a : bound) {
    if (a.reservation.empty()) continue;
    ReservationDemand& d = out[a.reservation];
    d.apps.push_back(a.id);
    d.progress = std::min(d.progress, static_cast<double>(a.progress));
    auto it = rt_.find(a.id);
    bool am_pending = it != rt_.end() && it->second.am_pending;
    if (a.state == AppState::kSubmitted && !am_pending) {
      d.pending += a.spec.am_resource;
      d.progress = 0;
    }
    if (it == rt_.end()) continue;
    d.used += it->second.used;
    d.critical_path = std::max(d.critical_path, it->second.critical_path);
    for (const auto& [_, ask] : it->second.asks) {
      d.pending += fromProto(ask.capability()) * ask.count();
    }
  }
  return out;
}

Status RmRuntime::registerAm(const v1::RegisterApplicationMasterRequest& req,
                             v1::RegisterApplicationMasterResponse* resp) {
  AppId app(req.application_id());
  if (app.empty()) return invalidArgument("application_id", "is required");
  MORPHEUS_RETURN_IF_ERROR(apps_.checkAmToken(app, req.am_token()));
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, apps_.get(app));
  if (rec.state != AppState::kRunning)
    return infeasible("application " + app.value() + " is " + toString(rec.state));
  resp->set_queue(rec.queue);
  resp->set_reservation_id(rec.reservation.value());
  std::lock_guard<std::mutex> lk(mu_);
  Resource largest;
  for (const auto& [_, n] : nodes_) {
    if (n.live && n.total.memoryMib() >= largest.memoryMib()) largest = n.total;
  }
  toProto(largest, resp->mutable_max_container());
  for (const auto& [id, c] : containers_) {
    if (c.app != app || !c.running || c.am) continue;
    auto* out = resp->add_running_containers();
    out->set_container_id(id.value());
    out->set_node_id(c.node.value());
    if (auto n = nodes_.find(c.node); n != nodes_.end()) out->set_node_address(n->second.address);
    toProto(c.resource, out->mutable_resource());
  }
  rt_[app].registered = true;
  spdlog::info("AM of {} registered (attempt {})", app.value(), rec.attempt);
  return Status::ok();
}

Status RmRuntime::allocate(const v1::AllocateRequest& req, v1::AllocateResponse* resp) {
  AppId app(req.application_id());
  if (app.empty()) return invalidArgument("application_id", "is required");
  MORPHEUS_RETURN_IF_ERROR(apps_.checkAmToken(app, req.am_token()));
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, apps_.get(app));
  if (rec.state != AppState::kRunning)
    return infeasible("application " + app.value() + " is " + toString(rec.state));
  for (int i = 0; i < req.asks_size(); i++) {
    const auto& a = req.asks(i);
    std::string f = "asks[" + std::to_string(i) + "]";
    if (a.count() < 0) return invalidArgument(f + ".count", "must be >= 0");
    if (a.gang_size() < 0) return invalidArgument(f + ".gang_size", "must be >= 0");
    if (a.count() > 0) {
      auto cap = validatedResource(a.capability(), f + ".capability");
      if (!cap.isOk()) return cap.status();
      if (cap->isZero()) return invalidArgument(f + ".capability", "must not be zero");
    }
  }
  if (req.critical_path_remaining_ms() < 0) {
    return invalidArgument("critical_path_remaining_ms", "must be >= 0");
  }
  if (req.progress() >= 0) apps_.setProgress(app, req.progress());
  std::lock_guard<std::mutex> lk(mu_);
  AppRt& rt = rt_[app];
  if (!rt.registered) {
    // Work-preserving restart: this RM incarnation has not seen the AM
    // register. Give the NMs a few heartbeats to re-report their running
    // containers, then order a resync (the AM registers again and learns
    // which containers survived).
    Millis grace = std::max(Millis(1000), core_.heartbeatInterval() * 3);
    if (clock_.now() - fromEpochMs(started_ms_) >= grace) resp->set_resync(true);
    resp->set_response_id(req.response_id());
    return Status::ok();
  }
  rt.critical_path = Millis(req.critical_path_remaining_ms());
  for (const auto& a : req.asks()) {
    if (a.count() <= 0) {
      rt.asks.erase(a.request_id());
      rt.ask_since.erase(a.request_id());
    } else {
      rt.asks[a.request_id()] = a;
      rt.ask_since.emplace(a.request_id(), clock_.now());
    }
  }
  for (const auto& id : req.releases()) {
    auto it = containers_.find(ContainerId(id));
    if (it == containers_.end() || it->second.app != app) {
      return invalidArgument("releases",
                             "container " + id + " is not a container of " + app.value());
    }
    if (it->second.running) to_kill_[it->second.node].insert(id);
  }
  for (auto& c : rt.allocated) *resp->add_allocated() = std::move(c);
  rt.allocated.clear();
  for (auto& s : rt.completed) *resp->add_completed() = std::move(s);
  rt.completed.clear();
  for (auto& n : rt.preemptions) *resp->add_preemptions() = std::move(n);
  rt.preemptions.clear();
  resp->set_response_id(req.response_id() + 1);
  int live = 0;
  Resource free;
  for (const auto& [_, n] : nodes_) {
    if (!n.live) continue;
    live++;
    free += n.total - n.used;
  }
  resp->set_num_cluster_nodes(live);
  toProto(free, resp->mutable_available());
  return Status::ok();
}

Status RmRuntime::finishAm(const v1::FinishApplicationMasterRequest& req) {
  AppId app(req.application_id());
  if (app.empty()) return invalidArgument("application_id", "is required");
  MORPHEUS_RETURN_IF_ERROR(apps_.checkAmToken(app, req.am_token()));
  AppState final_state;
  switch (req.final_status()) {
    case v1::FINAL_STATUS_SUCCEEDED:
      final_state = AppState::kFinished;
      break;
    case v1::FINAL_STATUS_FAILED:
      final_state = AppState::kFailed;
      break;
    case v1::FINAL_STATUS_KILLED:
      final_state = AppState::kKilled;
      break;
    default:
      return invalidArgument("final_status", "must be SUCCEEDED, FAILED or KILLED");
  }
  MORPHEUS_RETURN_IF_ERROR(apps_.finish(app, final_state, req.diagnostics()));
  MORPHEUS_ASSIGN_OR_RETURN(AppRecord rec, apps_.get(app));
  AppTelemetryRecord t;
  {
    std::lock_guard<std::mutex> lk(mu_);
    refresh(app);
    AppRt& rt = rt_[app];
    rt.asks.clear();
    // Task containers still running are stopped; the AM exits on its own.
    for (const auto& [id, c] : containers_) {
      if (c.app == app && c.running && !c.am) to_kill_[c.node].insert(id.value());
    }
    std::vector<ContainerInterval> intervals = rt.intervals;
    for (const auto& [id, c] : containers_) {
      if (c.app == app && c.running && !c.am) intervals.push_back({c.start, rec.finish});
    }
    t.app = app;
    t.recurrence_key = rec.spec.recurrence_key;
    t.user = rec.spec.user;
    t.submit = rec.submit;
    t.start = rec.start;
    t.finish = rec.finish;
    t.step = opts_.telemetry_step;
    t.skyline = computeSkyline(intervals, rec.start, rec.finish, opts_.telemetry_step);
    for (const auto& c : containers_) {
      if (c.second.app == app && !c.second.am && !c.second.resource.isZero()) {
        t.container = c.second.resource;
        break;
      }
    }
  }
  for (const auto& f : req.files_read())
    t.files.push_back({f.path(), fromEpochMs(f.time_ms()), false});
  for (const auto& f : req.files_written())
    t.files.push_back({f.path(), fromEpochMs(f.time_ms()), true});
  if (store_) {
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
                        {"files", files}};
    if (Status st = store_->commit({{"telemetry", t.app.value(), j.dump()}}); !st.isOk()) {
      spdlog::warn("telemetry of {} not persisted: {}", app.value(), st.message());
    }
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    finished_.push_back(t);
    if (finished_.size() > 100000) finished_.pop_front();
  }
  if (telemetry_) telemetry_->enqueue(std::move(t));
  return Status::ok();
}

void RmRuntime::setStore(store::StateStore* store) { store_ = store; }

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
  std::lock_guard<std::mutex> lk(mu_);
  finished_.assign(recs.begin(), recs.end());
  return Status::ok();
}

std::vector<AppTelemetryRecord> RmRuntime::telemetry(const std::string& key) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<AppTelemetryRecord> out;
  for (const auto& t : finished_) {
    if (key.empty() || t.recurrence_key.value() == key) out.push_back(t);
  }
  return out;
}

void RmRuntime::launcherLoop() {
  for (;;) {
    Launch l;
    std::string am_address;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [this] { return stopping_ || !launches_.empty(); });
      if (stopping_) return;
      l = std::move(launches_.front());
      launches_.pop_front();
      am_address = am_address_;
    }
    v1::StartContainersRequest req;
    auto* r = req.add_requests();
    *r->mutable_container() = l.container;
    if (!r->mutable_launch_context()->ParseFromString(l.launch_context)) {
      spdlog::error("app {}: corrupt AM launch context", l.app.value());
    }
    auto& env = *r->mutable_launch_context()->mutable_env();
    env["MORPHEUS_RM_AM_ADDRESS"] = am_address;
    env["MORPHEUS_APP_ID"] = l.app.value();
    env["MORPHEUS_AM_TOKEN"] = apps_.amToken(l.app, l.attempt);
    env["MORPHEUS_AM_ATTEMPT"] = std::to_string(l.attempt);
    auto stub = v1::ContainerManager::NewStub(makeChannel(l.node_address));
    v1::StartContainersResponse resp;
    auto ctx = makeContext(Millis(10000));
    grpc::Status st = stub->StartContainers(ctx.get(), req, &resp);
    std::string error;
    if (!st.ok()) {
      error = "cannot reach node " + l.container.node_id() + ": " + st.error_message();
    } else if (resp.failed_size() > 0) {
      error = resp.failed(0).code() + ": " + resp.failed(0).message();
    }
    if (error.empty()) {
      spdlog::info("app {}: AM attempt {} started in {} on {}", l.app.value(), l.attempt,
                   l.container.container_id(), l.container.node_id());
      continue;
    }
    spdlog::warn("app {}: AM launch failed: {}", l.app.value(), error);
    std::lock_guard<std::mutex> lk(mu_);
    auto it = containers_.find(ContainerId(l.container.container_id()));
    if (it == containers_.end()) continue;
    v1::ContainerStatus cs;
    cs.set_container_id(l.container.container_id());
    cs.set_state(v1::CONTAINER_COMPLETE);
    cs.set_exit_reason(v1::EXIT_REASON_LAUNCH_FAILED);
    cs.set_diagnostics("AM launch failed: " + error);
    containerDone(it->second, cs);
  }
}

}  // namespace morpheus::rm
