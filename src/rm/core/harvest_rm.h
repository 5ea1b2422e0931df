// The RM daemon's use of the harvesting classes (Zhang et al.,
// "History-Based Harvesting of Spare Cycles and Storage in Large-Scale
// Datacenters", OSDI'16 §4.1, Algorithm 1). The algorithms live in
// harvest_classes.h (clustering) and harvest_selection.h (class selection);
// this file holds what the RM adds around them: its options (rm.harvest.*),
// the per-job run history record of the state store (table "harvest-runs"),
// and the translation of the RM's nodes and DAG reports into the selector's
// input. Pure: no I/O, no clock, no locks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"
#include "harvest/harvest_classes.h"
#include "harvest/harvest_forecast.h"
#include "harvest/harvest_selection.h"
#include "harvest/harvest_series.h"
#include "reprovision/policy.h"

namespace morpheus::rm {

// The node attribute the RM sets to the node's primary-tenant class id.
inline constexpr const char* kHarvestClassAttribute = "harvest-class";
// The node attribute the RM sets to the node's own id on every node with a
// class, so the hold (rm.harvest.hold) can name the nodes a job may use in
// a hard constraint.
inline constexpr const char* kHarvestNodeAttribute = "harvest-node";
// State-store namespace: job name -> {"length_ms": <last successful run>}.
inline constexpr const char* kHarvestRunsTable = "harvest-runs";
// State-store namespace: primary tenant -> its CPU and memory series
// (encodeTenantUsage), so the classes survive an RM restart.
inline constexpr const char* kHarvestUsageTable = "harvest-usage";

struct HarvestRmOptions {
  // rm.harvest.cluster-every: period of the primary tenants' clustering on the
  // RM's clock (ms; default 24 h, the paper's daily run; 0 = never). It also
  // runs once when the RM starts (a no-op while no NM reported a tenant).
  Millis cluster_every{Millis(86400000)};
  // rm.harvest.short-max / rm.harvest.long-min: job length types; see
  // SelectionOptions (weights are the library's defaults).
  SelectionOptions selection;
  // rm.harvest.max-classes-per-label: k of the k-means within each label
  // (classes; default 4). Other classifier thresholds are the library's.
  int64_t max_classes_per_label = 4;
  // rm.harvest.save-every: how often the tenants' series that got new
  // samples are written to the state store (ms; default 1 h; 0 = only when
  // the RM stops). What a crash loses is at most this much history; each
  // save writes up to ~60 KB per tenant.
  Millis save_every{Millis(3600000)};
  // rm.harvest.hold: how long a job's asks are held while no node is
  // predicted to leave one of its containers a core for the container's
  // whole expected run (harvest_forecast.h) before the ranked fallback
  // applies (ms; default 1 d; 0 = no prediction: the ranked fallback at
  // once). Restart-only, like the other rm.harvest.* keys.
  Millis hold{Millis(86400000)};
  ClassifierOptions classifier() const;
};

// Declares rm.harvest.* (meaning, unit, default) on `s`.
void declareHarvestRmOptions(ConfigSchema& s, HarvestRmOptions* o);
// INVALID_ARGUMENT naming "rm.harvest.long-min" when it is not above
// rm.harvest.short-max.
Status validateHarvestRmOptions(const HarvestRmOptions& o);

// The name a job's run history is kept under: its recurrence key when it has
// one, else its application name ("" for neither: no history).
std::string harvestJobName(const std::string& app_name, const std::string& recurrence_key);
std::string encodeHarvestRun(Millis length);
// INTERNAL naming the job for a record that is not {"length_ms": n > 0}.
Result<Millis> decodeHarvestRun(const std::string& job, const std::string& value);

// A tenant's series as a state-store value: {"cpu": S, "memory": S} with
// S = {"step_ms": n, "buckets": [[start_ms, avg, peak, samples], ...]},
// avg and peak rounded to four decimals.
std::string encodeTenantUsage(const UtilSeries& cpu, const UtilSeries& memory);
struct TenantUsage {
  UtilSeries cpu, memory;
};
// The series back, at `history`'s base step and capacity. INTERNAL naming the
// tenant (and the field) for a value that does not decode (the RM then skips
// the record with a warning: the reports rebuild the history).
Result<TenantUsage> decodeTenantUsage(const std::string& tenant, const std::string& value,
                                      const HarvestHistory& history);

// The AM's stage reports as the selector's DAG (names and dependencies).
std::vector<StageShape> stageShapes(const std::vector<reprovision::StageState>& stages);

// The selector's draw for an app: FNV-1a of its id scaled to [0, 1), so the
// same app gets the same choice on every re-selection and in every run.
double harvestDraw(const std::string& app_id);

// Containers of `container` that fit in `room` (0 for a zero container).
int64_t containersIn(const Resource& room, const Resource& container);

// One node as the selector sees it.
struct HarvestNode {
  NodeId id;
  std::string cls;     // its class id ("" = none)
  Resource total;      // registered capacity
  double current = 0;  // its primary tenant's latest CPU utilisation (fraction)
  Resource used;       // what secondary containers hold on it now
  // What the scheduler can still place on it now (its NM's harvest offer
  // less `used`); nullopt = unknown (the ranked fallback then reads
  // `current`: NodeSlots::open_slots).
  std::optional<Resource> free{};
};

// Each class with its members' current utilisation (mean over its nodes)
// and its capacity in containers of `container` (sum over its nodes of the
// containers that fit the node's registered total) and the containers of
// that size other secondaries already take there. Classes without nodes
// get capacity 0. The same per node in ClassState::nodes, so Algorithm 1
// counts the containers each node can hold under its own headroom (a
// container runs on one node; a class's room pooled over nodes that each
// hold less than one would count containers no node can run). Each node's
// NodeSlots::open_slots is the containers its `free` holds (-1 without).
std::vector<ClassState> classStates(const std::vector<HarvestClass>& classes,
                                    const std::vector<HarvestNode>& nodes,
                                    const Resource& container);

// The hold's margin of `n` (predictedMargin) for a container of
// `container` expected to run `run` from `now`, its tenant's history
// `forecast` and its class's `pattern`: capacity = the containers its
// registered total holds; taken = those `used` holds, for the whole run (the
// RM does not know when the containers there end, nor the NM's reserve:
// the NM's offer nets the reserve off at placement, the prediction does
// not). The node fits when the margin is >= 1.
double harvestNodeMargin(TenantForecast& forecast, UtilPattern pattern, const HarvestNode& n,
                         const Resource& container, TimePoint now, Millis run);

}  // namespace morpheus::rm
