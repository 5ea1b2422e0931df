// What morpheusctl reads from people and prints for them: times, durations
// and sizes as typed on a command line, and the one output contract of every
// command (docs/reference/cli.md "Output"):
//  - tables: a header row, columns aligned to their content, separated by at
//    least two spaces (a cell never holds two spaces in a row, so a script may
//    split rows on runs of 2+ spaces); sizes with their units ("384 MiB /
//    3 vcores"), times as ISO-8601 UTC ("2026-12-01T10:00:00Z");
//  - --json: one JSON object; the records a command shows are a list under a
//    plural key ("applications", "reservations", ...), even when there is one;
//    keys are snake_case; a time is "<name>_ms" (ms since the epoch) with
//    "<name>_time" (ISO-8601 UTC, null when unset) beside it; a duration is
//    "<name>_ms" alone.
// All functions are pure (thread-safe); "now" is passed in.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace morpheus::cli {

// A time as typed: ISO-8601 ("2026-12-01T10:00:00Z", seconds and fraction
// optional, "Z" or "+HH:MM"), "now", "now+DURATION", "now-DURATION", the
// shorthands "+DURATION" / "-DURATION", or milliseconds since the epoch.
// INVALID_ARGUMENT naming `field` otherwise.
Result<int64_t> parseTime(const std::string& text, const std::string& field, int64_t now_ms);

// A duration as typed: 500ms, 90s, 10m, 1h30m, 1d (common/config.h's
// parseDuration), strictly positive unless `allow_zero`.
Result<Millis> parseDurationArg(const std::string& text, const std::string& field,
                                bool allow_zero = false);

// A memory size as typed, in MiB: 512MiB, 1GiB, 1.5GiB, 2TiB (Mi/Gi/Ti and
// M/G/T are read as the same binary units), a bare number is MiB. Must be a
// whole, positive number of MiB.
Result<int64_t> parseSizeMib(const std::string& text, const std::string& field);

// ms since the epoch as ISO-8601 UTC, whole seconds ("2026-11-24T04:51:48Z");
// milliseconds are shown only when not zero ("...:48.250Z").
std::string formatTime(int64_t ms);
// "-" for 0 (a time not reached yet), else formatTime.
std::string formatTimeOrDash(int64_t ms);
// `ms` relative to `now_ms`: "in 5m", "2h30m ago", "now" (within a second).
std::string formatRelative(int64_t ms, int64_t now_ms);
// A duration for people: "1h30m", "2m5s", "750ms", "0s".
std::string humanDuration(int64_t ms);
// "384 MiB", "8 GiB" (whole GiB shown as GiB).
std::string formatMemory(int64_t mib);
// "384 MiB / 3 vcores" ("1 vcore").
std::string formatResource(int64_t mib, int64_t vcores);

// The JSON fields of a time (file comment): `name`_ms and `name`_time.
void setTime(nlohmann::json& j, const std::string& name, int64_t ms);

// {"key": list, ...extra}: the one shape of --json output, printed to stdout.
void printJson(const std::string& key, const nlohmann::json& list,
               const nlohmann::json& extra = nlohmann::json::object());

// A table (file comment). Rows shorter than the header are padded with "".
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // The rendered table, one line per row, each ending in '\n'; trailing
  // spaces trimmed.
  std::string render() const;
  // render() to stdout.
  void print() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace morpheus::cli
