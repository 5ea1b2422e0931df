// Shell completion generated from morpheusctl's CLI11 command tree,
// so it never drifts from the commands: `morpheusctl completion bash`
// prints it; the install step (deploy/install.sh / CMake install) puts it in
// bash-completion's directory.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace morpheus::cli {

// A bash script defining completion for `program`: at each position it offers
// the subcommands and options of the deepest subcommand typed so far (files
// where none match). Deterministic: subcommands and options in declaration
// order.
std::string bashCompletion(const CLI::App& root, const std::string& program);

// Adds `completion bash` to `root`; call after every other command so the
// script covers them all.
void addCompletionCommand(CLI::App& root);

}  // namespace morpheus::cli
