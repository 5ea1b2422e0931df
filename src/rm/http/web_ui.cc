#include "rm/http/web_ui.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/mutex.h"
#include "common/wire.h"
#include "morpheus/v1/inference.grpc.pb.h"
#include "rm/http/ui_assets.h"

namespace morpheus::rm {

using nlohmann::json;

namespace {

json resourceJson(const Resource& r) {
  return {{"memory_mib", r.memoryMib()}, {"vcores", r.vcores()}};
}

HttpResponse jsonResponse(int status, const json& j) { return jsonAnswer(status, j); }

// The HTTP server's own 400/404/405 under /ui/api/ in the data endpoints'
// error shape (jsonError), so a script reading them parses every answer.
HttpResponse uiApiError(int http_status, const Status& error) {
  HttpResponse r = jsonError(error);
  r.status = http_status;
  return r;
}

std::string contentTypeOf(const std::string& name) {
  auto ends = [&name](const std::string& ext) {
    return name.size() >= ext.size() &&
           name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

HttpHandler assetHandler(const std::string& name) {
  std::string body(uiAssets().at(name));
  std::string type = contentTypeOf(name);
  return [body, type](const HttpRequest&) { return HttpResponse{200, type, body}; };
}

using AuthedHandler = std::function<HttpResponse(const HttpRequest&, const Principal&)>;

// The REST surface's authentication (rest.h): 401 / 403 before `h` runs,
// which gets the caller.
HttpHandler authenticated(const RmAccess& access, AuthedHandler h) {
  return [&access, h = std::move(h)](const HttpRequest& req) {
    int http_status = 401;
    auto who = access.caller(req, &http_status);
    if (!who.isOk()) {
      HttpResponse r = jsonError(who.status());
      r.status = http_status;
      return r;
    }
    return h(req, *who);
  };
}

json nodesJson(const WebUiSources& s) {
  json nodes = json::array();
  for (const auto& n : s.core->nodes(true)) {
    nodes.push_back({{"id", n.id.value()},
                     {"live", n.live},
                     {"admin_state", toString(n.admin.state)},
                     {"http_address", n.http_address},
                     {"total", resourceJson(n.total)},
                     {"used", resourceJson(n.used)},
                     {"containers", n.num_containers},
                     {"last_heartbeat_ms", toEpochMs(n.last_heartbeat)}});
  }
  return nodes;
}

// Carbyne's view of an app that reports its DAG (the gRPC ApplicationReport's
// `altruism`): the least allocation it needs now and its estimated remaining
// time; null for an app without estimates or outside a Carbyne queue.
json altruismJson(const sched::AppHint& hint) {
  if (!hint.valid || !hint.from_dag) return nullptr;
  return {{"need", resourceJson(hint.need)}, {"estimated_remaining_ms", hint.remaining.count()}};
}

struct QueueUse {
  int running = 0;
  int pending = 0;
  Resource used;
};

// Live apps, and per queue (ad-hoc path or reservation id) their counts and use.
json appsJson(const WebUiSources& s, std::map<std::string, QueueUse>* per_queue) {
  json apps = json::array();
  for (const auto& a : s.apps->list({AppState::kSubmitted, AppState::kRunning}, "")) {
    int32_t containers = 0;
    Resource used;
    s.runtime->usage(a.id, &containers, &used);
    std::string queue = a.reservation.value().empty() ? a.queue : a.reservation.value();
    QueueUse& q = (*per_queue)[queue];
    (a.state == AppState::kRunning ? q.running : q.pending)++;
    q.used += used;
    // Why it has not started (a queue or user limit) before the scheduler's reasons.
    std::vector<std::string> reasons = s.runtime->pendingReasons(a.id);
    if (std::string w = s.apps->waitingReason(a.id); !w.empty()) reasons.insert(reasons.begin(), w);
    apps.push_back({{"id", a.id.value()},
                    {"name", a.spec.name},
                    {"user", a.spec.user.value()},
                    {"queue", a.queue},
                    {"reservation", a.reservation.value()},
                    {"state", toString(a.state)},
                    {"progress", a.progress},
                    {"containers", containers},
                    {"used", resourceJson(used)},
                    {"submit_ms", toEpochMs(a.submit)},
                    {"pending_reasons", reasons},
                    {"altruism", altruismJson(s.runtime->appHint(a.id))}});
  }
  return apps;
}

json queuesJson(const WebUiSources& s, const std::map<std::string, QueueUse>& per_queue) {
  json queues = json::array();
  auto add = [&](const std::string& name, const std::string& kind, double weight,
                 const Resource& guarantee) {
    auto it = per_queue.find(name);
    QueueUse q = it == per_queue.end() ? QueueUse{} : it->second;
    queues.push_back({{"name", name},
                      {"kind", kind},
                      {"weight", weight},
                      {"guarantee", resourceJson(guarantee)},
                      {"running", q.running},
                      {"pending", q.pending},
                      {"used", resourceJson(q.used)}});
  };
  // Weights as the scheduler runs them now (a config reload may have changed them).
  std::map<std::string, double> weights;
  for (const auto& q : s.runtime->queues()) {
    if (!q.ref.isReservation()) weights[q.ref.adhocPath()] = q.weight;
  }
  for (const auto& leaf : s.leaf_queues) {
    auto w = weights.find(leaf);
    add(leaf, "ad-hoc", w == weights.end() ? 1.0 : w->second, Resource());
  }
  TimePoint now = s.clock->now();
  for (const auto& id : s.reservations->ids()) {
    add(id.value(), "reservation", 0.0, s.reservations->guaranteedAt(id, now));
  }
  return queues;
}

HttpResponse clusterResponse(const WebUiSources& s) {
  ClusterSummary sum = s.core->summary();
  std::map<std::string, QueueUse> per_queue;
  json apps = appsJson(s, &per_queue);
  json out = {{"now_ms", toEpochMs(s.clock->now())}, {"live_nodes", sum.live_nodes},
              {"lost_nodes", sum.lost_nodes},        {"capacity", resourceJson(sum.total)},
              {"used", resourceJson(sum.used)},      {"nodes", nodesJson(s)},
              {"queues", queuesJson(s, per_queue)},  {"apps", std::move(apps)}};
  return jsonResponse(200, out);
}

// One reservation's guaranteed capacity over [from, from + points * bucket):
// each point the peak over the plan steps it covers.
json seriesOf(const WebUiSources& s, const ReservationId& id, TimePoint from, Millis bucket,
              int64_t points) {
  json mem = json::array();
  json cores = json::array();
  for (int64_t i = 0; i < points; i++) {
    Resource peak;
    TimePoint b = from + bucket * i;
    for (TimePoint t = b; t < b + bucket; t += s.plan_step) {
      peak = Resource::max(peak, s.reservations->guaranteedAt(id, t));
    }
    mem.push_back(peak.memoryMib());
    cores.push_back(peak.vcores());
  }
  return {{"memory_mib", mem}, {"vcores", cores}};
}

HttpResponse planResponse(const WebUiSources& s) {
  const TimePoint now = s.clock->now();
  const int64_t lcm = s.plan_lcm.count();
  const int64_t step = s.plan_step.count();
  const TimePoint from = fromEpochMs(toEpochMs(now) / lcm * lcm);
  const int64_t steps = lcm / step;
  const int64_t per_point = (steps + kMaxPlanPoints - 1) / kMaxPlanPoints;
  const Millis bucket(per_point * step);
  const int64_t points = (steps + per_point - 1) / per_point;
  PlanSnapshot snap = s.reservations->plan(now, now + s.plan_step);
  json series = json::array();
  for (const auto& r : s.reservations->list("", "", TimePoint(), TimePoint())) {
    json one = seriesOf(s, r.id, from, bucket, points);
    one["id"] = r.id.value();
    one["name"] = r.def.name;
    one["user"] = r.def.user.value();
    one["queue"] = r.def.queue;
    one["periodic"] = r.def.period.count() > 0;
    one["status"] = r.status;
    series.push_back(std::move(one));
  }
  json out = {{"now_ms", toEpochMs(now)},       {"from_ms", toEpochMs(from)},
              {"to_ms", toEpochMs(from) + lcm}, {"bucket_ms", bucket.count()},
              {"plan_step_ms", step},           {"capacity", resourceJson(snap.capacity)},
              {"series", std::move(series)}};
  return jsonResponse(200, out);
}

// Offset of `t` into the instance window of `def` that contains it.
int64_t instanceOffset(const planner::ReservationDefinition& def, TimePoint t) {
  int64_t off = (t - def.arrival).count();
  int64_t period = def.period.count();
  if (period > 0) off = ((off % period) + period) % period;
  return off;
}

json historyJson(const ReservationRecord& r) {
  json out = json::array();
  for (const auto& h : r.history) {
    out.push_back({{"time_ms", toEpochMs(h.time)},
                   {"policy", h.policy},
                   {"granted", h.granted},
                   {"extra", resourceJson(h.extra)},
                   {"duration_ms", h.duration.count()},
                   {"reason", h.reason}});
  }
  return out;
}

// The planned allocation, each interval as offsets into its instance window.
json plannedJson(const ReservationRecord& r) {
  json out = json::array();
  for (const auto& a : r.placement.allocations) {
    int64_t off = instanceOffset(r.def, a.start);
    out.push_back({{"offset_ms", off},
                   {"end_offset_ms", off + (a.end - a.start).count()},
                   {"resource", resourceJson(a.resource)}});
  }
  return out;
}

// Finished runs bound to the reservation (their telemetry skylines) and the
// live usage of the running ones.
void runsJson(const WebUiSources& s, const ReservationRecord& r, json* runs, json* live) {
  std::map<std::string, AppRecord> bound;
  for (const auto& a : s.apps->list({}, "")) {
    if (a.reservation == r.id) bound.emplace(a.id.value(), a);
  }
  for (const auto& t : s.runtime->telemetry("")) {
    if (!bound.count(t.app.value())) continue;
    json mem = json::array();
    for (double c : t.skyline) mem.push_back(c * static_cast<double>(t.container.memoryMib()));
    runs->push_back({{"app", t.app.value()},
                     {"start_ms", toEpochMs(t.start)},
                     {"offset_ms", instanceOffset(r.def, t.start)},
                     {"step_ms", t.step.count()},
                     {"container", resourceJson(t.container)},
                     {"memory_mib", mem}});
  }
  for (const auto& [id, a] : bound) {
    if (a.state != AppState::kRunning) continue;
    int32_t containers = 0;
    Resource used;
    s.runtime->usage(a.id, &containers, &used);
    live->push_back({{"app", id},
                     {"offset_ms", instanceOffset(r.def, s.clock->now())},
                     {"containers", containers},
                     {"used", resourceJson(used)}});
  }
}

HttpResponse reservationResponse(const WebUiSources& s, const HttpRequest& req) {
  auto q = req.query.find("id");
  if (q == req.query.end() || q->second.empty()) {
    return jsonError(invalidArgument("id", "is required"));
  }
  auto rec = s.reservations->get(ReservationId(q->second));
  if (!rec) return jsonError(notFound("reservation '" + q->second + "'"));
  json runs = json::array();
  json live = json::array();
  runsJson(s, *rec, &runs, &live);
  json out = {{"id", rec->id.value()},
              {"name", rec->def.name},
              {"user", rec->def.user.value()},
              {"queue", rec->def.queue},
              {"recurrence_key", rec->def.recurrence_key.value()},
              {"status", rec->status},
              {"status_reason", rec->status_reason},
              {"arrival_ms", toEpochMs(rec->def.arrival)},
              {"deadline_ms", toEpochMs(rec->def.deadline)},
              {"period_ms", rec->def.period.count()},
              {"window_ms", (rec->def.deadline - rec->def.arrival).count()},
              {"budget_container_ms", rec->budget_container_ms},
              {"budget_used_container_ms", rec->budget_used_container_ms},
              {"planned", plannedJson(*rec)},
              {"runs", std::move(runs)},
              {"running", std::move(live)},
              {"dra_history", historyJson(*rec)}};
  return jsonResponse(200, out);
}

// Reads pending proposals from morpheus-inference. One read at a time, and
// an answer (or error) is reused for kProposalCacheTtl, so many open pages
// cost inference one call per TTL and a dead service holds at most one HTTP
// worker for the call's deadline at a time.
class ProposalReader {
 public:
  explicit ProposalReader(const WebUiSources& s)
      : address_(s.inference_address), tls_(s.tls), token_(s.inference_token), clock_(*s.clock) {}

  // The pending proposals `who` may see: an admin all of them, any other
  // user only the proposals they own (and no jobs' not-actionable reasons,
  // which name other owners' jobs).
  HttpResponse read(const Principal& who) {
    HttpResponse all = readAll();
    if (who.admin || all.status != 200) return all;
    json j = json::parse(all.body, nullptr, false);
    if (j.is_discarded() || !j.value("configured", false)) return all;
    json mine = json::array();
    for (const auto& p : j.value("proposals", json::array())) {
      if (p.value("owner", "") == who.user) mine.push_back(p);
    }
    j["proposals"] = std::move(mine);
    j.erase("not_actionable");
    return jsonResponse(200, j);
  }

 private:
  HttpResponse readAll() {
    if (address_.empty()) {
      return jsonResponse(200, {{"configured", false},
                                {"message",
                                 "no inference service configured (rm.inference-address); "
                                 "proposals are listed by `morpheusctl slo list` against "
                                 "morpheus-inference"}});
    }
    MutexLock lk(mu_);
    const TimePoint now = clock_.now();
    if (!cached_ || now - cached_at_ >= kProposalCacheTtl) {
      cached_ = fetch();
      cached_at_ = now;
    }
    return *cached_;
  }

  HttpResponse fetch() REQUIRES(mu_) {
    if (!stub_) stub_ = v1::InferenceService::NewStub(makeChannel(address_, tls_));
    v1::ListProposalsRequest request;
    request.set_state(v1::PROPOSAL_PENDING);
    v1::ListProposalsResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kProposalDeadline);
    if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
    grpc::Status st = stub_->ListProposals(&ctx, request, &response);
    if (!st.ok()) {
      return jsonError(unavailable("inference service at " + address_ +
                                   " did not list proposals: " + st.error_message()));
    }
    std::string text;
    google::protobuf::util::JsonPrintOptions opts;
    opts.preserve_proto_field_names = true;
    if (!google::protobuf::util::MessageToJsonString(response, &text, opts).ok()) text.clear();
    json out = json::parse(text, nullptr, false);
    if (out.is_discarded()) out = json::object();
    out["configured"] = true;
    out["address"] = address_;
    return jsonResponse(200, out);
  }

  static constexpr Millis kProposalCacheTtl{3000};
  static constexpr std::chrono::seconds kProposalDeadline{2};
  const std::string address_;
  const TlsOptions tls_;
  const std::string token_;
  Clock& clock_;
  Mutex mu_;
  std::unique_ptr<v1::InferenceService::Stub> stub_ GUARDED_BY(mu_);
  std::optional<HttpResponse> cached_ GUARDED_BY(mu_);
  TimePoint cached_at_ GUARDED_BY(mu_);
};

}  // namespace

void registerWebUi(HttpServer& http, WebUiSources sources) {
  auto s = std::make_shared<const WebUiSources>(std::move(sources));
  http.route("GET", "/", assetHandler("index.html"));
  http.route("GET", "/ui", assetHandler("index.html"));
  http.route("GET", "/ui/", assetHandler("index.html"));
  for (const auto& [name, _] : uiAssets()) http.route("GET", "/ui/" + name, assetHandler(name));
  const RmAccess& access = *s->access;
  http.setErrorFormat("/ui/api/", uiApiError);
  http.route("GET", "/ui/api/cluster",
             authenticated(access, [s](const HttpRequest&, const Principal&) {
               return clusterResponse(*s);
             }));
  http.route("GET", "/ui/api/plan",
             authenticated(access,
                           [s](const HttpRequest&, const Principal&) { return planResponse(*s); }));
  http.route("GET", "/ui/api/reservation",
             authenticated(access, [s](const HttpRequest& req, const Principal&) {
               return reservationResponse(*s, req);
             }));
  auto reader = std::make_shared<ProposalReader>(*s);
  http.route("GET", "/ui/api/proposals",
             authenticated(access, [reader](const HttpRequest&, const Principal& who) {
               return reader->read(who);
             }));
}

}  // namespace morpheus::rm
