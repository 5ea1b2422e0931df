#include "rm/core/harvest_rm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace morpheus::rm {

void declareHarvestRmOptions(ConfigSchema& s, HarvestRmOptions* o) {
  s.addDuration("rm.harvest.cluster-every", &o->cluster_every, Millis(86400000), Millis(0),
                "Harvesting (OSDI'16 §4.1): how often the RM clusters the primary tenants "
                "(FFT label + k-means over each tenant's CPU history) and tags every node with "
                "its tenant's class (node attribute harvest-class); also once at start. "
                "0 = never (no classes, no class selection).");
  s.addDuration("rm.harvest.short-max", &o->selection.short_max, Millis(5 * 60 * 1000), Millis(1),
                "Harvesting class selection: a job whose last successful run took at most this "
                "long is short.");
  s.addDuration("rm.harvest.long-min", &o->selection.long_min, Millis(60 * 60 * 1000), Millis(1),
                "Harvesting class selection: a job whose last successful run took at least "
                "this long is long (between short-max and this: medium; never run: medium).");
  s.addDuration("rm.harvest.save-every", &o->save_every, Millis(3600000), Millis(0),
                "Harvesting: how often the primary tenants' usage series that got new samples "
                "are saved in the state store (table harvest-usage), so the classes come back "
                "after an RM restart or failover; at most this much history is lost on a crash. "
                "0 = only when the RM stops.");
  s.addDuration("rm.harvest.hold", &o->hold, Millis(86400000), Millis(0),
                "Harvesting: a job's asks go only to nodes whose primary tenant's history "
                "predicts a core for the job's expected container run (its asks' expected "
                "duration, else its last successful run, else rm.harvest.long-min); while no node "
                "fits they are held, past the scheduler's soft-constraint delay, for at most this "
                "long, then take the ranked fallback. 0 = no prediction: the ranked fallback at "
                "once.");
  s.addInt("rm.harvest.max-classes-per-label", &o->max_classes_per_label, 4, 1, 64, "classes",
           "Harvesting: most classes per utilisation pattern (periodic, constant, "
           "unpredictable), the k of the k-means.");
}

Status validateHarvestRmOptions(const HarvestRmOptions& o) {
  if (o.selection.long_min <= o.selection.short_max) {
    return invalidArgument("rm.harvest.long-min", "must be above rm.harvest.short-max");
  }
  return Status::ok();
}

ClassifierOptions HarvestRmOptions::classifier() const {
  ClassifierOptions c;
  c.max_classes_per_label = static_cast<int>(max_classes_per_label);
  return c;
}

std::string harvestJobName(const std::string& app_name, const std::string& recurrence_key) {
  return recurrence_key.empty() ? app_name : recurrence_key;
}

std::string encodeHarvestRun(Millis length) {
  return nlohmann::json{{"length_ms", length.count()}}.dump();
}

Result<Millis> decodeHarvestRun(const std::string& job, const std::string& value) {
  auto j = nlohmann::json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("length_ms") ||
      !j["length_ms"].is_number_integer() || j["length_ms"].get<int64_t>() <= 0) {
    return internalError("corrupt harvest run history of job '" + job + "': " + value);
  }
  return Millis(j["length_ms"].get<int64_t>());
}

namespace {

nlohmann::json seriesJson(const UtilSeries& s) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const auto& b : s.buckets()) {
    // Four decimals (0.01% of a node) keep a 1,440-bucket series near 60 KB.
    auto r4 = [](double v) { return std::round(v * 1e4) / 1e4; };
    buckets.push_back(
        nlohmann::json::array({toEpochMs(b.start), r4(b.avg), r4(b.peak), b.samples}));
  }
  return {{"step_ms", s.step().count()}, {"buckets", buckets}};
}

Result<UtilSeries> seriesFrom(const nlohmann::json& j, const HarvestHistory& h) {
  if (!j.is_object() || !j.contains("step_ms") || !j["step_ms"].is_number_integer() ||
      !j.contains("buckets") || !j["buckets"].is_array()) {
    return invalidArgument("step_ms", "missing, or buckets missing");
  }
  std::vector<UtilSeries::Bucket> buckets;
  for (const auto& b : j["buckets"]) {
    if (!b.is_array() || b.size() != 4 || !b[0].is_number_integer() || !b[1].is_number() ||
        !b[2].is_number() || !b[3].is_number_integer()) {
      return invalidArgument("buckets[" + std::to_string(buckets.size()) + "]",
                             "must be [start_ms, avg, peak, samples]");
    }
    buckets.push_back({fromEpochMs(b[0].get<int64_t>()), b[1].get<double>(), b[2].get<double>(),
                       b[3].get<int64_t>()});
  }
  return UtilSeries::restore(h.baseStep(), h.capacity(), Millis(j["step_ms"].get<int64_t>()),
                             buckets);
}

}  // namespace

std::string encodeTenantUsage(const UtilSeries& cpu, const UtilSeries& memory) {
  return nlohmann::json{{"cpu", seriesJson(cpu)}, {"memory", seriesJson(memory)}}.dump();
}

Result<TenantUsage> decodeTenantUsage(const std::string& tenant, const std::string& value,
                                      const HarvestHistory& history) {
  auto j = nlohmann::json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return internalError("corrupt harvest usage of tenant '" + tenant + "': not a JSON object");
  }
  auto part = [&](const char* name) -> Result<UtilSeries> {
    auto s = seriesFrom(j.contains(name) ? j[name] : nlohmann::json(), history);
    if (!s.isOk()) {
      return internalError("corrupt harvest usage of tenant '" + tenant + "': " + name + "." +
                           s.status().message());
    }
    return s;
  };
  MORPHEUS_ASSIGN_OR_RETURN(UtilSeries cpu, part("cpu"));
  MORPHEUS_ASSIGN_OR_RETURN(UtilSeries memory, part("memory"));
  return TenantUsage{std::move(cpu), std::move(memory)};
}

std::vector<StageShape> stageShapes(const std::vector<reprovision::StageState>& stages) {
  std::vector<StageShape> out;
  out.reserve(stages.size());
  for (const auto& st : stages) {
    StageShape s{st.name, st.tasks, {}};
    for (size_t d : st.deps) {
      if (d < stages.size()) s.depends_on.push_back(stages[d].name);
    }
    out.push_back(std::move(s));
  }
  return out;
}

double harvestDraw(const std::string& app_id) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : app_id) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return static_cast<double>(h >> 11) / static_cast<double>(uint64_t{1} << 53);
}

int64_t containersIn(const Resource& room, const Resource& container) {
  if (container.isZero()) return 0;
  int64_t fit = std::numeric_limits<int64_t>::max();
  if (container.memoryMib() > 0) fit = room.memoryMib() / container.memoryMib();
  if (container.vcores() > 0) fit = std::min(fit, room.vcores() / container.vcores());
  return std::max<int64_t>(0, fit);
}

std::vector<ClassState> classStates(const std::vector<HarvestClass>& classes,
                                    const std::vector<HarvestNode>& nodes,
                                    const Resource& container) {
  std::vector<ClassState> out;
  out.reserve(classes.size());
  for (const auto& c : classes) {
    ClassState st{c, 0, 0};
    int members = 0;
    double current = 0;
    for (const auto& n : nodes) {
      if (n.cls != c.id) continue;
      members++;
      current += n.current;
      int64_t fit = containersIn(n.total, container);
      int64_t taken = fit - containersIn(Resource::max(n.total - n.used, Resource()), container);
      st.capacity_slots += fit;
      st.taken_slots += taken;
      const int64_t open =
          n.free ? containersIn(Resource::max(*n.free, Resource()), container) : int64_t{-1};
      st.nodes.push_back({n.current, fit, taken, open});
    }
    st.current = members > 0 ? current / members : 0;
    out.push_back(std::move(st));
  }
  return out;
}

double harvestNodeMargin(TenantForecast& forecast, UtilPattern pattern, const HarvestNode& n,
                         const Resource& container, TimePoint now, Millis run) {
  const int64_t capacity = containersIn(n.total, container);
  const int64_t taken =
      capacity - containersIn(Resource::max(n.total - n.used, Resource()), container);
  return predictedMargin(forecast, pattern, n.current, static_cast<double>(capacity),
                         static_cast<double>(taken), {}, now, run);
}

}  // namespace morpheus::rm
