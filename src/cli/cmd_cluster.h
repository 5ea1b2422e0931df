#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl cluster status [--json] [--include-lost]`: live nodes and their resources.
void addClusterCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
