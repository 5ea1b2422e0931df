#include "rm/core/reservation_codec.h"

namespace morpheus::rm {

using nlohmann::json;

json encodeResource(const Resource& r) {
  json j = {{"memory_mib", r.memoryMib()}, {"vcores", r.vcores()}};
  if (!r.extended().empty()) {
    json ext = json::object();
    for (const auto& [k, v] : r.extended()) ext[k] = v;
    j["extended"] = ext;
  }
  return j;
}

Resource decodeResource(const json& j) {
  Resource r(j.at("memory_mib").get<int64_t>(), j.at("vcores").get<int64_t>());
  if (j.contains("extended")) {
    for (const auto& [k, v] : j.at("extended").items()) r.setExtended(k, v.get<int64_t>());
  }
  return r;
}

namespace {
json encodeIntervals(const std::vector<planner::AllocationInterval>& v) {
  json arr = json::array();
  for (const auto& a : v) {
    arr.push_back({{"start", toEpochMs(a.start)},
                   {"end", toEpochMs(a.end)},
                   {"resource", encodeResource(a.resource)}});
  }
  return arr;
}
std::vector<planner::AllocationInterval> decodeIntervals(const json& arr) {
  std::vector<planner::AllocationInterval> out;
  for (const auto& a : arr) {
    out.push_back({fromEpochMs(a.at("start").get<int64_t>()),
                   fromEpochMs(a.at("end").get<int64_t>()), decodeResource(a.at("resource"))});
  }
  return out;
}
}  // namespace

json encodeDefinition(const planner::ReservationDefinition& d) {
  json stages = json::array();
  for (const auto& s : d.stages) {
    stages.push_back({{"capability", encodeResource(s.capability)},
                      {"num_containers", s.num_containers},
                      {"min_concurrency", s.min_concurrency},
                      {"duration_ms", s.duration.count()}});
  }
  return {{"user", d.user.value()},
          {"queue", d.queue},
          {"name", d.name},
          {"recurrence_key", d.recurrence_key.value()},
          {"priority", d.priority},
          {"arrival", toEpochMs(d.arrival)},
          {"deadline", toEpochMs(d.deadline)},
          {"period_ms", d.period.count()},
          {"interpreter", planner::interpreterName(d.interpreter)},
          {"problematic", d.problematic},
          {"stages", stages}};
}

Result<planner::ReservationDefinition> decodeDefinition(const json& j) {
  try {
    planner::ReservationDefinition d;
    d.user = UserId(j.at("user").get<std::string>());
    d.queue = j.at("queue").get<std::string>();
    d.name = j.at("name").get<std::string>();
    d.recurrence_key = JobKey(j.at("recurrence_key").get<std::string>());
    d.priority = j.at("priority").get<int>();
    d.arrival = fromEpochMs(j.at("arrival").get<int64_t>());
    d.deadline = fromEpochMs(j.at("deadline").get<int64_t>());
    d.period = Millis(j.at("period_ms").get<int64_t>());
    MORPHEUS_ASSIGN_OR_RETURN(
        d.interpreter,
        planner::parseInterpreter(j.at("interpreter").get<std::string>(), "interpreter"));
    d.problematic = j.at("problematic").get<bool>();
    for (const auto& s : j.at("stages")) {
      planner::ReservationStage st;
      st.capability = decodeResource(s.at("capability"));
      st.num_containers = s.at("num_containers").get<int64_t>();
      st.min_concurrency = s.at("min_concurrency").get<int64_t>();
      st.duration = Millis(s.at("duration_ms").get<int64_t>());
      d.stages.push_back(st);
    }
    return d;
  } catch (const json::exception& e) {
    return internalError(std::string("corrupt stored reservation definition: ") + e.what());
  }
}

json encodePlacement(const planner::Placement& p) {
  json stages = json::array();
  for (const auto& s : p.stages)
    stages.push_back({{"stage", s.stage}, {"allocations", encodeIntervals(s.allocations)}});
  return {{"period_ms", p.period.count()},
          {"allocations", encodeIntervals(p.allocations)},
          {"stages", stages},
          {"cost", p.cost},
          {"agent", p.agent}};
}

Result<planner::Placement> decodePlacement(const json& j) {
  try {
    planner::Placement p;
    p.period = Millis(j.at("period_ms").get<int64_t>());
    p.allocations = decodeIntervals(j.at("allocations"));
    for (const auto& s : j.at("stages")) {
      p.stages.push_back({s.at("stage").get<int>(), decodeIntervals(s.at("allocations"))});
    }
    p.cost = j.at("cost").get<double>();
    p.agent = j.at("agent").get<std::string>();
    return p;
  } catch (const json::exception& e) {
    return internalError(std::string("corrupt stored placement: ") + e.what());
  }
}

}  // namespace morpheus::rm
