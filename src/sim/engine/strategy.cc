#include "sim/engine/strategy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace morpheus::sim {

namespace {

Result<StrategySpec> specOf(const std::string& name, double alpha) {
  StrategySpec s;
  s.name = name;
  s.alpha = alpha;
  if (name == "baseline") {
    s.provisioning = Provisioning::kUserReservation;
    s.agent = "greedy";  // YARN's reservation system places user requests greedily
  } else if (name == "morpheus") {
    s.provisioning = Provisioning::kPackedSkyline;
    s.dra = "morpheus-dra";
  } else if (name == "slo-packing") {
    s.provisioning = Provisioning::kPackedUser;
  } else if (name == "lp-skyline") {
    s.provisioning = Provisioning::kSkylineAtSubmit;
  } else if (name == "no-dra") {
    s.provisioning = Provisioning::kPackedSkyline;
  } else if (name == "greedy-planner") {
    s.provisioning = Provisioning::kPackedSkyline;
    s.agent = "greedy";
    s.dra = "morpheus-dra";
  } else if (name == "jockey-dra") {
    s.provisioning = Provisioning::kPackedSkyline;
    s.dra = "jockey";
  } else {
    std::string all;
    for (const auto& n : strategyNames()) all += (all.empty() ? "" : ", ") + n;
    return invalidArgument("strategy", "unknown strategy '" + name + "' (known: " + all + ")");
  }
  return s;
}

std::string alphaName(double a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", a);
  return std::string("morpheus-alpha") + buf;
}

}  // namespace

std::vector<std::string> strategyNames() {
  return {"baseline", "morpheus",       "slo-packing", "lp-skyline",
          "no-dra",   "greedy-planner", "jockey-dra"};
}

Result<std::vector<StrategySpec>> parseStrategies(const std::vector<std::string>& names,
                                                  const std::vector<double>& alphas,
                                                  double default_alpha) {
  std::vector<std::string> chosen = names.empty() ? strategyNames() : names;
  std::vector<StrategySpec> out;
  std::set<std::string> seen;
  for (const auto& n : chosen) {
    if (!seen.insert(n).second) return invalidArgument("strategy", "'" + n + "' given twice");
    MORPHEUS_ASSIGN_OR_RETURN(StrategySpec s, specOf(n, default_alpha));
    out.push_back(std::move(s));
  }
  for (double a : alphas) {
    if (!(a >= 0 && a <= 1)) return invalidArgument("alpha", "must be in [0, 1]");
    StrategySpec s = *specOf("morpheus", a);
    s.name = alphaName(a);
    if (!seen.insert(s.name).second) return invalidArgument("alpha", s.name + " given twice");
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<double>> parseAlphaList(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(v)) {
      return invalidArgument("alpha", "'" + item + "' is not a number (expected e.g. 0.01,0.1)");
    }
    out.push_back(v);
  }
  if (out.empty()) return invalidArgument("alpha", "empty list");
  return out;
}

}  // namespace morpheus::sim
