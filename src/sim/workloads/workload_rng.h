// Counter-based random draws for morpheus-sim workloads.
//
// Every draw is a pure function of (seed, job index, instance index, draw
// name, sub-index): no generator state is shared or advanced, so the order in
// which the engine realises instances, or which strategy runs first, never
// changes a value, and the same seed gives the same workload on any machine.
// The mixing function is splitmix64's finaliser (Steele et al., "Fast
// splittable pseudorandom number generators", OOPSLA'14), which passes
// BigCrush when fed a counter.
//
// Internal to the sim library (workload*.cc); not part of the engine contract.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace morpheus::sim::rng {

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a of a draw name (names are compile-time literals; hashed once per
// Stream, never per draw).
inline uint64_t nameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The draws named `name` of instance `k` of job `job_index` under `seed`;
// k = -1 is used for per-job (not per-instance) attributes. Cheap to copy.
class Stream {
 public:
  Stream(uint64_t seed, uint64_t job_index, int64_t k, std::string_view name)
      : key_(mix(mix(mix(seed) ^ job_index) ^ static_cast<uint64_t>(k)) ^ nameHash(name)) {}

  uint64_t bits(uint64_t i) const { return mix(key_ + i * 0xd1b54a32d192ed03ULL); }
  // Uniform in [0, 1), 53 bits.
  double uniform(uint64_t i) const { return static_cast<double>(bits(i) >> 11) * 0x1.0p-53; }
  double uniform(uint64_t i, double lo, double hi) const { return lo + (hi - lo) * uniform(i); }
  // exp(uniform(log lo, log hi)): scale-free spread between lo and hi (> 0).
  double logUniform(uint64_t i, double lo, double hi) const {
    return std::exp(uniform(i, std::log(lo), std::log(hi)));
  }
  // Standard normal from draws 2i and 2i+1 (Box-Muller).
  double normal(uint64_t i) const {
    double u1 = 1.0 - uniform(2 * i);  // (0, 1]
    double u2 = uniform(2 * i + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Integer in [0, n), n >= 1.
  int64_t below(uint64_t i, int64_t n) const {
    return static_cast<int64_t>(uniform(i) * static_cast<double>(n));
  }

 private:
  uint64_t key_;
};

}  // namespace morpheus::sim::rng
