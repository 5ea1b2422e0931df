#include "cli/format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>

#include "common/config.h"

namespace morpheus::cli {

namespace {

bool allDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// "2026-12-01T10:00:00Z" and its variants (parseTime's comment) as epoch ms;
// nullopt when `s` is not of that form or names no real date.
std::optional<int64_t> parseIso(const std::string& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  int n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d%n", &y, &mo, &d, &h, &mi, &n) != 5 || n != 16) {
    return std::nullopt;
  }
  size_t i = 16;
  int sec = 0;
  int64_t frac_ms = 0;
  if (i < s.size() && s[i] == ':') {
    if (i + 3 > s.size() || !allDigits(s.substr(i + 1, 2))) return std::nullopt;
    sec = std::stoi(s.substr(i + 1, 2));
    i += 3;
    if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
      size_t start = ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) i++;
      std::string digits = s.substr(start, i - start);
      if (digits.empty()) return std::nullopt;
      digits = (digits + "000").substr(0, 3);
      frac_ms = std::stoi(digits);
    }
  }
  int64_t offset_min = 0;
  std::string zone = s.substr(i);
  if (zone == "Z" || zone == "z") {
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':' &&
             allDigits(zone.substr(1, 2)) && allDigits(zone.substr(4, 2))) {
    offset_min = std::stoi(zone.substr(1, 2)) * 60 + std::stoi(zone.substr(4, 2));
    if (zone[0] == '-') offset_min = -offset_min;
  } else {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  std::time_t t = timegm(&tm);
  // timegm normalises 2026-02-30 to March 2: refuse dates that do not exist.
  std::tm back{};
  gmtime_r(&t, &back);
  if (back.tm_mday != d || back.tm_mon != mo - 1) return std::nullopt;
  return (static_cast<int64_t>(t) - offset_min * 60) * 1000 + frac_ms;
}

}  // namespace

Result<int64_t> parseTime(const std::string& text, const std::string& field, int64_t now_ms) {
  const std::string bad = "'" + text +
                          "' is not a time: use ISO-8601 UTC (2026-12-01T10:00:00Z), now, "
                          "now+DURATION or now-DURATION (DURATION like 90s, 10m, 1h30m, 1d)";
  if (text == "now") return now_ms;
  std::string rel;
  if (text.rfind("now+", 0) == 0 || text.rfind("now-", 0) == 0) {
    rel = text.substr(3);
  } else if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    rel = text;
  }
  if (!rel.empty()) {
    auto d = parseDuration(rel.substr(1), field);
    if (!d.isOk()) return invalidArgument(field, bad);
    return rel[0] == '+' ? now_ms + d->count() : now_ms - d->count();
  }
  if (allDigits(text) && text.size() <= 15) return std::stoll(text);
  if (auto t = parseIso(text)) return *t;
  return invalidArgument(field, bad);
}

Result<Millis> parseDurationArg(const std::string& text, const std::string& field,
                                bool allow_zero) {
  auto d = parseDuration(text, field);
  if (!d.isOk()) return d.status();
  if (d->count() < 0 || (d->count() == 0 && !allow_zero)) {
    return invalidArgument(field, "'" + text + "' must be more than 0");
  }
  return *d;
}

Result<int64_t> parseSizeMib(const std::string& text, const std::string& field) {
  const std::string bad = "'" + text + "' is not a memory size (e.g. 512MiB, 1GiB, 1.5GiB)";
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    i++;
  }
  std::string num = text.substr(0, i), unit = text.substr(i);
  if (num.empty()) return invalidArgument(field, bad);
  double v = 0;
  try {
    size_t pos = 0;
    v = std::stod(num, &pos);
    if (pos != num.size()) return invalidArgument(field, bad);
  } catch (const std::exception&) {
    return invalidArgument(field, bad);
  }
  double mult = 0;
  if (unit.empty() || unit == "MiB" || unit == "Mi" || unit == "M") {
    mult = 1;
  } else if (unit == "GiB" || unit == "Gi" || unit == "G") {
    mult = 1024;
  } else if (unit == "TiB" || unit == "Ti" || unit == "T") {
    mult = 1024 * 1024;
  } else {
    return invalidArgument(field, "unknown size unit '" + unit + "' (use MiB, GiB or TiB)");
  }
  double mib = v * mult;
  if (!(mib < 0x1p53)) return invalidArgument(field, "'" + text + "' is too large");
  if (mib <= 0) return invalidArgument(field, "'" + text + "' must be more than 0");
  if (mib != std::floor(mib)) {
    return invalidArgument(field, "'" + text + "' is not a whole number of MiB");
  }
  return static_cast<int64_t>(mib);
}

std::string formatTime(int64_t ms) {
  int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  int64_t rest = ms - secs * 1000;
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (rest != 0) {
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03lld", static_cast<long long>(rest));
    out += frac;
  }
  return out + "Z";
}

std::string formatTimeOrDash(int64_t ms) { return ms <= 0 ? "-" : formatTime(ms); }

std::string humanDuration(int64_t ms) {
  if (ms < 0) return "-" + humanDuration(-ms);
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  int64_t s = ms / 1000;  // below a second is dropped past 1 s
  std::string out;
  const std::pair<int64_t, const char*> units[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  for (const auto& [len, name] : units) {
    if (s >= len) {
      out += std::to_string(s / len) + name;
      s %= len;
    }
  }
  return out;
}

std::string formatRelative(int64_t ms, int64_t now_ms) {
  int64_t d = ms - now_ms;
  if (d > -1000 && d < 1000) return "now";
  return d > 0 ? "in " + humanDuration(d) : humanDuration(-d) + " ago";
}

std::string formatMemory(int64_t mib) {
  if (mib != 0 && mib % 1024 == 0) return std::to_string(mib / 1024) + " GiB";
  return std::to_string(mib) + " MiB";
}

std::string formatResource(int64_t mib, int64_t vcores) {
  return formatMemory(mib) + " / " + std::to_string(vcores) + (vcores == 1 ? " vcore" : " vcores");
}

void setTime(nlohmann::json& j, const std::string& name, int64_t ms) {
  j[name + "_ms"] = ms;
  j[name + "_time"] = ms > 0 ? nlohmann::json(formatTime(ms)) : nlohmann::json(nullptr);
}

void printJson(const std::string& key, const nlohmann::json& list, const nlohmann::json& extra) {
  nlohmann::json out = extra.is_object() ? extra : nlohmann::json::object();
  out[key] = list.is_array() ? list : nlohmann::json::array({list});
  std::cout << out.dump(2) << "\n" << std::flush;
}

std::string Table::render() const {
  size_t cols = rows_.empty() ? 0 : rows_[0].size();
  for (const auto& r : rows_) cols = std::max(cols, r.size());
  std::vector<size_t> width(cols, 0);
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size(); c++) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows_) {
    std::string line;
    for (size_t c = 0; c < cols; c++) {
      const std::string cell = c < r.size() ? r[c] : "";
      line += cell;
      if (c + 1 < cols) line += std::string(width[c] - cell.size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

void Table::print() const { std::cout << render() << std::flush; }

}  // namespace morpheus::cli
