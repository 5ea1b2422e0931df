// Shell completion generated from morpheusctl's CLI11 command tree, so it
// never drifts from the commands: `morpheusctl completion bash|zsh|fish`
// prints it; the install step (deploy/install.sh / CMake install) puts the
// bash one in bash-completion's directory.
//
// All three offer, at each position, the subcommands and options of the
// deepest subcommand typed so far plus the global options (taken after any
// subcommand, cli.cc); files where nothing matches (bash, zsh) or at a
// command that takes arguments (fish). Deterministic: subcommands and options
// in declaration order.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/cli_context.h"

namespace morpheus::cli {

// The script for `program`'s tree: source it from ~/.bashrc (bash), put it in
// $fpath as _<program> or source it after compinit (zsh), or save it as
// ~/.config/fish/completions/<program>.fish (fish).
std::string bashCompletion(const CLI::App& root, const std::string& program);
std::string zshCompletion(const CLI::App& root, const std::string& program);
std::string fishCompletion(const CLI::App& root, const std::string& program);

// Adds `completion bash|zsh|fish` to `root`; call after every other command
// so the script covers them all. --json does not apply to a script: refused.
void addCompletionCommand(CLI::App& root, const CliContext& ctx);

}  // namespace morpheus::cli
