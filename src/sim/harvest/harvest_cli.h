// The history placement options morpheus-harvest-sim and bench_harvest_sweep
// both take (--history-fallback, --history-hold, --history-rise-quantile),
// so the two tools name, check and explain them alike. Header-only: only
// the tools, which link CLI11, include it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "sim/harvest/harvest_sim.h"

namespace morpheus::sim {

// What the options hold between parsing and applyHistoryOptions.
struct HistoryCli {
  std::string fallback = "hold";
  double hold_s = 86400;
};

// Registers the three options on `app`: the fallback's name and the hold's
// seconds go to `cli`, the quantile straight into `ho`.
inline void addHistoryOptions(CLI::App& app, HistoryCli* cli, HarvestSimOptions* ho) {
  app.add_option("--history-fallback", cli->fallback,
                 "History placement, a task its job's classes have no room for (or of a job "
                 "without classes): 'hold' = only servers predicted to leave it a core for its "
                 "expected run, in the ranked order, else held for --history-hold (default); "
                 "'ranked' = a server with a core now whose class ranks highest for the job's "
                 "length type, the one with the most room within that type's headroom; 'any' = "
                 "any server with a core now");
  app.add_option("--history-hold", cli->hold_s,
                 "Seconds a task no server is predicted to fit is held before the ranked "
                 "fallback (--history-fallback hold; default 86400)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--history-rise-quantile", ho->history_rise_quantile,
                 "Quantile of the history's rises over a task's run that --history-fallback hold "
                 "predicts for constant and unpredictable primaries (default 0.9)")
      ->check(CLI::Range(0.0, 1.0));
}

// After parsing: sets `ho`'s fallback and hold; INVALID_ARGUMENT naming
// "history-fallback" for an unknown name, `ho` then unchanged.
inline Status applyHistoryOptions(const HistoryCli& cli, HarvestSimOptions* ho) {
  auto f = parseHistoryFallback(cli.fallback);
  if (!f.isOk()) return f.status();
  ho->history_fallback = *f;
  ho->history_hold = Millis(static_cast<int64_t>(cli.hold_s * 1000));
  return Status::ok();
}

}  // namespace morpheus::sim
