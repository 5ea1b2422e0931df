#include "planner/rle.h"

#include <iterator>

namespace morpheus::planner {

Resource RleResource::at(int64_t t) const {
  auto it = runs_.upper_bound(t);
  if (it == runs_.begin()) return Resource();
  return std::prev(it)->second;
}

std::map<int64_t, Resource>::iterator RleResource::split(int64_t t) {
  auto it = runs_.lower_bound(t);
  if (it != runs_.end() && it->first == t) return it;
  Resource v = at(t);
  return runs_.emplace_hint(it, t, v);
}

void RleResource::coalesce(int64_t t) {
  auto it = runs_.find(t);
  if (it == runs_.end()) return;
  if (it == runs_.begin()) {
    if (it->second.isZero()) runs_.erase(it);
    return;
  }
  if (std::prev(it)->second == it->second) runs_.erase(it);
}

void RleResource::add(int64_t start, int64_t end, const Resource& r) {
  if (start >= end || r.isZero()) return;
  auto first = split(start);
  auto last = split(end);
  for (auto it = first; it != last; ++it) it->second += r;
  coalesce(end);
  coalesce(start);
}

Resource RleResource::maxOver(int64_t start, int64_t end) const {
  Resource m;
  if (start >= end) return m;
  auto it = runs_.upper_bound(start);
  if (it != runs_.begin()) m = Resource::max(m, std::prev(it)->second);
  for (; it != runs_.end() && it->first < end; ++it) m = Resource::max(m, it->second);
  return m;
}

std::vector<RleSegment> RleResource::segments(int64_t from, int64_t to) const {
  std::vector<RleSegment> out;
  if (from >= to) return out;
  auto it = runs_.upper_bound(from);
  Resource cur = it == runs_.begin() ? Resource() : std::prev(it)->second;
  int64_t s = from;
  for (; it != runs_.end() && it->first < to; ++it) {
    out.push_back({s, it->first, cur});
    s = it->first;
    cur = it->second;
  }
  out.push_back({s, to, cur});
  return out;
}

void RleResource::fill(int64_t from, int64_t to, std::vector<Resource>& out, size_t offset) const {
  if (from >= to) return;
  auto it = runs_.upper_bound(from);
  Resource cur = it == runs_.begin() ? Resource() : std::prev(it)->second;
  int64_t s = from;
  auto put = [&](int64_t a, int64_t b, const Resource& v) {
    for (int64_t t = a; t < b; ++t) out[offset + static_cast<size_t>(t - from)] = v;
  };
  for (; it != runs_.end() && it->first < to; ++it) {
    put(s, it->first, cur);
    s = it->first;
    cur = it->second;
  }
  put(s, to, cur);
}

void RleResource::eraseBefore(int64_t t) {
  if (runs_.empty()) return;
  Resource v = at(t);
  runs_.erase(runs_.begin(), runs_.lower_bound(t));
  if (!v.isZero()) runs_[t] = v;
  coalesce(t);
}

}  // namespace morpheus::planner
