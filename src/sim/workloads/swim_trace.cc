#include "sim/workloads/swim_trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace morpheus::sim {

namespace {

Result<int64_t> field(const std::vector<std::string>& cols, size_t i, int line, const char* name) {
  const std::string& s = cols[i];
  try {
    size_t pos = 0;
    int64_t v = std::stoll(s, &pos);
    if (pos != s.size() || v < 0) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    return invalidArgument(
        "line " + std::to_string(line) + " column " + std::to_string(i + 1) + " (" + name + ")",
        "'" + s + "' is not a non-negative integer");
  }
}

Millis taskDuration(int64_t bytes_per_task, double rate, Millis min) {
  auto ms = static_cast<int64_t>(std::ceil(static_cast<double>(bytes_per_task) / rate * 1000.0));
  return std::max(min, Millis(ms));
}

}  // namespace

Result<std::vector<SwimJob>> parseSwimTrace(const std::string& text, const SwimRates& rates) {
  std::vector<SwimJob> jobs;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    n++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ls(line);
    std::string c;
    while (std::getline(ls, c, '\t')) cols.push_back(c);
    if (cols.size() != 6) {
      return invalidArgument(
          "line " + std::to_string(n),
          "expected 6 tab-separated columns, found " + std::to_string(cols.size()));
    }
    SwimJob j;
    j.name = cols[0];
    MORPHEUS_ASSIGN_OR_RETURN(int64_t submit_s, field(cols, 1, n, "submit time"));
    MORPHEUS_ASSIGN_OR_RETURN(j.input_bytes, field(cols, 3, n, "map input bytes"));
    MORPHEUS_ASSIGN_OR_RETURN(j.shuffle_bytes, field(cols, 4, n, "shuffle bytes"));
    MORPHEUS_ASSIGN_OR_RETURN(j.output_bytes, field(cols, 5, n, "reduce output bytes"));
    j.submit = Millis(submit_s * 1000);
    j.map_tasks = std::max<int64_t>(1, (j.input_bytes + rates.block_bytes - 1) / rates.block_bytes);
    j.reduce_tasks = (j.shuffle_bytes + rates.block_bytes - 1) / rates.block_bytes;
    j.map_task_duration =
        taskDuration(j.input_bytes / j.map_tasks, rates.map_bytes_per_s, rates.min_task);
    if (j.reduce_tasks > 0) {
      j.reduce_task_duration = taskDuration((j.shuffle_bytes + j.output_bytes) / j.reduce_tasks,
                                            rates.reduce_bytes_per_s, rates.min_task);
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

Result<std::vector<SwimJob>> loadSwimTrace(const std::string& path, const SwimRates& rates) {
  std::ifstream in(path);
  if (!in) return invalidArgument("trace", "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = parseSwimTrace(ss.str(), rates);
  if (!r.isOk()) return r.status().withContext(path);
  return r;
}

}  // namespace morpheus::sim
