// Strong id types (docs/design/conventions.md "Names"): an AppId cannot be passed where a
// NodeId is expected. Ids are opaque strings on the wire.
#pragma once

#include <compare>
#include <functional>
#include <ostream>
#include <string>
#include <utility>

namespace morpheus {

template <typename Tag>
class StrongId {
 public:
  StrongId() = default;
  explicit StrongId(std::string v) : v_(std::move(v)) {}

  const std::string& value() const { return v_; }
  bool empty() const { return v_.empty(); }

  auto operator<=>(const StrongId&) const = default;
  bool operator==(const StrongId&) const = default;

 private:
  std::string v_;
};

template <typename Tag>
std::ostream& operator<<(std::ostream& os, const StrongId<Tag>& id) {
  return os << id.value();
}

struct NodeIdTag {};
struct AppIdTag {};
struct ContainerIdTag {};
struct ReservationIdTag {};
struct ProposalIdTag {};
struct UserIdTag {};
struct JobKeyTag {};
struct RunIdTag {};

using NodeId = StrongId<NodeIdTag>;
using AppId = StrongId<AppIdTag>;
using ContainerId = StrongId<ContainerIdTag>;
using ReservationId = StrongId<ReservationIdTag>;
using ProposalId = StrongId<ProposalIdTag>;
using UserId = StrongId<UserIdTag>;
// A recurring job's identity across runs (YARN "recurrence key" / pipeline id).
using JobKey = StrongId<JobKeyTag>;
using RunId = StrongId<RunIdTag>;

}  // namespace morpheus

// Deliberately not noexcept: libstdc++ then stores each element's hash code
// in unordered containers, so a lookup neither rehashes the chain's string
// keys to find its bucket's end nor compares keys whose codes differ. With a
// noexcept hash, hashing and comparing container ids took a large share of a
// simulated heartbeat and of the RM's strand
// (bench/rm_open_load/RESULTS.md).
template <typename Tag>
struct std::hash<morpheus::StrongId<Tag>> {
  size_t operator()(const morpheus::StrongId<Tag>& id) const {
    return std::hash<std::string>()(id.value());
  }
};
