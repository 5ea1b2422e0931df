// Primary-tenant classes for harvesting (Zhang et al., "History-
// Based Harvesting of Spare Cycles and Storage in Large-Scale Datacenters",
// OSDI'16 §4.1). Run daily over each tenant's recent utilisation series:
//  1. label: the FFT of the series (mean removed). A series whose standard
//     deviation is at most `constant_max_stddev` is constant; else it is
//     periodic when its strongest frequency (with its two neighbouring bins,
//     for leakage) holds at least `periodic_min_power_share` of the
//     non-constant spectral power, and that frequency repeats at least
//     `periodic_min_cycles` times in the series; else unpredictable.
//  2. within each label, k-means (k = min(max_classes_per_label, tenants),
//     deterministic start: tenants spread evenly by average) on the feature
//     (average, peak) utilisation, at most 100 iterations.
//  3. each class is tagged with its members' average utilisation (mean of
//     averages) and peak (max of peaks), the values class selection uses.
// Pure: no I/O, no clock. Deterministic for equal input. Cost O(T n log n)
// for T tenants of n samples plus k-means O(T k iterations).
#pragma once

#include <complex>
#include <string>
#include <vector>

#include "common/status.h"

namespace morpheus::rm {

enum class UtilPattern { kPeriodic, kConstant, kUnpredictable };
const char* patternName(UtilPattern p);

// Radix-2 FFT of `x` zero-padded to the next power of two (forward, no
// scaling). A small in-house one: the series are short (<= a few thousand
// points, once a day), so a dependency on libfftw3 buys nothing.
std::vector<std::complex<double>> fft(const std::vector<double>& x);

struct ClassifierOptions {
  double constant_max_stddev = 0.05;      // utilisation fraction
  double periodic_min_power_share = 0.5;  // of the non-DC power
  int periodic_min_cycles = 2;            // full periods within the series
  int max_classes_per_label = 4;
};

struct TenantSeries {
  std::string tenant;
  std::vector<double> util;  // fractions of capacity, regularly sampled, oldest first
};

struct TenantProfile {
  std::string tenant;
  UtilPattern pattern = UtilPattern::kUnpredictable;
  double average = 0;
  double peak = 0;
  double period_samples = 0;  // dominant period (periodic only), in samples
};

struct HarvestClass {
  std::string id;  // "<pattern>-<index>", e.g. "periodic-0"
  UtilPattern pattern = UtilPattern::kUnpredictable;
  std::vector<std::string> tenants;
  double average = 0;  // mean of the members' averages
  double peak = 0;     // max of the members' peaks
};

// INVALID_ARGUMENT naming "util" for an empty series.
Result<TenantProfile> profileTenant(const TenantSeries& s, const ClassifierOptions& o);

// Profiles and clusters every tenant; classes ordered by pattern, then index.
// INVALID_ARGUMENT naming the tenant ("series[3].util") for an empty series
// or "options.*" for out-of-range options; no partial result.
Result<std::vector<HarvestClass>> clusterTenants(const std::vector<TenantSeries>& series,
                                                 const ClassifierOptions& o);

}  // namespace morpheus::rm
