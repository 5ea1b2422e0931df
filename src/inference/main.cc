// morpheus-inference: provenance store, SLO/skyline inference, sign-off.
// main() only wires.
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

int main(int argc, char** argv) {
  blockTerminationSignals();
  inference::InferenceOptions opts;
  ConfigSchema schema("morpheus-inference");
  inference::declareInferenceOptions(schema, &opts);
  std::vector<FlagAlias> extra = {
      {"--rm", "inference.rm-address",
       "RM gRPC address HOST:PORT (or a comma-separated list of HA RMs)"},
      {"--token-file", "inference.token-file", "Bearer token file"}};
  if (int rc =
          parseDaemonCommandLine(argc, argv, "morpheus-inference", schema, extra,
                                 [](MetricsRegistry& m) { inference::InferenceMetrics core(m); });
      rc >= 0) {
    return rc;
  }
  auto fail = [](const std::string& msg) {
    std::cerr << "morpheus-inference: " << msg << "\n";
    return 2;
  };
  if (Status st = loadDaemonTls(&opts.daemon); !st.isOk()) {
    return fail("config error: " + st.message());
  }
  if (Status st = setupLogging("inference", daemonLogOptions(opts.daemon)); !st.isOk()) {
    return fail(st.message());
  }
  if (Status st = prepareDataDir(opts.daemon.data_dir); !st.isOk()) return fail(st.message());
  std::map<std::string, Principal> tokens;
  if (!opts.token_file.empty()) {
    if (Status st =
            checkSecretFile(opts.token_file, "inference.token-file", tokenFileCheck(opts.daemon));
        !st.isOk())
      return fail("config error: " + st.message());
    auto t = loadTokenFile(opts.token_file);
    if (!t.isOk()) return fail("config error: inference.token-file: " + t.status().message());
    tokens = std::move(t).value();
  } else if (!opts.open) {
    return fail(
        "config error: inference.token-file: required (or set inference.auth-disabled: true for "
        "single-user development)");
  }
  std::string location = opts.store_location;
  if (location.empty() && opts.store_kind == "sqlite")
    location = opts.daemon.data_dir + "/provenance.db";
  auto store = store::openProvenanceStore(opts.store_kind, location);
  if (!store.isOk()) return fail("provenance store: " + store.status().message());

  RealClock clock;
  MetricsRegistry metrics;
  inference::InferenceCoreOptions core_opts;
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
  std::string rm_token;
  if (!opts.rm_token_file.empty()) {
    auto t = readSecretTokenFile(opts.rm_token_file, "inference.rm-token-file",
                                 tokenFileCheck(opts.daemon));
    if (!t.isOk()) return fail("config error: " + t.status().message());
    rm_token = *t;
  }
  inference::RmReservationClient rm(opts.rm_address, opts.daemon.tls, rm_token);
  inference::InferenceCore core(core_opts, **store, rm, clock, metrics);
  Authenticator auth(tokens, opts.open && tokens.empty());
  inference::InferenceServiceImpl service(core, auth, core_opts);
  DaemonServer server("inference", opts.daemon, metrics);
  server.addService(&service);
  server.setAuthenticator(&auth);
  if (Status st = server.start(); !st.isOk()) return fail(st.message());
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
  return 0;
}
