// Headless Chromium for the integration tests of the RM's web page:
// Debian's `chromium` package, or $MORPHEUS_CHROMIUM. Each run has
// a fresh profile and HOME, runs in its own session and is killed whole at
// its timeout; nothing of it is left running afterwards.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace morpheus::testing {

// The chromium binary: $MORPHEUS_CHROMIUM, else Debian's /usr/bin/chromium ("" = none).
std::string chromiumBinary();

struct BrowserRun {
  int exit_code = -1;  // -1: killed at the timeout
  std::string output;  // stdout (the DOM for --dump-dom)
  std::string log;     // stderr
};

// Runs headless chromium with `extra` arguments (URL, --dump-dom, ...); waits
// until no process of its session is left (a gtest failure otherwise).
BrowserRun runChromium(const std::vector<std::string>& extra, std::chrono::milliseconds timeout);

}  // namespace morpheus::testing
