#include "cli/cli.h"

#include "cli/cmd_admin.h"
#include "cli/cmd_app.h"
#include "cli/cmd_cluster.h"
#include "cli/cmd_node.h"
#include "cli/cmd_queue.h"
#include "cli/cmd_reservation.h"
#include "cli/cmd_skyline.h"
#include "cli/cmd_slo.h"
#include "cli/cmd_top.h"
#include "cli/cmd_usage.h"
#include "cli/completion.h"
#include "common/version.h"

namespace morpheus::cli {

namespace {

// The subcommands the command line chose, root first.
std::vector<const CLI::App*> chosenPath(const CLI::App& root) {
  std::vector<const CLI::App*> path{&root};
  while (true) {
    auto subs = path.back()->get_subcommands();
    if (subs.empty()) break;
    path.push_back(subs.front());
  }
  return path;
}

// CLI11 names an option by its long name; the user may have typed its short
// one ("-f" for "--file"): say it as typed.
std::string asTyped(std::string msg, const std::vector<const CLI::App*>& path,
                    const CliContext& ctx) {
  for (const CLI::App* app : path) {
    for (const CLI::Option* o : app->get_options()) {
      if (o->get_lnames().empty() || o->get_snames().empty()) continue;
      std::vector<std::string> names;
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
      const std::string long_name = "--" + o->get_lnames().front();
      names.push_back(long_name);
      const std::string typed = typedName(ctx, names);
      if (typed == long_name) continue;
      for (size_t at = msg.find(long_name); at != std::string::npos;
           at = msg.find(long_name, at + typed.size())) {
        msg.replace(at, long_name.size(), typed);
      }
    }
  }
  return msg;
}

}  // namespace

int runMorpheusctl(int argc, const char* const* argv, CliContext& ctx) {
  ctx.args.assign(argv + (argc > 0 ? 1 : 0), argv + argc);
  CLI::App app{"morpheusctl: operate a Morpheus cluster and sign off SLOs", "morpheusctl"};
  app.require_subcommand(1);
  // Global options anywhere: an option a subcommand does not know falls
  // through to its parent, up to these (`morpheusctl app list --token T` as
  // `morpheusctl --token T app list`, as kubectl and yarn take them).
  // Subcommands inherit the setting when they are added, so it comes first.
  app.fallthrough();
  // An option given twice takes the last value (as getopt tools and kubectl
  // do), so a script can append an override; list options say otherwise.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", morpheus::versionLine("morpheusctl"),
                       "Print the version and git revision");
  app.add_option(
      "--rm", ctx.rm_address,
      "RM gRPC address HOST:PORT, or HOST:PORT,HOST:PORT of active/standby RMs (env MORPHEUS_RM)");
  app.add_option("--rm-http", ctx.rm_http_address,
                 "RM HTTP address HOST:PORT (env MORPHEUS_RM_HTTP)");
  app.add_option("--inference", ctx.inference_address,
                 "Inference service address HOST:PORT (env MORPHEUS_INFERENCE)");
  app.add_flag("--json", ctx.json,
               "Print one JSON object (records under a plural key, snake_case keys) "
               "instead of text");
  app.add_option("--user", ctx.user,
                 "Act for this user (admins only; default: the token's own user)");
  app.add_option("--token", ctx.token,
                 "Bearer token for the RM and inference (env MORPHEUS_TOKEN)");
  app.add_option("--token-file", ctx.token_file, "Read the bearer token from this file");
  app.add_option("--timeout", ctx.timeout,
                 "How long to wait for the RM or inference to accept a connection before "
                 "saying so, e.g. 500ms, 10s (default 1500ms: a daemon that is down or misnamed "
                 "is reported within 2 s)")
      ->check(CLI::Validator(
          [](std::string& v) {
            auto d = parseDurationArg(v, "--timeout");
            return d.isOk() ? std::string() : d.status().message();
          },
          "DURATION"));
  app.add_option("--tls-ca", ctx.tls.ca_file,
                 "CA certificate(s) of the cluster's TLS, PEM (env MORPHEUS_TLS_CA); alone: "
                 "TLS without a client certificate (token authentication)");
  app.add_option("--tls-cert", ctx.tls.cert_file,
                 "Client certificate signed by that CA, PEM (env MORPHEUS_TLS_CERT); needed "
                 "for daemons with tls.client-certs: require");
  app.add_option("--tls-key", ctx.tls.key_file,
                 "Private key of --tls-cert, PEM (env MORPHEUS_TLS_KEY)");
  addClusterCommands(app, ctx);
  addAppCommands(app, ctx);
  addReservationCommands(app, ctx);
  addSloCommands(app, ctx);
  addSkylineCommands(app, ctx);
  addQueueCommands(app, ctx);
  addUsageCommands(app, ctx);
  addTopCommand(app, ctx);
  addNodeCommands(app, ctx);
  addAdminCommands(app, ctx);
  addCompletionCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad usage (unknown option, missing argument, bad value): one line with
    // the program's prefix, then where to read the usage; exit 2 as README
    // states, not CLI11's own codes (105-109).
    auto path = chosenPath(app);
    std::string cmd;
    for (const CLI::App* a : path) cmd += (cmd.empty() ? "" : " ") + a->get_name();
    std::cerr << "morpheusctl: " << asTyped(e.what(), path, ctx) << "\nRun '" << cmd
              << " --help' for usage.\n";
    return 2;
  } catch (const CliExit& e) {
    return e.code;
  }
  return 0;
}

}  // namespace morpheus::cli
