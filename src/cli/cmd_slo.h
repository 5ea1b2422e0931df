#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// `morpheusctl slo list | show | accept | override | reject`: job owners sign
// off inferred SLOs (Morpheus §4). Identity: --token / $MORPHEUS_TOKEN.
void addSloCommands(CLI::App& root, CliContext& ctx);

}  // namespace morpheus::cli
