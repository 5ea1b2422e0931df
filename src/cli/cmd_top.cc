#include "cli/cmd_top.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus::cli {

namespace {

constexpr Millis kRpcTimeout(10000);

struct TopArgs {
  std::string interval = "2s";
  bool once = false;
};

// What one frame shows, read from the RM.
struct Frame {
  v1::ClusterMetrics cluster;
  v1::ListQueuesResponse queues;
  std::vector<v1::ApplicationReport> apps;  // unfinished, biggest memory first
  int64_t now_ms = 0;
};

void check(const grpc::Status& st, const CliContext& ctx) {
  checkCall(st, "RM at " + rmChannel(ctx).current());
}

Frame readFrame(const CliContext& ctx) {
  Frame f;
  check(callRm(ctx, &v1::ClientService::Stub::GetClusterMetrics, v1::GetClusterMetricsRequest(),
               &f.cluster, kRpcTimeout, CallKind::kIdempotent),
        ctx);
  check(callRm(ctx, &v1::ClientService::Stub::ListQueues, v1::ListQueuesRequest(), &f.queues,
               kRpcTimeout, CallKind::kIdempotent),
        ctx);
  v1::ListApplicationsRequest req;
  req.add_states(v1::APP_STATE_SUBMITTED);
  req.add_states(v1::APP_STATE_RUNNING);
  v1::ListApplicationsResponse apps;
  check(callRm(ctx, &v1::ClientService::Stub::ListApplications, req, &apps, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  f.apps.assign(apps.applications().begin(), apps.applications().end());
  std::stable_sort(f.apps.begin(), f.apps.end(), [](const auto& x, const auto& y) {
    if (x.used().memory_mib() != y.used().memory_mib())
      return x.used().memory_mib() > y.used().memory_mib();
    return x.submit_ms() < y.submit_ms();
  });
  f.now_ms = nowMs(ctx);
  return f;
}

std::string res(const v1::Resource& r) { return formatResource(r.memory_mib(), r.vcores()); }

std::string limitsOf(const v1::QueueReport& q) {
  std::string out;
  if (q.has_max_resources()) out = res(q.max_resources());
  if (q.has_max_running_apps()) {
    out += (out.empty() ? "" : ", ") + std::to_string(q.max_running_apps()) + " apps";
  }
  return out.empty() ? "-" : out;
}

std::string stateName(v1::ApplicationState s) {
  return s == v1::APP_STATE_SUBMITTED ? "ACCEPTED" : s == v1::APP_STATE_RUNNING ? "RUNNING" : "-";
}

std::string renderText(const Frame& f) {
  std::ostringstream out;
  out << "morpheus top  " << formatTime(f.now_ms) << "  nodes " << f.cluster.live_nodes()
      << " live, " << f.cluster.lost_nodes() << " lost  used " << res(f.cluster.used()) << " of "
      << res(f.cluster.total()) << "\n\n";
  Table q({"QUEUE", "USED", "PENDING", "RUNNING", "WAITING", "MAX"});
  for (const auto& r : f.queues.queues()) {
    q.add({r.name(), res(r.used()), res(r.pending()), std::to_string(r.running_apps()),
           std::to_string(r.pending_apps()), limitsOf(r)});
  }
  out << q.render() << "\n";
  Table a({"APPLICATION", "USER", "QUEUE", "STATE", "CONTAINERS", "USED", "MEMORY", "VCORES",
           "ELAPSED"});
  for (const auto& r : f.apps) {
    int64_t since = r.start_ms() > 0 ? r.start_ms() : r.submit_ms();
    a.add({r.application_id(), r.user(),
           r.reservation_id().empty() ? r.queue() : r.reservation_id(), stateName(r.state()),
           std::to_string(r.running_containers()), res(r.used()),
           std::to_string(r.memory_seconds()) + " MiB-s",
           std::to_string(r.vcore_seconds()) + " vcore-s",
           humanDuration(std::max<int64_t>(0, f.now_ms - since))});
  }
  out << a.render();
  return out.str();
}

nlohmann::json resourceJson(const v1::Resource& r) {
  return {{"memory_mib", r.memory_mib()}, {"vcores", r.vcores()}};
}

void printFrameJson(const Frame& f) {
  nlohmann::json queues = nlohmann::json::array();
  for (const auto& r : f.queues.queues()) {
    queues.push_back(
        {{"name", r.name()},
         {"kind", r.kind()},
         {"used", resourceJson(r.used())},
         {"pending", resourceJson(r.pending())},
         {"running_apps", r.running_apps()},
         {"pending_apps", r.pending_apps()},
         {"max_resources",
          r.has_max_resources() ? resourceJson(r.max_resources()) : nlohmann::json(nullptr)},
         {"max_running_apps", r.has_max_running_apps() ? nlohmann::json(r.max_running_apps())
                                                       : nlohmann::json(nullptr)}});
  }
  nlohmann::json apps = nlohmann::json::array();
  for (const auto& r : f.apps) {
    nlohmann::json j = {{"application_id", r.application_id()},
                        {"user", r.user()},
                        {"queue", r.reservation_id().empty() ? r.queue() : r.reservation_id()},
                        {"state", stateName(r.state())},
                        {"running_containers", r.running_containers()},
                        {"used", resourceJson(r.used())},
                        {"memory_seconds", r.memory_seconds()},
                        {"vcore_seconds", r.vcore_seconds()},
                        {"waiting_reason", r.waiting_reason()}};
    setTime(j, "submit", r.submit_ms());
    setTime(j, "start", r.start_ms());
    apps.push_back(std::move(j));
  }
  nlohmann::json extra = {{"applications", apps},
                          {"cluster",
                           {{"live_nodes", f.cluster.live_nodes()},
                            {"lost_nodes", f.cluster.lost_nodes()},
                            {"total", resourceJson(f.cluster.total())},
                            {"used", resourceJson(f.cluster.used())}}}};
  setTime(extra, "now", f.now_ms);
  printJson("queues", queues, extra);
}

void top(const CliContext& ctx, const TopArgs& a) {
  auto every = parseDurationArg(a.interval, typedName(ctx, {"--interval"}));
  if (!every.isOk()) failWith(every.status());
  if (ctx.json && !a.once) {
    failWith(invalidArgument("--json", "prints one frame; give --once with it"));
  }
  while (true) {
    Frame f = readFrame(ctx);
    if (ctx.json) {
      printFrameJson(f);
      return;
    }
    std::string text = renderText(f);
    if (a.once) {
      std::cout << text << std::flush;
      return;
    }
    // Home, clear the screen, then the frame: plain ANSI, no curses.
    std::cout << "\x1b[H\x1b[2J" << text << std::flush;
    std::this_thread::sleep_for(*every);
  }
}

}  // namespace

void addTopCommand(CLI::App& root, CliContext& ctx) {
  auto a = std::make_shared<TopArgs>();
  auto* cmd = root.add_subcommand(
      "top",
      "Queues and unfinished applications with their use (like yarn top), redrawn every "
      "--interval until interrupted");
  cmd->add_option("--interval", a->interval, "Time between frames, e.g. 500ms, 5s (default 2s)");
  cmd->add_flag("--once", a->once, "Print one frame, without screen control codes, and exit");
  cmd->callback([&ctx, a] { top(ctx, *a); });
}

}  // namespace morpheus::cli
