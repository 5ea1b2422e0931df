// Run-history import (issue #5 "Ingest"): parses whole files into an
// IngestBatch, all-or-nothing. Every bad line is reported with its 1-based
// line number and the field at fault; one bad line means nothing is imported.
//
// Formats:
// - "native": Hadoop resource-estimator log lines, space-separated:
//     pipelineId numInstances submitTimeMs startTimeMs endTimeMs runId memorySkyline
//     containerSkyline
//   each skyline a '|'-separated list of value:offsetSeconds samples (5 s
//   steps; a sample holds until the next one). Containers are 1 GiB / 1 vcore.
// - "jsonl": one JSON object per line (README "Run history in JSON lines"):
//     {"type":"run","job":..,"run":..,"user":..,"submit_ms":..,"start_ms":..,"end_ms":..,
//      "step_ms":..,"skyline":[..],"container":{"memory_mib":..,"vcores":..}}
//     {"type":"event","job":..,"run":..,"path":..,"kind":"read"|"write","time_ms":..}
// Blank lines and lines starting with '#' are skipped in both formats.
#pragma once

#include <istream>
#include <string>

#include "common/status.h"
#include "store/provenance_store.h"

namespace morpheus::inference {

struct ImportOptions {
  std::string format;        // "native" | "jsonl"
  std::string default_user;  // owner for native lines (they carry none)
  size_t max_errors = 20;    // lines listed in the error before "... and N more"
};

// INVALID_ARGUMENT listing "line N: field: problem" for each bad line.
Result<store::IngestBatch> parseRunHistory(std::istream& in, const ImportOptions& opts);
Result<store::IngestBatch> parseRunHistoryFile(const std::string& path, const ImportOptions& opts);

// Field-level validation shared by every ingest path (RPC, import, RM feed):
// INVALID_ARGUMENT naming `field` + ".<member>".
Status validateRun(const store::RunRecord& r, const std::string& field);
Status validateEvent(const store::FileEvent& e, const std::string& field);

}  // namespace morpheus::inference
