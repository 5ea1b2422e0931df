// Primary tenants' utilisation history in the RM (Zhang et al.,
// OSDI'16 §4.1: classes are computed from each tenant's recent utilisation
// series). Bounded and downsampled: a series holds at most `capacity`
// buckets; when a new bucket would exceed it, the bucket width doubles and
// neighbouring buckets merge (average weighted by sample count, peak = max),
// so a series always covers its whole history at the finest width that fits.
//
// Values are fractions of the node's capacity in [0, 1] (clamped). A tenant
// series mixes the samples of all its nodes: each bucket averages them.
// No I/O, no clock: time comes in with each sample. Not thread-safe (the RM
// calls it under its runtime lock).
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace morpheus::rm {

class UtilSeries {
 public:
  struct Bucket {
    TimePoint start;
    double avg = 0;
    double peak = 0;
    int64_t samples = 0;
  };
  // `base_step` > 0, `capacity` >= 2 (asserted).
  UtilSeries(Millis base_step, size_t capacity);
  // A series restored from saved buckets at width `step` (a multiple of
  // `base_step`): starts on the step grid and increasing, avg <= peak, both
  // in [0, 1], samples >= 1; more than `capacity` buckets are coarsened.
  // INVALID_ARGUMENT naming "step" or "buckets[i]".
  static Result<UtilSeries> restore(Millis base_step, size_t capacity, Millis step,
                                    const std::vector<Bucket>& buckets);

  // Samples must come in non-decreasing time; an older one is dropped (false).
  bool add(TimePoint t, double value);
  Millis step() const { return step_; }
  const std::deque<Bucket>& buckets() const { return buckets_; }
  // Bucket averages, oldest first, resampled to the current step with gaps
  // filled by the previous value (what the FFT consumes).
  std::vector<double> regular() const;

 private:
  void coarsen();
  Millis step_;
  const size_t capacity_;
  std::deque<Bucket> buckets_;
};

// Per-node and per-tenant CPU and memory series.
class HarvestHistory {
 public:
  HarvestHistory(Millis base_step = Millis(60000), size_t capacity = 1440);
  // `cpu` and `memory` as fractions of the node's capacity.
  void record(const NodeId& node, const std::string& tenant, TimePoint t, double cpu,
              double memory);
  const UtilSeries* nodeCpu(const NodeId& node) const;
  const UtilSeries* tenantCpu(const std::string& tenant) const;
  const UtilSeries* tenantMemory(const std::string& tenant) const;
  std::vector<std::string> tenants() const;
  // The primary tenant last reported by `node` ("" if none).
  std::string tenantOf(const NodeId& node) const;
  void forgetNode(const NodeId& node);
  // Replaces a tenant's series (restored from the state store); newer
  // samples are added to them. Series built with this history's base step and
  // capacity are expected.
  void restoreTenant(const std::string& tenant, UtilSeries cpu, UtilSeries memory);
  // The tenants with samples recorded since the last call, once each.
  std::vector<std::string> takeChangedTenants();
  Millis baseStep() const { return base_step_; }
  size_t capacity() const { return capacity_; }

 private:
  struct Pair {
    UtilSeries cpu, memory;
  };
  Pair& slot(std::map<std::string, Pair>& m, const std::string& key);
  const Millis base_step_;
  const size_t capacity_;
  std::map<std::string, Pair> nodes_;
  std::map<std::string, Pair> tenants_;
  std::map<std::string, std::string> tenant_of_;
  std::set<std::string> changed_;  // tenants recorded since takeChangedTenants
};

}  // namespace morpheus::rm
