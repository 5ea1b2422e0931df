// Loader for SWIM workload traces (e.g. the Facebook 2009 24-hour trace): the
// ad-hoc background load of morpheus-sim and of load tests.
//
// The trace has no task counts or durations; we derive them as SWIM does:
// map tasks = ceil(input bytes / block size), block size 128 MiB, at least
// one; reduce tasks = ceil(shuffle bytes / block size), zero when there is no
// shuffle. Durations use the per-byte rates in SwimRates (assumptions stated
// there), never shorter than the minimum task duration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace morpheus::sim {

struct SwimJob {
  std::string name;
  Millis submit;  // offset from trace start
  int64_t input_bytes = 0;
  int64_t shuffle_bytes = 0;
  int64_t output_bytes = 0;
  int64_t map_tasks = 0;
  int64_t reduce_tasks = 0;
  Millis map_task_duration{0};
  Millis reduce_task_duration{0};
};

struct SwimRates {
  int64_t block_bytes = 128LL * 1024 * 1024;
  // Assumed processing rates of one 1-vcore container: maps read+process at
  // 20 MiB/s, reduces shuffle+write at 10 MiB/s (typical for 2009 Hadoop
  // nodes with spinning disks); every task costs at least 5 s (JVM start).
  double map_bytes_per_s = 20.0 * 1024 * 1024;
  double reduce_bytes_per_s = 10.0 * 1024 * 1024;
  Millis min_task{5000};
};

// Parses the TSV text. INVALID_ARGUMENT naming the line number and column on
// the first malformed line; nothing is returned then (all-or-nothing).
Result<std::vector<SwimJob>> parseSwimTrace(const std::string& text, const SwimRates& rates);
Result<std::vector<SwimJob>> loadSwimTrace(const std::string& path, const SwimRates& rates);

}  // namespace morpheus::sim
