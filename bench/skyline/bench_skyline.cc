// Skyline LP benchmark (Morpheus §5). A plain main that prints figures; not a
// timed test.
//  1. Fit time of the fast solver (row generation) against K at N = 30 and
//     against N at K = 240: median of several repetitions, both beta modes
//     counted as one fit each (the default relative mode solves twice).
//  2. Relative objective gap to the GLPK reference LP where it is affordable
//     (N <= 30 at K <= 240; K = 1440 and N = 100 only with --reference-large,
//     they take minutes).
// Targets (2-core machine, Release): N=30,K=240 <= 100 ms; N=30,K=1440 <= 2 s;
// gap <= 1e-6.
//
// Instances resemble the runs of a recurring job: a base profile of a few
// stages (ramp, plateau, tail), each run shifted by a few steps, scaled by
// +-20%, with per-step noise and a run length of 80-100% of K.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "inference/model/skyline_fit.h"
#include "report/bench_report.h"

using namespace morpheus;             // NOLINT
using namespace morpheus::inference;  // NOLINT

namespace {

SkylineProblem makeInstance(int n, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // Base profile: 3-6 stages of random height.
  std::vector<double> base(k, 0.0);
  int stages = 3 + static_cast<int>(u(rng) * 4);
  for (int st = 0; st < stages; ++st) {
    int a = static_cast<int>(u(rng) * k * 0.8);
    int len = std::max(1, static_cast<int>((0.1 + 0.4 * u(rng)) * k));
    double h = 10 + 150 * u(rng);
    for (int j = a; j < std::min(k, a + len); ++j) base[j] += h;
  }
  SkylineProblem p;
  p.alpha = 0.5;
  p.beta = 0.1;
  p.beta_relative = true;
  std::normal_distribution<double> noise(0.0, 0.1);
  for (int i = 0; i < n; ++i) {
    int len = std::max(1, static_cast<int>(k * (0.8 + 0.2 * u(rng))));
    int shift = static_cast<int>(u(rng) * std::max(1, k / 20));
    double scale = 0.8 + 0.4 * u(rng);
    std::vector<double> r(len);
    for (int j = 0; j < len; ++j) {
      double b = j >= shift ? base[j - shift] : 0.0;
      r[j] = std::max(0.0, std::round(10 * b * scale * (1 + noise(rng))) / 10);
    }
    p.runs.push_back(std::move(r));
  }
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double timeMs(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Case {
  int n, k;
  int reps;
  int reference_reps;  // 0: no reference
  const char* target;
};

// Prints one line of figures and records them in `fig` under "N<n>_K<k>"; a
// case already measured is printed again without re-running it.
void runCase(const Case& c, nlohmann::json& fig) {
  static std::map<std::pair<int, int>, std::string> done;
  auto it = done.find({c.n, c.k});
  if (it != done.end()) {
    std::printf("%s", it->second.c_str());
    return;
  }
  std::vector<double> fast_ms, ref_ms, gaps;
  double last_obj = 0;
  for (int rep = 0; rep < c.reps; ++rep) {
    SkylineProblem p = makeInstance(c.n, c.k, 1000 + rep);
    Result<SkylineSolution> fast = internalError("not run");
    fast_ms.push_back(timeMs([&] { fast = solveSkyline(p); }));
    if (!fast.isOk()) {
      std::fprintf(stderr, "fast solve failed: %s\n", fast.status().toString().c_str());
      std::exit(1);
    }
    last_obj = fast->objective;
    if (rep < c.reference_reps) {
      Result<SkylineSolution> ref = internalError("not run");
      ref_ms.push_back(timeMs([&] { ref = solveSkylineReference(p); }));
      if (!ref.isOk()) {
        std::fprintf(stderr, "reference solve failed: %s\n", ref.status().toString().c_str());
        std::exit(1);
      }
      gaps.push_back(std::fabs(fast->objective - ref->objective) /
                     std::max(1e-12, std::fabs(ref->objective)));
    }
  }
  char line[512];
  int len = std::snprintf(
      line, sizeof line,
      "N=%-4d K=%-5d fast median %9.2f ms (min %8.2f, max %8.2f, %d reps)  target %-7s", c.n, c.k,
      median(fast_ms), *std::min_element(fast_ms.begin(), fast_ms.end()),
      *std::max_element(fast_ms.begin(), fast_ms.end()), c.reps, c.target);
  if (!gaps.empty()) {
    len +=
        std::snprintf(line + len, sizeof line - len,
                      "  reference median %9.1f ms (%zu reps)  max rel gap %.2e (target 1e-6)",
                      median(ref_ms), ref_ms.size(), *std::max_element(gaps.begin(), gaps.end()));
  } else {
    len += std::snprintf(line + len, sizeof line - len, "  reference skipped");
  }
  std::snprintf(line + len, sizeof line - len, "  objective %.4f\n", last_obj);
  nlohmann::json& f = fig["N" + std::to_string(c.n) + "_K" + std::to_string(c.k)];
  f["fast_median_ms"] = median(fast_ms);
  if (!gaps.empty()) {
    f["reference_median_ms"] = median(ref_ms);
    f["max_relative_gap"] = *std::max_element(gaps.begin(), gaps.end());
  }
  done[{c.n, c.k}] = line;
  std::printf("%s", line);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("skyline", &argc, argv);
  nlohmann::json& fig = report.figures();
  bool reference_large = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--reference-large") == 0) {
      reference_large = true;
    } else {
      std::fprintf(stderr, "usage: %s [--reference-large] [--json]\n", argv[0]);
      return 2;
    }
  }
  std::printf("== skyline LP fit time (alpha 0.5, beta 0.1 relative: two solves) ==\n");
  std::printf("-- against K at N = 30 --\n");
  runCase({30, 60, 9, 5, "-"}, fig);
  runCase({30, 240, 9, 2, "100 ms"}, fig);
  runCase({30, 1440, 5, reference_large ? 1 : 0, "2 s"}, fig);
  std::printf("-- against N at K = 240 --\n");
  runCase({10, 240, 9, 2, "-"}, fig);
  runCase({30, 240, 9, 2, "100 ms"}, fig);
  runCase({100, 240, 5, reference_large ? 1 : 0, "-"}, fig);
  if (!reference_large) {
    std::printf("(K=1440 and N=100 reference: run with --reference-large; minutes)\n");
  }
  report.targets() = {{"N30_K240_fast_median_ms_max", 100},
                      {"N30_K1440_fast_median_ms_max", 2000},
                      {"max_relative_gap_max", 1e-6}};
  report.emit();
  return 0;
}
