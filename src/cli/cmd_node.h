#pragma once

#include <string>

#include "cli/cli_context.h"
#include "morpheus/v1/client.pb.h"

namespace morpheus::cli {

// `morpheusctl node list|drain|undrain|decommission` (docs/operator/node-operations.md):
// every node with its state, and the admin controls of the AdminService.
void addNodeCommands(CLI::App& root, CliContext& ctx);

// A node's state as morpheusctl shows it: RUNNING, DRAINED (running, not in
// service), DECOMMISSIONING, DECOMMISSIONED or LOST.
std::string nodeStateName(const v1::NodeReport& n);

}  // namespace morpheus::cli
