// The morpheus-sim JSON trace format for users' own periodic and ad-hoc jobs
// (documented in README "morpheus-sim trace format", example in
// examples/sim/trace.json).
//
// Strict by design: every field is type-checked and range-checked, unknown
// fields are errors (a typo must not silently become a default), and the
// first error names its JSON path, e.g. "periodic[3].stages[0].tasks: must be
// an integer >= 1". Nothing is returned on error. Durations are strings of
// <integer><unit> parts, units ms, s, m, h, d ("90s", "1h30m", "250ms");
// resources use the CLI's form "memory=MIB,vcores=V".
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/workloads/workload.h"

namespace morpheus::sim {

namespace {

using nlohmann::json;

// Bounds that keep the simulator's arithmetic and memory sane: durations up
// to 10 years, at most a million tasks per stage.
constexpr int64_t kMaxDurationMs = 3650LL * 86400 * 1000;
constexpr int64_t kMaxTasks = 1'000'000;
constexpr int64_t kMaxContainers = 100'000'000;
constexpr int64_t kMaxDay = 100'000;

Result<Millis> parseDuration(const std::string& text, const std::string& path) {
  const auto bad = [&] {
    return invalidArgument(path, "'" + text +
                                     "' is not a duration (integer and unit ms, s, m, h or d, "
                                     "parts concatenated, e.g. \"1h30m\")");
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t digits = i;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') digits++;
    if (digits == i || digits - i > 12) return bad();
    const int64_t n = std::stoll(text.substr(i, digits - i));
    size_t unit_end = digits;
    while (unit_end < text.size() && text[unit_end] >= 'a' && text[unit_end] <= 'z') unit_end++;
    const std::string unit = text.substr(digits, unit_end - digits);
    int64_t scale = 0;
    if (unit == "ms") scale = 1;
    if (unit == "s") scale = 1000;
    if (unit == "m") scale = 60 * 1000;
    if (unit == "h") scale = 3600 * 1000;
    if (unit == "d") scale = 86400 * 1000;
    if (scale == 0) return bad();
    if (n > (kMaxDurationMs - total) / scale) {
      return invalidArgument(path, "'" + text + "' is longer than 3650 days");
    }
    total += n * scale;
    i = unit_end;
  }
  return Millis(total);
}

// One JSON object being read: typed getters that name `path.key` in errors,
// and a final check that no unknown key is left.
class ObjectReader {
 public:
  ObjectReader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) {
    seen_.insert(key);
    return obj_.contains(key);
  }
  Status missing(const std::string& key) const { return invalidArgument(at(key), "is required"); }

  Result<std::string> str(const std::string& key, std::optional<std::string> def) {
    if (!has(key)) return def ? Result<std::string>(*def) : missing(key);
    const json& v = obj_.at(key);
    if (!v.is_string() || v.get<std::string>().empty()) {
      return invalidArgument(at(key), "must be a non-empty string");
    }
    return v.get<std::string>();
  }
  Result<int64_t> integer(const std::string& key, std::optional<int64_t> def, int64_t min,
                          int64_t max) {
    if (!has(key)) return def ? Result<int64_t>(*def) : missing(key);
    const json& v = obj_.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max) {
      return invalidArgument(at(key), "must be an integer in [" + std::to_string(min) + ", " +
                                          std::to_string(max) + "]");
    }
    return v.get<int64_t>();
  }
  // A number in [lo, hi] (open at lo when lo_open).
  Result<double> number(const std::string& key, double def, double lo, double hi, bool lo_open) {
    if (!has(key)) return def;
    const json& v = obj_.at(key);
    const double x = v.is_number() ? v.get<double>() : lo - 1;
    if (!v.is_number() || x > hi || x < lo || (lo_open && x == lo)) {
      std::ostringstream range;
      range << "must be a number in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
      return invalidArgument(at(key), range.str());
    }
    return x;
  }
  Result<Millis> duration(const std::string& key, std::optional<Millis> def) {
    if (!has(key)) return def ? Result<Millis>(*def) : missing(key);
    const json& v = obj_.at(key);
    if (!v.is_string()) return invalidArgument(at(key), "must be a duration string like \"90s\"");
    return parseDuration(v.get<std::string>(), at(key));
  }
  Result<Resource> resource(const std::string& key, std::optional<Resource> def) {
    if (!has(key)) return def ? Result<Resource>(*def) : missing(key);
    const json& v = obj_.at(key);
    if (!v.is_string()) {
      return invalidArgument(at(key), "must be a string like \"memory=2048,vcores=1\"");
    }
    MORPHEUS_ASSIGN_OR_RETURN(Resource r, Resource::parse(v.get<std::string>(), at(key)));
    if (r.isZero() || r.anyNegative()) {
      return invalidArgument(at(key), "must be positive in some dimension and negative in none");
    }
    return r;
  }
  Result<const json*> array(const std::string& key, bool required) {
    if (!has(key))
      return required ? Result<const json*>(missing(key)) : Result<const json*>(nullptr);
    const json& v = obj_.at(key);
    if (!v.is_array()) return invalidArgument(at(key), "must be an array");
    return &v;
  }
  Status noUnknownFields() const {
    for (const auto& [key, value] : obj_.items()) {
      if (!seen_.count(key)) return invalidArgument(at(key), "unknown field");
    }
    return Status::ok();
  }

 private:
  const json& obj_;
  std::string path_;
  std::set<std::string> seen_;
};

Status requireObject(const json& v, const std::string& path) {
  return v.is_object() ? Status::ok() : invalidArgument(path, "must be an object");
}

Result<SimStage> parseStage(const json& v, const std::string& path, int index) {
  MORPHEUS_RETURN_IF_ERROR(requireObject(v, path));
  ObjectReader r(v, path);
  SimStage st;
  MORPHEUS_ASSIGN_OR_RETURN(st.name, r.str("name", "stage" + std::to_string(index)));
  MORPHEUS_ASSIGN_OR_RETURN(st.tasks, r.integer("tasks", std::nullopt, 1, kMaxTasks));
  MORPHEUS_ASSIGN_OR_RETURN(st.task_duration, r.duration("task_duration", std::nullopt));
  if (st.task_duration <= Millis(0)) {
    return invalidArgument(r.at("task_duration"), "must be longer than 0");
  }
  MORPHEUS_ASSIGN_OR_RETURN(st.task_resource, r.resource("task_resource", std::nullopt));
  MORPHEUS_ASSIGN_OR_RETURN(const json* deps, r.array("depends_on", false));
  for (size_t i = 0; deps && i < deps->size(); i++) {
    const json& d = (*deps)[i];
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() >= index) {
      return invalidArgument(
          r.at("depends_on") + "[" + std::to_string(i) + "]",
          "must be the index of an earlier stage (0.." + std::to_string(index - 1) + ")");
    }
    st.depends_on.push_back(static_cast<int>(d.get<int64_t>()));
  }
  MORPHEUS_RETURN_IF_ERROR(r.noUnknownFields());
  return st;
}

Result<std::vector<SimStage>> parseStages(ObjectReader& r) {
  MORPHEUS_ASSIGN_OR_RETURN(const json* arr, r.array("stages", true));
  if (arr->empty()) return invalidArgument(r.at("stages"), "must hold at least one stage");
  std::vector<SimStage> stages;
  for (size_t i = 0; i < arr->size(); i++) {
    MORPHEUS_ASSIGN_OR_RETURN(
        SimStage st,
        parseStage((*arr)[i], r.at("stages") + "[" + std::to_string(i) + "]", static_cast<int>(i)));
    stages.push_back(std::move(st));
  }
  return stages;
}

Status parseVariance(ObjectReader& r, PeriodicJob& j) {
  const PeriodicJob d;
  MORPHEUS_ASSIGN_OR_RETURN(j.duration_noise_cv,
                            r.number("duration_noise_cv", d.duration_noise_cv, 0, 10, false));
  MORPHEUS_ASSIGN_OR_RETURN(
      j.straggler_probability,
      r.number("straggler_probability", d.straggler_probability, 0, 1, false));
  MORPHEUS_ASSIGN_OR_RETURN(j.straggler_factor,
                            r.number("straggler_factor", d.straggler_factor, 1, 1000, false));
  MORPHEUS_ASSIGN_OR_RETURN(j.failure_probability,
                            r.number("failure_probability", d.failure_probability, 0, 1, false));
  MORPHEUS_ASSIGN_OR_RETURN(
      j.input_growth_per_day,
      r.number("input_growth_per_day", d.input_growth_per_day, -1, 0.1, true));
  MORPHEUS_ASSIGN_OR_RETURN(j.code_change_day, r.integer("code_change_day", -1, -1, kMaxDay));
  MORPHEUS_ASSIGN_OR_RETURN(j.code_change_factor,
                            r.number("code_change_factor", d.code_change_factor, 0, 100, true));
  return Status::ok();
}

Status parseSlo(ObjectReader& r, PeriodicJob& j) {
  MORPHEUS_ASSIGN_OR_RETURN(j.input_available, r.duration("input_available", std::nullopt));
  MORPHEUS_ASSIGN_OR_RETURN(j.deadline, r.duration("deadline", std::nullopt));
  if (j.deadline <= j.input_available) {
    return invalidArgument(r.at("deadline"), "must be later than input_available");
  }
  MORPHEUS_ASSIGN_OR_RETURN(j.input_path,
                            r.str("input_path", "/warehouse/" + j.key.value() + "/input"));
  MORPHEUS_ASSIGN_OR_RETURN(j.output_path,
                            r.str("output_path", "/warehouse/" + j.key.value() + "/output"));
  return Status::ok();
}

Result<PeriodicJob> parsePeriodic(const json& v, const std::string& path) {
  MORPHEUS_RETURN_IF_ERROR(requireObject(v, path));
  ObjectReader r(v, path);
  PeriodicJob j;
  MORPHEUS_ASSIGN_OR_RETURN(std::string key, r.str("key", std::nullopt));
  j.key = JobKey(key);
  MORPHEUS_ASSIGN_OR_RETURN(std::string owner, r.str("owner", std::nullopt));
  j.owner = UserId(owner);
  MORPHEUS_ASSIGN_OR_RETURN(j.queue, r.str("queue", j.queue));
  MORPHEUS_ASSIGN_OR_RETURN(j.period, r.duration("period", std::nullopt));
  if (j.period <= Millis(0)) return invalidArgument(r.at("period"), "must be longer than 0");
  MORPHEUS_ASSIGN_OR_RETURN(j.submit_offset, r.duration("submit_offset", Millis(0)));
  if (j.submit_offset >= j.period) {
    return invalidArgument(r.at("submit_offset"), "must be shorter than the period");
  }
  MORPHEUS_ASSIGN_OR_RETURN(j.stages, parseStages(r));
  MORPHEUS_RETURN_IF_ERROR(parseVariance(r, j));
  MORPHEUS_RETURN_IF_ERROR(parseSlo(r, j));
  MORPHEUS_ASSIGN_OR_RETURN(j.user_containers,
                            r.integer("user_containers", std::nullopt, 1, kMaxContainers));
  MORPHEUS_ASSIGN_OR_RETURN(j.user_container_resource,
                            r.resource("user_container_resource", j.stages[0].task_resource));
  MORPHEUS_RETURN_IF_ERROR(r.noUnknownFields());
  return j;
}

Result<AdhocJob> parseAdhoc(const json& v, const std::string& path) {
  MORPHEUS_RETURN_IF_ERROR(requireObject(v, path));
  ObjectReader r(v, path);
  AdhocJob j;
  MORPHEUS_ASSIGN_OR_RETURN(j.name, r.str("name", std::nullopt));
  MORPHEUS_ASSIGN_OR_RETURN(std::string user, r.str("user", std::nullopt));
  j.user = UserId(user);
  MORPHEUS_ASSIGN_OR_RETURN(j.queue, r.str("queue", j.queue));
  MORPHEUS_ASSIGN_OR_RETURN(j.submit, r.duration("submit", std::nullopt));
  MORPHEUS_ASSIGN_OR_RETURN(j.stages, parseStages(r));
  MORPHEUS_RETURN_IF_ERROR(r.noUnknownFields());
  return j;
}

Status parseAll(const json& doc, Workload& w) {
  MORPHEUS_RETURN_IF_ERROR(requireObject(doc, "(top level)"));
  ObjectReader top(doc, "");
  MORPHEUS_ASSIGN_OR_RETURN(const json* periodic, top.array("periodic", false));
  MORPHEUS_ASSIGN_OR_RETURN(const json* adhoc, top.array("adhoc", false));
  MORPHEUS_RETURN_IF_ERROR(top.noUnknownFields());
  std::set<std::string> keys;
  for (size_t i = 0; periodic && i < periodic->size(); i++) {
    const std::string path = "periodic[" + std::to_string(i) + "]";
    MORPHEUS_ASSIGN_OR_RETURN(PeriodicJob j, parsePeriodic((*periodic)[i], path));
    if (!keys.insert(j.key.value()).second) {
      return invalidArgument(path + ".key", "'" + j.key.value() + "' is used by an earlier job");
    }
    w.periodic.push_back(std::move(j));
  }
  for (size_t i = 0; adhoc && i < adhoc->size(); i++) {
    MORPHEUS_ASSIGN_OR_RETURN(AdhocJob j,
                              parseAdhoc((*adhoc)[i], "adhoc[" + std::to_string(i) + "]"));
    w.adhoc.push_back(std::move(j));
  }
  std::stable_sort(w.adhoc.begin(), w.adhoc.end(),
                   [](const AdhocJob& a, const AdhocJob& b) { return a.submit < b.submit; });
  return Status::ok();
}

// nlohmann's parse errors read "[json.exception.parse_error.101] parse error
// at line 3, column 5: ..."; keep the part from "line".
std::string syntaxMessage(const std::string& what) {
  const size_t at = what.find("line ");
  return at == std::string::npos ? what : what.substr(at);
}

}  // namespace

Result<Workload> parseWorkloadJson(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return invalidArgument("json", syntaxMessage(e.what()));
  }
  Workload w;
  MORPHEUS_RETURN_IF_ERROR(parseAll(doc, w));
  return w;
}

Result<Workload> loadWorkloadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument("trace", "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = parseWorkloadJson(ss.str());
  if (!r.isOk()) return r.status().withContext(path);
  return r;
}

}  // namespace morpheus::sim

namespace morpheus::sim {

namespace {

using nlohmann::ordered_json;

// Largest units first, zero parts left out ("0s" for zero).
std::string durationText(Millis d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  for (const auto& [unit, scale] : {std::pair<const char*, int64_t>{"d", 86400000},
                                    {"h", 3600000},
                                    {"m", 60000},
                                    {"s", 1000},
                                    {"ms", 1}}) {
    if (ms >= scale) {
      out += std::to_string(ms / scale) + unit;
      ms %= scale;
    }
  }
  return out;
}

std::string resourceText(const Resource& r) {
  std::string out =
      "memory=" + std::to_string(r.memoryMib()) + ",vcores=" + std::to_string(r.vcores());
  for (const auto& [name, value] : r.extended()) out += "," + name + "=" + std::to_string(value);
  return out;
}

ordered_json stagesJson(const std::vector<SimStage>& stages) {
  ordered_json out = ordered_json::array();
  for (const auto& st : stages) {
    ordered_json s = {{"name", st.name},
                      {"tasks", st.tasks},
                      {"task_duration", durationText(st.task_duration)},
                      {"task_resource", resourceText(st.task_resource)}};
    if (!st.depends_on.empty()) s["depends_on"] = st.depends_on;
    out.push_back(std::move(s));
  }
  return out;
}

ordered_json periodicJson(const PeriodicJob& j) {
  return {{"key", j.key.value()},
          {"owner", j.owner.value()},
          {"queue", j.queue},
          {"period", durationText(j.period)},
          {"submit_offset", durationText(j.submit_offset)},
          {"stages", stagesJson(j.stages)},
          {"duration_noise_cv", j.duration_noise_cv},
          {"straggler_probability", j.straggler_probability},
          {"straggler_factor", j.straggler_factor},
          {"failure_probability", j.failure_probability},
          {"input_growth_per_day", j.input_growth_per_day},
          {"code_change_day", j.code_change_day},
          {"code_change_factor", j.code_change_factor},
          {"input_available", durationText(j.input_available)},
          {"deadline", durationText(j.deadline)},
          {"input_path", j.input_path},
          {"output_path", j.output_path},
          {"user_containers", j.user_containers},
          {"user_container_resource", resourceText(j.user_container_resource)}};
}

}  // namespace

std::string workloadJson(const Workload& workload) {
  ordered_json doc = {{"periodic", ordered_json::array()}, {"adhoc", ordered_json::array()}};
  for (const auto& j : workload.periodic) doc["periodic"].push_back(periodicJson(j));
  for (const auto& a : workload.adhoc) {
    doc["adhoc"].push_back({{"name", a.name},
                            {"user", a.user.value()},
                            {"queue", a.queue},
                            {"submit", durationText(a.submit)},
                            {"stages", stagesJson(a.stages)}});
  }
  return doc.dump(2) + "\n";
}

}  // namespace morpheus::sim
