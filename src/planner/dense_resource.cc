#include "planner/dense_resource.h"

#include "common/status.h"

namespace morpheus::planner {

namespace {
void collect(const Resource& r, std::vector<std::string>& names) {
  for (const auto& e : r.extended()) names.push_back(e.first);
}
}  // namespace

DenseDims::DenseDims(const PlanningProblem& p) {
  collect(p.capacity, names_);
  for (const auto& r : p.load) collect(r, names_);
  if (p.def != nullptr) {
    for (const auto& st : p.def->stages) collect(st.capability, names_);
  }
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
  k_ = 2 + names_.size();
  cap_.assign(k_, 0);
  put(p.capacity, cap_.data());
}

void DenseDims::put(const Resource& r, int64_t* row) const {
  std::fill(row, row + k_, 0);
  row[0] = r.memoryMib();
  row[1] = r.vcores();
  // Both lists are sorted by name: one merge pass.
  size_t i = 0;
  for (const auto& [name, v] : r.extended()) {
    while (i < names_.size() && names_[i] < name) ++i;
    MORPHEUS_CHECK(i < names_.size() && names_[i] == name,
                   "DenseDims::put: dimension outside the problem");
    row[2 + i] = v;
  }
}

}  // namespace morpheus::planner
