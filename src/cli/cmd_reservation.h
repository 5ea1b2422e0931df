#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl reservation new|submit|update|delete|list|show` and `plan show`.
void addReservationCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
