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
// Exit codes: 0 job succeeded, 1 job failed (or RM unreachable), 2 bad job file/flags.
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

namespace {

std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop.store(true); }

std::string envOr(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}

int usage(const std::string& msg) {
  std::cerr << "morpheus-dag-am: " << msg << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace morpheus;
  CLI::App app{"morpheus-dag-am: run a DAG of shell-task stages as a Morpheus application"};
  std::string job_path;
  dagam::AmOptions opt;
  opt.rm_am_address = envOr("MORPHEUS_RM_AM_ADDRESS", "");
  opt.app_id = envOr("MORPHEUS_APP_ID", "");
  std::string am_token_file = envOr("MORPHEUS_AM_TOKEN_FILE", "");
  TlsFiles tls_files = tlsFilesFromEnvironment();
  std::string heartbeat = "300ms", retry_window = "60s", rpc_timeout = "10s";
  std::string log_level = "info", log_file;
  bool validate_only = false;
  app.add_option("--job", job_path, "Job description (YAML)")->required();
  app.add_option("--rm-am-address", opt.rm_am_address,
                 "RM ApplicationMaster service HOST:PORT (env MORPHEUS_RM_AM_ADDRESS)");
  app.add_option("--app-id", opt.app_id, "Application id (env MORPHEUS_APP_ID)");
  app.add_option("--am-token-file", am_token_file,
                 "File holding the AM token (env MORPHEUS_AM_TOKEN_FILE)");
  app.add_option("--am-token", opt.am_token,
                 "The AM token itself, instead of --am-token-file (visible to every local user)");
  app.add_option("--tls-ca", tls_files.ca_file,
                 "CA certificate(s), PEM (env MORPHEUS_TLS_CA); alone: TLS without a client "
                 "certificate");
  app.add_option("--tls-cert", tls_files.cert_file,
                 "Client certificate signed by that CA, PEM (env MORPHEUS_TLS_CERT; optional)");
  app.add_option("--tls-key", tls_files.key_file,
                 "Private key of --tls-cert, PEM (env MORPHEUS_TLS_KEY)");
  app.add_option("--heartbeat", heartbeat,
                 "Interval between Allocate calls (duration, e.g. 300ms; default 300ms)");
  app.add_option("--rm-retry-window", retry_window,
                 "How long the RM may be unreachable before giving up (default 60s)");
  app.add_option("--rpc-timeout", rpc_timeout, "Deadline of one RPC (default 10s)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error (default info)");
  app.add_option("--log-file", log_file, "Also log to this file");
  app.add_flag("--validate", validate_only, "Only validate the job file and exit");
  app.set_version_flag("--version", morpheus::versionLine("morpheus-dag-am"),
                       "Print the version and git revision");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (Status st = setupLogging("dag-am", log_level, log_file); !st.isOk()) {
    return usage(st.message());
  }
  auto spec = dagam::loadJobSpec(job_path);
  if (!spec.isOk()) return usage(spec.status().message());
  if (validate_only) {
    std::cout << "job '" << spec->name << "' is valid: " << spec->stages.size() << " stage(s)\n";
    return 0;
  }
  auto hb = parseDuration(heartbeat, "--heartbeat");
  if (!hb.isOk()) return usage(hb.status().message());
  auto rw = parseDuration(retry_window, "--rm-retry-window");
  if (!rw.isOk()) return usage(rw.status().message());
  auto rt = parseDuration(rpc_timeout, "--rpc-timeout");
  if (!rt.isOk()) return usage(rt.status().message());
  auto tls = loadClientTls(tls_files, kTlsFlagNames);
  if (!tls.isOk()) return usage(tls.status().message());
  opt.tls = std::move(tls).value();
  opt.heartbeat = *hb;
  opt.rm_retry_window = *rw;
  opt.rpc_timeout = *rt;
  if (opt.rm_am_address.empty()) {
    return usage("--rm-am-address: required (or set MORPHEUS_RM_AM_ADDRESS)");
  }
  if (auto rms = splitAddressList(opt.rm_am_address, "--rm-am-address"); !rms.isOk()) {
    return usage(rms.status().message());
  }
  if (opt.app_id.empty()) return usage("--app-id: required (or set MORPHEUS_APP_ID)");
  if (opt.am_token.empty() && !am_token_file.empty()) {
    auto token = readSecretTokenFile(am_token_file, "--am-token-file");
    if (!token.isOk()) return usage(token.status().message());
    opt.am_token = std::move(token).value();
  }

  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  RealClock clock;
  dagam::DagJob job(std::move(spec).value(), opt.app_id, clock);
  dagam::DagAmDriver driver(opt, job, g_stop);
  return driver.run();
}
