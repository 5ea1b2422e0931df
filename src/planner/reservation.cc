#include "planner/reservation.h"

#include <algorithm>

namespace morpheus::planner {

const char* interpreterName(Interpreter i) {
  switch (i) {
    case Interpreter::kAll:
      return "R_ALL";
    case Interpreter::kAny:
      return "R_ANY";
    case Interpreter::kOrder:
      return "R_ORDER";
    case Interpreter::kOrderNoGap:
      return "R_ORDER_NO_GAP";
  }
  return "?";
}

Result<Interpreter> parseInterpreter(const std::string& text, const std::string& field) {
  for (Interpreter i :
       {Interpreter::kAll, Interpreter::kAny, Interpreter::kOrder, Interpreter::kOrderNoGap}) {
    if (text == interpreterName(i)) return i;
  }
  return invalidArgument(field, "'" + text + "' is not one of R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP");
}

std::vector<ReservationStage> skylineStages(const std::vector<int64_t>& containers_per_step,
                                            const Resource& capability, Millis step) {
  std::vector<ReservationStage> out;
  for (int64_t n : containers_per_step) {
    if (n <= 0) continue;
    out.push_back({capability, n, 1, step});
  }
  return out;
}

Millis minDuration(const ReservationDefinition& def) {
  Millis sum{0}, longest{0}, shortest{0};
  bool first = true;
  for (const auto& s : def.stages) {
    sum += s.duration;
    longest = std::max(longest, s.duration);
    shortest = first ? s.duration : std::min(shortest, s.duration);
    first = false;
  }
  switch (def.interpreter) {
    case Interpreter::kAll:
      return longest;
    case Interpreter::kAny:
      return shortest;
    case Interpreter::kOrder:
    case Interpreter::kOrderNoGap:
      return sum;
  }
  return sum;
}

Status validateDefinition(const ReservationDefinition& def, const Resource& capacity, Millis lcm,
                          Millis horizon, TimePoint now) {
  if (def.deadline <= now) {
    return invalidArgument("deadline", "must be after now (" + std::to_string(toEpochMs(now)) +
                                           " ms), got " + std::to_string(toEpochMs(def.deadline)));
  }
  if (def.deadline <= def.arrival) return invalidArgument("deadline", "must be after arrival");
  if (def.stages.empty()) return invalidArgument("stages", "at least one stage is required");
  for (size_t i = 0; i < def.stages.size(); ++i) {
    const auto& s = def.stages[i];
    const std::string f = "stages[" + std::to_string(i) + "]";
    if (s.capability.anyNegative()) return invalidArgument(f + ".capability", "must not be negative");
    if (s.capability.isZero()) return invalidArgument(f + ".capability", "must not be zero");
    if (s.num_containers <= 0) return invalidArgument(f + ".num_containers", "must be > 0");
    if (s.duration.count() <= 0) return invalidArgument(f + ".duration", "must be > 0");
    if (s.min_concurrency <= 0) return invalidArgument(f + ".min_concurrency", "must be > 0");
    if (s.min_concurrency > s.num_containers) {
      return invalidArgument(f + ".min_concurrency", "must not exceed num_containers (" +
                                                         std::to_string(s.num_containers) + ")");
    }
  }
  Millis window = def.deadline - def.arrival;
  Millis need = minDuration(def);
  if (window < need) {
    return invalidArgument("deadline", "deadline - arrival (" + std::to_string(window.count()) +
                                           " ms) is shorter than the minimum duration of " +
                                           interpreterName(def.interpreter) + " stages (" +
                                           std::to_string(need.count()) + " ms)");
  }
  for (size_t i = 0; i < def.stages.size(); ++i) {
    const auto& s = def.stages[i];
    Resource gang = s.capability * s.min_concurrency;
    if (!gang.fitsIn(capacity)) {
      return invalidArgument("stages[" + std::to_string(i) + "].min_concurrency",
                             "gang " + gang.toString() + " is larger than the cluster capacity " +
                                 capacity.toString());
    }
  }
  if (def.period.count() < 0) return invalidArgument("period", "must not be negative");
  if (def.period.count() > 0) {
    if (def.period < window) {
      return invalidArgument("period", "must be >= deadline - arrival (" +
                                           std::to_string(window.count()) + " ms)");
    }
    if (lcm.count() % def.period.count() != 0) {
      return invalidArgument("period", "must divide the plan LCM (" + std::to_string(lcm.count()) +
                                           " ms)");
    }
  } else if (def.deadline > now + horizon) {
    return invalidArgument("deadline", "beyond the one-off planning horizon (" +
                                           std::to_string(horizon.count()) + " ms from now)");
  }
  return Status::ok();
}

}  // namespace morpheus::planner
