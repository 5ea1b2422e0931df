#include "scheduler/policies/policy_factory.h"

#include <functional>
#include <utility>

namespace morpheus::sched {
namespace {

using Maker = std::function<std::shared_ptr<const QueueOrderingPolicy>(const PolicySettings&)>;

template <typename P>
std::pair<std::string_view, Maker> entry(std::string_view name) {
  return {name, [](const PolicySettings&) { return std::make_shared<const P>(); }};
}

const std::vector<std::pair<std::string_view, Maker>>& table() {
  static const std::vector<std::pair<std::string_view, Maker>> t = {
      entry<DrfOrderingPolicy>("drf"),
      entry<FifoOrderingPolicy>("fifo"),
      {"carbyne",
       [](const PolicySettings& s) {
         return std::make_shared<const CarbyneOrderingPolicy>(s.carbyne);
       }},
      {"phoenix",
       [](const PolicySettings& s) {
         return std::make_shared<const PhoenixOrderingPolicy>(kPhoenixBypassBound, s.phoenix);
       }},
  };
  return t;
}

}  // namespace

std::vector<std::string> policyNames() {
  std::vector<std::string> names;
  for (const auto& [name, make] : table()) names.emplace_back(name);
  return names;
}

Result<std::shared_ptr<const QueueOrderingPolicy>> makeOrderingPolicy(
    std::string_view name, std::string_view field, const PolicySettings& settings) {
  for (const auto& [known, make] : table()) {
    if (known == name) return make(settings);
  }
  std::string list;
  for (const auto& n : policyNames()) list += (list.empty() ? "" : ", ") + n;
  return invalidArgument(std::string(field),
                         "unknown policy '" + std::string(name) + "' (" + list + ")");
}

}  // namespace morpheus::sched
