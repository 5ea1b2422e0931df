// Where this build's binaries and the source tree are, for tests that run
// the daemons or read files from the repository (examples, deploy scripts,
// recorded data).
//
// Why functions and not compile definitions: the paths are absolute and
// differ between checkouts. Passed as -D flags they made every test file's
// compile command checkout-specific, so a compiler cache shared between
// clean clones (deploy/test.sh) missed on all of them. Only the generated
// test_paths.cc (tests/CMakeLists.txt) now carries them.
#pragma once

namespace morpheus::testing {

// <build>/bin: every executable of the build (CMAKE_RUNTIME_OUTPUT_DIRECTORY).
const char* buildBinDir();
// The repository root this build was configured from.
const char* sourceDir();

}  // namespace morpheus::testing
