#include "sim/phoenix/phoenix_mixes.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace morpheus::sim {

namespace {

double logUniformMean(double lo, double hi) { return (hi - lo) / std::log(hi / lo); }

// Fills the solved fields: the long jobs' mean task count that gives the
// trace's share of task-seconds in long jobs, and a uniform range around it.
TraceMixShape solve(TraceMixShape s) {
  const double short_work =
      (1.0 + s.short_tasks_max) / 2.0 * logUniformMean(s.short_task_lo_s, s.cutoff_s);
  const double long_task = logUniformMean(s.cutoff_s, s.long_task_hi_s);
  s.long_tasks_mean = s.long_task_seconds / (1 - s.long_task_seconds) * (1 - s.long_job_share) *
                      short_work / (s.long_job_share * long_task);
  s.long_tasks_lo = std::max<int32_t>(1, static_cast<int32_t>(std::lround(s.long_tasks_mean / 2)));
  s.long_tasks_hi = static_cast<int32_t>(std::lround(2 * s.long_tasks_mean)) - s.long_tasks_lo;
  return s;
}

// Published: long_job_share and long_task_seconds (Hawk Table 1), cutoff_s
// and short_partition (the Hawk/Eagle simulator's settings per trace: GOOG
// cutoff 1129.532 s, big partition 83%; CCc 272.783 s, 91%; YH 90.5811 s,
// 98%). Ours: the task-duration ranges beyond the cutoff and short jobs'
// task counts.
const TraceMixShape kGoogle =
    solve({"google", 0.1000, 0.8365, 1129.532, 0.17, 10, 5000, 50, 0, 0, 0});
const TraceMixShape kYahoo = solve({"yahoo", 0.0941, 0.9831, 90.5811, 0.02, 2, 2000, 50, 0, 0, 0});
const TraceMixShape kCloudera =
    solve({"cloudera", 0.0502, 0.9291, 272.783, 0.09, 5, 3000, 50, 0, 0, 0});

}  // namespace

Result<PhoenixMix> parsePhoenixMix(const std::string& name, const std::string& field) {
  if (name == "synthetic") return PhoenixMix::kSynthetic;
  if (name == "google") return PhoenixMix::kGoogle;
  if (name == "yahoo") return PhoenixMix::kYahoo;
  if (name == "cloudera") return PhoenixMix::kCloudera;
  return invalidArgument(field, "unknown mix '" + name + "' (synthetic, google, yahoo, cloudera)");
}

std::string_view phoenixMixName(PhoenixMix mix) {
  switch (mix) {
    case PhoenixMix::kGoogle:
      return "google";
    case PhoenixMix::kYahoo:
      return "yahoo";
    case PhoenixMix::kCloudera:
      return "cloudera";
    case PhoenixMix::kSynthetic:
      break;
  }
  return "synthetic";
}

const TraceMixShape& traceMixShape(PhoenixMix mix) {
  switch (mix) {
    case PhoenixMix::kYahoo:
      return kYahoo;
    case PhoenixMix::kCloudera:
      return kCloudera;
    default:
      return kGoogle;
  }
}

std::vector<ConstraintKind> tableTwoKinds() {
  // Phoenix Table II (Google trace): relative slowdown per constraint kind.
  const std::vector<std::pair<std::string, double>> table = {
      {"isa", 2.03},       {"num_nodes", 1.96},   {"ethernet_speed", 1.91},
      {"num_cores", 1.90}, {"max_disks", 1.90},   {"kernel", 1.77},
      {"platform", 1.77},  {"clock_speed", 1.76}, {"min_disks", 0.91}};
  std::vector<ConstraintKind> out;
  for (const auto& [name, slowdown] : table) {
    ConstraintKind k;
    k.name = name;
    k.target_slowdown = slowdown;
    k.job_share = 0.6 / static_cast<double>(table.size());
    k.node_share = 0.5;
    k.short_partition_first = slowdown < 1;
    out.push_back(k);
  }
  return out;
}

Status validateConstraintKinds(const std::vector<ConstraintKind>& kinds) {
  std::set<std::string> names;
  double total = 0;
  for (size_t i = 0; i < kinds.size(); i++) {
    const ConstraintKind& k = kinds[i];
    const std::string f = "kinds[" + std::to_string(i) + "]";
    if (k.name.empty()) return invalidArgument(f + ".name", "must not be empty");
    if (!names.insert(k.name).second)
      return invalidArgument(f + ".name", "duplicate '" + k.name + "'");
    if (!(k.job_share >= 0 && k.job_share <= 1))
      return invalidArgument(f + ".job_share", "must be in [0, 1]");
    if (!(k.node_share > 0 && k.node_share <= 1))
      return invalidArgument(f + ".node_share", "must be in (0, 1]");
    if (k.short_nodes < -1) return invalidArgument(f + ".short_nodes", "must be >= -1");
    if (!(k.target_slowdown > 0)) return invalidArgument(f + ".target_slowdown", "must be > 0");
    total += k.job_share;
  }
  if (total > 1 + 1e-9) return invalidArgument("kinds", "job shares sum to more than 1");
  return Status::ok();
}

int32_t shortPartitionNodes(int32_t nodes, double short_partition) {
  return static_cast<int32_t>(std::floor(static_cast<double>(nodes) * short_partition));
}

void stepNodeShares(std::vector<ConstraintKind>& kinds, const std::vector<double>& measured,
                    std::vector<NodeShareSearch>& search, int32_t short_pool) {
  const double max_step = std::log(1.5);
  const double x_min = std::log(kMinNodeShare);
  for (size_t k = 0; k < kinds.size() && k < measured.size() && k < search.size(); k++) {
    ConstraintKind& kind = kinds[k];
    NodeShareSearch& b = search[k];
    if (!(measured[k] > 0)) continue;  // unmeasured: keep the share
    if (short_pool > 0 && kind.short_nodes < 0) {
      kind.short_nodes = kind.short_partition_first
                             ? short_pool
                             : static_cast<int32_t>(
                                   std::llround(kind.node_share * static_cast<double>(short_pool)));
    }
    const double x = std::log(kind.node_share);
    const double e = std::log(measured[k] / kind.target_slowdown);
    if (!b.direction_set) {
      // On every node a kind is no constraint: its slowdown is 1 at share 1,
      // so a short_partition_first kind first moves towards 1 as general
      // nodes are added (rises from below 1, falls from above).
      b.rises = kind.short_partition_first && measured[k] < 1;
      b.direction_set = true;
    }
    // A short_partition_first kind whose slowdown moved clearly against the
    // assumed direction between two distinct shares: flip it, forget the
    // bracket.
    if (kind.short_partition_first && b.has_prev && std::abs(x - b.prev_x) > 0.05) {
      const double de = e - b.prev_e;
      if (std::abs(de) > kFlipThreshold && (de > 0) != ((x > b.prev_x) == b.rises)) {
        b.rises = !b.rises;
        b.has_lo = b.has_hi = false;
        b.flips++;
      }
    }
    const double f = b.rises ? e : -e;
    const double prev_f = b.rises ? b.prev_e : -b.prev_e;
    // Bracket update; the Illinois halving of an end kept twice in a row.
    // An end on the wrong side of the new measurement (stale: the other
    // kinds moved since) is dropped.
    if (f < 0) {
      b.has_lo = true;
      b.lo_x = x;
      b.lo_f = f;
      b.kept_lo = 0;
      if (b.has_hi && b.hi_x <= x) b.has_hi = false;
      if (b.has_hi && ++b.kept_hi >= 2) b.hi_f /= 2;
    } else {
      b.has_hi = true;
      b.hi_x = x;
      b.hi_f = f;
      b.kept_hi = 0;
      if (b.has_lo && b.lo_x >= x) b.has_lo = false;
      if (b.has_lo && ++b.kept_lo >= 2) b.lo_f /= 2;
    }
    double next;
    if (b.has_lo && b.has_hi) {
      const double w = b.hi_x - b.lo_x;
      next = b.lo_x - b.lo_f * w / (b.hi_f - b.lo_f);
      next = std::clamp(next, b.lo_x + 0.1 * w, b.hi_x - 0.1 * w);
    } else {
      double slope = 1;
      if (b.has_prev && std::abs(x - b.prev_x) > 1e-9) {
        const double s = (f - prev_f) / (x - b.prev_x);
        if (s > 0.02 && s < 50) slope = s;
      }
      next = x - std::clamp(f / slope, -max_step, max_step);
    }
    b.has_prev = true;
    b.prev_x = x;
    b.prev_e = e;
    // The general share pinned at a bound and still asked to go past it: the
    // short partition takes the step instead, one node.
    if (short_pool > 0 && !kind.short_partition_first) {
      const bool more = next > 0 && x >= -1e-9 && kind.short_nodes < short_pool;
      const bool fewer = next < x_min && x <= x_min + 1e-9 && kind.short_nodes > 0;
      if (more || fewer) {
        kind.short_nodes += more ? 1 : -1;
        b.count_steps++;
        b.has_lo = b.has_hi = b.has_prev = false;
        b.kept_lo = b.kept_hi = 0;
      }
    }
    kind.node_share = std::exp(std::clamp(next, x_min, 0.0));
  }
}

Result<std::vector<ConstraintKind>> readPhoenixCalibration(const std::string& path, PhoenixMix mix,
                                                           const std::string& field) {
  std::ifstream in(path);
  if (!in) return invalidArgument(field, "cannot read calibration file '" + path + "'");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalidArgument(field, "'" + path + "' is not a JSON object");
  if (!j.contains("mix") || !j["mix"].is_string() ||
      j["mix"].get<std::string>() != std::string(phoenixMixName(mix))) {
    return invalidArgument(field, "'" + path + "' is not a calibration of mix '" +
                                      std::string(phoenixMixName(mix)) + "'");
  }
  if (!j.contains("kinds") || !j["kinds"].is_array() || j["kinds"].empty())
    return invalidArgument(field, "'" + path + "' has no kinds");
  std::vector<ConstraintKind> kinds;
  for (const auto& e : j["kinds"]) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        !e.contains("job_share") || !e["job_share"].is_number() || !e.contains("node_share") ||
        !e["node_share"].is_number() || !e.contains("target_slowdown") ||
        !e["target_slowdown"].is_number()) {
      return invalidArgument(field, "'" + path + "': kinds[" + std::to_string(kinds.size()) +
                                        "] needs name, target_slowdown, job_share, node_share");
    }
    ConstraintKind k;
    k.name = e["name"].get<std::string>();
    k.target_slowdown = e["target_slowdown"].get<double>();
    k.job_share = e["job_share"].get<double>();
    k.node_share = e["node_share"].get<double>();
    if (e.contains("short_partition_first")) {
      if (!e["short_partition_first"].is_boolean()) {
        return invalidArgument(field, "'" + path + "': kinds[" + std::to_string(kinds.size()) +
                                          "].short_partition_first must be true or false");
      }
      k.short_partition_first = e["short_partition_first"].get<bool>();
    }
    if (e.contains("short_nodes")) {
      if (!e["short_nodes"].is_number_integer()) {
        return invalidArgument(field, "'" + path + "': kinds[" + std::to_string(kinds.size()) +
                                          "].short_nodes must be an integer");
      }
      k.short_nodes = e["short_nodes"].get<int32_t>();
    }
    kinds.push_back(k);
  }
  if (Status s = validateConstraintKinds(kinds); !s.isOk())
    return invalidArgument(field, "'" + path + "': " + s.message());
  return kinds;
}

}  // namespace morpheus::sim
