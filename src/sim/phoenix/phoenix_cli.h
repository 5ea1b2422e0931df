// `morpheus-sim phoenix`: runs the Phoenix experiment
// (sim/phoenix/phoenix_sim.h) for several ordering policies and seeds and prints
// response-time percentiles (a table, or JSON with --json).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/phoenix/eagle_sim.h"
#include "sim/phoenix/phoenix_sim.h"

namespace morpheus::sim {

struct PhoenixCliFlags {
  PhoenixSimOptions opts;
  EagleOptions eagle;  // the eagle-c baseline
  std::string node_size = "memory=65536,vcores=16";
  int64_t arrivals_min = 120;  // minutes of arrivals
  std::vector<uint64_t> seeds = {1, 2, 3};
  std::vector<std::string> policies = {"fifo", "drf", "eagle-c", "phoenix-no-crv", "phoenix"};
  bool json = false;
};

// Registers the subcommand and its flags (bound to `f`).
CLI::App* addPhoenixCommand(CLI::App& app, PhoenixCliFlags& f);
// Runs it: 0 done, 2 bad input (one line on stderr).
int runPhoenixCommand(PhoenixCliFlags f);

}  // namespace morpheus::sim
