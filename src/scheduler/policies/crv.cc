#include "scheduler/policies/crv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace morpheus::sched {

namespace {

bool parseNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// "5.10.0-21-amd64" -> {5, 10, 0, 21}; non-numeric components stop parsing.
std::vector<int64_t> versionParts(const std::string& s) {
  std::vector<int64_t> parts;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') j++;
    if (j == i) break;
    int64_t v = 0;
    std::from_chars(s.data() + i, s.data() + j, v);
    parts.push_back(v);
    if (j >= s.size() || (s[j] != '.' && s[j] != '-')) break;
    i = j + 1;
  }
  return parts;
}

bool versionAtLeast(const std::string& have, const std::string& want) {
  std::vector<int64_t> a = versionParts(have), b = versionParts(want);
  if (a.empty() || b.empty()) return false;
  size_t n = std::max(a.size(), b.size());
  a.resize(n, 0);
  b.resize(n, 0);
  return !std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

PlacementConstraint hardForm(const PlacementConstraint& c) {
  PlacementConstraint h = c;
  h.hard = true;
  std::sort(h.values.begin(), h.values.end());
  return h;
}

}  // namespace

bool constraintMatches(const PlacementConstraint& c, const NodeAttributes& attrs) {
  auto it = attrs.find(c.key);
  if (it == attrs.end()) return false;
  switch (c.op) {
    case ConstraintOp::kIn:
      return c.values.empty() ||
             std::find(c.values.begin(), c.values.end(), it->second) != c.values.end();
    case ConstraintOp::kAtLeast: {
      double have = 0, want = 0;
      return !c.values.empty() && parseNumber(it->second, &have) &&
             parseNumber(c.values[0], &want) && have >= want;
    }
    case ConstraintOp::kVersionAtLeast:
      return !c.values.empty() && versionAtLeast(it->second, c.values[0]);
  }
  return false;
}

namespace {

// describeConstraint(c) appended to `out`, for `c` whose values are sorted
// (kIn sorts them; the other operators read values[0] as given).
void appendDescription(const PlacementConstraint& c, std::string& out) {
  out += c.key;
  switch (c.op) {
    case ConstraintOp::kAtLeast:
      out += " >= ";
      out += c.values.empty() ? "?" : c.values[0];
      return;
    case ConstraintOp::kVersionAtLeast:
      out += " >= v";
      out += c.values.empty() ? "?" : c.values[0];
      return;
    case ConstraintOp::kIn:
      break;
  }
  if (c.values.empty()) {
    out += " present";
    return;
  }
  out += " in {";
  for (size_t i = 0; i < c.values.size(); i++) {
    if (i > 0) out += ',';
    out += c.values[i];
  }
  out += '}';
}

}  // namespace

std::string describeConstraint(const PlacementConstraint& c) {
  std::string out;
  if (c.op != ConstraintOp::kIn || std::is_sorted(c.values.begin(), c.values.end())) {
    appendDescription(c, out);
    return out;
  }
  PlacementConstraint sorted = c;
  std::sort(sorted.values.begin(), sorted.values.end());
  appendDescription(sorted, out);
  return out;
}

ConstraintResourceVector::NodeSlot* ConstraintResourceVector::addNode(const NodeId& node,
                                                                      const NodeAttributes& attrs,
                                                                      int64_t free_vcores,
                                                                      int64_t vcores) {
  NodeSlot& n = nodes_[node];
  n.attrs = attrs;
  n.free_vcores = free_vcores;
  n.vcores = vcores < 0 ? free_vcores : vcores;
  n.long_vcores = 0;
  n.resources.clear();
  n.kinds.clear();
  for (auto& [name, r] : resources_) {
    if (!constraintMatches(r.constraint, attrs)) continue;
    n.resources.push_back(&r);
    r.nodes.push_back(node);
    r.supply_vcores += free_vcores;
  }
  for (auto& [name, k] : kinds_) {
    if (!constraintMatches(k.constraint, attrs)) continue;
    n.kinds.push_back(&k);
    k.nodes++;
    k.vcores += n.vcores;
  }
  version_++;
  return &n;
}

void ConstraintResourceVector::removeNode(const NodeId& node) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  for (Tracked* r : it->second.resources) {
    r->supply_vcores -= it->second.free_vcores;
    r->nodes.erase(std::find(r->nodes.begin(), r->nodes.end(), node));
  }
  for (Kind* k : it->second.kinds) {
    k->nodes--;
    k->vcores -= it->second.vcores;
    k->long_vcores -= it->second.long_vcores;
  }
  nodes_.erase(it);
  version_++;
}

ConstraintResourceVector::NodeSlot* ConstraintResourceVector::setAttributes(
    const NodeId& node, const NodeAttributes& attrs) {
  auto it = nodes_.find(node);
  const int64_t free_vcores = it == nodes_.end() ? 0 : it->second.free_vcores;
  const int64_t vcores = it == nodes_.end() ? 0 : it->second.vcores;
  const int64_t long_vcores = it == nodes_.end() ? 0 : it->second.long_vcores;
  removeNode(node);
  NodeSlot* n = addNode(node, attrs, free_vcores, vcores);
  longHeldChanged(n, long_vcores);
  return n;
}

void ConstraintResourceVector::longHeldChanged(NodeSlot* node, int64_t delta) {
  if (node == nullptr || delta == 0) return;
  node->long_vcores += delta;
  for (Kind* k : node->kinds) k->long_vcores += delta;
}

bool ConstraintResourceVector::mayHoldLong(const NodeSlot* node, int64_t vcores,
                                           double share) const {
  return mayHoldLong(node, vcores, [share](double) { return share; });
}

std::vector<ConstraintResourceVector::KindEntry> ConstraintResourceVector::kinds() const {
  std::vector<KindEntry> out;
  out.reserve(kinds_.size());
  for (const auto& [name, k] : kinds_)
    out.push_back({name, k.nodes, k.vcores, k.long_vcores, scarce(k), shortWorkShare(k)});
  return out;
}

void ConstraintResourceVector::workGranted(const std::vector<PlacementConstraint>& constraints,
                                           double vcore_ms, bool long_work, TimePoint now,
                                           Millis half_life) {
  for (const auto& c : constraints) {
    if (!c.hard) continue;
    auto it = kinds_.find(nameOf(c));
    if (it == kinds_.end()) continue;
    Kind& k = it->second;
    if (k.work_half_life == Millis(0)) k.work_since = k.work_at = now;
    k.work_half_life = half_life;
    if (now > k.work_at) {
      const double d = std::exp2(-static_cast<double>((now - k.work_at).count()) /
                                 static_cast<double>(std::max<int64_t>(1, half_life.count())));
      k.short_work *= d;
      k.long_work *= d;
      k.work_at = now;
    }
    (long_work ? k.long_work : k.short_work) += vcore_ms;
  }
}

double ConstraintResourceVector::shortWorkShare(const Kind& k) {
  const double all = k.short_work + k.long_work;
  if (all <= 0 || k.work_half_life <= Millis(0) || k.work_at - k.work_since < k.work_half_life)
    return -1;
  return k.short_work / all;
}

void ConstraintResourceVector::noteKind(const std::string& name, const PlacementConstraint& hard) {
  auto [it, added] = kinds_.try_emplace(name);
  if (!added) return;
  Kind& k = it->second;
  k.constraint = hard;
  for (auto& [id, n] : nodes_) {
    if (!constraintMatches(k.constraint, n.attrs)) continue;
    n.kinds.push_back(&k);
    k.nodes++;
    k.vcores += n.vcores;
    k.long_vcores += n.long_vcores;
  }
}

void ConstraintResourceVector::deferFreeChanges(
    std::function<int64_t(const NodeId&)> take_deferred) {
  take_deferred_ = std::move(take_deferred);
  dormant_ = take_deferred_ && resources_.empty() && layout_ == 1;
}

void ConstraintResourceVector::nodeFreeChanged(NodeSlot* node, int64_t delta) {
  if (node == nullptr || delta == 0) return;
  node->free_vcores += delta;
  for (Tracked* r : node->resources) r->supply_vcores += delta;
  if (!node->resources.empty()) version_++;
}

const std::string& ConstraintResourceVector::nameOf(const PlacementConstraint& c) const {
  scratch_.clear();
  if (std::is_sorted(c.values.begin(), c.values.end())) {
    // hardForm(c) has c's values: its description is c's.
    appendDescription(c, scratch_);
  } else {
    scratch_ = describeConstraint(hardForm(c));
  }
  return scratch_;
}

std::map<std::string, ConstraintResourceVector::Tracked>::iterator ConstraintResourceVector::track(
    const PlacementConstraint& c) {
  auto it = resources_.find(nameOf(c));
  if (it != resources_.end()) return it;
  PlacementConstraint h = hardForm(c);
  if (dormant_) {
    for (auto& [id, n] : nodes_) n.free_vcores += take_deferred_(id);
    dormant_ = false;
  }
  it = resources_.try_emplace(describeConstraint(h)).first;
  layout_++;
  noteKind(it->first, h);
  Tracked& r = it->second;
  r.constraint = std::move(h);
  for (auto& [id, n] : nodes_) {
    if (!constraintMatches(r.constraint, n.attrs)) continue;
    n.resources.push_back(&r);
    r.nodes.push_back(id);
    r.supply_vcores += n.free_vcores;
  }
  return it;
}

void ConstraintResourceVector::untrack(std::map<std::string, Tracked>::iterator it) {
  Tracked* r = &it->second;
  for (const NodeId& id : r->nodes) {
    auto& v = nodes_[id].resources;
    v.erase(std::find(v.begin(), v.end(), r));
  }
  resources_.erase(it);
  layout_++;
}

void ConstraintResourceVector::changeDemand(const std::vector<PlacementConstraint>& constraints,
                                            int64_t vcores, Millis duration, int64_t count) {
  if (count == 0) return;
  const double s = static_cast<double>(duration.count());
  const double n = static_cast<double>(count);
  for (const auto& c : constraints) {
    if (!c.hard) continue;
    auto it = track(c);
    Tracked& r = it->second;
    r.refs += count;
    r.demand_vcores += std::max<int64_t>(1, vcores) * count;
    r.sum_s += s * n;
    r.sum_s2 += s * s * n;
    if (r.refs == 0) untrack(it);
  }
  version_++;
}

Millis ConstraintResourceVector::waitOf(const Tracked& r) {
  if (r.refs <= 0 || r.sum_s <= 0 || r.nodes.empty()) return Millis(0);
  double rho = r.supply_vcores <= 0
                   ? kMaxUtilisation
                   : static_cast<double>(r.demand_vcores) / static_cast<double>(r.supply_vcores);
  rho = std::min(rho, kMaxUtilisation);
  const double mean = r.sum_s / static_cast<double>(r.refs);
  const double second = r.sum_s2 / static_cast<double>(r.refs);
  const double w = rho / (1.0 - rho) * second / (2.0 * mean);
  return Millis(static_cast<int64_t>(std::llround(w)));
}

Millis ConstraintResourceVector::estimatedWait(
    const std::vector<PlacementConstraint>& constraints) const {
  Millis out(0);
  for (const auto& c : constraints) {
    if (!c.hard) continue;
    auto it = resources_.find(nameOf(c));
    if (it != resources_.end()) out = std::max(out, waitOf(it->second));
  }
  return out;
}

Millis ConstraintResourceVector::estimatedWait(const std::vector<PlacementConstraint>& constraints,
                                               Resolved& cache) const {
  if (cache.layout != layout_) {
    cache.resources.clear();
    for (const auto& c : constraints) {
      if (!c.hard) continue;
      auto it = resources_.find(nameOf(c));
      if (it != resources_.end()) cache.resources.push_back(&it->second);
    }
    cache.layout = layout_;
  }
  Millis out(0);
  for (const Tracked* r : cache.resources) {
    if (r->wait_version != version_) {
      r->wait = waitOf(*r);
      r->wait_version = version_;
    }
    out = std::max(out, r->wait);
  }
  return out;
}

ConstraintResourceVector::Entry ConstraintResourceVector::entryOf(const Tracked& r) {
  Entry e;
  e.resource = describeConstraint(r.constraint);
  e.demand_vcores = r.demand_vcores;
  e.supply_vcores = r.supply_vcores;
  e.nodes = static_cast<int32_t>(r.nodes.size());
  e.ratio = r.supply_vcores > 0
                ? static_cast<double>(r.demand_vcores) / static_cast<double>(r.supply_vcores)
                : std::numeric_limits<double>::infinity();
  e.estimated_wait = waitOf(r);
  return e;
}

std::vector<ConstraintResourceVector::Entry> ConstraintResourceVector::entries() const {
  std::vector<Entry> out;
  out.reserve(resources_.size());
  for (const auto& [name, r] : resources_) out.push_back(entryOf(r));
  return out;
}

}  // namespace morpheus::sched
