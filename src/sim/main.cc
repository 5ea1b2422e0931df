// morpheus-sim: trace-driven simulator. This build loads and characterises
// the ad-hoc workload trace; planning/scheduling replay arrives with the
// planner and scheduler libraries (issues #2, #3).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/version.h"
#include "sim/swim_trace.h"

using namespace morpheus;

int main(int argc, char** argv) {
  CLI::App app{"morpheus-sim: trace-driven simulator"};
  std::string trace;
  bool json = false;
  app.add_option("--trace", trace, "SWIM trace (TSV), e.g. ../shared/data/swim-fb2009-24h.tsv")
      ->required();
  app.add_flag("--json", json, "Machine-readable summary");
  app.set_version_flag("--version", morpheus::versionLine("morpheus-sim"),
                       "Print the version and git revision");
  CLI11_PARSE(app, argc, argv);

  sim::SwimRates rates;
  auto jobs = sim::loadSwimTrace(trace, rates);
  if (!jobs.isOk()) {
    std::cerr << "morpheus-sim: " << jobs.status().message() << "\n";
    return 2;
  }
  int64_t maps = 0, reduces = 0;
  double container_hours = 0;
  Millis span(0);
  for (const auto& j : *jobs) {
    maps += j.map_tasks;
    reduces += j.reduce_tasks;
    container_hours += (static_cast<double>(j.map_tasks) * j.map_task_duration.count() +
                        static_cast<double>(j.reduce_tasks) * j.reduce_task_duration.count()) /
                       3.6e6;
    span = std::max(span, j.submit);
  }
  if (json) {
    nlohmann::json out = {{"jobs", jobs->size()},
                          {"map_tasks", maps},
                          {"reduce_tasks", reduces},
                          {"container_hours", container_hours},
                          {"span_s", span.count() / 1000}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf(
        "trace %s: %zu jobs over %lld s; %lld map + %lld reduce tasks; %.1f container-hours "
        "(1-vcore containers, rates in sim/swim_trace.h)\n",
        trace.c_str(), jobs->size(), static_cast<long long>(span.count() / 1000),
        static_cast<long long>(maps), static_cast<long long>(reduces), container_hours);
  }
  return 0;
}
