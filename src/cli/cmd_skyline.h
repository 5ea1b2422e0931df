#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl skyline fit`: the §5 skyline LP on a run-history file, with no
// server. `morpheusctl history import`: a run-history file into the inference
// service's provenance store, all-or-nothing.
void addSkylineCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
