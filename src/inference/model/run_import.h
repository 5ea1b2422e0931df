// Run-history import: parses whole files into an
// IngestBatch, all-or-nothing. Every bad line is reported with its 1-based
// line number and the field at fault; one bad line means nothing is imported.
//
// Formats:
// - "native": Hadoop resource-estimator log lines, space-separated:
//     pipelineId numInstances submitTimeMs startTimeMs endTimeMs runId memorySkyline
//     containerSkyline
//   each skyline a '|'-separated list of value:offsetSeconds samples. As in
//   Hadoop's resource estimator (NativeSingleLineParser, getDiscreteSkyline)
//   the run's container skyline is exactly its samples: `v:off` is v
//   containers over [off, off + 5) s after the start, samples at one offset
//   add up, nothing holds between samples, and endTimeMs does not extend the
//   last sample (it is the run's end for the SLO statistics only). A 5 s step
//   holds the most containers in use at any second of it. Containers are
//   1 GiB / 1 vcore; the memory skyline is validated, not used. Every native
//   run counts as succeeded (the format has no status).
// - "jsonl": one JSON object per line (README "Run history in JSON lines"):
//     {"type":"run","job":..,"run":..,"user":..,"submit_ms":..,"start_ms":..,"end_ms":..,
//      "step_ms":..,"skyline":[..],"container":{"memory_mib":..,"vcores":..},
//      "status":"succeeded"|"failed"|"killed"}
//   skyline[k] = containers in use over step k from start_ms (step_ms, default
//   60 s); status defaults to "succeeded".
//     {"type":"event","job":..,"run":..,"path":..,"kind":"read"|"write","time_ms":..}
// Blank lines and lines starting with '#' are skipped in both formats.
#pragma once

#include <istream>
#include <string>

#include "common/status.h"
#include "store/provenance/provenance_store.h"

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
