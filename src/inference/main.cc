// morpheus-inference: provenance store, SLO/skyline inference, sign-off.
// validateInference checks the options, runInference wires the components
// and serves, main() reports how it ended (common/daemon.h: the pattern and
// the exit codes).
#include <spdlog/spdlog.h>

#include <functional>
#include <iostream>
#include <mutex>

#include "common/auth.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "inference/service/inference_core.h"
#include "inference/service/inference_options.h"
#include "inference/service/rm_client.h"
#include "inference/service/service.h"
#include "store/provenance/provenance_store.h"

using namespace morpheus;

namespace {

constexpr const char* kProgram = "morpheus-inference";

// The options as validateInference accepted them, with what it read.
struct InferenceConfig {
  inference::InferenceOptions options;  // TLS loaded
  inference::InferenceCoreOptions core;
  std::map<std::string, Principal> tokens;  // inference.token-file (empty = none)
  std::string rm_token;                     // inference.rm-token-file ("" = none)
};

// The command line and config file into *opts (parseDaemonCommandLine's
// return value).
int parseInferenceCommandLine(int argc, char** argv, inference::InferenceOptions* opts) {
  ConfigSchema schema(kProgram);
  inference::declareInferenceOptions(schema, opts);
  std::vector<FlagAlias> extra = {
      {"--rm", "inference.rm-address",
       "RM gRPC address HOST:PORT (or a comma-separated list of HA RMs)"},
      {"--token-file", "inference.token-file", "Bearer token file"}};
  return parseDaemonCommandLine(argc, argv, kProgram, schema, extra,
                                [](MetricsRegistry& m) { inference::InferenceMetrics core(m); });
}

// Loads TLS, sets up logging, then checks the options and reads the token
// files; INVALID_ARGUMENT (or the file's error) naming the option. Opens no
// store and creates no data dir.
Result<InferenceConfig> validateInference(const inference::InferenceOptions& parsed) {
  InferenceConfig config;
  config.options = parsed;
  inference::InferenceOptions& opts = config.options;
  MORPHEUS_RETURN_IF_ERROR(loadDaemonTls(&opts.daemon));
  MORPHEUS_RETURN_IF_ERROR(setupLogging("inference", daemonLogOptions(opts.daemon)));
  if (!opts.token_file.empty()) {
    MORPHEUS_RETURN_IF_ERROR(
        checkSecretFile(opts.token_file, "inference.token-file", tokenFileCheck(opts.daemon)));
    auto t = loadTokenFile(opts.token_file);
    if (!t.isOk()) return t.status().withContext("inference.token-file");
    config.tokens = std::move(t).value();
  } else if (!opts.open) {
    return invalidArgument("inference.token-file",
                           "required (or set inference.auth-disabled: true for single-user "
                           "development)");
  }
  inference::InferenceCoreOptions& core_opts = config.core;
  core_opts.step = opts.step;
  core_opts.alpha = opts.alpha;
  core_opts.beta = opts.beta;
  core_opts.beta_relative = opts.beta_mode == "relative";
  core_opts.min_runs = opts.min_runs;
  core_opts.budget_fraction = opts.budget_fraction;
  core_opts.drift_threshold = opts.drift_threshold;
  core_opts.whole_skyline_steps = opts.skyline_steps == "whole";
  core_opts.queue = opts.queue;
  core_opts.history_runs = opts.history_runs;
  core_opts.sample =
      opts.sample == "max" ? inference::SampleMode::kMax : inference::SampleMode::kAverage;
  core_opts.slo.period_tolerance = opts.period_tolerance;
  core_opts.slo.max_period_cv = opts.max_period_cv;
  core_opts.slo.max_outread_cv = opts.max_outread_cv;
  core_opts.slo.min_slack = opts.min_slack;
  core_opts.slo.start_percentile = opts.start_percentile;
  core_opts.slo.deadline_percentile = opts.deadline_percentile;
  core_opts.slo.problematic_cv = opts.problematic_cv;
  core_opts.slo.lcm = opts.lcm;
  core_opts.slo.step = opts.step;
  core_opts.slo.min_runs = opts.min_runs;
  core_opts.history_window = opts.history_window;
  core_opts.one_off_lead = opts.one_off_lead;
  core_opts.max_fit_samples = opts.max_fit_samples;
  core_opts.min_fit_step = opts.min_fit_step;
  core_opts.max_fit_time = opts.max_fit_time;
  if (!opts.rm_token_file.empty()) {
    MORPHEUS_ASSIGN_OR_RETURN(config.rm_token,
                              readSecretTokenFile(opts.rm_token_file, "inference.rm-token-file",
                                                  tokenFileCheck(opts.daemon)));
  }
  return config;
}

// Prepares the data dir, opens the provenance store, starts the server and
// the periodic refits, serves until SIGTERM/SIGINT and stops. OK after a
// clean stop.
Status runInference(InferenceConfig config) {
  const inference::InferenceOptions& opts = config.options;
  const inference::InferenceCoreOptions& core_opts = config.core;
  MORPHEUS_RETURN_IF_ERROR(prepareDataDir(opts.daemon.data_dir));
  std::string location = opts.store_location;
  if (location.empty() && opts.store_kind == "sqlite")
    location = opts.daemon.data_dir + "/provenance.db";
  auto store = store::openProvenanceStore(opts.store_kind, location);
  if (!store.isOk()) return store.status().withContext("provenance store");

  RealClock clock;
  MetricsRegistry metrics;
  inference::RmReservationClient rm(opts.rm_address, opts.daemon.tls, config.rm_token);
  inference::InferenceCore core(core_opts, **store, rm, clock, metrics);
  Authenticator auth(config.tokens, opts.open && config.tokens.empty());
  inference::InferenceServiceImpl service(core, auth, core_opts);
  DaemonServer server("inference", opts.daemon, metrics);
  server.addService(&service);
  server.setAuthenticator(&auth);
  MORPHEUS_RETURN_IF_ERROR(server.start());
  spdlog::info("morpheus-inference started: store {}, RM {}, refit every {} ms", (*store)->name(),
               opts.rm_address, opts.refit_interval.count());

  // Periodic refit (Morpheus §4: daily by default) on the clock's thread.
  Mutex refit_mu;        // a local: the analysis checks members only
  bool stopped = false;  // under refit_mu
  std::function<void()> refit = [&] {
    MutexLock lk(refit_mu);
    if (stopped) return;
    auto n = core.refit();
    if (!n.isOk()) {
      spdlog::warn("refit failed: {}", n.status().message());
    } else {
      spdlog::info("refit created {} proposal(s)", *n);
    }
    clock.scheduleAfter(opts.refit_interval, refit);
  };
  // The first refit soon after start, so the proposal list reflects the store.
  clock.scheduleAfter(std::min(opts.refit_interval, Millis(2000)), refit);
  // One-off reservations of the instances of off-kilter jobs (Morpheus §6).
  std::function<void()> instances = [&] {
    MutexLock lk(refit_mu);
    if (stopped) return;
    auto n = core.submitDueInstances();
    if (!n.isOk()) spdlog::warn("instance reservations: {}", n.status().message());
    clock.scheduleAfter(opts.one_off_check, instances);
  };
  clock.scheduleAfter(opts.one_off_check, instances);

  notifyReady("serving gRPC on port " + std::to_string(server.grpcPort()) + ", HTTP on port " +
              std::to_string(server.httpPort()));
  int sig = waitForTerminationSignal();
  notifyStopping();
  spdlog::info("morpheus-inference stopping on signal {}", sig);
  core.stop();  // running fits end at their next stop check
  {
    MutexLock lk(refit_mu);
    stopped = true;
  }
  server.shutdown();
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  blockTerminationSignals();
  inference::InferenceOptions options;
  if (int rc = parseInferenceCommandLine(argc, argv, &options); rc >= 0) return rc;
  Result<InferenceConfig> config = validateInference(options);
  if (!config.isOk()) return daemonExit(kProgram, DaemonPhase::kValidate, config.status());
  return daemonExit(kProgram, DaemonPhase::kRun, runInference(std::move(config).value()));
}
