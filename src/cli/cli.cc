#include "cli/cli.h"

#include "cli/cmd_app.h"
#include "cli/cmd_cluster.h"
#include "cli/cmd_queue.h"
#include "cli/cmd_reservation.h"
#include "cli/cmd_skyline.h"
#include "cli/cmd_slo.h"
#include "cli/completion.h"
#include "common/version.h"

namespace morpheus::cli {

int runMorpheusctl(int argc, const char* const* argv, CliContext& ctx) {
  CLI::App app{"morpheusctl: operate a Morpheus cluster and sign off SLOs", "morpheusctl"};
  app.require_subcommand(1);
  // Global options anywhere: an option a subcommand does not know falls
  // through to its parent, up to these (`morpheusctl app list --token T` as
  // `morpheusctl --token T app list`, as kubectl and yarn take them).
  // Subcommands inherit the setting when they are added, so it comes first.
  app.fallthrough();
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
  addCompletionCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad usage (unknown option, missing argument, bad value): exit 2 as
    // README states, not CLI11's own codes (105-109).
    app.exit(e);
    return 2;
  } catch (const CliExit& e) {
    return e.code;
  }
  return 0;
}

}  // namespace morpheus::cli
