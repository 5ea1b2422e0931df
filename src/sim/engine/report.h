// morpheus-sim results and the report written to --out DIR
// (docs/experiments/simulator.md). The engine (sim/engine/engine.h) fills these; report.cc turns
// them into summary.json, CSVs, gnuplot PNGs and a markdown report that reads
// like Morpheus §9 (Fig. 9-10).
//
// summary.json is byte-identical for the same seed and inputs: it holds no
// wall-clock figures, keys are sorted, doubles are printed with fixed
// precision. Wall time and events/s go to stderr and bench/ only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace morpheus::sim {

// One evaluated periodic instance (evaluation days only).
struct InstanceOutcome {
  std::string job;              // JobKey value
  int64_t index = 0;            // k
  Millis runtime{0};            // end - start; 0 if it never started
  Millis lateness{0};           // max(0, end - deadline)
  bool met = false;             // ended successfully by the true deadline
  bool failed = false;          // the run failed (not a deadline miss; excluded from violations)
  bool worst_case_met = false;  // met using only guaranteed (reserved) capacity, Morpheus §9
  double reserved_container_s = 0;  // containers held for it x seconds
  double used_container_s = 0;      // containers it actually used x seconds
  int64_t dra_grants = 0;
  // Reviews at which morpheus-dra's "not ahead of its plan" rule withheld a
  // grant the demand above the skyline asked for (reprovision::aheadOfPlan).
  int64_t dra_withheld_ahead = 0;
};

struct AdhocOutcome {
  std::string job;
  Millis submit{0};
  Millis completion{0};  // job completion time (end - submit); -1 ms if unfinished at the end
};

// The order of StrategyResult::adhoc: by submit, then job name.
inline bool adhocBefore(const AdhocOutcome& a, const AdhocOutcome& b) {
  return a.submit != b.submit ? a.submit < b.submit : a.job < b.job;
}

// One size a min-cluster search evaluated: its node count, the rate it
// matched against the baseline's (worst case or with the ad-hoc load, as
// the search was asked) and whether that rate is at most the baseline's.
struct SearchStep {
  int64_t nodes = 0;
  double rate = 0;
  bool matches = false;
};

struct StrategyResult {
  std::string name;
  int64_t periodic_instances = 0;  // evaluated (successful or missed; failed runs excluded)
  int64_t deadline_violations = 0;
  double violation_rate = 0;
  int64_t worst_case_violations = 0;
  double worst_case_violation_rate = 0;
  double utilisation = 0;  // used / capacity over the evaluation days (dominant share)
  double adhoc_jct_median_s = 0;
  double adhoc_jct_p95_s = 0;
  std::optional<int64_t> min_nodes_at_baseline_rate;  // min-cluster only
  // min-cluster's search only: every size it evaluated, in the order it
  // evaluated them (--nodes first, then the bisection's); empty otherwise.
  std::vector<SearchStep> min_cluster_search;
  std::vector<InstanceOutcome> instances;
  std::vector<AdhocOutcome> adhoc;
  // Cluster utilisation per plan step over the evaluation days (for plots).
  std::vector<double> utilisation_series;
  // Per strategy, anything else worth reporting (e.g. "alpha": 0.01).
  std::map<std::string, double> extra;
};

struct SimSummary {
  uint64_t seed = 0;
  int64_t nodes = 0;
  int64_t days = 0;
  int64_t train_days = 0;
  // ExperimentOptions::train_segments and train_warmup_days; in summary.json
  // and the report only when the training was segmented (segments > 1).
  int64_t train_segments = 1;
  int64_t train_warmup_days = 0;
  // ExperimentOptions::eval_segments and eval_warmup_days (`run` only); the
  // same way in summary.json and the report only when segments > 1.
  int64_t eval_segments = 1;
  int64_t eval_warmup_days = 0;
  std::string command;                     // "run" or "min-cluster"
  std::vector<StrategyResult> strategies;  // in the order they were run
  bool interrupted = false;                // Ctrl-C: what was done so far
};

// Writes summary.json, per-strategy CSVs (instances.csv, adhoc.csv,
// utilisation.csv), PNG plots (when gnuplot is installed; a note in the
// report says when it is not) and report.md into `dir` (created if needed).
// UNAVAILABLE naming the path when it cannot be written.
Status writeReport(const std::string& dir, const SimSummary& summary);

// A min-cluster search's sizes in search order, one line:
// "1000 nodes 10.89% (matches), 500 nodes 31.20% (above), ..."; empty
// when the result has no search (StrategyResult::min_cluster_search).
std::string searchTrail(const StrategyResult& r);

// summary.json alone (what tests compare byte for byte).
std::string summaryJson(const SimSummary& summary);

}  // namespace morpheus::sim
