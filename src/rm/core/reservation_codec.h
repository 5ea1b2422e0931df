// JSON encoding of planner definitions and placements for the RM's state
// store (keeps core code free of generated protobuf headers). The encoding is
// exact: decode(encode(x)) == x, so a restarted RM restores identical
// allocations (Planner::restore).
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "planner/reservation.h"

namespace morpheus::rm {

nlohmann::json encodeDefinition(const planner::ReservationDefinition& d);
Result<planner::ReservationDefinition> decodeDefinition(const nlohmann::json& j);
nlohmann::json encodePlacement(const planner::Placement& p);
Result<planner::Placement> decodePlacement(const nlohmann::json& j);
nlohmann::json encodeResource(const Resource& r);
Resource decodeResource(const nlohmann::json& j);

}  // namespace morpheus::rm
