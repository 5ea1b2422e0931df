#include "harvest/harvest_selection.h"

#include <algorithm>
#include <cmath>

namespace morpheus::rm {

const char* jobLengthName(JobLength l) {
  switch (l) {
    case JobLength::kShort:
      return "short";
    case JobLength::kMedium:
      return "medium";
    case JobLength::kLong:
      return "long";
  }
  return "medium";
}

JobLength lengthType(std::optional<Millis> last_run, const SelectionOptions& o) {
  if (!last_run) return JobLength::kMedium;
  if (*last_run <= o.short_max) return JobLength::kShort;
  if (*last_run >= o.long_min) return JobLength::kLong;
  return JobLength::kMedium;
}

Result<int64_t> maxConcurrentContainers(const std::vector<StageShape>& stages) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < stages.size(); i++) index[stages[i].name] = i;
  // Depth of each stage = 1 + max depth of its dependencies (Kahn's order).
  std::vector<int> depth(stages.size(), 0), missing(stages.size(), 0);
  std::vector<std::vector<size_t>> users(stages.size());
  for (size_t i = 0; i < stages.size(); i++) {
    for (const auto& d : stages[i].depends_on) {
      auto it = index.find(d);
      if (it == index.end()) {
        return invalidArgument("stages[" + std::to_string(i) + "].depends_on",
                               "unknown stage '" + d + "'");
      }
      users[it->second].push_back(i);
      missing[i]++;
    }
  }
  std::vector<size_t> frontier;
  for (size_t i = 0; i < stages.size(); i++)
    if (missing[i] == 0) frontier.push_back(i);
  size_t seen = 0;
  while (!frontier.empty()) {
    size_t s = frontier.back();
    frontier.pop_back();
    seen++;
    for (size_t u : users[s]) {
      depth[u] = std::max(depth[u], depth[s] + 1);
      if (--missing[u] == 0) frontier.push_back(u);
    }
  }
  if (seen != stages.size()) {
    for (size_t i = 0; i < stages.size(); i++) {
      if (missing[i] > 0) {
        return invalidArgument("stages[" + std::to_string(i) + "].depends_on", "cycle");
      }
    }
  }
  std::map<int, int64_t> per_depth;
  for (size_t i = 0; i < stages.size(); i++) per_depth[depth[i]] += stages[i].tasks;
  int64_t best = 0;
  for (const auto& [_, n] : per_depth) best = std::max(best, n);
  return best;
}

double headroom(JobLength type, const HarvestClass& c, double current) {
  double used = current;
  if (type == JobLength::kMedium) used = std::max(c.average, current);
  if (type == JobLength::kLong) used = std::max(c.peak, current);
  return std::clamp(1.0 - used, 0.0, 1.0);
}

int64_t freeSlots(JobLength type, const ClassState& c) {
  if (!c.nodes.empty()) {
    int64_t sum = 0;
    for (const auto& n : c.nodes) {
      auto slots = static_cast<int64_t>(
          std::floor(headroom(type, c.cls, n.current) * static_cast<double>(n.capacity_slots)));
      sum += std::max<int64_t>(0, slots - n.taken_slots);
    }
    return sum;
  }
  auto slots = static_cast<int64_t>(
      std::floor(headroom(type, c.cls, c.current) * static_cast<double>(c.capacity_slots)));
  return std::max<int64_t>(0, slots - c.taken_slots);
}

namespace {

struct Cand {
  std::string id;
  double weight;
  int64_t slots;
};

}  // namespace

double rankingWeight(const SelectionOptions& o, JobLength type, UtilPattern p) {
  auto it = o.weights.find(type);
  if (it == o.weights.end()) return 0;
  auto jt = it->second.find(p);
  return jt == it->second.end() ? 0 : jt->second;
}

std::vector<std::string> selectClasses(JobLength type, int64_t max_concurrent,
                                       const std::vector<ClassState>& classes,
                                       const SelectionOptions& o, double draw) {
  std::vector<Cand> cands;
  for (const auto& c : classes) {
    double w = rankingWeight(o, type, c.cls.pattern);
    if (w <= 0) continue;
    int64_t slots = freeSlots(type, c);
    if (slots > 0) cands.push_back({c.cls.id, w, slots});
  }
  std::vector<const Cand*> fit;
  double total = 0;
  for (const auto& c : cands) {
    if (c.slots >= max_concurrent) {
      fit.push_back(&c);
      total += c.weight;
    }
  }
  if (!fit.empty()) {
    double x = std::clamp(draw, 0.0, 1.0) * total;
    for (const Cand* c : fit) {
      if (x < c->weight) return {c->id};
      x -= c->weight;
    }
    return {fit.back()->id};
  }
  // Combine: best-ranked first, the roomier first among equals.
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    if (a.slots != b.slots) return a.slots > b.slots;
    return a.id < b.id;
  });
  std::vector<std::string> out;
  int64_t sum = 0;
  for (const auto& c : cands) {
    out.push_back(c.id);
    sum += c.slots;
    if (sum >= max_concurrent) return out;
  }
  return {};
}

double headroomMargin(JobLength type, const HarvestClass& c, const NodeSlots& n) {
  const auto cap = static_cast<double>(n.capacity_slots);
  const double used = (1.0 - headroom(type, c, n.current)) * cap;
  return cap - used - static_cast<double>(n.taken_slots);
}

int64_t openSlots(const NodeSlots& n) {
  if (n.open_slots >= 0) return n.open_slots;
  const auto now = static_cast<int64_t>(
      std::floor(std::clamp(1.0 - n.current, 0.0, 1.0) * static_cast<double>(n.capacity_slots)));
  return std::max<int64_t>(0, now - n.taken_slots);
}

bool ranksBefore(double weight_a, double margin_a, double weight_b, double margin_b) {
  if (weight_a != weight_b) return weight_a > weight_b;
  return margin_a > margin_b;
}

std::vector<std::string> rankedFallback(JobLength type, const std::vector<ClassState>& classes,
                                        const SelectionOptions& o) {
  struct Ranked {
    const std::string* id;
    double weight, margin;
  };
  std::vector<Ranked> ranked;
  for (const auto& c : classes) {
    const double w = rankingWeight(o, type, c.cls.pattern);
    std::optional<double> best;
    for (const auto& n : c.nodes) {
      if (openSlots(n) < 1) continue;
      const double m = headroomMargin(type, c.cls, n);
      if (!best || m > *best) best = m;
    }
    if (best) ranked.push_back({&c.cls.id, w, *best});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (ranksBefore(a.weight, a.margin, b.weight, b.margin)) return true;
    if (ranksBefore(b.weight, b.margin, a.weight, a.margin)) return false;
    return *a.id < *b.id;
  });
  std::vector<std::string> out;
  out.reserve(ranked.size());
  for (const auto& r : ranked) out.push_back(*r.id);
  return out;
}

std::optional<sched::PlacementConstraint> harvestConstraint(
    const std::vector<std::string>& classes) {
  if (classes.empty()) return std::nullopt;
  sched::PlacementConstraint c;
  c.key = "harvest-class";
  c.values = classes;
  c.hard = false;
  return c;
}

}  // namespace morpheus::rm
