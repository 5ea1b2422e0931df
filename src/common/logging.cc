#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace morpheus {

namespace {

// The file side of the current logger. The file sink sits inside a dist_sink
// so reopenLogFile can swap it under the dist_sink's own lock while other
// threads log.
struct FileLog {
  std::mutex mu;
  LogOptions options;                                   // GUARDED_BY(mu)
  std::shared_ptr<spdlog::sinks::dist_sink_mt> holder;  // GUARDED_BY(mu); null without a file
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
  std::lock_guard<std::mutex> lk(fl.mu);
  fl.options = options;
  fl.holder = holder;
  spdlog::set_default_logger(logger);
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
  std::lock_guard<std::mutex> lk(fl.mu);
  if (!fl.holder) return Status::ok();
  auto file = openFileSink(fl.options);
  if (!file.isOk()) return file.status();
  fl.holder->set_sinks({*file});
  return Status::ok();
}

}  // namespace morpheus
