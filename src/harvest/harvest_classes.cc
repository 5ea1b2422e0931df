#include "harvest/harvest_classes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <numeric>

namespace morpheus::rm {

const char* patternName(UtilPattern p) {
  switch (p) {
    case UtilPattern::kPeriodic:
      return "periodic";
    case UtilPattern::kConstant:
      return "constant";
    case UtilPattern::kUnpredictable:
      return "unpredictable";
  }
  return "unpredictable";
}

std::vector<std::complex<double>> fft(const std::vector<double>& x) {
  size_t n = 1;
  while (n < x.size()) n <<= 1;
  std::vector<std::complex<double>> a(n);
  for (size_t i = 0; i < x.size(); i++) a[i] = x[i];
  // Bit-reversal permutation, then iterative butterflies.
  for (size_t i = 1, j = 0; i < n; i++) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    double ang = -2 * std::numbers::pi / static_cast<double>(len);
    std::complex<double> wl(std::cos(ang), std::sin(ang));
    for (size_t i = 0; i < n; i += len) {
      std::complex<double> w(1);
      for (size_t k = 0; k < len / 2; k++) {
        auto u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
        w *= wl;
      }
    }
  }
  return a;
}

namespace {

// The label of a non-constant series from its spectrum (mean removed).
UtilPattern spectralLabel(const std::vector<double>& util, double mean, const ClassifierOptions& o,
                          double* period) {
  std::vector<double> centred(util.size());
  for (size_t i = 0; i < util.size(); i++) centred[i] = util[i] - mean;
  auto spec = fft(centred);
  const size_t n = spec.size(), half = n / 2;
  std::vector<double> power(half + 1, 0);
  double total = 0;
  for (size_t k = 1; k <= half; k++) {
    power[k] = std::norm(spec[k]);
    total += power[k];
  }
  if (total <= 0) return UtilPattern::kConstant;
  size_t best = 1;
  for (size_t k = 2; k <= half; k++) {
    if (power[k] > power[best]) best = k;
  }
  double band =
      power[best] + (best > 1 ? power[best - 1] : 0) + (best < half ? power[best + 1] : 0);
  // Frequency bin k of the padded length n: k/n cycles per sample, so the
  // series holds util.size() * k / n cycles. Padding only interpolates the spectrum:
  // a series of N samples resolves frequencies to one cycle per N samples,
  // so the cycles it can show are a whole number, the nearest one. Taken
  // unrounded, the padded grid misplaces the frequency by up to half a
  // padded bin: a daily wave over two days (N = 576, n = 1024) peaks between
  // bins 3 and 4, and at bin 3 it would count 1.69 cycles, below 2. The
  // period follows from the whole cycles (576 / 2 = 288 samples, a day).
  const double cycles = std::round(static_cast<double>(util.size()) * static_cast<double>(best) /
                                   static_cast<double>(n));
  if (band / total >= o.periodic_min_power_share && cycles >= o.periodic_min_cycles) {
    *period = static_cast<double>(util.size()) / cycles;
    return UtilPattern::kPeriodic;
  }
  return UtilPattern::kUnpredictable;
}

Status validate(const ClassifierOptions& o) {
  if (o.constant_max_stddev < 0)
    return invalidArgument("options.constant_max_stddev", "must be >= 0");
  if (o.periodic_min_power_share <= 0 || o.periodic_min_power_share > 1)
    return invalidArgument("options.periodic_min_power_share", "must be in (0, 1]");
  if (o.periodic_min_cycles < 1)
    return invalidArgument("options.periodic_min_cycles", "must be >= 1");
  if (o.max_classes_per_label < 1)
    return invalidArgument("options.max_classes_per_label", "must be >= 1");
  return Status::ok();
}

double dist2(const TenantProfile& p, double avg, double peak) {
  return (p.average - avg) * (p.average - avg) + (p.peak - peak) * (p.peak - peak);
}

// k-means on (average, peak); returns the cluster index of each profile.
std::vector<int> kmeans(const std::vector<TenantProfile>& ps, int k) {
  std::vector<size_t> order(ps.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ps[a].average < ps[b].average; });
  std::vector<double> ca(k), cp(k);
  for (int j = 0; j < k; j++) {
    size_t pick = order[(static_cast<size_t>(j) * (ps.size() - 1)) / std::max(1, k - 1)];
    ca[j] = ps[pick].average;
    cp[j] = ps[pick].peak;
  }
  std::vector<int> assign(ps.size(), -1);
  for (int iter = 0; iter < 100; iter++) {
    bool changed = false;
    for (size_t i = 0; i < ps.size(); i++) {
      int best = 0;
      for (int j = 1; j < k; j++) {
        if (dist2(ps[i], ca[j], cp[j]) < dist2(ps[i], ca[best], cp[best])) best = j;
      }
      if (assign[i] != best) changed = true;
      assign[i] = best;
    }
    if (!changed) break;
    for (int j = 0; j < k; j++) {
      double sa = 0, sp = 0;
      int n = 0;
      for (size_t i = 0; i < ps.size(); i++) {
        if (assign[i] != j) continue;
        sa += ps[i].average;
        sp += ps[i].peak;
        n++;
      }
      if (n > 0) {
        ca[j] = sa / n;
        cp[j] = sp / n;
      }
    }
  }
  return assign;
}

}  // namespace

Result<TenantProfile> profileTenant(const TenantSeries& s, const ClassifierOptions& o) {
  if (s.util.empty()) return invalidArgument("util", "tenant '" + s.tenant + "' has no samples");
  TenantProfile p;
  p.tenant = s.tenant;
  double sum = 0, peak = 0;
  for (double v : s.util) {
    sum += v;
    peak = std::max(peak, v);
  }
  const double mean = sum / static_cast<double>(s.util.size());
  double var = 0;
  for (double v : s.util) var += (v - mean) * (v - mean);
  var /= static_cast<double>(s.util.size());
  p.average = mean;
  p.peak = peak;
  p.pattern = std::sqrt(var) <= o.constant_max_stddev
                  ? UtilPattern::kConstant
                  : spectralLabel(s.util, mean, o, &p.period_samples);
  return p;
}

Result<std::vector<HarvestClass>> clusterTenants(const std::vector<TenantSeries>& series,
                                                 const ClassifierOptions& o) {
  if (Status st = validate(o); !st.isOk()) return st;
  std::map<UtilPattern, std::vector<TenantProfile>> by_label;
  for (size_t i = 0; i < series.size(); i++) {
    auto p = profileTenant(series[i], o);
    if (!p.isOk()) {
      return invalidArgument("series[" + std::to_string(i) + "].util", p.status().message());
    }
    by_label[p->pattern].push_back(*p);
  }
  std::vector<HarvestClass> out;
  for (auto& [label, ps] : by_label) {
    int k = std::min<int>(o.max_classes_per_label, static_cast<int>(ps.size()));
    std::vector<int> assign = kmeans(ps, k);
    std::vector<HarvestClass> cls(k);
    std::vector<int> members(k, 0);
    for (size_t i = 0; i < ps.size(); i++) {
      HarvestClass& c = cls[assign[i]];
      c.tenants.push_back(ps[i].tenant);
      c.average += ps[i].average;
      c.peak = std::max(c.peak, ps[i].peak);
      members[assign[i]]++;
    }
    // Empty clusters vanish; the rest are numbered by increasing average.
    std::vector<HarvestClass> kept;
    for (int j = 0; j < k; j++) {
      if (members[j] == 0) continue;
      cls[j].average /= members[j];
      cls[j].pattern = label;
      kept.push_back(std::move(cls[j]));
    }
    std::sort(kept.begin(), kept.end(),
              [](const HarvestClass& a, const HarvestClass& b) { return a.average < b.average; });
    for (size_t j = 0; j < kept.size(); j++) {
      kept[j].id = std::string(patternName(label)) + "-" + std::to_string(j);
      out.push_back(std::move(kept[j]));
    }
  }
  return out;
}

}  // namespace morpheus::rm
