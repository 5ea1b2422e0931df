#include "planner/reservation.h"

#include <algorithm>
#include <map>

#include "common/validate.h"

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
  return invalidArgument(field,
                         "'" + text + "' is not one of R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP");
}

const char* skylineStepsName(SkylineSteps s) {
  return s == SkylineSteps::kWhole ? "whole" : "stretchable";
}

Result<SkylineSteps> parseSkylineSteps(const std::string& text, const std::string& field) {
  for (SkylineSteps s : {SkylineSteps::kWhole, SkylineSteps::kStretchable}) {
    if (text == skylineStepsName(s)) return s;
  }
  return invalidArgument(field, "'" + text + "' is not one of whole, stretchable");
}

std::vector<ReservationStage> skylineStages(const std::vector<int64_t>& containers_per_step,
                                            const Resource& capability, Millis step,
                                            SkylineSteps steps) {
  std::vector<ReservationStage> out;
  for (int64_t n : containers_per_step) {
    if (n <= 0) continue;
    out.push_back({capability, n, steps == SkylineSteps::kWhole ? n : 1, step});
  }
  return out;
}

std::vector<ReservationDefinition> instancesOverLcm(const ReservationDefinition& def, Millis lcm) {
  std::vector<ReservationDefinition> out;
  if (def.period <= Millis(0) || lcm <= Millis(0) || lcm % def.period != Millis(0)) return out;
  const int64_t n = lcm / def.period;
  for (int64_t i = 0; i < n; i++) {
    ReservationDefinition d = def;
    d.period = lcm;
    d.arrival += def.period * i;
    d.deadline += def.period * i;
    out.push_back(std::move(d));
  }
  return out;
}

Millis minDuration(const ReservationDefinition& def) {
  Millis sum{0}, longest{0}, shortest{0};
  bool first = true;
  for (const auto& s : def.stages) {
    // Saturating: a sum beyond int64 is longer than any window anyway.
    sum = s.duration > Millis::max() - sum ? Millis::max() : sum + s.duration;
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
  if (def.priority < kMinReservationPriority || def.priority > kMaxReservationPriority) {
    return invalidArgument("priority", "must be in [" + std::to_string(kMinReservationPriority) +
                                           ", " + std::to_string(kMaxReservationPriority) +
                                           "], got " + std::to_string(def.priority));
  }
  if (def.stages.empty()) return invalidArgument("stages", "at least one stage is required");
  for (size_t i = 0; i < def.stages.size(); ++i) {
    const auto& s = def.stages[i];
    const std::string f = "stages[" + std::to_string(i) + "]";
    if (s.capability.anyNegative())
      return invalidArgument(f + ".capability", "must not be negative");
    if (s.capability.isZero()) return invalidArgument(f + ".capability", "must not be zero");
    if (s.num_containers <= 0) return invalidArgument(f + ".num_containers", "must be > 0");
    if (s.duration.count() <= 0) return invalidArgument(f + ".duration", "must be > 0");
    if (s.min_concurrency <= 0) return invalidArgument(f + ".min_concurrency", "must be > 0");
    if (s.min_concurrency > s.num_containers) {
      return invalidArgument(f + ".min_concurrency", "must not exceed num_containers (" +
                                                         std::to_string(s.num_containers) + ")");
    }
    if (!checkedProduct(s.capability, s.num_containers)) {
      return invalidArgument(f + ".num_containers", "capability x num_containers overflows (" +
                                                        s.capability.toString() + " x " +
                                                        std::to_string(s.num_containers) + ")");
    }
  }
  if (!peakDemand(def)) return invalidArgument("stages", "the sum of the stages overflows");
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
    Resource gang = *checkedProduct(s.capability, s.min_concurrency);  // <= num_containers: checked
    if (!gang.fitsIn(capacity)) {
      return invalidArgument("stages[" + std::to_string(i) + "].min_concurrency",
                             "gang " + gang.toString() + " is larger than the cluster capacity " +
                                 capacity.toString());
    }
  }
  if (def.period.count() < 0) return invalidArgument("period", "must not be negative");
  if (def.period.count() > 0) {
    if (def.period < window) {
      return invalidArgument(
          "period", "must be >= deadline - arrival (" + std::to_string(window.count()) + " ms)");
    }
    if (lcm.count() % def.period.count() != 0) {
      return invalidArgument("period",
                             "must divide the plan LCM (" + std::to_string(lcm.count()) + " ms)");
    }
  } else if (def.deadline > now + horizon) {
    return invalidArgument("deadline", "beyond the one-off planning horizon (" +
                                           std::to_string(horizon.count()) + " ms from now)");
  }
  return Status::ok();
}

}  // namespace morpheus::planner

namespace morpheus::planner {

std::optional<Resource> peakDemand(const ReservationDefinition& def) {
  std::optional<Resource> peak = Resource();
  for (const auto& s : def.stages) {
    std::optional<Resource> all = checkedProduct(s.capability, s.num_containers);
    if (!all) return std::nullopt;
    if (def.interpreter == Interpreter::kAny) {
      peak = Resource::max(*peak, *all);
    } else {
      peak = checkedSum(*peak, *all);
      if (!peak) return std::nullopt;
    }
  }
  return peak;
}

namespace {

// Resource x milliseconds per dimension, in long double (no overflow).
struct Area {
  long double memory = 0, vcores = 0;
  std::map<std::string, long double> extended;
  void add(const Resource& r, long double ms) {
    memory += static_cast<long double>(r.memoryMib()) * ms;
    vcores += static_cast<long double>(r.vcores()) * ms;
    for (const auto& [n, v] : r.extended()) extended[n] += static_cast<long double>(v) * ms;
  }
  // First dimension of *this above `limit`, or "" when none.
  std::string exceeds(const Area& limit) const {
    if (memory > limit.memory) return "memory";
    if (vcores > limit.vcores) return "vcores";
    for (const auto& [n, v] : extended) {
      auto it = limit.extended.find(n);
      if (v > (it == limit.extended.end() ? 0 : it->second)) return n;
    }
    return "";
  }
};

}  // namespace

Status checkPlacement(const ReservationDefinition& def, const Placement& placement, Millis step) {
  std::optional<Resource> peak = peakDemand(def);
  if (!peak) return invalidArgument("definition.stages", "the sum of the stages overflows");
  Area allowed;
  const int64_t st = std::max<int64_t>(1, step.count());
  for (const auto& s : def.stages) {
    int64_t ms = (s.duration.count() + st - 1) / st * st;
    Area one;
    one.add(s.capability,
            static_cast<long double>(ms) * static_cast<long double>(s.num_containers));
    if (def.interpreter == Interpreter::kAny) {
      allowed.memory = std::max(allowed.memory, one.memory);
      allowed.vcores = std::max(allowed.vcores, one.vcores);
      for (const auto& [n, v] : one.extended) {
        allowed.extended[n] = std::max(allowed.extended[n], v);
      }
    } else {
      allowed.memory += one.memory;
      allowed.vcores += one.vcores;
      for (const auto& [n, v] : one.extended) allowed.extended[n] += v;
    }
  }
  Area used;
  for (size_t i = 0; i < placement.allocations.size(); ++i) {
    const auto& a = placement.allocations[i];
    const std::string f = "placement.allocations[" + std::to_string(i) + "]";
    if (a.start < def.arrival || a.end > def.deadline || a.start >= a.end) {
      return invalidArgument(f, "outside the definition's window [arrival, deadline)");
    }
    if (a.resource.anyNegative() || !a.resource.fitsIn(*peak)) {
      return invalidArgument(f + ".resource", a.resource.toString() +
                                                  " exceeds what the definition allows at "
                                                  "one time (" +
                                                  peak->toString() + ")");
    }
    used.add(a.resource, static_cast<long double>((a.end - a.start).count()));
  }
  if (std::string dim = used.exceeds(allowed); !dim.empty()) {
    return invalidArgument("placement.allocations",
                           "hold more " + dim + " x time than the definition's stages need");
  }
  return Status::ok();
}

}  // namespace morpheus::planner
