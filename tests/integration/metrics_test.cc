// The Grafana dashboard in deploy/grafana/ against a real RM: every metric
// name a panel's PromQL (or a template variable's query) references is one
// the RM serves at /metrics, so a rename cannot leave the dashboard blank.
// And the RM serves exactly the metrics `morpheus-rm --print-metrics`
// declares (the list docs/reference/metrics.md is generated from).
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "harness.h"
#include "test_paths.h"

namespace morpheus::testing {
namespace {

bool identStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool identChar(char c) { return identStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

// The metric names a PromQL expression references: identifiers that are not
// functions or aggregations (followed by '('), keywords, label names (inside
// {...} or a by/without/on/ignoring/group_* list), durations ([5m]), numbers,
// strings or Grafana variables ($queue, $__rate_interval).
std::set<std::string> promqlMetricNames(const std::string& e) {
  static const std::set<std::string> kKeywords = {
      "by",  "without", "on",     "ignoring", "group_left", "group_right", "bool",
      "and", "or",      "unless", "offset",   "inf",        "nan"};
  static const std::set<std::string> kLabelLists = {"by",       "without",    "on",
                                                    "ignoring", "group_left", "group_right"};
  std::set<std::string> names;
  size_t i = 0;
  auto skipTo = [&](char open, char close) {  // e[i] == open; past the matching close
    int depth = 0;
    for (; i < e.size(); i++) {
      if (e[i] == open) depth++;
      if (e[i] == close && --depth == 0) {
        i++;
        return;
      }
    }
  };
  while (i < e.size()) {
    char c = e[i];
    if (c == '"' || c == '\'' || c == '`') {
      size_t end = i + 1;
      while (end < e.size() && e[end] != c) end += e[end] == '\\' ? 2 : 1;
      i = end + 1;
    } else if (c == '{') {
      skipTo('{', '}');
    } else if (c == '[') {
      skipTo('[', ']');
    } else if (c == '$') {
      i++;
      if (i < e.size() && e[i] == '{') {
        skipTo('{', '}');
      } else {
        while (i < e.size() && identChar(e[i])) i++;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      while (i < e.size() && (identChar(e[i]) || e[i] == '.')) i++;
    } else if (identStart(c)) {
      size_t start = i;
      while (i < e.size() && identChar(e[i])) i++;
      std::string word = e.substr(start, i - start);
      size_t next = i;
      while (next < e.size() && std::isspace(static_cast<unsigned char>(e[next]))) next++;
      bool call = next < e.size() && e[next] == '(';
      // An aggregation with its modifier first: sum by (le) (...).
      for (const char* modifier : {"by", "without"}) {
        size_t len = std::strlen(modifier);
        if (e.compare(next, len, modifier) == 0 &&
            (next + len == e.size() || !identChar(e[next + len]))) {
          call = true;
        }
      }
      if (kLabelLists.count(word) && call) {
        i = next;
        skipTo('(', ')');
      } else if (!call && !kKeywords.count(word)) {
        names.insert(word);
      }
    } else {
      i++;
    }
  }
  return names;
}

// Families named by `# TYPE` lines, with the series names a histogram adds.
std::set<std::string> servedNames(const std::string& text, std::set<std::string>* families) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream words(line.substr(7));
    std::string name, type;
    words >> name >> type;
    if (families) families->insert(name);
    out.insert(name);
    if (type == "histogram") {
      for (const char* s : {"_bucket", "_sum", "_count"}) out.insert(name + s);
    }
  }
  return out;
}

TEST(PromqlNamesTest, FindsMetricsNotFunctionsLabelsOrVariables) {
  EXPECT_EQ(promqlMetricNames("histogram_quantile(0.99, sum by (le) (rate(a_bucket[$__rate_"
                              "interval])))"),
            std::set<std::string>{"a_bucket"});
  EXPECT_EQ(promqlMetricNames("b{queue=~\"$queue\"} / on(queue) c + 1e3 - d offset 5m"),
            (std::set<std::string>{"b", "c", "d"}));
}

TEST(GrafanaDashboardTest, EveryPanelMetricIsServedByTheRm) {
  std::ifstream in(std::string(sourceDir()) + "/deploy/grafana/morpheus.json");
  ASSERT_TRUE(in.good()) << "deploy/grafana/morpheus.json missing";
  nlohmann::json dash = nlohmann::json::parse(in);
  // Each referenced name, with where it was found.
  std::map<std::string, std::string> wanted;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& panels) {
    for (const auto& p : panels) {
      for (const auto& t : p.value("targets", nlohmann::json::array())) {
        std::string expr = t.value("expr", "");
        ASSERT_FALSE(expr.empty()) << "panel \"" << p.value("title", "") << "\" has an empty expr";
        for (const auto& n : promqlMetricNames(expr)) {
          wanted.emplace(n, "panel \"" + p.value("title", "") + "\": " + expr);
        }
      }
      if (p.contains("panels")) walk(p["panels"]);
    }
  };
  walk(dash.at("panels"));
  for (const auto& v : dash["templating"].value("list", nlohmann::json::array())) {
    std::string q = v.value("definition", "");
    if (q.rfind("label_values(", 0) == 0) {  // label_values(METRIC, LABEL)
      std::string metric = q.substr(13, q.find_first_of(",)") - 13);
      for (const auto& n : promqlMetricNames(metric)) {
        wanted.emplace(n, "variable $" + v.value("name", "") + ": " + q);
      }
    }
  }
  ASSERT_GE(wanted.size(), 20u) << "the dashboard's expressions were not found";

  Process rm = Process::startDaemon("rm", freshDir("rm-grafana"), rmAuthArgs());
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  auto m = httpRequest(rm.httpAddress(), "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  std::set<std::string> served = servedNames(m.body, nullptr);
  for (const auto& [name, where] : wanted) {
    EXPECT_TRUE(served.count(name)) << name << " is not served by the RM (" << where << ")";
  }
  // The per-queue series come from the scheduler at scrape time.
  EXPECT_NE(m.body.find("morpheus_rm_queue_allocated_memory_bytes{queue=\""), std::string::npos)
      << m.body;
}

TEST(MetricsDeclarationTest, RmServesExactlyWhatItDeclaresWithCountersAtZero) {
  auto [code, listing] = runCommand({binary("morpheus-rm"), "--print-metrics"});
  ASSERT_EQ(code, 0) << listing;
  std::set<std::string> declared;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) declared.insert(line.substr(0, line.find('\t')));
  }
  ASSERT_GE(declared.size(), 50u) << listing;
  EXPECT_FALSE(declared.count("morpheus_rm_up")) << "Prometheus adds `up` itself";

  Process rm = Process::startDaemon("rm", freshDir("rm-declared"), rmAuthArgs());
  ASSERT_FALSE(rm.httpAddress().empty()) << rm.log();
  auto m = httpRequest(rm.httpAddress(), "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  std::set<std::string> families;
  servedNames(m.body, &families);
  for (const auto& n : families) EXPECT_TRUE(declared.count(n)) << n << " served, not declared";
  for (const auto& n : declared) EXPECT_TRUE(families.count(n)) << n << " declared, not served";
  // A counter an alert's rate() watches exists before its first event.
  for (const char* series :
       {"morpheus_rm_dra_grants_total 0", "morpheus_rm_dra_denials_total{reason=\"budget\"} 0",
        "morpheus_rm_reservations_admitted_total 0", "morpheus_rm_containers_preempted_total 0"}) {
    EXPECT_NE(m.body.find("\n" + std::string(series) + "\n"), std::string::npos) << series;
  }
}

// Every daemon's metrics follow the Prometheus naming conventions: counters
// and only counters end in _total, units are base units (no _ms, _mib, ...),
// an _info metric is a gauge, and there is no `up` of our own.
TEST(MetricsDeclarationTest, NamesFollowThePrometheusConventions) {
  for (const char* daemon : {"morpheus-rm", "morpheus-nm", "morpheus-inference"}) {
    auto [code, listing] = runCommand({binary(daemon), "--print-metrics"});
    ASSERT_EQ(code, 0) << daemon << ": " << listing;
    std::istringstream lines(listing);
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      n++;
      std::istringstream fields(line);
      std::string name, type, labels;
      std::getline(fields, name, '\t');
      std::getline(fields, type, '\t');
      std::getline(fields, labels, '\t');
      std::string help;
      std::getline(fields, help);
      auto endsWith = [&](const std::string& suffix) {
        return name.size() > suffix.size() &&
               name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      SCOPED_TRACE(std::string(daemon) + ": " + line);
      EXPECT_EQ(type == "counter", endsWith("_total"));
      EXPECT_FALSE(help.empty());
      EXPECT_TRUE(name.rfind("morpheus_", 0) == 0 || name.rfind("process_", 0) == 0);
      for (const char* unit : {"_ms", "_millis", "_mib", "_kib", "_mb", "_kb", "_minutes"}) {
        EXPECT_EQ(name.find(std::string(unit) + "_"), std::string::npos) << unit;
        EXPECT_FALSE(endsWith(unit)) << unit;
      }
      if (endsWith("_info")) {
        EXPECT_EQ(type, "gauge");
      }
      EXPECT_FALSE(endsWith("_up"));
    }
    EXPECT_GE(n, 20) << daemon;
  }
}

}  // namespace
}  // namespace morpheus::testing
