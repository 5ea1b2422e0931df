// Shared by the libFuzzer targets in tests/fuzz.
//
// A target's contract: for every input it returns 0 without crashing, leaking,
// hanging or tripping ASan/UBSan; where a component promises a property
// (round trip, validated output, no partial state on rejection) the target
// checks it with FUZZ_CHECK, which aborts so libFuzzer records the input as a
// crash.
#pragma once

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace morpheus::fuzz {

// Aborts with the failed property and its context (printed before libFuzzer's
// reproducer line).
[[noreturn]] inline void propertyFailed(const char* file, int line, const char* cond,
                                        const std::string& context) {
  std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n  %s\n", file, line, cond,
               context.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, context)                                                        \
  do {                                                                                   \
    if (!(cond)) ::morpheus::fuzz::propertyFailed(__FILE__, __LINE__, #cond, (context)); \
  } while (0)

// Components log through spdlog; a fuzzer runs millions of inputs, so logs are
// off (they would dominate the run time and bury the crash report).
inline void quietLogs() { spdlog::set_level(spdlog::level::off); }

inline std::string_view asText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace morpheus::fuzz
