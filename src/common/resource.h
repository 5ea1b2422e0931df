// The one Resource type (docs/design/planner.md): memory in MiB, virtual cores, and
// optional named extended resources. All comparisons are per dimension; a
// dimension absent from the extended list is zero.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace morpheus {

// Value type; not thread-safe for concurrent writes (as any value). The
// extended list is held behind a pointer that is null while it is empty (the
// common case: memory and vcores only), so a Resource is three words and
// copying, comparing and destroying one touches no list.
class Resource {
 public:
  using Extended = std::vector<std::pair<std::string, int64_t>>;

  Resource() = default;
  Resource(int64_t memory_mib, int64_t vcores) : memory_mib_(memory_mib), vcores_(vcores) {}
  // Copies are inline for the two base dimensions (the scheduler and the
  // simulator copy resources per container); an extended list on either
  // side takes the out-of-line path.
  Resource(const Resource& o) : memory_mib_(o.memory_mib_), vcores_(o.vcores_) {
    if (o.extended_ != nullptr) copyExtended(o);
  }
  Resource(Resource&&) noexcept = default;
  Resource& operator=(Resource&&) noexcept = default;
  Resource& operator=(const Resource& o) {
    memory_mib_ = o.memory_mib_;
    vcores_ = o.vcores_;
    if (o.extended_ != nullptr || extended_ != nullptr) copyExtended(o);
    return *this;
  }
  ~Resource() = default;

  int64_t memoryMib() const { return memory_mib_; }
  int64_t vcores() const { return vcores_; }
  // Extended resources sorted by name; zero-valued entries are not stored.
  const Extended& extended() const { return extended_ != nullptr ? *extended_ : kNoExtended; }
  int64_t extendedValue(const std::string& name) const;

  void setMemoryMib(int64_t v) { memory_mib_ = v; }
  void setVcores(int64_t v) { vcores_ = v; }
  void setExtended(const std::string& name, int64_t value);

  bool isZero() const { return memory_mib_ == 0 && vcores_ == 0 && extended_ == nullptr; }
  bool anyNegative() const;

  // The arithmetic and fitsIn below are inline for the two base dimensions
  // (the scheduler and the simulator call them per container); a resource
  // with extended dimensions takes the out-of-line path.
  Resource& operator+=(const Resource& o) {
    memory_mib_ += o.memory_mib_;
    vcores_ += o.vcores_;
    if (o.extended_ != nullptr) addExtended(o, 1);
    return *this;
  }
  Resource& operator-=(const Resource& o) {
    memory_mib_ -= o.memory_mib_;
    vcores_ -= o.vcores_;
    if (o.extended_ != nullptr) addExtended(o, -1);
    return *this;
  }
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
  Resource operator*(int64_t k) const {
    if (extended_ != nullptr) return scaledExtended(k);
    return Resource(memory_mib_ * k, vcores_ * k);
  }
  bool operator==(const Resource& o) const {
    return memory_mib_ == o.memory_mib_ && vcores_ == o.vcores_ &&
           (extended_ == nullptr ? o.extended_ == nullptr
                                 : o.extended_ != nullptr && *extended_ == *o.extended_);
  }

  // True when every dimension of *this is <= the same dimension of `capacity`.
  bool fitsIn(const Resource& capacity) const {
    if (memory_mib_ > capacity.memory_mib_ || vcores_ > capacity.vcores_) return false;
    return extended_ == nullptr || extendedFitsIn(capacity);
  }
  // Per-dimension max / min.
  static Resource max(const Resource& a, const Resource& b) {
    if (a.extended_ != nullptr || b.extended_ != nullptr) return maxExtended(a, b);
    return Resource(a.memory_mib_ > b.memory_mib_ ? a.memory_mib_ : b.memory_mib_,
                    a.vcores_ > b.vcores_ ? a.vcores_ : b.vcores_);
  }
  static Resource min(const Resource& a, const Resource& b) {
    if (a.extended_ != nullptr || b.extended_ != nullptr) return minExtended(a, b);
    return Resource(a.memory_mib_ < b.memory_mib_ ? a.memory_mib_ : b.memory_mib_,
                    a.vcores_ < b.vcores_ ? a.vcores_ : b.vcores_);
  }
  // Dominant share (DRF): max over dimensions of this/capacity. A dimension
  // with zero capacity and non-zero demand counts as +infinity.
  double dominantShare(const Resource& capacity) const {
    const double s =
        std::max(shareOf(memory_mib_, capacity.memory_mib_), shareOf(vcores_, capacity.vcores_));
    return extended_ == nullptr ? s : extendedDominantShare(capacity, s);
  }
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
  // The out-of-line halves of the inline operations above, for resources
  // with extended dimensions.
  void addExtended(const Resource& o, int64_t sign);
  // extended_ = a copy of o's list (reset when o has none).
  void copyExtended(const Resource& o);
  Resource scaledExtended(int64_t k) const;
  bool extendedFitsIn(const Resource& capacity) const;
  static Resource maxExtended(const Resource& a, const Resource& b);
  static Resource minExtended(const Resource& a, const Resource& b);
  double extendedDominantShare(const Resource& capacity, double base) const;
  static double shareOf(int64_t used, int64_t cap) {
    if (used <= 0) return 0.0;
    if (cap <= 0) return std::numeric_limits<double>::infinity();
    return static_cast<double>(used) / static_cast<double>(cap);
  }

  static inline const Extended kNoExtended{};

  int64_t memory_mib_ = 0;
  int64_t vcores_ = 0;
  std::unique_ptr<Extended> extended_;  // null while empty
};

}  // namespace morpheus
