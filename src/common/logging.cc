#include "common/logging.h"
#include "common/mutex.h"

#include <grpc/support/log.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <string_view>

namespace morpheus {

namespace {

// The file side of the current logger. The file sink sits inside a dist_sink
// so reopenLogFile can swap it under the dist_sink's own lock while other
// threads log.
struct FileLog {
  Mutex mu;
  LogOptions options GUARDED_BY(mu);
  std::shared_ptr<spdlog::sinks::dist_sink_mt> holder GUARDED_BY(mu);  // null without a file
};

FileLog& fileLog() {
  static FileLog log;
  return log;
}

std::unique_ptr<spdlog::formatter> utcFormatter() {
  return std::make_unique<spdlog::pattern_formatter>(kLogPattern, spdlog::pattern_time_type::utc);
}

// Opens options.file (appending), rotating or not as configured.
Result<spdlog::sink_ptr> openFileSink(const LogOptions& options) {
  try {
    spdlog::sink_ptr sink;
    if (options.max_size_bytes > 0) {
      sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
          options.file, static_cast<size_t>(options.max_size_bytes),
          static_cast<size_t>(options.max_files), false);
    } else {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file, false);
    }
    sink->set_formatter(utcFormatter());
    return sink;
  } catch (const spdlog::spdlog_ex& e) {
    return invalidArgument("log.file", std::string("cannot open: ") + e.what());
  }
}

// The logger gRPC's lines go to. Allocated once and never destroyed: gRPC's
// threads may still log while static objects (spdlog's registry among them)
// are destroyed at exit; the logger it holds stays alive with it.
struct GrpcLog {
  Mutex mu;
  std::shared_ptr<spdlog::logger> logger GUARDED_BY(mu);
  // A tool prints each distinct line once: gRPC repeats a failed handshake on
  // every reconnect attempt of one command. The last line printed, if so.
  bool once GUARDED_BY(mu) = false;
  std::string last GUARDED_BY(mu);
};

GrpcLog& grpcLog() {
  static GrpcLog* log = new GrpcLog;
  return *log;
}

// gRPC's INFO lines are its developers' diagnostics ("grpc epoll fd: 8", the
// server's poller counts) and what GRPC_TRACE prints; gRPC itself shows only
// ERROR by default. So one step down: ERROR -> error, INFO -> debug,
// DEBUG -> trace, and the default log.level info shows what gRPC would.
spdlog::level::level_enum levelOfGrpc(gpr_log_severity severity) {
  switch (severity) {
    case GPR_LOG_SEVERITY_DEBUG:
      return spdlog::level::trace;
    case GPR_LOG_SEVERITY_INFO:
      return spdlog::level::debug;
    case GPR_LOG_SEVERITY_ERROR:
      break;
  }
  return spdlog::level::err;
}

// The least severe gRPC line the logger at `level` prints (so gRPC formats
// none it would drop).
gpr_log_severity grpcVerbosity(spdlog::level::level_enum level) {
  if (level <= spdlog::level::trace) return GPR_LOG_SEVERITY_DEBUG;
  if (level == spdlog::level::debug) return GPR_LOG_SEVERITY_INFO;
  return GPR_LOG_SEVERITY_ERROR;
}

// gpr_log's output function: called on any gRPC thread, once per line that
// passed the verbosity. One line per event: gRPC's multi-line messages (error
// trees) are joined.
void logGrpcLine(gpr_log_func_args* args) {
  std::string message = args->message ? args->message : "";
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::string_view file = args->file ? args->file : "?";
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  std::string line = fmt::format("grpc: {} ({}:{})", message, file, args->line);
  std::shared_ptr<spdlog::logger> logger;
  {
    GrpcLog& gl = grpcLog();
    MutexLock lk(gl.mu);
    if (gl.once) {
      if (line == gl.last) return;
      gl.last = line;
    }
    logger = gl.logger;
  }
  if (logger) logger->log(levelOfGrpc(args->severity), line);
}

// `once`: drop a line equal to the one before (tools).
void routeGrpcLogs(std::shared_ptr<spdlog::logger> logger, bool once) {
  gpr_log_severity verbosity = grpcVerbosity(logger->level());
  {
    GrpcLog& gl = grpcLog();
    MutexLock lk(gl.mu);
    gl.logger = std::move(logger);
    gl.once = once;
    gl.last.clear();
  }
  // Before grpc_init these stay: gRPC reads GRPC_VERBOSITY only while the
  // verbosity is still unset.
  gpr_set_log_verbosity(verbosity);
  gpr_set_log_function(&logGrpcLine);
}

}  // namespace

Status setupLogging(const std::string& name, const LogOptions& options) {
  auto lvl = spdlog::level::from_str(options.level);
  if (lvl == spdlog::level::off && options.level != "off") {
    return invalidArgument("log.level",
                           "'" + options.level + "' is not one of trace, debug, info, warn, error");
  }
  if (options.max_size_bytes < 0) {
    return invalidArgument("log.max-size",
                           "must be >= 0 bytes, got " + std::to_string(options.max_size_bytes));
  }
  if (options.max_size_bytes > 0 && (options.max_files < 1 || options.max_files > 200000)) {
    return invalidArgument("log.max-files",
                           "must be within [1, 200000], got " + std::to_string(options.max_files));
  }
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  std::shared_ptr<spdlog::sinks::dist_sink_mt> holder;
  if (!options.file.empty()) {
    auto file = openFileSink(options);
    if (!file.isOk()) return file.status();
    holder = std::make_shared<spdlog::sinks::dist_sink_mt>();
    holder->add_sink(*file);
    sinks.push_back(holder);
  }
  auto logger = std::make_shared<spdlog::logger>(name, sinks.begin(), sinks.end());
  logger->set_level(lvl);
  logger->set_formatter(utcFormatter());
  logger->flush_on(spdlog::level::info);
  FileLog& fl = fileLog();
  MutexLock lk(fl.mu);
  fl.options = options;
  fl.holder = holder;
  spdlog::set_default_logger(logger);
  routeGrpcLogs(std::move(logger), false);
  return Status::ok();
}

Status setupLogging(const std::string& name, const std::string& level, const std::string& file) {
  LogOptions options;
  options.level = level;
  options.file = file;
  return setupLogging(name, options);
}

Status reopenLogFile() {
  FileLog& fl = fileLog();
  MutexLock lk(fl.mu);
  if (!fl.holder) return Status::ok();
  auto file = openFileSink(fl.options);
  if (!file.isOk()) return file.status();
  fl.holder->set_sinks({*file});
  return Status::ok();
}

void setupToolLogging(const std::string& program) {
  auto logger =
      std::make_shared<spdlog::logger>(program, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%n: %v");
  logger->set_level(spdlog::level::warn);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  routeGrpcLogs(std::move(logger), true);
}

}  // namespace morpheus
