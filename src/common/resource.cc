#include "common/resource.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace morpheus {

int64_t Resource::extendedValue(const std::string& name) const {
  for (const auto& [n, v] : extended()) {
    if (n == name) return v;
  }
  return 0;
}

void Resource::setExtended(const std::string& name, int64_t value) {
  if (extended_ == nullptr) {
    if (value != 0) extended_ = std::make_unique<Extended>(Extended{{name, value}});
    return;
  }
  Extended& ext = *extended_;
  auto it = std::lower_bound(ext.begin(), ext.end(), name,
                             [](const auto& e, const std::string& n) { return e.first < n; });
  if (it != ext.end() && it->first == name) {
    if (value == 0) {
      ext.erase(it);
      if (ext.empty()) extended_.reset();  // null while empty (isZero, the fast paths)
    } else {
      it->second = value;
    }
  } else if (value != 0) {
    ext.insert(it, {name, value});
  }
}

bool Resource::anyNegative() const {
  if (memory_mib_ < 0 || vcores_ < 0) return true;
  const Extended& ext = extended();
  return std::any_of(ext.begin(), ext.end(), [](const auto& e) { return e.second < 0; });
}

void Resource::copyExtended(const Resource& o) {
  if (o.extended_ == nullptr) {
    extended_.reset();
  } else if (extended_ != nullptr) {
    *extended_ = *o.extended_;
  } else {
    extended_ = std::make_unique<Extended>(*o.extended_);
  }
}

void Resource::addExtended(const Resource& o, int64_t sign) {
  if (&o == this) {  // r += r: read a copy while r's list changes
    const Resource copy = o;
    addExtended(copy, sign);
    return;
  }
  for (const auto& [n, v] : o.extended()) setExtended(n, extendedValue(n) + sign * v);
}

Resource Resource::scaledExtended(int64_t k) const {
  Resource r(memory_mib_ * k, vcores_ * k);
  for (const auto& [n, v] : extended()) r.setExtended(n, v * k);
  return r;
}

bool Resource::extendedFitsIn(const Resource& capacity) const {
  for (const auto& [n, v] : extended()) {
    if (v > capacity.extendedValue(n)) return false;
  }
  // Negative extended values in *this are always within capacity >= 0; nothing else to check.
  return true;
}

Resource Resource::maxExtended(const Resource& a, const Resource& b) {
  Resource r(std::max(a.memory_mib_, b.memory_mib_), std::max(a.vcores_, b.vcores_));
  for (const auto& [n, v] : a.extended()) r.setExtended(n, std::max(v, b.extendedValue(n)));
  for (const auto& [n, v] : b.extended()) r.setExtended(n, std::max(v, a.extendedValue(n)));
  return r;
}

Resource Resource::minExtended(const Resource& a, const Resource& b) {
  Resource r(std::min(a.memory_mib_, b.memory_mib_), std::min(a.vcores_, b.vcores_));
  for (const auto& [n, v] : a.extended()) r.setExtended(n, std::min(v, b.extendedValue(n)));
  for (const auto& [n, v] : b.extended()) r.setExtended(n, std::min(v, a.extendedValue(n)));
  return r;
}

double Resource::extendedDominantShare(const Resource& capacity, double base) const {
  double s = base;
  for (const auto& [n, v] : extended()) s = std::max(s, shareOf(v, capacity.extendedValue(n)));
  return s;
}

int64_t Resource::countFitting(const Resource& unit) const {
  MORPHEUS_CHECK(!unit.isZero() && !unit.anyNegative(), "countFitting: unit must be positive");
  int64_t n = std::numeric_limits<int64_t>::max();
  auto lim = [&n](int64_t have, int64_t need) {
    if (need > 0) n = std::min(n, have <= 0 ? 0 : have / need);
  };
  lim(memory_mib_, unit.memory_mib_);
  lim(vcores_, unit.vcores_);
  for (const auto& [name, v] : unit.extended()) lim(extendedValue(name), v);
  return n;
}

int64_t Resource::countCovering(const Resource& unit) const {
  MORPHEUS_CHECK(!unit.isZero() && !unit.anyNegative(), "countCovering: unit must be positive");
  int64_t n = 0;
  auto cover = [&n](int64_t have, int64_t need) {
    if (need > 0 && have > 0) n = std::max(n, (have + need - 1) / need);
  };
  cover(memory_mib_, unit.memory_mib_);
  cover(vcores_, unit.vcores_);
  for (const auto& [name, v] : unit.extended()) cover(extendedValue(name), v);
  return n;
}

std::string Resource::toString() const {
  std::ostringstream os;
  os << "<memory:" << memory_mib_ << " MiB, vcores:" << vcores_;
  for (const auto& [n, v] : extended()) os << ", " << n << ":" << v;
  os << ">";
  return os.str();
}

Result<Resource> Resource::parse(const std::string& text, const std::string& field) {
  Resource r;
  if (text.empty()) return invalidArgument(field, "empty resource; expected memory=MIB,vcores=N");
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalidArgument(field, "'" + item + "' is not name=value");
    }
    std::string name = item.substr(0, eq);
    std::string val = item.substr(eq + 1);
    int64_t v = 0;
    try {
      size_t pos = 0;
      v = std::stoll(val, &pos);
      if (pos != val.size()) throw std::invalid_argument(val);
    } catch (const std::exception&) {
      return invalidArgument(field + "." + name, "'" + val + "' is not an integer");
    }
    if (v < 0) return invalidArgument(field + "." + name, "must be >= 0");
    if (name == "memory" || name == "memory-mb" || name == "memory_mib") {
      r.memory_mib_ = v;
    } else if (name == "vcores" || name == "vCores") {
      r.vcores_ = v;
    } else {
      r.setExtended(name, v);
    }
  }
  return r;
}

}  // namespace morpheus
