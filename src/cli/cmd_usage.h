#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl usage --by user|queue [--since DURATION|TIME] [--json]`
// (like sacct/sreport): memory-seconds, vcore-seconds and applications per
// user or queue over the finished applications the RM keeps
// (rm.app-history.*) and the running ones (GetUsage). The RM decides whose
// usage the caller sees: their own, or everyone's for an admin (--user
// narrows an admin's view to one user).
void addUsageCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
