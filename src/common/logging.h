// spdlog setup shared by every binary. Logs are for operators: one line per
// event that matters, with ids (CONVENTIONS.md "Metrics and logs").
#pragma once

#include <string>

#include "common/status.h"

namespace morpheus {

// `level`: trace, debug, info, warn, error. `file` empty = stderr only;
// otherwise stderr plus the file (appended). `name` tags each line.
Status setupLogging(const std::string& name, const std::string& level, const std::string& file);

}  // namespace morpheus
