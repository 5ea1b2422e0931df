// morpheus-dag-am: the DAG application master. Launched by the RM as the AM
// container process; runs the stages of a YAML job (see dagam/job_spec.h).
//
// Identity comes from the environment the RM sets in the AM container, each
// overridable by a flag (for tests):
//   MORPHEUS_RM_AM_ADDRESS  --rm-am-address  host:port of the RM's ApplicationMaster service
//   MORPHEUS_APP_ID         --app-id         the application id
//   MORPHEUS_AM_TOKEN_FILE  --am-token-file  file holding the AM token issued at launch
//                           (the NM writes it readable only by the container's
//                           account; the token is never in the environment)
//                           --am-token       the token itself (tests; visible in ps)
//   MORPHEUS_TLS_CA         --tls-ca         the cluster's CA bundle (PEM): TLS
//                           that verifies the RM and the NMs; an NM
//                           configured with tls.* sets it to a copy in the
//                           container's directory. The AM presents no client
//                           certificate and authenticates by its tokens.
//   MORPHEUS_TLS_CERT, MORPHEUS_TLS_KEY  --tls-cert, --tls-key  a client
//                           certificate and its key to present as well
//                           (optional; never set by the NM: see common/tls.h)
//
// validateDagAm checks the flags and the job file, runDagAm runs the job,
// main() prints any error once, "morpheus-dag-am: <message>", and exits:
//   0  the job succeeded (or --validate found the file valid; --help, --version)
//   1  the job failed, the RM was unreachable past --rm-retry-window, or the
//      AM was stopped before the job finished (the log says which)
//   2  bad flags or job file: the line names the flag, or the file and field
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "common/address_list.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/token.h"
#include "common/version.h"
#include "dagam/dag_am.h"
#include "dagam/dag_job.h"
#include "dagam/job_spec.h"

using namespace morpheus;

namespace {

constexpr const char* kProgram = "morpheus-dag-am";
constexpr int kExitJobFailed = 1;
constexpr int kExitBadUsage = 2;

std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop.store(true); }

std::string envOr(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}

// The command line as given (flags over the environment), unchecked.
struct DagAmFlags {
  std::string job_path;
  std::string rm_am_address = envOr("MORPHEUS_RM_AM_ADDRESS", "");
  std::string app_id = envOr("MORPHEUS_APP_ID", "");
  std::string am_token;
  std::string am_token_file = envOr("MORPHEUS_AM_TOKEN_FILE", "");
  TlsFiles tls_files = tlsFilesFromEnvironment();
  std::string heartbeat = "300ms", retry_window = "60s", rpc_timeout = "10s";
  std::string log_level = "info", log_file;
  bool validate_only = false;
};

// What validateDagAm made of the flags.
struct DagAmConfig {
  dagam::JobSpec spec;
  dagam::AmOptions options;  // unused with validate_only
  bool validate_only = false;
};

// Parses argv into *flags. -1: go on; 0 after --help or --version; 2 after
// one line "morpheus-dag-am: <reason>" for a command line CLI11 refuses.
int parseDagAmCommandLine(int argc, char** argv, DagAmFlags* flags) {
  CLI::App app{"morpheus-dag-am: run a DAG of shell-task stages as a Morpheus application"};
  app.add_option("--job", flags->job_path, "Job description (YAML)")->required();
  app.add_option("--rm-am-address", flags->rm_am_address,
                 "RM ApplicationMaster service HOST:PORT (env MORPHEUS_RM_AM_ADDRESS)");
  app.add_option("--app-id", flags->app_id, "Application id (env MORPHEUS_APP_ID)");
  app.add_option("--am-token-file", flags->am_token_file,
                 "File holding the AM token (env MORPHEUS_AM_TOKEN_FILE)");
  app.add_option("--am-token", flags->am_token,
                 "The AM token itself, instead of --am-token-file (visible to every local user)");
  app.add_option("--tls-ca", flags->tls_files.ca_file,
                 "CA certificate(s), PEM (env MORPHEUS_TLS_CA); alone: TLS without a client "
                 "certificate");
  app.add_option("--tls-cert", flags->tls_files.cert_file,
                 "Client certificate signed by that CA, PEM (env MORPHEUS_TLS_CERT; optional)");
  app.add_option("--tls-key", flags->tls_files.key_file,
                 "Private key of --tls-cert, PEM (env MORPHEUS_TLS_KEY)");
  app.add_option("--heartbeat", flags->heartbeat,
                 "Interval between Allocate calls (duration, e.g. 300ms; default 300ms)");
  app.add_option("--rm-retry-window", flags->retry_window,
                 "How long the RM may be unreachable before giving up (default 60s)");
  app.add_option("--rpc-timeout", flags->rpc_timeout, "Deadline of one RPC (default 10s)");
  app.add_option("--log-level", flags->log_level, "trace, debug, info, warn, error (default info)");
  app.add_option("--log-file", flags->log_file, "Also log to this file");
  app.add_flag("--validate", flags->validate_only, "Only validate the job file and exit");
  app.set_version_flag("--version", versionLine(kProgram), "Print the version and git revision");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << kProgram << ": " << e.what() << "\n";
    return kExitBadUsage;
  }
  return -1;
}

// Sets up logging, loads the job file, then (unless --validate) checks the
// durations, TLS files, RM address and app id and reads the AM token;
// INVALID_ARGUMENT (or the file's error) naming the flag or the job field.
Result<DagAmConfig> validateDagAm(const DagAmFlags& flags) {
  MORPHEUS_RETURN_IF_ERROR(setupLogging("dag-am", flags.log_level, flags.log_file));
  DagAmConfig config;
  MORPHEUS_ASSIGN_OR_RETURN(config.spec, dagam::loadJobSpec(flags.job_path));
  config.validate_only = flags.validate_only;
  if (config.validate_only) return config;
  dagam::AmOptions& opt = config.options;
  opt.rm_am_address = flags.rm_am_address;
  opt.app_id = flags.app_id;
  opt.am_token = flags.am_token;
  MORPHEUS_ASSIGN_OR_RETURN(opt.heartbeat, parseDuration(flags.heartbeat, "--heartbeat"));
  MORPHEUS_ASSIGN_OR_RETURN(opt.rm_retry_window,
                            parseDuration(flags.retry_window, "--rm-retry-window"));
  MORPHEUS_ASSIGN_OR_RETURN(opt.rpc_timeout, parseDuration(flags.rpc_timeout, "--rpc-timeout"));
  MORPHEUS_ASSIGN_OR_RETURN(opt.tls, loadClientTls(flags.tls_files, kTlsFlagNames));
  if (opt.rm_am_address.empty()) {
    return invalidArgument("--rm-am-address", "required (or set MORPHEUS_RM_AM_ADDRESS)");
  }
  if (auto rms = splitAddressList(opt.rm_am_address, "--rm-am-address"); !rms.isOk()) {
    return rms.status();
  }
  if (opt.app_id.empty()) return invalidArgument("--app-id", "required (or set MORPHEUS_APP_ID)");
  if (opt.am_token.empty() && !flags.am_token_file.empty()) {
    MORPHEUS_ASSIGN_OR_RETURN(opt.am_token,
                              readSecretTokenFile(flags.am_token_file, "--am-token-file"));
  }
  return config;
}

// With --validate prints that the job file is valid. Otherwise runs the job
// until it ends or SIGTERM/SIGINT stops it; an error when it did not succeed
// (the driver has logged why).
Status runDagAm(DagAmConfig config) {
  if (config.validate_only) {
    std::cout << "job '" << config.spec.name << "' is valid: " << config.spec.stages.size()
              << " stage(s)\n";
    return Status::ok();
  }
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  std::string name = config.spec.name;
  RealClock clock;
  dagam::DagJob job(std::move(config.spec), config.options.app_id, clock);
  dagam::DagAmDriver driver(config.options, job, g_stop);
  if (driver.run() != 0) return unavailable("job '" + name + "' did not succeed");
  return Status::ok();
}

// The one place the AM reports how it ends: nothing after success; one
// line "morpheus-dag-am: <message>" on stderr for bad flags or job file
// (exit 2); logged as an error "morpheus-dag-am stopped: <message>" for a
// job that did not succeed (exit 1).
int dagAmExit(bool validated, const Status& status) {
  if (status.isOk()) return 0;
  if (!validated) {
    std::cerr << kProgram << ": " << status.message() << "\n";
    return kExitBadUsage;
  }
  spdlog::error("{} stopped: {}", kProgram, status.message());
  return kExitJobFailed;
}

}  // namespace

int main(int argc, char** argv) {
  DagAmFlags flags;
  if (int rc = parseDagAmCommandLine(argc, argv, &flags); rc >= 0) return rc;
  Result<DagAmConfig> config = validateDagAm(flags);
  if (!config.isOk()) return dagAmExit(false, config.status());
  return dagAmExit(true, runDagAm(std::move(config).value()));
}
