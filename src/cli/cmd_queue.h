#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl queue list [--json]`: every queue with its weight, guarantee,
// usage, pending resources and running/pending apps (ListQueues), reservation
// queues included.
void addQueueCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
