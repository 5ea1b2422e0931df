// Skyline inference (Morpheus §5): the LP that picks one per-step reservation
// s_k from N historical runs s_ik (containers in use at step k of run i):
//
//   A_o = (1/N) sum_i sum_k (s_k - s_ik)+                      over-allocation
//   D_ik = (D_i,k-1 + s_ik - s_k)+, D_i0 = 0; A_u = (1/N) sum_i D_iK   debt left
//   (1/N) sum_i sum_k (s_ik - s_k)+ / sum_k s_ik <= eps        regularisation
//   minimise alpha*A_o + (1 - alpha)*A_u + beta*eps,  s_k >= 0
//
// beta_relative: beta is multiplied by V, the optimum without the beta*eps term
// (two solves); otherwise beta is taken as given (Hadoop's resource estimator).
// Runs shorter than K are padded with zeros; a run with sum_k s_ik = 0 adds no
// regularisation term.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "store/provenance/provenance_store.h"

namespace morpheus::inference {

// Default weight of over-allocation against under-allocation. Morpheus §9
// (sensitivity to alpha): "a value of 1% leads to the best balance" between
// over-allocation and SLO misses; configurable as skyline.alpha.
inline constexpr double kDefaultSkylineAlpha = 0.01;

// Polled by a running solve between simplex slices (every ~100 ms of CPU):
// a non-OK status ends the solve with that status (the caller went away,
// the daemon is stopping, a time limit passed). Must be thread-safe.
using FitStop = std::function<Status()>;

struct SkylineProblem {
  std::vector<std::vector<double>> runs;  // N runs x up to K steps, each >= 0
  double alpha = kDefaultSkylineAlpha;    // in [0, 1]
  double beta = 0.1;                      // >= 0
  bool beta_relative = true;
  FitStop stop;  // empty: never stopped (solveSkyline only; the reference LP ignores it)
};

struct SkylineSolution {
  std::vector<double> s;        // K values >= 0 (LP optimum, not rounded)
  double over_allocation = 0;   // A_o at s
  double under_allocation = 0;  // A_u at s
  double epsilon = 0;           // eps at s
  double objective = 0;         // alpha*A_o + (1-alpha)*A_u + beta_eff*eps
  double v = 0;                 // optimum without the beta term (relative mode; else 0)
  double beta_effective = 0;    // beta * V (relative) or beta
};

// The terms of the objective for a given s (used by both solvers and tests).
SkylineSolution evaluateSkyline(const SkylineProblem& p, std::vector<double> s,
                                double beta_effective);

// Reference: the LP exactly as written above (variables s_k, o_ik, u_ik, D_ik,
// eps), solved by GLPK's simplex. Slow; used by tests and the benchmark.
Result<SkylineSolution> solveSkylineReference(const SkylineProblem& p);

// Exact and fast: the same optimum (relative gap <= 1e-6). See skyline_fit.cc
// for the method.
Result<SkylineSolution> solveSkyline(const SkylineProblem& p);

enum class SampleMode { kAverage, kMax };

// A run's skyline resampled to `step`: sample k is the average (or max) of
// the run's containers in use over [k*step, (k+1)*step) after its start.
std::vector<double> resample(const store::RunRecord& run, Millis step, SampleMode mode);

struct FitParams {
  Millis step{60000};
  double alpha = kDefaultSkylineAlpha;
  double beta = 0.1;
  bool beta_relative = true;
  int64_t min_runs = 3;
  SampleMode sample = SampleMode::kAverage;
  // The most samples one fit may hold: runs x steps of the longest run after
  // resampling to `step` (the LP's size). 0 = unbounded. Checked before any
  // run is resampled.
  int64_t max_samples = 0;
  FitStop stop;                     // see SkylineProblem::stop
  std::string step_field = "step";  // how the caller named `step`, for errors
};

struct FitResult {
  std::vector<int64_t> skyline;  // ceil of the LP optimum, whole containers per step
  double over_allocation = 0;    // A_o of the LP optimum
  double under_allocation = 0;   // A_u of the LP optimum
  double epsilon = 0;            // eps of the LP optimum
  double objective = 0;
  int runs_used = 0;
};

// INVALID_ARGUMENT ("runs") when fewer than min_runs runs are given, saying
// how many are needed, or (step_field) when the runs at `step` exceed
// max_samples; a stopped fit returns the stop check's status.
Result<FitResult> fitRuns(const std::vector<store::RunRecord>& runs, const FitParams& params);

}  // namespace morpheus::inference
