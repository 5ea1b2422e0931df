#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace morpheus {

Status setupLogging(const std::string& name, const std::string& level, const std::string& file) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return invalidArgument("log.level",
                           "'" + level + "' is not one of trace, debug, info, warn, error");
  }
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (!file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, false));
    } catch (const spdlog::spdlog_ex& e) {
      return invalidArgument("log.file", std::string("cannot open: ") + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>(name, sinks.begin(), sinks.end());
  logger->set_level(lvl);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [%n] %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace morpheus
