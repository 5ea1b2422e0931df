#include "cli/cmd_admin.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "morpheus/v1/admin.grpc.pb.h"

namespace morpheus::cli {

namespace {

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void reload(const CliContext& ctx) {
  v1::ReloadConfigResponse resp;
  checkCall(callRm(ctx, &v1::AdminService::Stub::ReloadConfig, v1::ReloadConfigRequest(), &resp,
                   Millis(30000), CallKind::kIdempotent),
            "RM at " + rmChannel(ctx).current());
  if (ctx.json) {
    printJson(
        "changed",
        nlohmann::json(std::vector<std::string>(resp.changed().begin(), resp.changed().end())),
        {{"config_file", resp.config_file()},
         {"restart_required", std::vector<std::string>(resp.restart_required().begin(),
                                                       resp.restart_required().end())}});
    return;
  }
  std::printf(
      "config reloaded%s%s: %s\n", resp.config_file().empty() ? "" : " from ",
      resp.config_file().c_str(),
      resp.changed().empty() ? "nothing changed" : ("applied " + joined(resp.changed())).c_str());
  if (!resp.restart_required().empty()) {
    std::printf("not applied, needs an RM restart: %s\n", joined(resp.restart_required()).c_str());
  }
}

}  // namespace

void addAdminCommands(CLI::App& root, CliContext& ctx) {
  auto* admin = root.add_subcommand("admin", "RM administration (admins)");
  admin->require_subcommand(1);
  auto* reload_cmd = admin->add_subcommand(
      "reload",
      "Re-read the RM's config file: queue weights and policies, ACLs, admins and the token "
      "file apply at once; an invalid config is refused naming the option and the old one "
      "stays; options that need a restart are listed, not applied (same as SIGHUP)");
  reload_cmd->callback([&ctx] { reload(ctx); });
}

}  // namespace morpheus::cli
