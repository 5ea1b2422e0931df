// `morpheus-sim phoenix`: runs the Phoenix experiment
// (sim/phoenix/phoenix_sim.h) for several ordering policies and seeds and prints
// response-time percentiles per seed and their means over the seeds, with the
// Eagle-C / Phoenix ratio and the floor's headroom (a table, or JSON with
// --json).
//
// `morpheus-sim phoenix-calibrate`: for a trace mix (phoenix_mixes.h), runs
// Eagle-C alone and searches every constraint kind's node share at once
// (stepNodeShares: a safeguarded secant in log space) so that the kind's
// relative slowdown (mean response time of short jobs requiring it over
// that of unconstrained short jobs), averaged over the calibration seeds,
// matches Phoenix's Table II. An iteration runs every calibration seed at
// the current shares; the search stops at the first iteration whose every
// kind is within --search-tolerance, or after --iterations, keeping the
// iteration of smallest worst error. It then runs the kept shares once on
// --check-seed (never a calibration seed), judges both against
// --tolerance, prints the table and writes the calibration file that
// `phoenix --calibration` reads. Never runs Phoenix.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/policies/phoenix_policy.h"
#include "sim/phoenix/eagle_sim.h"
#include "sim/phoenix/phoenix_sim.h"

namespace morpheus::sim {

// The workload flags both commands share.
struct PhoenixSetupFlags {
  PhoenixSimOptions opts;
  EagleOptions eagle;  // the eagle-c baseline
  std::string mix = "synthetic";
  std::string calibration;  // trace mixes: calibration file (phoenix-calibrate --out)
  std::string node_size = "memory=65536,vcores=16";
  int64_t arrivals_min = 120;  // minutes of arrivals
  int32_t repair_passes = 3;   // queue-order-bound: deadline-repair passes (runQueueOrderSearch)
  // phoenix, phoenix-no-crv: the long-work rule (phoenix_policy.h); trace
  // mixes default long_task to the trace's short/long cutoff (the workload's
  // cutoff, as Eagle's simulator is given it per trace).
  sched::PhoenixLongWork phoenix_long;
  double phoenix_long_task_s = 0;
  CLI::App* cmd = nullptr;  // set by the add* functions: which flags were given
};

struct PhoenixCliFlags {
  PhoenixSetupFlags setup;
  std::vector<uint64_t> seeds = {1, 2, 3};
  std::vector<std::string> policies = {"fifo", "drf", "eagle-c", "phoenix-no-crv", "phoenix"};
  bool json = false;
};

struct PhoenixCalibrateFlags {
  PhoenixSetupFlags setup;
  std::vector<uint64_t> seeds = {101, 102, 103};  // calibration seeds (not 1-10: evaluation)
  uint64_t check_seed = 200;                      // the final check, used by no search step
  int32_t iterations = 8;
  double tolerance = 0.15;         // |measured / target - 1| accepted
  double search_tolerance = 0.10;  // the search stops when every kind is within it
  std::string out;                 // calibration file to write
};

// Registers the subcommands and their flags (bound to `f`).
CLI::App* addPhoenixCommand(CLI::App& app, PhoenixCliFlags& f);
CLI::App* addPhoenixCalibrateCommand(CLI::App& app, PhoenixCalibrateFlags& f);
// Run them: 0 done, 2 bad input (one line on stderr, nothing written);
// calibrate: 1 when the kept shares miss --tolerance on the calibration
// seeds or on the check seed (the file holds them all the same).
int runPhoenixCommand(PhoenixCliFlags f);
int runPhoenixCalibrateCommand(PhoenixCalibrateFlags f);

}  // namespace morpheus::sim
