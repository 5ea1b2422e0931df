// The one Resource type (docs/design/planner.md): memory in MiB, virtual cores, and
// optional named extended resources. All comparisons are per dimension; a
// dimension absent from the extended list is zero.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace morpheus {

class Resource {
 public:
  Resource() = default;
  Resource(int64_t memory_mib, int64_t vcores) : memory_mib_(memory_mib), vcores_(vcores) {}

  int64_t memoryMib() const { return memory_mib_; }
  int64_t vcores() const { return vcores_; }
  // Extended resources sorted by name; zero-valued entries are not stored.
  const std::vector<std::pair<std::string, int64_t>>& extended() const { return extended_; }
  int64_t extendedValue(const std::string& name) const;

  void setMemoryMib(int64_t v) { memory_mib_ = v; }
  void setVcores(int64_t v) { vcores_ = v; }
  void setExtended(const std::string& name, int64_t value);

  bool isZero() const { return memory_mib_ == 0 && vcores_ == 0 && extended_.empty(); }
  bool anyNegative() const;

  Resource& operator+=(const Resource& o);
  Resource& operator-=(const Resource& o);
  Resource operator+(const Resource& o) const {
    Resource r = *this;
    r += o;
    return r;
  }
  Resource operator-(const Resource& o) const {
    Resource r = *this;
    r -= o;
    return r;
  }
  Resource operator*(int64_t k) const;
  bool operator==(const Resource& o) const = default;

  // True when every dimension of *this is <= the same dimension of `capacity`.
  bool fitsIn(const Resource& capacity) const;
  // Per-dimension max / min.
  static Resource max(const Resource& a, const Resource& b);
  static Resource min(const Resource& a, const Resource& b);
  // Dominant share (DRF): max over dimensions of this/capacity. A dimension
  // with zero capacity and non-zero demand counts as +infinity.
  double dominantShare(const Resource& capacity) const;
  // How many copies of `unit` fit into *this (per-dimension floor, minimum over
  // the dimensions `unit` uses). `unit` must be non-zero.
  int64_t countFitting(const Resource& unit) const;
  // How many copies of `unit` it takes to cover *this (per-dimension ceiling,
  // maximum over the dimensions `unit` uses; negative dimensions count as 0).
  // `unit` must be non-zero.
  int64_t countCovering(const Resource& unit) const;

  // "<memory:4096 MiB, vcores:2>" (extended appended as name:value).
  std::string toString() const;

  // Parses "memory=4096,vcores=2[,gpu=1]" (units: MiB, cores). Errors name `field`.
  static Result<Resource> parse(const std::string& text, const std::string& field);

 private:
  int64_t memory_mib_ = 0;
  int64_t vcores_ = 0;
  std::vector<std::pair<std::string, int64_t>> extended_;
};

}  // namespace morpheus
