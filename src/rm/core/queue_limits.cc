#include "rm/core/queue_limits.h"

#include <cctype>
#include <limits>

namespace morpheus::rm {

namespace {

constexpr const char* kMaxApps = "scheduler.max-running-apps";
constexpr const char* kMaxResources = "scheduler.max-resources";
constexpr const char* kUserMaxApps = "scheduler.user-max-running-apps";

// A whole number >= 0 as written; nullopt otherwise.
std::optional<int64_t> wholeNumber(const std::string& s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string knownList(const std::set<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

std::optional<int64_t> QueueLimits::userLimit(const std::string& user) const {
  auto it = user_max_running_apps.find(user);
  if (it == user_max_running_apps.end()) it = user_max_running_apps.find("*");
  if (it == user_max_running_apps.end()) return std::nullopt;
  return it->second;
}

std::set<std::string> adhocQueuePaths(const std::map<std::string, std::string>& queues) {
  std::set<std::string> paths = {"root", "root.default"};
  for (const auto& [path, _] : queues) {
    if (path.rfind("root.", 0) != 0) continue;
    for (const auto& p : queueAndAncestors(path)) paths.insert(p);
  }
  return paths;
}

std::vector<std::string> queueAndAncestors(const std::string& path) {
  std::vector<std::string> out;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
    out.push_back(path.substr(0, dot));
  }
  out.push_back(path);
  return out;
}

Result<Resource> parseResourceCap(const std::string& text, const std::string& field) {
  const std::string usage =
      "expected memory and vcores, e.g. \"8192 mb, 4 vcores\" or \"memory=8192,vcores=4\"";
  // Tokens split at commas and whitespace; a number may carry its unit
  // ("8192mb") or be followed by it ("8192 mb").
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : text) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) tokens.push_back(lower(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) tokens.push_back(lower(cur));
  std::optional<int64_t> mem, vcores;
  auto set = [&](const std::string& unit, const std::string& number) -> Status {
    auto v = wholeNumber(number);
    if (!v) return invalidArgument(field, "'" + number + "' is not a whole number; " + usage);
    if (unit == "mb" || unit == "mib" || unit == "memory") {
      if (mem) return invalidArgument(field, "memory given twice; " + usage);
      mem = *v;
    } else if (unit == "vcores" || unit == "vcore") {
      if (vcores) return invalidArgument(field, "vcores given twice; " + usage);
      vcores = *v;
    } else {
      return invalidArgument(field, "unknown unit '" + unit + "'; " + usage);
    }
    return Status::ok();
  };
  for (size_t i = 0; i < tokens.size(); i++) {
    const std::string& t = tokens[i];
    if (auto eq = t.find('='); eq != std::string::npos) {
      MORPHEUS_RETURN_IF_ERROR(set(t.substr(0, eq), t.substr(eq + 1)));
      continue;
    }
    size_t digits = 0;
    while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) digits++;
    if (digits == 0) return invalidArgument(field, "unexpected '" + t + "'; " + usage);
    if (digits < t.size()) {
      MORPHEUS_RETURN_IF_ERROR(set(t.substr(digits), t.substr(0, digits)));
    } else if (i + 1 < tokens.size()) {
      MORPHEUS_RETURN_IF_ERROR(set(tokens[i + 1], t));
      i++;
    } else {
      return invalidArgument(field, "'" + t + "' has no unit; " + usage);
    }
  }
  if (!mem || !vcores) return invalidArgument(field, usage);
  return Resource(*mem, *vcores);
}

Result<QueueLimits> parseQueueLimits(
    const std::map<std::string, std::string>& max_running_apps,
    const std::map<std::string, std::string>& max_resources,
    const std::map<std::string, std::string>& user_max_running_apps,
    const std::set<std::string>& paths) {
  QueueLimits out;
  auto knownQueue = [&](const char* option, const std::string& path) -> Status {
    if (paths.count(path)) return Status::ok();
    return invalidArgument(std::string(option) + "." + path,
                           "unknown queue (known: " + knownList(paths) + ")");
  };
  auto count = [](const std::string& field, const std::string& v) -> Result<int64_t> {
    auto n = wholeNumber(v);
    if (!n) return invalidArgument(field, "'" + v + "' is not a whole number of applications >= 0");
    return *n;
  };
  for (const auto& [path, v] : max_running_apps) {
    MORPHEUS_RETURN_IF_ERROR(knownQueue(kMaxApps, path));
    MORPHEUS_ASSIGN_OR_RETURN(out.max_running_apps[path],
                              count(std::string(kMaxApps) + "." + path, v));
  }
  for (const auto& [path, v] : max_resources) {
    MORPHEUS_RETURN_IF_ERROR(knownQueue(kMaxResources, path));
    MORPHEUS_ASSIGN_OR_RETURN(out.max_resources[path],
                              parseResourceCap(v, std::string(kMaxResources) + "." + path));
  }
  for (const auto& [user, v] : user_max_running_apps) {
    if (user.empty()) return invalidArgument(kUserMaxApps, "a user name is empty");
    MORPHEUS_ASSIGN_OR_RETURN(out.user_max_running_apps[user],
                              count(std::string(kUserMaxApps) + "." + user, v));
  }
  return out;
}

std::map<AppId, std::string> admit(const std::vector<AdmissionApp>& apps,
                                   const QueueLimits& limits) {
  std::map<AppId, std::string> waiting;
  if (limits.max_running_apps.empty() && limits.user_max_running_apps.empty()) return waiting;
  std::map<std::string, int64_t> per_queue, per_user;
  auto take = [&](const AdmissionApp& a) {
    for (const auto& q : queueAndAncestors(a.queue)) per_queue[q]++;
    per_user[a.user]++;
  };
  for (const auto& a : apps) {
    if (a.started) take(a);
  }
  for (const auto& a : apps) {
    if (a.started) continue;
    std::string reason;
    for (const auto& q : queueAndAncestors(a.queue)) {
      auto lim = limits.max_running_apps.find(q);
      if (lim == limits.max_running_apps.end() || per_queue[q] < lim->second) continue;
      reason = "waiting: queue " + q + " runs " + std::to_string(per_queue[q]) + " of its " +
               std::to_string(lim->second) + " application(s) (" + kMaxApps + ")";
      break;
    }
    if (reason.empty()) {
      auto lim = limits.userLimit(a.user);
      if (lim && per_user[a.user] >= *lim) {
        reason = "waiting: user " + a.user + " runs " + std::to_string(per_user[a.user]) +
                 " of their " + std::to_string(*lim) + " application(s) (" + kUserMaxApps + ")";
      }
    }
    if (reason.empty()) {
      take(a);
    } else {
      waiting[a.id] = reason + "; starts when one of them ends";
    }
  }
  return waiting;
}

}  // namespace morpheus::rm
