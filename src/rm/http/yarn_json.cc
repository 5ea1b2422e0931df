#include "rm/http/yarn_json.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <regex>

namespace morpheus::rm {

using nlohmann::json;

namespace {

// Reads an integer that YARN clients may send as a number or a string.
Result<int64_t> intField(const json& obj, const std::string& name, const std::string& path,
                         bool required, int64_t def = 0) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (required) return invalidArgument(path + name, "is required");
    return def;
  }
  // Numbers outside int64 are refused before any conversion: a double out of
  // range converts with undefined behaviour, an unsigned above INT64_MAX wraps.
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return invalidArgument(path + name, "is out of range");
    }
    return static_cast<int64_t>(it->get<uint64_t>());
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!(d >= -0x1p63 && d < 0x1p63)) return invalidArgument(path + name, "is out of range");
    if (d != std::trunc(d)) return invalidArgument(path + name, "must be an integer");
    return static_cast<int64_t>(d);
  }
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    try {
      size_t pos = 0;
      int64_t v = std::stoll(s, &pos);
      if (pos == s.size()) return v;
    } catch (const std::exception&) {
    }
    return invalidArgument(path + name, "'" + s + "' is not an integer");
  }
  return invalidArgument(path + name, "must be an integer");
}

Result<std::string> stringField(const json& obj, const std::string& name, const std::string& path,
                                bool required) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (required) return invalidArgument(path + name, "is required");
    return std::string();
  }
  if (!it->is_string()) return invalidArgument(path + name, "must be a string");
  return it->get<std::string>();
}

Result<bool> boolField(const json& obj, const std::string& name, const std::string& path) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    if (*it == "true") return true;
    if (*it == "false") return false;
  }
  return invalidArgument(path + name, "must be true or false");
}

Result<json> parseJson(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return invalidArgument("body", "not valid JSON");
  if (!j.is_object()) return invalidArgument("body", "must be a JSON object");
  return j;
}

}  // namespace

std::string yarnFieldPath(const std::string& f) {
  static const std::map<std::string, std::string> kDefinition = {
      {"arrival_ms", "arrival"},
      {"deadline_ms", "deadline"},
      {"name", "reservation-name"},
      {"priority", "priority"},
      {"period_ms", "recurrence-expression"},
      {"recurrence_key", "recurrence-key"},
      {"problematic", "problematic"},
      {"reprovision_budget_container_ms", "reprovision-budget"},
      {"interpreter", "reservation-requests.reservation-request-interpreter"},
      {"stages", "reservation-requests.reservation-request"},
  };
  static const std::map<std::string, std::string> kStage = {
      {"duration_ms", "duration"},
      {"num_containers", "num-containers"},
      {"min_concurrency", "min-concurrency"},
      {"capability", "capability"},
      {"capability.memory_mib", "capability.memory"},
      {"capability.vcores", "capability.vCores"},
  };
  static const std::regex kStageRe(R"(definition\.stages\[(\d+)\](?:\.(.+))?)");
  if (f == "reservation_id") return "reservation-id";
  std::smatch m;
  if (std::regex_match(f, m, kStageRe)) {
    std::string base =
        "reservation-definition.reservation-requests.reservation-request[" + m[1].str() + "]";
    if (!m[2].matched) return base;
    auto it = kStage.find(m[2].str());
    if (it != kStage.end()) return base + "." + it->second;
    if (m[2].str().rfind("capability.extended.", 0) == 0) {
      return base + ".capability." + m[2].str().substr(20);
    }
    return base + "." + m[2].str();
  }
  if (f.rfind("definition.", 0) == 0) {
    auto it = kDefinition.find(f.substr(11));
    if (it != kDefinition.end()) return "reservation-definition." + it->second;
  }
  return f;
}

Status withYarnFieldPath(const Status& s) {
  if (s.code() != StatusCode::kInvalidArgument) return s;
  const std::string& msg = s.message();
  size_t colon = msg.find(": ");
  if (colon == std::string::npos) return s;
  std::string field = msg.substr(0, colon);
  std::string renamed = yarnFieldPath(field);
  if (renamed == field) return s;
  return Status(s.code(), renamed + msg.substr(colon));
}

Result<v1::ReservationDefinition> parseYarnDefinition(const json& j, const std::string& path) {
  if (!j.is_object()) return invalidArgument(path, "must be an object");
  const std::string p = path + ".";
  v1::ReservationDefinition d;
  MORPHEUS_ASSIGN_OR_RETURN(int64_t arrival, intField(j, "arrival", p, true));
  MORPHEUS_ASSIGN_OR_RETURN(int64_t deadline, intField(j, "deadline", p, true));
  MORPHEUS_ASSIGN_OR_RETURN(std::string name, stringField(j, "reservation-name", p, false));
  MORPHEUS_ASSIGN_OR_RETURN(int64_t priority, intField(j, "priority", p, false));
  MORPHEUS_ASSIGN_OR_RETURN(int64_t period, intField(j, "recurrence-expression", p, false));
  MORPHEUS_ASSIGN_OR_RETURN(std::string key, stringField(j, "recurrence-key", p, false));
  MORPHEUS_ASSIGN_OR_RETURN(bool problematic, boolField(j, "problematic", p));
  MORPHEUS_ASSIGN_OR_RETURN(int64_t budget, intField(j, "reprovision-budget", p, false));
  if (arrival < 0) return invalidArgument(p + "arrival", "must be >= 0");
  if (deadline < 0) return invalidArgument(p + "deadline", "must be >= 0");
  if (budget < 0) return invalidArgument(p + "reprovision-budget", "must be >= 0");
  if (priority < INT32_MIN || priority > INT32_MAX) {
    return invalidArgument(p + "priority", std::to_string(priority) + " is out of range");
  }
  d.set_arrival_ms(arrival);
  d.set_deadline_ms(deadline);
  d.set_name(name);
  d.set_priority(static_cast<int32_t>(priority));
  d.set_period_ms(period);
  d.set_recurrence_key(key);
  d.set_problematic(problematic);
  d.set_reprovision_budget_container_ms(budget);

  auto rr = j.find("reservation-requests");
  if (rr == j.end() || !rr->is_object()) {
    return invalidArgument(p + "reservation-requests", "is required (an object)");
  }
  const std::string rp = p + "reservation-requests.";
  MORPHEUS_ASSIGN_OR_RETURN(int64_t interp,
                            intField(*rr, "reservation-request-interpreter", rp, false, 1));
  if (interp < 0 || interp > 3) {
    return invalidArgument(rp + "reservation-request-interpreter",
                           "must be 0 (ANY), 1 (ALL), 2 (ORDER) or 3 (ORDER_NO_GAP)");
  }
  d.set_interpreter(static_cast<v1::Interpreter>(interp + 1));
  auto list = rr->find("reservation-request");
  if (list == rr->end() || list->is_null()) {
    return invalidArgument(rp + "reservation-request", "is required (at least one stage)");
  }
  json stages = list->is_array() ? *list : json::array({*list});
  for (size_t i = 0; i < stages.size(); i++) {
    const json& s = stages[i];
    const std::string sp = rp + "reservation-request[" + std::to_string(i) + "].";
    if (!s.is_object()) return invalidArgument(sp.substr(0, sp.size() - 1), "must be an object");
    auto cap = s.find("capability");
    if (cap == s.end() || !cap->is_object())
      return invalidArgument(sp + "capability", "is required");
    MORPHEUS_ASSIGN_OR_RETURN(int64_t mem, intField(*cap, "memory", sp + "capability.", true));
    MORPHEUS_ASSIGN_OR_RETURN(int64_t vcores, intField(*cap, "vCores", sp + "capability.", true));
    MORPHEUS_ASSIGN_OR_RETURN(int64_t n, intField(s, "num-containers", sp, true));
    MORPHEUS_ASSIGN_OR_RETURN(int64_t gang, intField(s, "min-concurrency", sp, false, 1));
    MORPHEUS_ASSIGN_OR_RETURN(int64_t dur, intField(s, "duration", sp, true));
    if (mem < 0) return invalidArgument(sp + "capability.memory", "must be >= 0");
    if (vcores < 0) return invalidArgument(sp + "capability.vCores", "must be >= 0");
    if (n > INT32_MAX || n < INT32_MIN) {
      return invalidArgument(sp + "num-containers", std::to_string(n) + " is out of range");
    }
    if (gang > INT32_MAX || gang < INT32_MIN) {
      return invalidArgument(sp + "min-concurrency", std::to_string(gang) + " is out of range");
    }
    auto* st = d.add_stages();
    st->mutable_capability()->set_memory_mib(mem);
    st->mutable_capability()->set_vcores(vcores);
    st->set_num_containers(static_cast<int32_t>(n));
    st->set_min_concurrency(static_cast<int32_t>(gang));
    st->set_duration_ms(dur);
  }
  return d;
}

Result<v1::SubmitReservationRequest> parseYarnSubmit(const std::string& body) {
  MORPHEUS_ASSIGN_OR_RETURN(json j, parseJson(body));
  v1::SubmitReservationRequest req;
  MORPHEUS_ASSIGN_OR_RETURN(std::string id, stringField(j, "reservation-id", "", false));
  MORPHEUS_ASSIGN_OR_RETURN(std::string queue, stringField(j, "queue", "", false));
  MORPHEUS_ASSIGN_OR_RETURN(std::string user, stringField(j, "user", "", false));
  req.set_reservation_id(id);
  req.set_queue(queue);
  req.set_user(user);
  auto def = j.find("reservation-definition");
  if (def == j.end()) return invalidArgument("reservation-definition", "is required");
  MORPHEUS_ASSIGN_OR_RETURN(*req.mutable_definition(),
                            parseYarnDefinition(*def, "reservation-definition"));
  return req;
}

Result<std::string> parseYarnReservationId(const std::string& body) {
  MORPHEUS_ASSIGN_OR_RETURN(json j, parseJson(body));
  MORPHEUS_ASSIGN_OR_RETURN(std::string id, stringField(j, "reservation-id", "", true));
  if (id.empty()) return invalidArgument("reservation-id", "must not be empty");
  return id;
}

json yarnDefinitionJson(const v1::ReservationDefinition& d) {
  json stages = json::array();
  for (const auto& s : d.stages()) {
    stages.push_back(
        {{"capability",
          {{"memory", s.capability().memory_mib()}, {"vCores", s.capability().vcores()}}},
         {"num-containers", s.num_containers()},
         {"min-concurrency", s.min_concurrency()},
         {"duration", s.duration_ms()}});
  }
  int interp =
      d.interpreter() == v1::INTERPRETER_UNSPECIFIED ? 1 : static_cast<int>(d.interpreter()) - 1;
  json j = {{"arrival", d.arrival_ms()},
            {"deadline", d.deadline_ms()},
            {"reservation-name", d.name()},
            {"priority", d.priority()},
            {"recurrence-expression", std::to_string(d.period_ms())},
            {"reservation-requests",
             {{"reservation-request-interpreter", interp}, {"reservation-request", stages}}}};
  if (!d.recurrence_key().empty()) j["recurrence-key"] = d.recurrence_key();
  if (d.problematic()) j["problematic"] = true;
  if (d.reprovision_budget_container_ms() > 0) {
    j["reprovision-budget"] = d.reprovision_budget_container_ms();
  }
  return j;
}

json yarnAllocationsJson(
    const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocations) {
  json out = json::array();
  for (const auto& a : allocations) {
    out.push_back(
        {{"resource", {{"memory", a.resource().memory_mib()}, {"vCores", a.resource().vcores()}}},
         {"startTime", a.start_ms()},
         {"endTime", a.end_ms()}});
  }
  return out;
}

json yarnListJson(const v1::ListReservationsResponse& list, bool include_allocations) {
  json arr = json::array();
  for (const auto& r : list.reservations()) {
    json item = {{"acceptance-time", r.acceptance_ms()},
                 {"user", r.user()},
                 {"queue", r.queue()},
                 {"reservation-id", r.reservation_id()},
                 {"reservation-definition", yarnDefinitionJson(r.definition())},
                 {"morpheus-status", r.status()}};
    if (!r.status_reason().empty()) item["morpheus-status-reason"] = r.status_reason();
    // Morpheus extension: dynamic reprovisioning (Morpheus §7) use and history.
    json history = json::array();
    for (const auto& e : r.reprovision_history()) {
      history.push_back(
          {{"time", e.time_ms()},
           {"policy", e.policy()},
           {"granted", e.granted()},
           {"extra", {{"memory", e.extra().memory_mib()}, {"vCores", e.extra().vcores()}}},
           {"duration", e.duration_ms()},
           {"reason", e.reason()}});
    }
    item["morpheus-reprovisioning"] = {{"budget", r.definition().reprovision_budget_container_ms()},
                                       {"budget-used", r.reprovision_budget_used_container_ms()},
                                       {"history", history}};
    item["resource-allocations"] =
        include_allocations ? yarnAllocationsJson(r.allocations()) : json::array();
    arr.push_back(item);
  }
  return {{"reservations", arr}};
}

json yarnErrorJson(const Status& s) {
  std::string exception;
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      exception = "BadRequestException";
      break;
    case StatusCode::kNotFound:
      exception = "NotFoundException";
      break;
    case StatusCode::kPermissionDenied:
      exception = "ForbiddenException";
      break;
    case StatusCode::kInfeasible:
      exception = "PlanningException";
      break;
    default:
      exception = "WebApplicationException";
      break;
  }
  return {{"RemoteException",
           {{"exception", exception},
            {"message", s.toString()},
            {"javaClassName", "org.apache.hadoop.yarn.webapp." + exception}}}};
}

}  // namespace morpheus::rm
