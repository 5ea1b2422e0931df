#include "inference/model/run_import.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

namespace morpheus::inference {

namespace {

constexpr int64_t kNativeStepMs = 5000;
// Longest run a native line may describe (and latest sample offset): 30 days.
// Bounds the skyline's size (30 days = 518400 steps of 5 s) and keeps offset
// arithmetic far from int64 overflow; a longer line is a corrupt log.
constexpr int64_t kNativeMaxRunMs = int64_t{30} * 86400 * 1000;

bool parseInt(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  std::string tmp(s);
  char* end = nullptr;
  *out = std::strtod(tmp.c_str(), &end);
  return end == tmp.c_str() + tmp.size() && std::isfinite(*out);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t b = 0;
  while (true) {
    size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  return out;
}

std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) i++;
    size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') i++;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

// A value:offsetSeconds list, validated: offsets >= 0, non-decreasing, within
// 30 days; values finite and >= 0.
Status parseSamples(std::string_view text, const std::string& field,
                    std::vector<std::pair<int64_t, double>>* samples) {
  samples->clear();
  if (text.empty()) return invalidArgument(field, "is empty");
  int64_t last_offset = -1;
  for (auto item : split(text, '|')) {
    if (item.empty()) continue;  // tolerate a trailing '|'
    auto colon = item.find(':');
    double v = 0;
    int64_t off = 0;
    if (colon == std::string_view::npos || !parseDouble(item.substr(0, colon), &v) ||
        !parseInt(item.substr(colon + 1), &off)) {
      return invalidArgument(field,
                             "sample '" + std::string(item) + "' is not value:offsetSeconds");
    }
    if (v < 0) return invalidArgument(field, "sample '" + std::string(item) + "' is negative");
    if (off < 0 || off < last_offset) {
      return invalidArgument(
          field, "sample '" + std::string(item) + "': offsets must be >= 0 and non-decreasing");
    }
    if (off > kNativeMaxRunMs / 1000) {
      return invalidArgument(field, "sample '" + std::string(item) + "': offset beyond " +
                                        std::to_string(kNativeMaxRunMs / 1000) + " s (30 days)");
    }
    last_offset = off;
    samples->emplace_back(off, v);
  }
  if (samples->empty()) return invalidArgument(field, "has no samples");
  return Status::ok();
}

// The skyline Hadoop's resource estimator sees in a native line
// (NativeSingleLineParser + SolverPreprocessor.getDiscreteSkyline): sample
// `v:off` adds v containers over [off, off + 5) seconds (samples at one offset
// add up; nothing holds between samples); step k is the most containers in
// use at any whole second of [5k, 5k + 5). The skyline ends with the last
// sample's interval, whatever the line's endTimeMs says.
std::vector<double> nativeSkyline(const std::vector<std::pair<int64_t, double>>& samples) {
  constexpr int64_t kStepS = kNativeStepMs / 1000;
  const int64_t end_s = samples.back().first + kStepS;  // latest non-null time
  std::vector<double> out(static_cast<size_t>((end_s + kStepS - 1) / kStepS), 0.0);
  size_t lo = 0, hi = 0;  // samples [lo, hi) cover second s: off in (s - 5, s]
  double in_use = 0;
  for (int64_t sec = 0; sec < end_s; sec++) {
    while (hi < samples.size() && samples[hi].first <= sec) in_use += samples[hi++].second;
    while (lo < hi && samples[lo].first <= sec - kStepS) in_use -= samples[lo++].second;
    double& o = out[static_cast<size_t>(sec / kStepS)];
    o = std::max(o, lo == hi ? 0.0 : in_use);
  }
  return out;
}

Status parseNativeLine(std::string_view line, const ImportOptions& opts,
                       store::IngestBatch* batch) {
  auto f = fields(line);
  static const char* kNames[] = {"pipelineId", "numInstances", "submitTimeMs",  "startTimeMs",
                                 "endTimeMs",  "runId",        "memorySkyline", "containerSkyline"};
  if (f.size() != 8) {
    return invalidArgument(
        "line",
        "expected 8 space-separated fields (pipelineId numInstances submitTimeMs "
        "startTimeMs endTimeMs runId memorySkyline containerSkyline), got " +
            std::to_string(f.size()));
  }
  int64_t nums[4];
  for (int i = 1; i <= 4; i++) {
    if (!parseInt(f[static_cast<size_t>(i)], &nums[i - 1]) || nums[i - 1] < 0) {
      return invalidArgument(kNames[i], "'" + std::string(f[static_cast<size_t>(i)]) +
                                            "' is not a non-negative integer");
    }
  }
  store::RunRecord r;
  r.job = JobKey(std::string(f[0]));
  r.run = RunId(std::string(f[5]));
  r.user = opts.default_user;
  r.submit = fromEpochMs(nums[1]);
  r.start = fromEpochMs(nums[2]);
  r.end = fromEpochMs(nums[3]);
  r.step = Millis(kNativeStepMs);
  r.container = Resource(1024, 1);
  if (r.start < r.submit) return invalidArgument("startTimeMs", "is before submitTimeMs");
  if (r.end < r.start) return invalidArgument("endTimeMs", "is before startTimeMs");
  if (nums[3] - nums[2] > kNativeMaxRunMs) {
    return invalidArgument(
        "endTimeMs", "run longer than 30 days (" + std::to_string(nums[3] - nums[2]) + " ms)");
  }
  // Hadoop's estimator fits containers only; the memory skyline is validated.
  std::vector<std::pair<int64_t, double>> samples;
  MORPHEUS_RETURN_IF_ERROR(parseSamples(f[6], "memorySkyline", &samples));
  MORPHEUS_RETURN_IF_ERROR(parseSamples(f[7], "containerSkyline", &samples));
  r.skyline = nativeSkyline(samples);
  r.status = store::RunStatus::kSucceeded;  // the format carries no status
  batch->runs.push_back(std::move(r));
  return Status::ok();
}

// A JSON number as int64: an integer in range, or a float with an integral
// value in range. (nlohmann's get<int64_t>() of a float outside int64's range,
// e.g. 1e31, is undefined behaviour, and it wraps unsigned values above
// INT64_MAX to negative ones.)
Status toInt64(const nlohmann::json& v, const char* name, int64_t* out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return invalidArgument(name, "is out of range");
    }
    *out = static_cast<int64_t>(v.get<uint64_t>());
    return Status::ok();
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return Status::ok();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(d >= -0x1p63 && d < 0x1p63)) return invalidArgument(name, "is out of range");
    if (d != std::trunc(d)) return invalidArgument(name, "must be an integer");
    *out = static_cast<int64_t>(d);
    return Status::ok();
  }
  return invalidArgument(name, "has the wrong type");
}

template <typename T>
Status member(const nlohmann::json& j, const char* name, T* out, bool required = true) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    return required ? invalidArgument(name, "is required") : Status::ok();
  }
  if constexpr (std::is_same_v<T, int64_t>) return toInt64(*it, name, out);
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return invalidArgument(name, "has the wrong type");
  }
  return Status::ok();
}

Status parseJsonLine(std::string_view line, store::IngestBatch* batch) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalidArgument("line", "is not a JSON object");
  std::string type;
  MORPHEUS_RETURN_IF_ERROR(member(j, "type", &type));
  std::string job, run;
  MORPHEUS_RETURN_IF_ERROR(member(j, "job", &job));
  MORPHEUS_RETURN_IF_ERROR(member(j, "run", &run, type == "run"));
  if (type == "run") {
    store::RunRecord r;
    r.job = JobKey(job);
    r.run = RunId(run);
    int64_t submit = 0, start = 0, end = 0, step = 60000;
    MORPHEUS_RETURN_IF_ERROR(member(j, "user", &r.user, false));
    MORPHEUS_RETURN_IF_ERROR(member(j, "submit_ms", &submit));
    MORPHEUS_RETURN_IF_ERROR(member(j, "start_ms", &start));
    MORPHEUS_RETURN_IF_ERROR(member(j, "end_ms", &end));
    MORPHEUS_RETURN_IF_ERROR(member(j, "step_ms", &step, false));
    MORPHEUS_RETURN_IF_ERROR(member(j, "skyline", &r.skyline));
    std::string status = "succeeded";
    MORPHEUS_RETURN_IF_ERROR(member(j, "status", &status, false));
    auto st = store::parseRunStatus(status);
    if (!st) {
      return invalidArgument(
          "status", "must be \"succeeded\", \"failed\" or \"killed\", got \"" + status + "\"");
    }
    r.status = *st;
    r.submit = fromEpochMs(submit);
    r.start = fromEpochMs(start);
    r.end = fromEpochMs(end);
    r.step = Millis(step);
    r.container = Resource(1024, 1);
    if (auto c = j.find("container"); c != j.end()) {
      int64_t mem = 0, vc = 0;
      if (!c->is_object()) return invalidArgument("container", "must be an object");
      MORPHEUS_RETURN_IF_ERROR(member(*c, "memory_mib", &mem).withContext("container"));
      MORPHEUS_RETURN_IF_ERROR(member(*c, "vcores", &vc).withContext("container"));
      r.container = Resource(mem, vc);
    }
    MORPHEUS_RETURN_IF_ERROR(validateRun(r, "run"));
    batch->runs.push_back(std::move(r));
    return Status::ok();
  }
  if (type == "event") {
    store::FileEvent e;
    e.job = JobKey(job);
    e.run = RunId(run);
    std::string kind;
    int64_t t = 0;
    MORPHEUS_RETURN_IF_ERROR(member(j, "path", &e.path));
    MORPHEUS_RETURN_IF_ERROR(member(j, "kind", &kind));
    MORPHEUS_RETURN_IF_ERROR(member(j, "time_ms", &t));
    if (kind == "read") {
      e.kind = store::FileAccess::kRead;
    } else if (kind == "write") {
      e.kind = store::FileAccess::kWrite;
    } else {
      return invalidArgument("kind", "must be \"read\" or \"write\", got \"" + kind + "\"");
    }
    e.time = fromEpochMs(t);
    MORPHEUS_RETURN_IF_ERROR(validateEvent(e, "event"));
    batch->events.push_back(std::move(e));
    return Status::ok();
  }
  return invalidArgument("type", "must be \"run\" or \"event\", got \"" + type + "\"");
}

}  // namespace

Status validateRun(const store::RunRecord& r, const std::string& field) {
  if (r.job.empty()) return invalidArgument(field + ".job", "is required");
  if (r.run.empty()) return invalidArgument(field + ".run", "is required");
  if (toEpochMs(r.submit) < 0) return invalidArgument(field + ".submit_ms", "must be >= 0");
  if (r.start < r.submit) return invalidArgument(field + ".start_ms", "is before submit_ms");
  if (r.end < r.start) return invalidArgument(field + ".end_ms", "is before start_ms");
  if (r.step.count() <= 0) return invalidArgument(field + ".step_ms", "must be > 0");
  for (size_t k = 0; k < r.skyline.size(); k++) {
    if (!(r.skyline[k] >= 0) || !std::isfinite(r.skyline[k])) {
      return invalidArgument(field + ".skyline[" + std::to_string(k) + "]",
                             "must be a finite number >= 0");
    }
  }
  if (r.container.anyNegative() || r.container.isZero()) {
    return invalidArgument(field + ".container", "must be a positive container size");
  }
  return Status::ok();
}

Status validateEvent(const store::FileEvent& e, const std::string& field) {
  if (e.job.empty()) return invalidArgument(field + ".job", "is required");
  if (e.path.empty()) return invalidArgument(field + ".path", "is required");
  if (toEpochMs(e.time) < 0) return invalidArgument(field + ".time_ms", "must be >= 0");
  return Status::ok();
}

Result<store::IngestBatch> parseRunHistory(std::istream& in, const ImportOptions& opts) {
  if (opts.format != "native" && opts.format != "jsonl") {
    return invalidArgument("format", "must be native or jsonl, got \"" + opts.format + "\"");
  }
  store::IngestBatch batch;
  std::vector<std::string> errors;
  size_t total_errors = 0;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view v(line);
    size_t b = v.find_first_not_of(" \t");
    if (b == std::string_view::npos || v[b] == '#') continue;
    Status st =
        opts.format == "native" ? parseNativeLine(v, opts, &batch) : parseJsonLine(v, &batch);
    if (!st.isOk()) {
      if (++total_errors <= opts.max_errors)
        errors.push_back("line " + std::to_string(lineno) + ": " + st.message());
    }
  }
  if (in.bad()) return unavailable("read error");
  if (total_errors > 0) {
    std::string msg = std::to_string(total_errors) + " bad line(s), nothing imported:";
    for (const auto& e : errors) msg += "\n  " + e;
    if (total_errors > errors.size())
      msg += "\n  ... and " + std::to_string(total_errors - errors.size()) + " more";
    return Status(StatusCode::kInvalidArgument, msg);
  }
  if (batch.runs.empty() && batch.events.empty())
    return invalidArgument("input", "holds no runs or events");
  return batch;
}

Result<store::IngestBatch> parseRunHistoryFile(const std::string& path, const ImportOptions& opts) {
  std::ifstream in(path);
  if (!in) return invalidArgument("input", "cannot open " + path);
  auto r = parseRunHistory(in, opts);
  if (!r.isOk()) return r.status().withContext(path);
  return r;
}

}  // namespace morpheus::inference
