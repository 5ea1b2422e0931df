// spdlog setup shared by every binary. Logs are for operators: one line per
// event that matters, with ids (docs/design/conventions.md "Metrics and logs").
//
// Every line starts with an ISO 8601 timestamp in UTC with its offset
// ("2026-11-24T05:30:00.123+00:00"), whatever the machine's time zone, so
// lines of daemons on different machines sort together.
// Lines always go to stderr (the journal under systemd); with a file they go
// there too, either rotated by the daemon (spdlog's rotating sink: max size
// and count) or rotated outside (logrotate) and reopened on SIGHUP
// (reopenLogFile, called by waitForTerminationSignal in common/daemon.h).
//
// gRPC's own lines (a failed TLS handshake, an internal error) go through the
// same logger: gRPC 1.51 (Debian 12) logs only through gpr_log, whose output
// function and verbosity a program may replace (grpc/support/log.h); the
// abseil it is built with (20220623) has no absl::log yet. Without this they
// would reach stderr in gRPC's own format ("E1128 05:44:44.088 23288
// ssl_transport_security.cc:1501] ..."), outside the log file and the level.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace morpheus {

// The spdlog pattern of every line: UTC timestamp with offset, level, logger name.
inline constexpr const char* kLogPattern = "%Y-%m-%dT%H:%M:%S.%e%z %^%L%$ [%n] %v";

struct LogOptions {
  // trace, debug, info, warn, error (or off).
  std::string level = "info";
  // "" = stderr only; otherwise stderr plus this file (appended to).
  std::string file;
  // Rotate the file when it would grow past this many bytes; 0 = never (the
  // daemon only appends; rotate it outside and send SIGHUP).
  int64_t max_size_bytes = 0;
  // Rotated files kept (file.1 ... file.N) when max_size_bytes > 0.
  int64_t max_files = 5;
};

// Installs the default logger named `name`. INVALID_ARGUMENT naming log.level
// or log.file (unknown level, file cannot be opened, bad rotation numbers);
// on error the previous logger stays in place.
// It also takes over gRPC's log output for the whole process (see the top):
// each gRPC line becomes "grpc: <message> (<file>:<line>)", gRPC's ERROR at
// error, its INFO (developer diagnostics, GRPC_TRACE output) at debug and its
// DEBUG at trace, and gRPC's verbosity is set from `level` so it formats
// nothing the logger would drop (this overrides GRPC_VERBOSITY).
// A later set_level on the logger does not change gRPC's verbosity.
Status setupLogging(const std::string& name, const LogOptions& options);
// The same with no rotation: `file` empty = stderr only.
Status setupLogging(const std::string& name, const std::string& level, const std::string& file);

// Closes and reopens the log file of the last successful setupLogging (after
// an outside rotation moved it away), creating it anew. A no-op without a
// file. Thread-safe against concurrent logging: lines written meanwhile go to
// the old or the new file, none is lost. On error the old file is kept.
Status reopenLogFile();

// Logging of a command-line tool such as morpheusctl: stderr only, warnings
// and errors only, each line "<program>: <message>" (what a user reads next
// to the tool's own error lines, and never on stdout, which carries the
// tool's output). gRPC's lines go through it as with setupLogging, each
// distinct one once (gRPC repeats a failed handshake on every reconnect).
void setupToolLogging(const std::string& program);

}  // namespace morpheus
