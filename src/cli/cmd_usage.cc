#include "cli/cmd_usage.h"

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus::cli {

namespace {

constexpr Millis kRpcTimeout(10000);

struct UsageArgs {
  std::string by = "user";
  std::string since;  // "" = every app the RM keeps
};

// --since as a duration back from now ("1d") or a time ("2026-12-01T10:00:00Z").
int64_t sinceMs(const CliContext& ctx, const std::string& text) {
  if (text.empty()) return 0;
  const int64_t now = nowMs(ctx);
  if (auto d = parseDuration(text, "--since"); d.isOk()) return now - d->count();
  if (auto t = parseTime(text, "--since", now); t.isOk()) return *t;
  failWith(invalidArgument("--since", "'" + text +
                                          "' is neither a duration (2h, 1d) nor a time "
                                          "(2026-12-01T10:00:00Z, now-2h)"));
}

// "1234567" -> "1,234,567": usage figures grow long.
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return (v < 0 ? "-" : "") + out;
}

void usage(const CliContext& ctx, const UsageArgs& a) {
  if (a.by != "user" && a.by != "queue")
    failWith(invalidArgument("--by", "'" + a.by + "' is not user or queue"));
  v1::GetUsageRequest req;
  req.set_group_by(a.by);
  req.set_since_ms(sinceMs(ctx, a.since));
  req.set_user(ctx.user);
  v1::GetUsageResponse resp;
  checkCall(callRm(ctx, &v1::ClientService::Stub::GetUsage, req, &resp, kRpcTimeout,
                   CallKind::kIdempotent),
            "RM at " + rmChannel(ctx).current());
  if (ctx.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : resp.rows()) {
      rows.push_back({{a.by, r.key()},
                      {"memory_seconds", r.memory_seconds()},
                      {"vcore_seconds", r.vcore_seconds()},
                      {"apps", r.apps()},
                      {"running_apps", r.running_apps()}});
    }
    nlohmann::json extra = {
        {"group_by", a.by},
        {"user", resp.user().empty() ? nlohmann::json(nullptr) : nlohmann::json(resp.user())}};
    if (req.since_ms() > 0) {
      setTime(extra, "since", req.since_ms());
    } else {
      extra["since_ms"] = nullptr;
      extra["since_time"] = nullptr;
    }
    printJson(a.by == "user" ? "users" : "queues", rows, extra);
    return;
  }
  Table t({a.by == "user" ? "USER" : "QUEUE", "APPS", "RUNNING", "MEMORY", "VCORES"});
  for (const auto& r : resp.rows()) {
    t.add({r.key(), std::to_string(r.apps()), std::to_string(r.running_apps()),
           grouped(r.memory_seconds()) + " MiB-s", grouped(r.vcore_seconds()) + " vcore-s"});
  }
  t.print();
}

}  // namespace

void addUsageCommands(CLI::App& root, CliContext& ctx) {
  auto a = std::make_shared<UsageArgs>();
  auto* cmd = root.add_subcommand(
      "usage",
      "Memory-seconds, vcore-seconds and applications per user or queue (yours; an admin's: "
      "everyone's), over the finished applications the RM keeps and the running ones");
  cmd->add_option("--by", a->by, "Group by user or queue (default user)")
      ->check(CLI::IsMember({"user", "queue"}));
  cmd->add_option("--since", a->since,
                  "Only applications running since: a duration back from now (1d, 2h) or a "
                  "time (2026-12-01T10:00:00Z); default: every application the RM keeps");
  cmd->callback([&ctx, a] { usage(ctx, *a); });
}

}  // namespace morpheus::cli
