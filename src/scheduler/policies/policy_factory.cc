#include "scheduler/policies/policy_factory.h"

#include <functional>
#include <utility>

#include "scheduler/policies/carbyne_policy.h"
#include "scheduler/policies/phoenix_policy.h"

namespace morpheus::sched {
namespace {

using Maker = std::function<std::shared_ptr<const QueueOrderingPolicy>()>;

template <typename P>
std::pair<std::string_view, Maker> entry(std::string_view name) {
  return {name, [] { return std::make_shared<const P>(); }};
}

const std::vector<std::pair<std::string_view, Maker>>& table() {
  static const std::vector<std::pair<std::string_view, Maker>> t = {
      entry<DrfOrderingPolicy>("drf"),
      entry<FifoOrderingPolicy>("fifo"),
      entry<CarbyneOrderingPolicy>("carbyne"),
      entry<PhoenixOrderingPolicy>("phoenix"),
  };
  return t;
}

}  // namespace

std::vector<std::string> policyNames() {
  std::vector<std::string> names;
  for (const auto& [name, make] : table()) names.emplace_back(name);
  return names;
}

Result<std::shared_ptr<const QueueOrderingPolicy>> makeOrderingPolicy(std::string_view name,
                                                                      std::string_view field) {
  for (const auto& [known, make] : table()) {
    if (known == name) return make();
  }
  std::string list;
  for (const auto& n : policyNames()) list += (list.empty() ? "" : ", ") + n;
  return invalidArgument(std::string(field),
                         "unknown policy '" + std::string(name) + "' (" + list + ")");
}

}  // namespace morpheus::sched
