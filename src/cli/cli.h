// morpheusctl's whole command line: the command tree over a CliContext,
// parsed and run, with the exit code the process returns. main() only fills
// the context's defaults from the environment; tests run the same tree in
// process (tests/unit/cli/).
#pragma once

#include "cli/cli_context.h"

namespace morpheus::cli {

// Builds the command tree over `ctx` (its fields are the defaults the global
// flags override), parses `argv` (argv[0] is the program name) and runs the
// chosen command. Returns the exit code: 0 on success (and for --help and
// --version), 2 for bad usage or input (an unknown option, a missing or bad
// value: README's convention, not CLI11's own codes), 1 for a failed call.
// Output goes to stdout and stderr. Not reentrant for one `ctx` (a command
// caches its RM channel in it).
int runMorpheusctl(int argc, const char* const* argv, CliContext& ctx);

}  // namespace morpheus::cli
