#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl top [--interval 2s] [--once]` (like `yarn top`): the cluster's
// use, every queue (used, pending, running and waiting apps, limits) and the
// unfinished applications (containers, used, memory-seconds), redrawn every
// --interval with ANSI clear/home until interrupted. --once prints one frame
// without escape codes (scripts, tests); with --json it prints that frame as
// one JSON object ({"queues": [...], "applications": [...], "cluster": {...}}).
void addTopCommand(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
