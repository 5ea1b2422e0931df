#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl admin reload`: the RM re-reads its config (admins only;
// docs/operator/node-operations.md).
void addAdminCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
