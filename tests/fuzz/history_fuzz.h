// The body of the two run-history targets (history_native_fuzz.cc,
// history_jsonl_fuzz.cc): they differ only in the format they feed
// parseRunHistory (src/inference/model/run_import.h).
//
// Property (run_import.h's contract): an accepted batch holds only records
// that pass the shared field validation (validateRun / validateEvent), since
// every ingest path stores what the parser returns.
#pragma once

#include <sstream>

#include "fuzz_util.h"
#include "inference/model/run_import.h"

namespace morpheus::fuzz {

inline int fuzzRunHistory(const uint8_t* data, size_t size, const std::string& format) {
  std::istringstream in{std::string(asText(data, size))};
  inference::ImportOptions opts;
  opts.format = format;
  opts.default_user = "fuzz";
  auto batch = inference::parseRunHistory(in, opts);
  if (!batch.isOk()) return 0;
  FUZZ_CHECK(!batch->runs.empty() || !batch->events.empty(), "accepted an empty batch");
  for (size_t i = 0; i < batch->runs.size(); i++) {
    Status st = inference::validateRun(batch->runs[i], "runs[" + std::to_string(i) + "]");
    FUZZ_CHECK(st.isOk(), "accepted an invalid run: " + st.toString());
  }
  for (size_t i = 0; i < batch->events.size(); i++) {
    Status st = inference::validateEvent(batch->events[i], "events[" + std::to_string(i) + "]");
    FUZZ_CHECK(st.isOk(), "accepted an invalid event: " + st.toString());
  }
  return 0;
}

}  // namespace morpheus::fuzz
