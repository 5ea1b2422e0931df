#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl app submit|list|status|kill|logs`: run DAG jobs (morpheus-dag-am)
// and follow applications.
void addAppCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
