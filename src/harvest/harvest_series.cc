#include "harvest/harvest_series.h"

#include <algorithm>

#include "common/status.h"

namespace morpheus::rm {
namespace {

TimePoint floorTo(TimePoint t, Millis step) {
  int64_t ms = toEpochMs(t), s = step.count();
  int64_t q = ms >= 0 ? ms / s : (ms - s + 1) / s;
  return fromEpochMs(q * s);
}

}  // namespace

UtilSeries::UtilSeries(Millis base_step, size_t capacity) : step_(base_step), capacity_(capacity) {
  MORPHEUS_CHECK(base_step.count() > 0 && capacity >= 2,
                 "UtilSeries: base_step must be > 0 and capacity >= 2");
}

Result<UtilSeries> UtilSeries::restore(Millis base_step, size_t capacity, Millis step,
                                       const std::vector<Bucket>& buckets) {
  if (step < base_step || step.count() % base_step.count() != 0) {
    return invalidArgument(
        "step", "must be a multiple of the base step " + std::to_string(base_step.count()) + " ms");
  }
  UtilSeries out(base_step, capacity);
  out.step_ = step;
  for (size_t i = 0; i < buckets.size(); i++) {
    const Bucket& b = buckets[i];
    const bool ordered = out.buckets_.empty() || b.start > out.buckets_.back().start;
    if (!ordered || floorTo(b.start, step) != b.start || b.samples < 1 || b.avg < 0 ||
        b.avg > b.peak || b.peak > 1) {
      return invalidArgument("buckets[" + std::to_string(i) + "]",
                             "must start on the step grid after the previous one, with 0 <= "
                             "avg <= peak <= 1 and samples >= 1");
    }
    out.buckets_.push_back(b);
  }
  if (out.buckets_.size() > capacity) out.coarsen();
  return out;
}

bool UtilSeries::add(TimePoint t, double value) {
  value = std::clamp(value, 0.0, 1.0);
  TimePoint start = floorTo(t, step_);
  if (!buckets_.empty() && start < buckets_.back().start) return false;
  if (buckets_.empty() || start > buckets_.back().start) {
    buckets_.push_back({start, value, value, 1});
    if (buckets_.size() > capacity_) coarsen();
    return true;
  }
  Bucket& b = buckets_.back();
  b.avg = (b.avg * static_cast<double>(b.samples) + value) / static_cast<double>(b.samples + 1);
  b.peak = std::max(b.peak, value);
  b.samples++;
  return true;
}

void UtilSeries::coarsen() {
  while (buckets_.size() > capacity_) {
    step_ *= 2;
    std::deque<Bucket> merged;
    for (const auto& b : buckets_) {
      TimePoint start = floorTo(b.start, step_);
      if (!merged.empty() && merged.back().start == start) {
        Bucket& m = merged.back();
        int64_t n = m.samples + b.samples;
        m.avg = (m.avg * static_cast<double>(m.samples) + b.avg * static_cast<double>(b.samples)) /
                static_cast<double>(n);
        m.peak = std::max(m.peak, b.peak);
        m.samples = n;
      } else {
        Bucket c = b;
        c.start = start;
        merged.push_back(c);
      }
    }
    buckets_ = std::move(merged);
  }
}

std::vector<double> UtilSeries::regular() const {
  std::vector<double> out;
  if (buckets_.empty()) return out;
  TimePoint t = buckets_.front().start;
  for (const auto& b : buckets_) {
    while (t < b.start) {
      out.push_back(out.empty() ? b.avg : out.back());
      t += step_;
    }
    out.push_back(b.avg);
    t += step_;
  }
  return out;
}

HarvestHistory::HarvestHistory(Millis base_step, size_t capacity)
    : base_step_(base_step), capacity_(capacity) {}

HarvestHistory::Pair& HarvestHistory::slot(std::map<std::string, Pair>& m, const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) {
    it = m.emplace(key, Pair{UtilSeries(base_step_, capacity_), UtilSeries(base_step_, capacity_)})
             .first;
  }
  return it->second;
}

void HarvestHistory::record(const NodeId& node, const std::string& tenant, TimePoint t, double cpu,
                            double memory) {
  Pair& n = slot(nodes_, node.value());
  n.cpu.add(t, cpu);
  n.memory.add(t, memory);
  tenant_of_[node.value()] = tenant;
  Pair& p = slot(tenants_, tenant);
  p.cpu.add(t, cpu);
  p.memory.add(t, memory);
  changed_.insert(tenant);
}

void HarvestHistory::restoreTenant(const std::string& tenant, UtilSeries cpu, UtilSeries memory) {
  tenants_.erase(tenant);
  tenants_.emplace(tenant, Pair{std::move(cpu), std::move(memory)});
}

std::vector<std::string> HarvestHistory::takeChangedTenants() {
  std::vector<std::string> out(changed_.begin(), changed_.end());
  changed_.clear();
  return out;
}

const UtilSeries* HarvestHistory::nodeCpu(const NodeId& node) const {
  auto it = nodes_.find(node.value());
  return it == nodes_.end() ? nullptr : &it->second.cpu;
}
const UtilSeries* HarvestHistory::tenantCpu(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? nullptr : &it->second.cpu;
}
const UtilSeries* HarvestHistory::tenantMemory(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? nullptr : &it->second.memory;
}
std::vector<std::string> HarvestHistory::tenants() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : tenants_) out.push_back(k);
  return out;
}
std::string HarvestHistory::tenantOf(const NodeId& node) const {
  auto it = tenant_of_.find(node.value());
  return it == tenant_of_.end() ? "" : it->second;
}
void HarvestHistory::forgetNode(const NodeId& node) {
  nodes_.erase(node.value());
  tenant_of_.erase(node.value());
}

}  // namespace morpheus::rm
