// Every option of morpheus-inference, with meaning, unit and default.
#pragma once

#include "common/config.h"
#include "common/daemon.h"
#include "inference/model/skyline_fit.h"

namespace morpheus::inference {

struct InferenceOptions {
  DaemonOptions daemon;
  std::string rm_address;                         // inference.rm-address
  std::string store_kind;                         // provenance-store.kind
  std::string store_location;                     // provenance-store.location
  std::string token_file;                         // inference.token-file
  std::string rm_token_file;                      // inference.rm-token-file
  bool open = false;                              // inference.auth-disabled
  std::string queue;                              // inference.queue
  Millis refit_interval{86400000};                // inference.refit-interval
  Millis step{60000};                             // skyline.step
  double alpha = 0.01;                            // skyline.alpha
  double beta = 0.1;                              // skyline.beta
  std::string beta_mode;                          // skyline.beta-mode
  int64_t min_runs = 3;                           // skyline.min-runs
  double budget_fraction = 0.5;                   // proposal.budget-fraction
  std::string skyline_steps;                      // proposal.skyline-steps
  double drift_threshold = 0.2;                   // proposal.drift-threshold
  std::string sample;                             // skyline.sample
  int64_t history_runs = 30;                      // skyline.history-runs
  int64_t max_fit_samples = 500000;               // skyline.max-fit-samples
  Millis min_fit_step{1000};                      // skyline.min-fit-step
  Millis max_fit_time{60000};                     // skyline.max-fit-time
  double period_tolerance = 0.1;                  // slo.period-tolerance
  double max_period_cv = 0.1;                     // slo.max-period-cv
  double max_outread_cv = 0.1;                    // slo.max-outread-cv
  double min_slack = 0.0;                         // slo.min-slack
  double start_percentile = 0.95;                 // slo.start-percentile
  double deadline_percentile = 0.5;               // slo.deadline-percentile
  double problematic_cv = 0.5;                    // slo.problematic-cv
  Millis lcm{86400000};                           // slo.lcm
  Millis history_window{int64_t{30} * 86400000};  // slo.history-window
  Millis one_off_lead{86400000};                  // inference.one-off-lead-time
  Millis one_off_check{60000};                    // inference.one-off-check-interval
};

inline constexpr int64_t kDefaultInferenceGrpcPort = 8050;
inline constexpr int64_t kDefaultInferenceHttpPort = 8051;

inline void declareInferenceOptions(ConfigSchema& s, InferenceOptions* o) {
  addDaemonOptions(s, &o->daemon, kDefaultInferenceGrpcPort, kDefaultInferenceHttpPort,
                   "./var/inference");
  s.addString("inference.rm-address", &o->rm_address, "127.0.0.1:8030",
              "host:port of the RM's gRPC endpoint, where accepted proposals are submitted "
              "as recurring reservations; for active/standby RMs a comma-separated list of all "
              "of them (the service follows the active one).");
  s.addString("provenance-store.kind", &o->store_kind, "sqlite",
              "Where runs, file events and proposals are kept.", {"sqlite", "postgres"});
  s.addString("provenance-store.location", &o->store_location, "",
              "sqlite: database file (\"\" = <data-dir>/provenance.db); postgres: a libpq "
              "conninfo string, e.g. \"host=127.0.0.1 dbname=morpheus user=morpheus\".");
  s.addString("inference.token-file", &o->token_file, "",
              "Bearer tokens of callers (history import, sign-off, the RM's telemetry feed): one "
              "'TOKEN USER [admin] [expires=WHEN]' per line (README: Provisioning tokens). The "
              "RM's rm.inference-token-file token must be "
              "listed as admin (it imports runs for every owner). Required unless "
              "inference.auth-disabled is true.");
  s.addString("inference.rm-token-file", &o->rm_token_file, "",
              "File holding the bearer token (first line) sent to the RM when an accepted "
              "proposal is submitted as a reservation for its owner; it must be an admin in the "
              "RM's rm.token-file. \"\" = none (only for an RM with rm.auth-disabled).");
  s.addBool("inference.auth-disabled", &o->open, false,
            "Development only: accept every caller as an admin named 'anonymous'.");
  s.addString("inference.queue", &o->queue, "default",
              "Reservable RM queue that accepted proposals are submitted to.");
  s.addDuration("inference.refit-interval", &o->refit_interval, Millis(86400000), Millis(1000),
                "How often SLOs and skylines are re-inferred from the provenance store.");
  s.addDuration("skyline.step", &o->step, Millis(60000), Millis(1000),
                "Skyline step (must equal the RM's planner.step).");
  s.addDouble("skyline.alpha", &o->alpha, kDefaultSkylineAlpha, 0, 1, "",
              "Weight of over-allocation vs under-allocation in the skyline LP (Morpheus §5); "
              "the default 0.01 is the paper's best balance (§9).");
  s.addDouble("skyline.beta", &o->beta, 0.1, 0, 1e9, "",
              "Regularisation weight: a multiple of V (relative) or the weight itself (absolute).");
  s.addString("skyline.beta-mode", &o->beta_mode, "relative",
              "relative: beta * V with V the optimum without regularisation (two solves); "
              "absolute: beta as given (Hadoop resource estimator).",
              {"relative", "absolute"});
  s.addInt("skyline.min-runs", &o->min_runs, 3, 1, 100000, "runs",
           "Fewest runs a job needs before a skyline is fitted.");
  s.addString(
      "skyline.sample", &o->sample, "average",
      "A fit step's sample from a run: the average containers in use over the step, or the max.",
      {"average", "max"});
  s.addInt("skyline.history-runs", &o->history_runs, 30, 1, 100000, "runs",
           "The most recent runs a job's skyline is fitted from.");
  s.addInt("skyline.max-fit-samples", &o->max_fit_samples, 500000, 1000, int64_t{1} << 40,
           "samples",
           "The most samples one skyline fit may hold: runs x steps of the longest run at the "
           "fit's step (the LP's size). A refit of a larger job, or a FitSkyline call asking for "
           "more, is refused naming the step.");
  s.addDuration("skyline.min-fit-step", &o->min_fit_step, Millis(1000), Millis(1),
                "The shortest step_ms a FitSkyline caller may ask for.");
  s.addDuration("skyline.max-fit-time", &o->max_fit_time, Millis(60000), Millis(100),
                "How long one FitSkyline fit may run before it is stopped (FAILED_PRECONDITION). "
                "A fit also stops when its caller cancels or the daemon is stopped.");
  s.addDouble(
      "slo.period-tolerance", &o->period_tolerance, 0.1, 0, 1, "relative",
      "A median submission gap this close (relative) to a divisor of slo.lcm that is whole "
      "skyline steps (1 day: 5, 20 min, 1, 2, 3, 4, 6, 8, 12 h, ...) snaps to it (Morpheus §4), "
      "unless the submissions drift from its schedule by more than this share of it.");
  s.addDouble("slo.max-period-cv", &o->max_period_cv, 0.1, 0, 100, "MAD/median",
              "Jobs whose submission gaps are more dispersed than this are not periodic.");
  s.addDouble(
      "slo.max-outread-cv", &o->max_outread_cv, 0.1, 0, 100, "MAD/median",
      "A deadline is actionable only if the first read of the job's output (T_outRead) is at least "
      "this stable.");
  s.addDouble("slo.min-slack", &o->min_slack, 0.0, -1e9, 1e9, "fraction of the run time",
              "A deadline is actionable only if median (T_outRead - T_end)/(T_end - T_start) is at "
              "least this.");
  s.addDouble("slo.start-percentile", &o->start_percentile, 0.95, 0, 1, "quantile",
              "Earliest start a = this percentile of the input-availability times T_inAvail.");
  s.addDouble("slo.deadline-percentile", &o->deadline_percentile, 0.5, 0, 1, "quantile",
              "Deadline d = this percentile of the output-read times T_outRead.");
  s.addDouble("slo.problematic-cv", &o->problematic_cv, 0.5, 0, 100, "MAD/median",
              "Jobs whose T_start - T_inAvail or T_outRead - T_end vary more than this are flagged "
              "problematic (the planner's alignment penalty applies).");
  s.addDuration("slo.lcm", &o->lcm, Millis(86400000), Millis(60000),
                "The RM plan's LCM (planner.lcm). A job whose period divides it (within "
                "slo.period-tolerance) gets a recurring reservation; any other period (off-kilter "
                "like 7 h, or longer: weekly, monthly) gets a one-off reservation per instance "
                "(Morpheus §6).");
  s.addDuration("slo.history-window", &o->history_window, Millis(int64_t{30} * 86400000),
                Millis(60000),
                "SLO statistics (period, dispersion, a, d) and skyline fits use the succeeded runs "
                "submitted within this window before now (but at least skyline.min-runs most "
                "recent ones), so a moved deadline is seen.");
  s.addDuration("inference.one-off-lead-time", &o->one_off_lead, Millis(86400000), Millis(60000),
                "How long before an instance's window opens its one-off reservation is submitted "
                "to the RM (jobs whose period does not divide slo.lcm). Keep it below the RM's "
                "one-off plan horizon.");
  s.addDuration("inference.one-off-check-interval", &o->one_off_check, Millis(60000), Millis(1000),
                "How often accepted off-kilter jobs are checked for instances due a one-off "
                "reservation (must be well below inference.one-off-lead-time).");
  s.addDouble("proposal.budget-fraction", &o->budget_fraction, 0.5, 0, 10,
              "fraction of skyline area", "Default reprovisioning budget of a proposal.");
  s.addString("proposal.skyline-steps", &o->skyline_steps, "whole",
              "How a signed-off skyline is asked of the RM's planner: whole (each step held at "
              "its full height, shifted within the window, or refused; then the proposal falls "
              "back to per-instance reservations) or stretchable (a step's containers may be "
              "spread over later steps when the plan is busy). Whole: 21-29% fewer deadline "
              "violations in morpheus-sim (README).",
              {"whole", "stretchable"});
  s.addDouble("proposal.drift-threshold", &o->drift_threshold, 0.2, 0, 10, "relative change",
              "A refit whose skyline area or peak differs by more than this from the accepted one "
              "creates an update proposal.");
}

}  // namespace morpheus::inference
