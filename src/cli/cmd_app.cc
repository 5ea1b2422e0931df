#include "cli/cmd_app.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/wire.h"
#include "dagam/job_spec.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"

namespace morpheus::cli {

namespace {

constexpr Millis kRpcTimeout(10000);
constexpr Millis kWaitPoll(1000);
// `submit --wait` keeps polling through an RM outage this long.
constexpr Millis kWaitUnavailableWindow(60000);

void check(const grpc::Status& st, const CliContext& ctx) {
  checkCall(st, "RM at " + rmChannel(ctx).current());
}

// The REST API's (YARN's) names: an application waiting for its AM is
// ACCEPTED.
std::string stateName(v1::ApplicationState s) {
  switch (s) {
    case v1::APP_STATE_SUBMITTED:
      return "ACCEPTED";
    case v1::APP_STATE_RUNNING:
      return "RUNNING";
    case v1::APP_STATE_FINISHED:
      return "FINISHED";
    case v1::APP_STATE_FAILED:
      return "FAILED";
    case v1::APP_STATE_KILLED:
      return "KILLED";
    default:
      return "UNKNOWN";
  }
}

bool finalState(v1::ApplicationState s) {
  return s == v1::APP_STATE_FINISHED || s == v1::APP_STATE_FAILED || s == v1::APP_STATE_KILLED;
}

// Carbyne's view (null when the AM reported no DAG or its queue ignores DAGs).
nlohmann::json altruismJson(const v1::ApplicationReport& a) {
  if (!a.has_altruism()) return nullptr;
  const auto& need = a.altruism().need();
  return {{"need", {{"memory_mib", need.memory_mib()}, {"vcores", need.vcores()}}},
          {"estimated_remaining_ms", a.altruism().estimated_remaining_ms()}};
}

nlohmann::json reportJson(const v1::ApplicationReport& a) {
  nlohmann::json j = {
      {"application_id", a.application_id()},
      {"name", a.name()},
      {"user", a.user()},
      {"queue", a.queue()},
      {"reservation_id", a.reservation_id()},
      {"recurrence_key", a.recurrence_key()},
      {"state", stateName(a.state())},
      {"progress", a.progress()},
      {"used", {{"memory_mib", a.used().memory_mib()}, {"vcores", a.used().vcores()}}},
      {"running_containers", a.running_containers()},
      {"am_attempt", a.am_attempt()},
      {"am_node_id", a.am_node_id()},
      {"am_container_id", a.am_container_id()},
      {"diagnostics", a.diagnostics()},
      {"pending_reasons",
       std::vector<std::string>(a.pending_reasons().begin(), a.pending_reasons().end())},
      {"altruism", altruismJson(a)},
      {"waiting_reason", a.waiting_reason()},
      {"memory_seconds", a.memory_seconds()},
      {"vcore_seconds", a.vcore_seconds()}};
  setTime(j, "submit", a.submit_ms());
  setTime(j, "start", a.start_ms());
  setTime(j, "finish", a.finish_ms());
  return j;
}

v1::ApplicationReport getApp(const CliContext& ctx, const std::string& id) {
  v1::GetApplicationRequest req;
  req.set_application_id(id);
  v1::ApplicationReport rep;
  check(callRm(ctx, &v1::ClientService::Stub::GetApplication, req, &rep, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  return rep;
}

// The morpheus-dag-am binary: $MORPHEUS_DAG_AM, else next to this morpheusctl.
Result<std::string> dagAmBinary() {
  if (const char* env = std::getenv("MORPHEUS_DAG_AM"); env && *env) {
    if (::access(env, X_OK) != 0) {
      return invalidArgument("MORPHEUS_DAG_AM", std::string("'") + env + "' is not executable");
    }
    return std::filesystem::absolute(env).string();
  }
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return internalError("cannot resolve /proc/self/exe: " + ec.message());
  auto am = self.parent_path() / "morpheus-dag-am";
  if (::access(am.c_str(), X_OK) != 0) {
    return notFound("morpheus-dag-am not found next to morpheusctl (" + am.string() +
                    "); set MORPHEUS_DAG_AM");
  }
  return am.string();
}

struct SubmitArgs {
  std::string job;
  std::string queue;
  std::string reservation;
  std::string recurrence;
  std::string name;
  int priority = 0;
  int max_am_attempts = 0;
  bool wait = false;
};

int waitForApp(const CliContext& ctx, const std::string& id) {
  v1::ApplicationState last = v1::APP_STATE_UNSPECIFIED;
  float last_progress = -1;
  auto unavailable_since = std::chrono::steady_clock::time_point::min();
  while (true) {
    v1::GetApplicationRequest req;
    req.set_application_id(id);
    v1::ApplicationReport rep;
    grpc::Status st = callRm(ctx, &v1::ClientService::Stub::GetApplication, req, &rep, kRpcTimeout,
                             CallKind::kIdempotent);
    if (!st.ok()) {
      // Ride out a brief RM restart; give up after kWaitUnavailableWindow.
      auto now = std::chrono::steady_clock::now();
      if (fromGrpc(st).code() != StatusCode::kUnavailable) check(st, ctx);
      if (unavailable_since == std::chrono::steady_clock::time_point::min()) {
        unavailable_since = now;
      } else if (now - unavailable_since > kWaitUnavailableWindow) {
        check(st, ctx);
      }
      std::this_thread::sleep_for(kWaitPoll);
      continue;
    }
    unavailable_since = std::chrono::steady_clock::time_point::min();
    if (rep.state() != last || rep.progress() != last_progress) {
      std::fprintf(stderr, "%s %s progress %.0f%%\n", id.c_str(), stateName(rep.state()).c_str(),
                   100.0 * rep.progress());
      last = rep.state();
      last_progress = rep.progress();
    }
    if (finalState(rep.state())) {
      if (!rep.diagnostics().empty()) std::fprintf(stderr, "%s\n", rep.diagnostics().c_str());
      return rep.state() == v1::APP_STATE_FINISHED ? 0 : 1;
    }
    std::this_thread::sleep_for(kWaitPoll);
  }
}

void submit(const CliContext& ctx, const SubmitArgs& a) {
  // Validate locally with the AM's own parser so errors come back at once.
  requireReadable(a.job, "job file");
  auto spec = dagam::loadJobSpec(a.job);
  if (!spec.isOk()) failWith(spec.status());
  std::error_code ec;
  std::string job_path = std::filesystem::canonical(a.job, ec).string();
  if (ec) failWith(invalidArgument(a.job, "cannot resolve path: " + ec.message()));
  auto am = dagAmBinary();
  if (!am.isOk()) failWith(am.status());

  v1::SubmitApplicationRequest req;
  req.set_name(a.name.empty() ? spec->name : a.name);
  req.set_user(ctx.user);
  req.set_queue(a.queue);
  req.set_reservation_id(a.reservation);
  req.set_recurrence_key(a.recurrence);
  req.mutable_am_resource()->set_memory_mib(256);
  req.mutable_am_resource()->set_vcores(1);
  auto* lc = req.mutable_am_launch_context();
  lc->set_command(*am);
  lc->add_args("--job");
  lc->add_args(job_path);
  req.set_max_am_attempts(a.max_am_attempts);
  req.set_priority(a.priority);
  (*req.mutable_tags())["framework"] = "dag";
  (*req.mutable_tags())["job"] = spec->name;
  v1::SubmitApplicationResponse resp;
  check(callRm(ctx, &v1::ClientService::Stub::SubmitApplication, req, &resp, kRpcTimeout,
               CallKind::kNotIdempotent),
        ctx);
  if (!ctx.json) std::cout << resp.application_id() << "\n" << std::flush;
  int rc = a.wait ? waitForApp(ctx, resp.application_id()) : 0;
  if (ctx.json) printJson("applications", reportJson(getApp(ctx, resp.application_id())));
  if (rc != 0) throw CliExit{rc};
}

// app list's filters beyond the RM's (state, queue): applied here, over the
// RM's whole list.
struct ListArgs {
  std::vector<std::string> states;
  std::string queue;
  std::string user;   // "" = every user (the global --user when this is unset)
  std::string since;  // DURATION back from now, or a time
  int limit = 0;      // 0 = all
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A --state value (any case, the REST API's names; SUBMITTED is ACCEPTED's
// older name).
v1::ApplicationState parseState(const std::string& text) {
  const std::string s = upper(text);
  if (s == "SUBMITTED") return v1::APP_STATE_SUBMITTED;
  for (int v = v1::APP_STATE_SUBMITTED; v <= v1::APP_STATE_KILLED; ++v) {
    auto st = static_cast<v1::ApplicationState>(v);
    if (stateName(st) == s) return st;
  }
  failWith(invalidArgument(
      "--state", "'" + text + "' is not one of ACCEPTED, RUNNING, FINISHED, FAILED, KILLED"));
}

void list(const CliContext& ctx, const ListArgs& args) {
  v1::ListApplicationsRequest req;
  for (const auto& s : args.states) req.add_states(parseState(s));
  int64_t since = 0;
  if (!args.since.empty()) {
    const int64_t now = nowMs(ctx);
    auto d = parseDuration(args.since, "--since");
    auto t = parseTime(args.since, "--since", now);
    if (d.isOk()) {
      since = now - d->count();
    } else if (t.isOk()) {
      since = *t;
    } else {
      failWith(invalidArgument("--since", "'" + args.since +
                                              "' is neither a duration (2h, 1d) nor a time "
                                              "(2026-12-01T10:00:00Z, now-2h)"));
    }
  }
  if (args.limit < 0) failWith(invalidArgument("--limit", "must be at least 1"));
  const std::string user = args.user.empty() ? ctx.user : args.user;
  req.set_queue(args.queue);
  v1::ListApplicationsResponse resp;
  check(callRm(ctx, &v1::ClientService::Stub::ListApplications, req, &resp, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  std::vector<const v1::ApplicationReport*> apps;
  for (const auto& a : resp.applications()) {
    if (!user.empty() && a.user() != user) continue;
    if (since > 0 && a.submit_ms() < since) continue;
    apps.push_back(&a);
  }
  // Oldest first; --limit keeps the most recently submitted.
  std::stable_sort(apps.begin(), apps.end(), [](const auto* x, const auto* y) {
    return x->submit_ms() != y->submit_ms() ? x->submit_ms() < y->submit_ms()
                                            : x->application_id() < y->application_id();
  });
  if (args.limit > 0 && apps.size() > static_cast<size_t>(args.limit)) {
    apps.erase(apps.begin(), apps.end() - args.limit);
  }
  if (ctx.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto* a : apps) j.push_back(reportJson(*a));
    printJson("applications", j);
    return;
  }
  Table t({"APPLICATION", "NAME", "USER", "QUEUE", "STATE", "PROGRESS", "CONTAINERS", "USED",
           "SUBMITTED", "WAITING"});
  for (const auto* a : apps) {
    char progress[16];
    std::snprintf(progress, sizeof progress, "%.0f%%", 100.0 * a->progress());
    t.add({a->application_id(), a->name().empty() ? "-" : a->name(), a->user(),
           a->reservation_id().empty() ? a->queue() : a->reservation_id(), stateName(a->state()),
           progress, std::to_string(a->running_containers()),
           formatResource(a->used().memory_mib(), a->used().vcores()),
           formatTimeOrDash(a->submit_ms()),
           a->waiting_reason().empty() ? "-" : a->waiting_reason()});
  }
  t.print();
}

// Carbyne: the least allocation that keeps the job's estimated
// completion, and whether it holds it (then what it holds beyond competes
// for leftover, shortest remaining time first).
void printAltruism(const v1::ApplicationReport& a) {
  if (!a.has_altruism()) return;
  const auto& need = a.altruism().need();
  const bool holds =
      a.used().memory_mib() >= need.memory_mib() && a.used().vcores() >= need.vcores();
  std::printf("Altruism:      needs %s now to finish in %s at its fair share; %s\n",
              formatResource(need.memory_mib(), need.vcores()).c_str(),
              humanDuration(a.altruism().estimated_remaining_ms()).c_str(),
              holds ? "holds it (the rest competes for leftover, shortest remaining first)"
                    : "below it (served by DRF first)");
}

void status(const CliContext& ctx, const std::string& id) {
  v1::ApplicationReport a = getApp(ctx, id);
  if (ctx.json) {
    printJson("applications", reportJson(a));
    return;
  }
  std::printf("Application:   %s\n", a.application_id().c_str());
  std::printf("Name:          %s\n", a.name().c_str());
  std::printf("User:          %s\n", a.user().c_str());
  std::printf("Queue:         %s\n", a.queue().c_str());
  if (!a.reservation_id().empty()) std::printf("Reservation:   %s\n", a.reservation_id().c_str());
  if (!a.recurrence_key().empty()) std::printf("Recurrence:    %s\n", a.recurrence_key().c_str());
  std::printf("State:         %s\n", stateName(a.state()).c_str());
  std::printf("Progress:      %.0f%%\n", 100.0 * a.progress());
  std::printf("Submitted:     %s\n", formatTimeOrDash(a.submit_ms()).c_str());
  std::printf("Started:       %s\n", formatTimeOrDash(a.start_ms()).c_str());
  std::printf("Finished:      %s\n", formatTimeOrDash(a.finish_ms()).c_str());
  std::printf("Used:          %s in %d container(s)\n",
              formatResource(a.used().memory_mib(), a.used().vcores()).c_str(),
              a.running_containers());
  std::printf("AM:            attempt %d, container %s on node %s\n", a.am_attempt(),
              a.am_container_id().empty() ? "-" : a.am_container_id().c_str(),
              a.am_node_id().empty() ? "-" : a.am_node_id().c_str());
  std::printf("Usage:         %lld MiB-s, %lld vcore-s\n",
              static_cast<long long>(a.memory_seconds()),
              static_cast<long long>(a.vcore_seconds()));
  if (!a.waiting_reason().empty()) std::printf("Waiting:       %s\n", a.waiting_reason().c_str());
  if (!a.diagnostics().empty()) std::printf("Diagnostics:   %s\n", a.diagnostics().c_str());
  for (const auto& r : a.pending_reasons()) std::printf("Pending:       %s\n", r.c_str());
  printAltruism(a);
}

void kill(const CliContext& ctx, const std::string& id, const std::string& reason) {
  v1::KillApplicationRequest req;
  req.set_application_id(id);
  req.set_reason(reason.empty() ? "via morpheusctl" : reason);
  req.set_user(ctx.user);
  v1::KillApplicationResponse resp;
  check(callRm(ctx, &v1::ClientService::Stub::KillApplication, req, &resp, kRpcTimeout,
               CallKind::kNotIdempotent),
        ctx);
  if (ctx.json) {
    printJson("applications", reportJson(getApp(ctx, id)));
  } else {
    std::cout << "kill requested for " << id << "\n";
  }
}

// Returns the logs of `container` from the NM at `address`, or a Status.
// `token` is the container token of its app the RM handed out for that node.
Result<std::string> fetchLogs(const CliContext& ctx, const std::string& address,
                              const std::string& container, const std::string& token,
                              bool stderr_stream, int64_t bytes) {
  auto nm = v1::ContainerManager::NewStub(channelTo(ctx, address));
  v1::GetContainerLogsRequest req;
  req.set_container_id(container);
  req.set_stream(stderr_stream ? "stderr" : "stdout");
  req.set_max_bytes(bytes);
  req.set_token(token);
  v1::GetContainerLogsResponse resp;
  auto c = makeContext(kRpcTimeout);
  grpc::Status st = nm->GetContainerLogs(c.get(), req, &resp);
  if (!st.ok()) return fromGrpc(st).withContext("NM at " + address);
  return resp.data();
}

// How many bytes at the end of `prev` are the start of `cur` (the longest
// such overlap), in O(|prev| + |cur|) with the KMP prefix function. Both are
// tails of one growing file, so cur's bytes after the overlap are new.
size_t overlap(const std::string& prev, const std::string& cur) {
  // Prefix function over cur + sentinel + prev; -1 never equals a byte.
  std::vector<int> s;
  s.reserve(cur.size() + prev.size() + 1);
  for (unsigned char c : cur) s.push_back(c);
  s.push_back(-1);
  for (unsigned char c : prev) s.push_back(c);
  std::vector<size_t> pi(s.size(), 0);
  for (size_t i = 1; i < s.size(); i++) {
    size_t k = pi[i - 1];
    while (k > 0 && s[i] != s[k]) k = pi[k - 1];
    if (s[i] == s[k]) k++;
    pi[i] = k;
  }
  return pi.back();
}

// The RM checks that the caller may read the app's logs (owner, queue
// administrator, admin) and names the node(s) with a container token each.
// Returns where the logs were read (NM address, container, token).
struct LogSource {
  std::string address, container, token;
};
Result<LogSource> tryLogs(const CliContext& ctx, const std::string& id,
                          const std::string& container_arg, const std::string& node_arg,
                          bool stderr_stream, int64_t bytes, std::string* data) {
  v1::GetContainerLogAccessRequest req;
  req.set_application_id(id);
  req.set_container_id(container_arg);
  req.set_node_id(node_arg);
  v1::GetContainerLogAccessResponse access;
  check(callRm(ctx, &v1::ClientService::Stub::GetContainerLogAccess, req, &access, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  // Without a known node (a finished task container), ask every node until one has it.
  Status last = notFound("container " + access.container_id() + " not found on any node");
  for (const auto& t : access.targets()) {
    auto got = fetchLogs(ctx, t.container_manager_address(), access.container_id(), t.token(),
                         stderr_stream, bytes);
    if (got.isOk()) {
      *data = *got;
      return LogSource{t.container_manager_address(), access.container_id(), t.token()};
    }
    last = got.status();
    if (access.targets_size() == 1) break;
  }
  return last;
}

LogSource logs(const CliContext& ctx, const std::string& id, const std::string& container_arg,
               const std::string& node_arg, bool stderr_stream, int64_t bytes, std::string* data) {
  auto src = tryLogs(ctx, id, container_arg, node_arg, stderr_stream, bytes, data);
  if (!src.isOk()) failRemote(src.status(), "");
  return *src;
}

bool appIsFinal(const CliContext& ctx, const std::string& id) {
  v1::GetApplicationRequest greq;
  greq.set_application_id(id);
  v1::ApplicationReport rep;
  check(callRm(ctx, &v1::ClientService::Stub::GetApplication, greq, &rep, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  return finalState(rep.state());
}

// --follow: prints the logs, then what is appended to them every second
// until the application is final (one last read after that). A burst larger
// than the tail window (--bytes) between two reads is shown from its last
// window on.
void followLogs(const CliContext& ctx, const std::string& id, const std::string& container_arg,
                const std::string& node_arg, bool stderr_stream, int64_t bytes) {
  std::string prev;
  // A container the RM has allocated may not have started on its node yet:
  // wait for its log while the application lives.
  auto first = tryLogs(ctx, id, container_arg, node_arg, stderr_stream, bytes, &prev);
  while (!first.isOk() && first.status().code() == StatusCode::kNotFound && !appIsFinal(ctx, id)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    first = tryLogs(ctx, id, container_arg, node_arg, stderr_stream, bytes, &prev);
  }
  if (!first.isOk()) failRemote(first.status(), "");
  const LogSource src = *first;
  std::cout << prev << std::flush;
  for (bool final = false; !final;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    final = appIsFinal(ctx, id);
    auto cur = fetchLogs(ctx, src.address, src.container, src.token, stderr_stream, bytes);
    if (!cur.isOk()) failRemote(cur.status(), "");
    std::cout << cur->substr(overlap(prev, *cur)) << std::flush;
    prev = std::move(cur).value();
  }
}

// The wire's container states without their prefix: YARN's ContainerState
// names (NEW = allocated, its node has not reported it running yet).
std::string containerStateName(v1::ContainerState s) {
  switch (s) {
    case v1::CONTAINER_NEW:
      return "NEW";
    case v1::CONTAINER_RUNNING:
      return "RUNNING";
    case v1::CONTAINER_COMPLETE:
      return "COMPLETE";
    default:
      return "UNKNOWN";
  }
}

// "" for no reason (not complete, or its end was not watched by this RM).
std::string exitReasonName(v1::ContainerExitReason r) {
  switch (r) {
    case v1::EXIT_REASON_SUCCESS:
      return "SUCCESS";
    case v1::EXIT_REASON_FAILURE:
      return "FAILURE";
    case v1::EXIT_REASON_KILLED:
      return "KILLED";
    case v1::EXIT_REASON_PREEMPTED:
      return "PREEMPTED";
    case v1::EXIT_REASON_MEMORY_EXCEEDED:
      return "MEMORY_EXCEEDED";
    case v1::EXIT_REASON_NODE_LOST:
      return "NODE_LOST";
    case v1::EXIT_REASON_LAUNCH_FAILED:
      return "LAUNCH_FAILED";
    default:
      return "";
  }
}

// Whether the report carries a real exit status (complete and watched).
bool hasExitStatus(const v1::ContainerReport& c) {
  return c.state() == v1::CONTAINER_COMPLETE && c.exit_reason() != v1::EXIT_REASON_UNSPECIFIED;
}

v1::ListContainersResponse listContainers(const CliContext& ctx, const std::string& id) {
  v1::ListContainersRequest req;
  req.set_application_id(id);
  v1::ListContainersResponse resp;
  check(callRm(ctx, &v1::ClientService::Stub::ListContainers, req, &resp, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  return resp;
}

// What the RM's history may lack, on stderr (text output only).
void noteHistoryGaps(const std::string& id, const v1::ListContainersResponse& r) {
  if (r.partial()) {
    std::fprintf(stderr,
                 "note: the RM restarted after %s was submitted: containers that ended before "
                 "are not listed\n",
                 id.c_str());
  }
  if (r.omitted() > 0) {
    std::fprintf(stderr, "note: %d older finished container(s) of %s are no longer listed\n",
                 r.omitted(), id.c_str());
  }
}

nlohmann::json containerJson(const v1::ContainerReport& c) {
  const bool exit = hasExitStatus(c);
  nlohmann::json j = {
      {"container_id", c.container_id()},
      {"am", c.am()},
      {"node_id", c.node_id()},
      {"node_address", c.container_manager_address()},
      {"state", containerStateName(c.state())},
      {"exit_status", exit ? nlohmann::json(c.exit_status()) : nlohmann::json()},
      {"exit_reason", exit ? nlohmann::json(exitReasonName(c.exit_reason())) : nlohmann::json()},
      {"diagnostics", c.diagnostics()},
      {"resource", {{"memory_mib", c.resource().memory_mib()}, {"vcores", c.resource().vcores()}}}};
  setTime(j, "start", c.start_ms());
  setTime(j, "finish", c.end_ms());
  return j;
}

// `app containers`: every container of the app, running and finished.
void containers(const CliContext& ctx, const std::string& id) {
  const v1::ListContainersResponse r = listContainers(ctx, id);
  if (ctx.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& c : r.containers()) arr.push_back(containerJson(c));
    printJson("containers", arr,
              {{"application_id", id}, {"omitted", r.omitted()}, {"partial", r.partial()}});
    return;
  }
  Table t(
      {"CONTAINER", "TYPE", "NODE", "STATE", "EXIT", "REASON", "RESOURCES", "STARTED", "FINISHED"});
  for (const auto& c : r.containers()) {
    const bool exit = hasExitStatus(c);
    t.add({c.container_id(), c.am() ? "AM" : "task", c.node_id().empty() ? "-" : c.node_id(),
           containerStateName(c.state()), exit ? std::to_string(c.exit_status()) : "-",
           exit ? exitReasonName(c.exit_reason()) : "-",
           formatResource(c.resource().memory_mib(), c.resource().vcores()),
           formatTimeOrDash(c.start_ms()), formatTimeOrDash(c.end_ms())});
  }
  t.print();
  noteHistoryGaps(id, r);
}

// `app logs` without --container: stdout and stderr (or `streams`) of every
// container of the app, each headed as `yarn logs -applicationId` heads
// them. One GetContainerLogAccess per node gives a container token of the
// app for it (the NM serves the logs of any container of the token's app).
// Unreadable logs (node gone, removed after nm.log-retention) are reported
// in place; fails only when no log at all could be read.
void allLogs(const CliContext& ctx, const std::string& id, const std::string& node_filter,
             const std::vector<std::string>& streams, int64_t bytes) {
  const v1::ListContainersResponse list = listContainers(ctx, id);
  struct Access {
    std::string address, token;
    Status error = Status::ok();
  };
  std::map<std::string, Access> by_node;
  auto accessFor = [&](const v1::ContainerReport& c) -> const Access& {
    auto it = by_node.find(c.node_id());
    if (it != by_node.end()) return it->second;
    Access a;
    v1::GetContainerLogAccessRequest req;
    req.set_application_id(id);
    req.set_container_id(c.container_id());
    req.set_node_id(c.node_id());
    v1::GetContainerLogAccessResponse resp;
    grpc::Status st = callRm(ctx, &v1::ClientService::Stub::GetContainerLogAccess, req, &resp,
                             kRpcTimeout, CallKind::kIdempotent);
    if (!st.ok() && st.error_code() != grpc::StatusCode::NOT_FOUND) check(st, ctx);
    if (!st.ok()) {
      a.error = fromGrpc(st).withContext("RM at " + rmChannel(ctx).current());
    } else if (resp.targets_size() == 0) {
      a.error = notFound("node " + c.node_id() + " is not known to the RM");
    } else {
      a.address = resp.targets(0).container_manager_address();
      a.token = resp.targets(0).token();
    }
    return by_node.emplace(c.node_id(), std::move(a)).first->second;
  };
  nlohmann::json arr = nlohmann::json::array();
  int read = 0, shown = 0;
  for (const auto& c : list.containers()) {
    if (!node_filter.empty() && c.node_id() != node_filter) continue;
    shown++;
    for (const auto& stream : streams) {
      Result<std::string> data = notFound("the RM does not know the node of the container");
      if (!c.node_id().empty()) {
        const Access& a = accessFor(c);
        data = a.error.isOk()
                   ? fetchLogs(ctx, a.address, c.container_id(), a.token, stream == "stderr", bytes)
                   : Result<std::string>(a.error);
      }
      if (data.isOk()) read++;
      if (ctx.json) {
        arr.push_back(
            {{"container_id", c.container_id()},
             {"node_id", c.node_id()},
             {"node_address", c.container_manager_address()},
             {"stream", stream},
             {"data", data.isOk() ? nlohmann::json(*data) : nlohmann::json()},
             {"error", data.isOk() ? nlohmann::json() : nlohmann::json(data.status().toString())}});
        continue;
      }
      std::cout << "Container: " << c.container_id() << " on "
                << (c.node_id().empty() ? "an unknown node" : c.node_id()) << "\n"
                << "LogType: " << stream << "\n";
      if (data.isOk()) {
        std::cout << "LogContents:\n" << *data;
        if (!data->empty() && data->back() != '\n') std::cout << "\n";
      } else {
        std::cout << "Logs not available: " << data.status().toString() << "\n";
      }
      std::cout << "End of LogType: " << stream << "\n\n" << std::flush;
    }
  }
  if (ctx.json) {
    printJson("logs", arr, {{"application_id", id}});
  } else {
    noteHistoryGaps(id, list);
  }
  if (shown == 0) {
    failWith(notFound("application " + id + " has no containers" +
                      (node_filter.empty() ? std::string(" yet") : " on node " + node_filter)));
  }
  if (read == 0) failWith(unavailable("no log of application " + id + " could be read"));
}

}  // namespace

void addAppCommands(CLI::App& root, CliContext& ctx) {
  auto* app = root.add_subcommand("app", "Submit and follow applications (DAG jobs)");
  app->require_subcommand(1);

  auto sa = std::make_shared<SubmitArgs>();
  auto* submit_cmd = app->add_subcommand(
      "submit", "Submit a DAG job (YAML) run by morpheus-dag-am; prints the application id");
  submit_cmd->add_option("job", sa->job, "Job file (YAML)")->required();
  auto* q = submit_cmd->add_option("--queue", sa->queue, "Ad-hoc queue (e.g. root.adhoc)");
  auto* r = submit_cmd->add_option("--reservation", sa->reservation, "Run in this reservation");
  auto* k = submit_cmd->add_option("--recurrence", sa->recurrence,
                                   "Recurrence key: bind to its active reservation, if any");
  q->excludes(r)->excludes(k);
  r->excludes(k);
  submit_cmd->add_option("--name", sa->name, "Application name (default: the job's name)");
  submit_cmd->add_option("--priority", sa->priority, "Application priority");
  submit_cmd->add_option("--max-am-attempts", sa->max_am_attempts, "0 = RM default");
  submit_cmd->add_flag("--wait", sa->wait,
                       "Wait for a final state; exit 0 only when the app FINISHED");
  submit_cmd->callback([&ctx, sa] { submit(ctx, *sa); });

  auto la = std::make_shared<ListArgs>();
  auto* list_cmd = app->add_subcommand("list", "List applications, oldest first");
  list_cmd
      ->add_option("--state", la->states,
                   "Only these states, any case, repeated or comma-separated: ACCEPTED, "
                   "RUNNING, FINISHED, FAILED, KILLED")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  list_cmd->add_option("--queue", la->queue, "Only this queue");
  list_cmd->add_option("--user", la->user, "Only this user's applications");
  list_cmd->add_option("--since", la->since,
                       "Only those submitted since: a duration back from now (2h, 1d) or a time "
                       "(2026-12-01T10:00:00Z, now-2h)");
  list_cmd->add_option("--limit", la->limit, "At most this many, the most recently submitted");
  list_cmd->callback([&ctx, la] { list(ctx, *la); });

  auto st_id = std::make_shared<std::string>();
  auto* status_cmd = app->add_subcommand("status", "Show one application");
  status_cmd->add_option("id", *st_id, "Application id")->required();
  status_cmd->callback([&ctx, st_id] { status(ctx, *st_id); });

  auto kill_id = std::make_shared<std::string>();
  auto kill_reason = std::make_shared<std::string>();
  auto* kill_cmd = app->add_subcommand("kill", "Kill an application");
  kill_cmd->add_option("id", *kill_id, "Application id")->required();
  kill_cmd->add_option("--reason", *kill_reason, "Reason recorded in the diagnostics");
  kill_cmd->callback([&ctx, kill_id, kill_reason] { kill(ctx, *kill_id, *kill_reason); });

  auto log_id = std::make_shared<std::string>();
  auto log_container = std::make_shared<std::string>();
  auto log_node = std::make_shared<std::string>();
  auto log_stderr = std::make_shared<bool>(false);
  auto log_bytes = std::make_shared<int64_t>(0);
  auto log_stdout = std::make_shared<bool>(false);
  auto* logs_cmd = app->add_subcommand(
      "logs",
      "Every container's stdout and stderr (all attempts), each headed 'Container: ID on "
      "NODE' and 'LogType: STREAM'; with --container or --follow, one container's stdout as "
      "it is");
  logs_cmd->add_option("id", *log_id, "Application id")->required();
  logs_cmd->add_option("--container", *log_container,
                       "Only this container, its stdout (or --stderr) without headers");
  logs_cmd->add_option("--node", *log_node,
                       "Node id: of --container (default: where the RM saw it, else ask every "
                       "node); without --container, only the containers on this node");
  auto* err_flag = logs_cmd->add_flag("--stderr", *log_stderr, "Only stderr");
  logs_cmd->add_flag("--stdout", *log_stdout, "Only stdout (every container)")->excludes(err_flag);
  logs_cmd->add_option("--bytes", *log_bytes, "Tail size in bytes of each log (default 64 KiB)");
  auto log_follow = std::make_shared<bool>(false);
  logs_cmd->add_flag("--follow,-f", *log_follow,
                     "Keep printing what is appended to one container's log (--container, "
                     "default the AM's), every second, until the app ends");
  logs_cmd->callback([&ctx, log_id, log_container, log_node, log_stderr, log_stdout, log_bytes,
                      log_follow] {
    if (*log_bytes < 0) failWith(invalidArgument("--bytes", "must not be negative"));
    if (!*log_follow && log_container->empty()) {
      std::vector<std::string> streams;
      if (!*log_stderr) streams.push_back("stdout");
      if (!*log_stdout) streams.push_back("stderr");
      allLogs(ctx, *log_id, *log_node, streams, *log_bytes);
      return;
    }
    if (*log_follow) {
      if (ctx.json) {
        failWith(invalidArgument(typedName(ctx, {"-f", "--follow"}),
                                 "prints text as it comes; it cannot be combined with --json"));
      }
      followLogs(ctx, *log_id, *log_container, *log_node, *log_stderr, *log_bytes);
      return;
    }
    std::string data;
    LogSource src = logs(ctx, *log_id, *log_container, *log_node, *log_stderr, *log_bytes, &data);
    if (ctx.json) {
      printJson("logs", nlohmann::json{{"application_id", *log_id},
                                       {"container_id", src.container},
                                       {"node_address", src.address},
                                       {"stream", *log_stderr ? "stderr" : "stdout"},
                                       {"data", data}});
      return;
    }
    std::cout << data << std::flush;
  });

  auto cont_id = std::make_shared<std::string>();
  auto* containers_cmd = app->add_subcommand(
      "containers",
      "The application's containers, running and finished (all attempts): node, state, exit "
      "status, resources");
  containers_cmd->add_option("id", *cont_id, "Application id")->required();
  containers_cmd->callback([&ctx, cont_id] { containers(ctx, *cont_id); });

  auto tel_key = std::make_shared<std::string>();
  auto* tel_cmd =
      app->add_subcommand("telemetry", "Skylines of finished applications (Morpheus §4 input)");
  tel_cmd->add_option("--key", *tel_key, "Only this recurrence key");
  tel_cmd->callback([&ctx, tel_key] {
    v1::ListAppTelemetryRequest req;
    req.set_recurrence_key(*tel_key);
    v1::ListAppTelemetryResponse resp;
    check(callRm(ctx, &v1::ClientService::Stub::ListAppTelemetry, req, &resp, kRpcTimeout,
                 CallKind::kIdempotent),
          ctx);
    nlohmann::json arr = nlohmann::json::array();
    Table t({"APPLICATION", "KEY", "USER", "STARTED", "RUNTIME", "STEPS", "PEAK", "AREA",
             "FILE EVENTS"});
    for (const auto& a : resp.apps()) {
      double peak = 0, area = 0;
      for (double v : a.skyline()) {
        peak = std::max(peak, v);
        area += v;
      }
      if (ctx.json) {
        nlohmann::json j = {
            {"application_id", a.application_id()},
            {"recurrence_key", a.recurrence_key()},
            {"user", a.user()},
            {"step_ms", a.step_ms()},
            {"skyline", std::vector<double>(a.skyline().begin(), a.skyline().end())},
            {"files", a.files_size()}};
        setTime(j, "submit", a.submit_ms());
        setTime(j, "start", a.start_ms());
        setTime(j, "finish", a.finish_ms());
        arr.push_back(std::move(j));
        continue;
      }
      char pk[32], ar[32];
      std::snprintf(pk, sizeof pk, "%.2f", peak);
      std::snprintf(ar, sizeof ar, "%.2f", area);
      t.add({a.application_id(), a.recurrence_key().empty() ? "-" : a.recurrence_key(), a.user(),
             formatTimeOrDash(a.start_ms()), humanDuration(a.finish_ms() - a.start_ms()),
             std::to_string(a.skyline_size()) + " x " + humanDuration(a.step_ms()),
             std::string(pk) + " containers", std::string(ar) + " container-steps",
             std::to_string(a.files_size())});
    }
    if (ctx.json) {
      printJson("applications", arr);
    } else {
      t.print();
    }
  });
}

}  // namespace morpheus::cli
