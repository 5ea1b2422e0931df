#include "rm/http/cluster_rest.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "common/version.h"
#include "common/wire.h"
#include "harvest/harvest_classes.h"
#include "rm/grpc/queue_report.h"
#include "rm/http/rest.h"
#include "rm/http/yarn_json.h"

namespace morpheus::rm {

using nlohmann::json;

namespace {

constexpr const char* kBase = "/ws/v1/cluster";

HttpResponse jsonOk(const json& j) { return jsonAnswer(200, j); }

// YARN's RemoteException JSON with the HTTP status of `st` (404
// NotFoundException for NOT_FOUND, 400 BadRequestException for
// INVALID_ARGUMENT).
HttpResponse yarnError(const Status& st) { return yarnErrorAnswer(httpStatusFor(st), st); }

json resourceJson(const Resource& r) { return {{"memory", r.memoryMib()}, {"vCores", r.vcores()}}; }

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Comma-separated values of query parameter `name`, trimmed and upper-cased;
// empty when absent.
std::vector<std::string> listParam(const HttpRequest& req, const std::string& name) {
  std::vector<std::string> out;
  auto it = req.query.find(name);
  if (it == req.query.end()) return out;
  size_t start = 0;
  const std::string& v = it->second;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    std::string item = v.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(upper(item));
    start = comma + 1;
  }
  return out;
}

// YARN's name: a submitted app waits for its AM as YARN's ACCEPTED; the
// other states have YARN's names already.
const char* yarnState(AppState s) { return s == AppState::kSubmitted ? "ACCEPTED" : toString(s); }

const char* yarnFinalStatus(AppState s) {
  switch (s) {
    case AppState::kFinished:
      return "SUCCEEDED";
    case AppState::kFailed:
      return "FAILED";
    case AppState::kKilled:
      return "KILLED";
    default:
      return "UNDEFINED";
  }
}

// The `states` filter (YARN's YarnApplicationState names, case-insensitive;
// the deprecated single `state` too). NEW and NEW_SAVING are valid but match
// no Morpheus app (an app is ACCEPTED once submitted); SUBMITTED and ACCEPTED
// both mean "AM not running yet". `*any` is false when the filter is absent.
Result<std::set<AppState>> appStatesFilter(const HttpRequest& req, bool* any) {
  std::vector<std::string> names = listParam(req, "states");
  std::string field = "states";
  if (names.empty() && req.query.count("state")) {
    names = listParam(req, "state");
    field = "state";
  }
  *any = names.empty();
  std::set<AppState> out;
  for (const auto& n : names) {
    if (n == "SUBMITTED" || n == "ACCEPTED") {
      out.insert(AppState::kSubmitted);
    } else if (n == "RUNNING") {
      out.insert(AppState::kRunning);
    } else if (n == "FINISHED") {
      out.insert(AppState::kFinished);
    } else if (n == "FAILED") {
      out.insert(AppState::kFailed);
    } else if (n == "KILLED") {
      out.insert(AppState::kKilled);
    } else if (n != "NEW" && n != "NEW_SAVING") {
      return invalidArgument(field, "invalid application state '" + n +
                                        "' (NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, "
                                        "FINISHED, FAILED, KILLED)");
    }
  }
  return out;
}

// A queue filter matches the ad-hoc path, its YARN short form without
// "root." ("default"), or a reservation id.
bool queueMatches(const AppRecord& a, const std::string& q) {
  if (q.empty()) return true;
  if (!a.reservation.empty()) return a.reservation.value() == q;
  return a.queue == q || a.queue == "root." + q;
}

json appJson(const AppRecord& a, const AppManager& apps, const RmRuntime& runtime,
             const std::string& rm_http, TimePoint now) {
  int32_t containers = 0;
  Resource used;
  runtime.usage(a.id, &containers, &used);
  // A waiting app's reason leads its diagnostics (YARN shows why an
  // ACCEPTED app has not started there too).
  const std::string waiting = apps.waitingReason(a.id);
  const std::string diagnostics =
      waiting.empty() ? a.diagnostics
                      : (a.diagnostics.empty() ? waiting : waiting + "; " + a.diagnostics);
  auto [run_mem, run_vc] = runtime.runningUsage(a.id);
  int64_t started = toEpochMs(a.submit);
  int64_t finished = isFinal(a.state) ? toEpochMs(a.finish) : 0;
  int64_t launched = a.start == TimePoint{} ? 0 : toEpochMs(a.start);
  int64_t now_ms = finished != 0 ? finished : toEpochMs(now);
  json tags = json::array();
  for (const auto& [k, v] : a.spec.tags) tags.push_back(v.empty() ? k : k + "=" + v);
  std::string tag_list;
  for (const auto& t : tags) tag_list += (tag_list.empty() ? "" : ",") + t.get<std::string>();
  return {{"id", a.id.value()},
          {"user", a.spec.user.value()},
          {"name", a.spec.name},
          {"queue", a.reservation.empty() ? a.queue : a.reservation.value()},
          {"state", yarnState(a.state)},
          {"finalStatus", yarnFinalStatus(a.state)},
          {"progress", static_cast<double>(a.progress) * 100.0},
          {"trackingUI", "UNASSIGNED"},
          {"trackingUrl", "http://" + rm_http + std::string(kBase) + "/apps/" + a.id.value()},
          {"diagnostics", diagnostics},
          {"applicationType", "MORPHEUS"},
          {"applicationTags", tag_list},
          {"priority", a.spec.priority},
          {"startedTime", started},
          {"launchTime", launched},
          {"finishedTime", finished},
          {"elapsedTime", std::max<int64_t>(0, now_ms - started)},
          {"amContainerLogs", ""},
          {"amHostHttpAddress", a.am_node.value()},
          {"allocatedMB", used.memoryMib()},
          {"allocatedVCores", used.vcores()},
          {"runningContainers", containers},
          {"reservedMB", 0},
          {"reservedVCores", 0},
          {"memorySeconds", (a.memory_mib_ms + run_mem) / 1000},
          {"vcoreSeconds", (a.vcore_ms + run_vc) / 1000},
          {"reservationId", a.reservation.value()},
          {"morpheusRecurrenceKey", a.spec.recurrence_key.value()},
          {"morpheusAmAttempt", a.attempt}};
}

// YARN's node state: an admin's decommission shows as DECOMMISSIONING and
// DECOMMISSIONED; a drained node is RUNNING (it still runs its containers)
// with morpheusDrained true.
std::string yarnNodeState(const NodeInfo& n) {
  if (n.admin.state == NodeAdminState::kDecommissioned) return "DECOMMISSIONED";
  if (!n.live) return "LOST";
  if (n.admin.state == NodeAdminState::kDecommissioning) return "DECOMMISSIONING";
  return "RUNNING";
}

json nodeJson(const NodeInfo& n) {
  Resource avail = n.total - n.used;
  json out = {{"rack", "/default-rack"},
              {"state", yarnNodeState(n)},
              {"id", n.id.value()},
              {"nodeHostName",
               n.container_manager_address.substr(0, n.container_manager_address.rfind(':'))},
              {"nodeHTTPAddress", n.http_address},
              {"lastHealthUpdate", toEpochMs(n.last_heartbeat)},
              {"version", projectVersion()},
              {"healthReport", ""},
              {"numContainers", n.num_containers},
              {"usedMemoryMB", n.used.memoryMib()},
              {"availMemoryMB", std::max<int64_t>(0, avail.memoryMib())},
              {"usedVirtualCores", n.used.vcores()},
              {"availableVirtualCores", std::max<int64_t>(0, avail.vcores())},
              {"resourceUtilization",
               {{"nodePhysicalMemoryMB", n.used_rss_mib},
                {"nodeCPUUsage", n.used_cpu_vcores},
                {"containersPhysicalMemoryMB", n.used_rss_mib},
                {"containersCPUUsage", n.used_cpu_vcores}}},
              {"morpheusAttributes", n.attributes},
              {"morpheusDrained", n.admin.state != NodeAdminState::kInService}};
  if (n.admin.state == NodeAdminState::kDecommissioning) {
    out["morpheusDecommissionDeadline"] = toEpochMs(n.admin.deadline);
  }
  return out;
}

// The id after "<kBase>/<collection>/" in the request path.
std::string idOf(const HttpRequest& req, const std::string& collection) {
  return req.path.substr(std::string(kBase).size() + collection.size() + 2);
}

HttpResponse clusterInfo(const ClusterRestSources& s) {
  int64_t started = toEpochMs(s.started);
  return jsonOk(
      {{"clusterInfo",
        {{"id", started},
         {"startedOn", started},
         {"state", "STARTED"},
         {"haState", "ACTIVE"},
         {"rmStateStoreName", "morpheus"},
         {"resourceManagerVersion", projectVersion()},
         {"resourceManagerBuildVersion", std::string(projectVersion()) + " from " + gitRevision()},
         {"resourceManagerVersionBuiltOn", ""},
         {"hadoopVersion", projectVersion()},
         {"hadoopBuildVersion", std::string(projectVersion()) + " from " + gitRevision()},
         {"hadoopVersionBuiltOn", ""},
         {"morpheusEpoch", s.core.epoch()}}}});
}

HttpResponse clusterMetrics(const ClusterRestSources& s) {
  ClusterSummary sum = s.core.summary();
  std::map<AppState, int64_t> by_state;
  int64_t containers = 0;
  for (const auto& a : s.apps.list({}, "")) {
    by_state[a.state]++;
    if (a.state == AppState::kRunning) {
      int32_t n = 0;
      Resource used;
      s.runtime.usage(a.id, &n, &used);
      containers += n;
    }
  }
  Resource reserved;
  TimePoint now = s.clock.now();
  for (const auto& id : s.reservations.ids()) reserved += s.reservations.guaranteedAt(id, now);
  int64_t pending_containers = 0;  // root covers every ad-hoc app
  for (const auto& q : s.runtime.queues()) {
    if (q.ref.isReservation() || q.ref.adhocPath() == "root") {
      pending_containers += q.pending_containers;
    }
  }
  Resource avail = sum.total - sum.used;
  int64_t submitted = 0;
  for (const auto& [_, n] : by_state) submitted += n;
  return jsonOk({{"clusterMetrics",
                  {{"appsSubmitted", submitted},
                   {"appsCompleted", by_state[AppState::kFinished]},
                   {"appsPending", by_state[AppState::kSubmitted]},
                   {"appsRunning", by_state[AppState::kRunning]},
                   {"appsFailed", by_state[AppState::kFailed]},
                   {"appsKilled", by_state[AppState::kKilled]},
                   {"reservedMB", reserved.memoryMib()},
                   {"availableMB", std::max<int64_t>(0, avail.memoryMib())},
                   {"allocatedMB", sum.used.memoryMib()},
                   {"totalMB", sum.total.memoryMib()},
                   {"reservedVirtualCores", reserved.vcores()},
                   {"availableVirtualCores", std::max<int64_t>(0, avail.vcores())},
                   {"allocatedVirtualCores", sum.used.vcores()},
                   {"totalVirtualCores", sum.total.vcores()},
                   {"containersAllocated", containers},
                   {"containersReserved", 0},
                   {"containersPending", pending_containers},
                   {"totalNodes", sum.live_nodes + sum.lost_nodes + sum.decommissioned_nodes},
                   {"activeNodes", sum.live_nodes},
                   {"lostNodes", sum.lost_nodes},
                   {"unhealthyNodes", 0},
                   {"decommissioningNodes", sum.decommissioning_nodes},
                   {"decommissionedNodes", sum.decommissioned_nodes},
                   {"rebootedNodes", 0},
                   {"shutdownNodes", 0},
                   {"morpheusActiveReservations", s.reservations.ids().size()}}}});
}

HttpResponse listNodes(const ClusterRestSources& s, const HttpRequest& req) {
  std::set<std::string> states;
  for (const auto& st : listParam(req, "states")) {
    if (st != "RUNNING" && st != "LOST" && st != "NEW" && st != "UNHEALTHY" &&
        st != "DECOMMISSIONING" && st != "DECOMMISSIONED" && st != "REBOOTED" && st != "SHUTDOWN") {
      return yarnError(invalidArgument("states", "invalid node state '" + st + "'"));
    }
    states.insert(st);
  }
  json list = json::array();
  for (const auto& n : s.core.nodes(/*include_lost=*/true)) {
    // YARN lists only active nodes without a filter.
    const std::string state = yarnNodeState(n);
    if (states.empty() ? !n.live : !states.count(state)) continue;
    list.push_back(nodeJson(n));
  }
  return jsonOk({{"nodes", {{"node", list}}}});
}

HttpResponse getNode(const ClusterRestSources& s, const HttpRequest& req) {
  std::string id = idOf(req, "nodes");
  for (const auto& n : s.core.nodes(/*include_lost=*/true)) {
    if (n.id.value() == id) return jsonOk({{"node", nodeJson(n)}});
  }
  return yarnError(notFound("nodeId: node " + id + " not found"));
}

HttpResponse listApps(const ClusterRestSources& s, const HttpRequest& req,
                      const std::string& rm_http) {
  bool any = true;
  auto states = appStatesFilter(req, &any);
  if (!states.isOk()) return yarnError(states.status());
  int64_t limit = -1;
  if (auto it = req.query.find("limit"); it != req.query.end()) {
    char* end = nullptr;
    limit = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || limit <= 0) {
      return yarnError(invalidArgument("limit", "'" + it->second + "' is not a positive integer"));
    }
  }
  auto q = req.query.find("queue");
  auto u = req.query.find("user");
  std::string queue = q == req.query.end() ? "" : q->second;
  std::string user = u == req.query.end() ? "" : u->second;
  json list = json::array();
  if (any || !states->empty()) {
    for (const auto& a : s.apps.list(*states, "")) {
      if (!queueMatches(a, queue) || (!user.empty() && a.spec.user.value() != user)) continue;
      if (limit >= 0 && static_cast<int64_t>(list.size()) >= limit) break;
      list.push_back(appJson(a, s.apps, s.runtime, rm_http, s.clock.now()));
    }
  }
  return jsonOk({{"apps", {{"app", list}}}});
}

HttpResponse getApp(const ClusterRestSources& s, const HttpRequest& req,
                    const std::string& rm_http) {
  std::string id = idOf(req, "apps");
  auto rec = s.apps.get(AppId(id));
  if (!rec.isOk()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      return yarnError(notFound("appId: application " + id + " not found"));
    }
    return yarnError(rec.status());
  }
  return jsonOk({{"app", appJson(*rec, s.apps, s.runtime, rm_http, s.clock.now())}});
}

json queueJson(const v1::QueueReport& q, const Resource& cluster) {
  bool leaf = q.kind() != "adhoc-parent";
  json j = {
      {"type", leaf ? "fairSchedulerLeafQueueInfo" : "fairSchedulerQueueInfo"},
      {"queueName", q.name()},
      {"schedulingPolicy", "DRF"},
      {"weight", q.weight()},
      {"minResources", resourceJson(morpheus::fromProto(q.guaranteed()))},
      {"maxResources", q.has_max_resources() ? resourceJson(morpheus::fromProto(q.max_resources()))
                                             : resourceJson(cluster)},
      {"maxApps", q.has_max_running_apps() ? q.max_running_apps() : INT32_MAX},
      {"usedResources", resourceJson(morpheus::fromProto(q.used()))},
      {"demandResources",
       resourceJson(morpheus::fromProto(q.used()) + morpheus::fromProto(q.pending()))},
      {"clusterResources", resourceJson(cluster)},
      {"reservedResources", resourceJson(Resource())},
      {"preemptable", q.kind().rfind("adhoc", 0) == 0},
      {"numPendingApps", q.pending_apps()},
      {"numActiveApps", q.running_apps()},
      {"morpheusKind", q.kind()},
      {"morpheusPendingResources", resourceJson(morpheus::fromProto(q.pending()))}};
  if (!leaf) j["childQueues"] = {{"queue", json::array()}};
  return j;
}

// The ad-hoc tree under "root" plus the reservation queues as root's children.
HttpResponse scheduler(const ClusterRestSources& s) {
  Resource cluster = s.core.summary().total;
  std::vector<v1::QueueReport> reports =
      queueReports(s.runtime, s.apps, &s.reservations, s.clock.now());
  std::map<std::string, json> by_path;
  json root;
  for (const auto& q : reports) by_path[q.name()] = queueJson(q, cluster);
  // Attach children deepest first so each parent is complete when attached.
  std::vector<std::string> paths;
  for (const auto& q : reports) {
    if (q.kind().rfind("adhoc", 0) == 0 && q.name() != "root") paths.push_back(q.name());
  }
  std::sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '.') > std::count(b.begin(), b.end(), '.') ||
           (std::count(a.begin(), a.end(), '.') == std::count(b.begin(), b.end(), '.') && a < b);
  });
  for (const auto& p : paths) {
    std::string parent = p.substr(0, p.rfind('.'));
    auto it = by_path.find(parent);
    if (it == by_path.end()) continue;
    it->second["childQueues"]["queue"].push_back(by_path[p]);
  }
  root = by_path["root"];
  for (const auto& q : reports) {
    if (q.kind().rfind("reservation", 0) == 0)
      root["childQueues"]["queue"].push_back(by_path[q.name()]);
  }
  return jsonOk(
      {{"scheduler", {{"schedulerInfo", {{"type", "fairScheduler"}, {"rootQueue", root}}}}}});
}

// The primary-tenant classes of the RM's last clustering (the
// table `morpheusctl cluster status` prints), for dashboards.
HttpResponse harvestClasses(const ClusterRestSources& s) {
  json list = json::array();
  for (const auto& v : s.runtime.harvestClasses()) {
    json nodes = json::array();
    for (const auto& n : v.nodes) nodes.push_back(n.value());
    list.push_back({{"id", v.cls.id},
                    {"pattern", patternName(v.cls.pattern)},
                    {"average", v.cls.average},
                    {"peak", v.cls.peak},
                    {"tenants", v.cls.tenants},
                    {"nodeIds", nodes}});
  }
  return jsonOk({{"harvestClasses", {{"harvestClass", list}}}});
}

}  // namespace

void registerClusterRest(HttpServer& http, const ClusterRestSources& sources) {
  const ClusterRestSources s = sources;
  const RmAccess& access = s.access;
  http.setErrorFormat(kYarnRestPrefix, yarnErrorAnswer);
  auto get = [&http, &access](const std::string& path, AuthedHandler h) {
    http.route("GET", path, authenticatedRest(access, std::move(h)));
  };
  std::string base = kBase;
  auto info = [s](const Principal&, const HttpRequest&) { return clusterInfo(s); };
  get(base, info);
  get(base + "/info", info);
  get(base + "/metrics", [s](const Principal&, const HttpRequest&) { return clusterMetrics(s); });
  get(base + "/nodes", [s](const Principal&, const HttpRequest& req) { return listNodes(s, req); });
  get(base + "/nodes/*", [s](const Principal&, const HttpRequest& req) { return getNode(s, req); });
  get(base + "/apps", [s](const Principal&, const HttpRequest& req) {
    auto host = req.headers.find("host");
    return listApps(s, req, host == req.headers.end() ? "" : host->second);
  });
  get(base + "/apps/*", [s](const Principal&, const HttpRequest& req) {
    auto host = req.headers.find("host");
    return getApp(s, req, host == req.headers.end() ? "" : host->second);
  });
  get(base + "/scheduler", [s](const Principal&, const HttpRequest&) { return scheduler(s); });
  get(base + "/harvest-classes",
      [s](const Principal&, const HttpRequest&) { return harvestClasses(s); });
}

}  // namespace morpheus::rm
