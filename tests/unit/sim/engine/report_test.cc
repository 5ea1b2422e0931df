// Unit tests for morpheus-sim's report: summary.json's exact
// bytes, the files writeReport produces, and its refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/engine/report.h"

namespace morpheus {
namespace {

namespace fs = std::filesystem;

sim::StrategyResult strategy(const std::string& name, int64_t instances, int64_t violations) {
  sim::StrategyResult r;
  r.name = name;
  r.periodic_instances = instances;
  r.deadline_violations = violations;
  r.violation_rate = static_cast<double>(violations) / static_cast<double>(instances);
  r.worst_case_violations = violations * 2;
  r.worst_case_violation_rate = 2 * r.violation_rate;
  r.utilisation = 0.4125;
  r.adhoc_jct_median_s = 12.5;
  r.adhoc_jct_p95_s = 300.25;
  for (int64_t i = 0; i < instances; i++) {
    sim::InstanceOutcome o;
    o.job = "periodic-0000" + std::to_string(i % 3);
    o.index = i;
    o.met = i >= violations;
    o.worst_case_met = i >= 2 * violations;
    o.runtime = Millis(60000 + i * 1000);
    o.reserved_container_s = 100.0 * static_cast<double>(1 + i % 4);
    o.used_container_s = 50.0;
    r.instances.push_back(o);
  }
  for (int i = 0; i < 5; i++)
    r.adhoc.push_back(
        {"adhoc-" + std::to_string(i), Millis(i * 1000), Millis(i == 4 ? -1 : 5000 * (i + 1))});
  r.utilisation_series = {0.1, 0.5, 0.45};
  return r;
}

sim::SimSummary summary() {
  sim::SimSummary s;
  s.seed = 42;
  s.nodes = 50;
  s.days = 10;
  s.train_days = 7;
  s.command = "run";
  s.strategies.push_back(strategy("morpheus", 100, 1));
  s.strategies.back().extra["alpha"] = 0.1;
  // Worst case and with-ad-hoc ratios differ (5.2x and 13x), so a swap shows.
  s.strategies.back().worst_case_violations = 5;
  s.strategies.back().worst_case_violation_rate = 0.05;
  s.strategies.push_back(strategy("baseline", 100, 13));
  s.strategies.back().min_nodes_at_baseline_rate = 50;
  return s;
}

// summary.json has exactly the documented keys, sorted, with fixed precision, and is byte-identical
// for equal input.
TEST(ReportTest, SummaryJsonGolden) {
  const std::string expected = R"json({
  "command": "run",
  "days": 10,
  "headline": {
    "definition": "worst case (Morpheus OSDI'16 section 8): an instance is judged on its reserved capacity only (its placement and DRA grants), as if no opportunistic (fair-share, ad-hoc) capacity existed; with_adhoc_load: judged on the capacity it actually got in the simulated cluster, ad-hoc load included. Ratios: the baseline's rate over the strategy's (null: the strategy has none left)",
    "metric": "worst_case_violations",
    "strategies": {
      "baseline": {
        "baseline_over_strategy_with_adhoc_load": 1.000000,
        "periodic_instances": 100,
        "violation_rate_with_adhoc_load": 0.130000,
        "violations_with_adhoc_load": 13,
        "worst_case_baseline_over_strategy": 1.000000,
        "worst_case_violation_rate": 0.260000,
        "worst_case_violations": 26
      },
      "morpheus": {
        "baseline_over_strategy_with_adhoc_load": 13.000000,
        "periodic_instances": 100,
        "violation_rate_with_adhoc_load": 0.010000,
        "violations_with_adhoc_load": 1,
        "worst_case_baseline_over_strategy": 5.200000,
        "worst_case_violation_rate": 0.050000,
        "worst_case_violations": 5
      }
    }
  },
  "interrupted": false,
  "nodes": 50,
  "seed": 42,
  "strategies": {
    "baseline": {
      "adhoc_jct_median_s": 12.500000,
      "adhoc_jct_p95_s": 300.250000,
      "deadline_violations": 13,
      "min_nodes_at_baseline_rate": 50,
      "periodic_instances": 100,
      "utilisation": 0.412500,
      "violation_rate": 0.130000,
      "worst_case_violation_rate": 0.260000,
      "worst_case_violations": 26
    },
    "morpheus": {
      "adhoc_jct_median_s": 12.500000,
      "adhoc_jct_p95_s": 300.250000,
      "deadline_violations": 1,
      "extra": {
        "alpha": 0.100000
      },
      "periodic_instances": 100,
      "utilisation": 0.412500,
      "violation_rate": 0.010000,
      "worst_case_violation_rate": 0.050000,
      "worst_case_violations": 5
    }
  },
  "train_days": 7
}
)json";
  EXPECT_EQ(sim::summaryJson(summary()), expected);
  EXPECT_EQ(sim::summaryJson(summary()), sim::summaryJson(summary()));
  sim::SimSummary empty;
  empty.command = "min-cluster";
  empty.interrupted = true;
  EXPECT_NE(sim::summaryJson(empty).find("\"strategies\": {}"), std::string::npos);
  EXPECT_NE(sim::summaryJson(empty).find("\"interrupted\": true"), std::string::npos);
}

// A strategy with no worst-case violations left has no finite ratio (null); without a baseline
// no ratio is printed at all.
TEST(ReportTest, HeadlineRatiosWithoutMissesOrBaseline) {
  auto s = summary();
  s.strategies[0].worst_case_violations = 0;
  s.strategies[0].worst_case_violation_rate = 0;
  EXPECT_NE(sim::summaryJson(s).find("\"worst_case_baseline_over_strategy\": null"),
            std::string::npos)
      << sim::summaryJson(s);
  s.strategies.erase(s.strategies.begin() + 1);  // the baseline
  const std::string json = sim::summaryJson(s);
  EXPECT_EQ(json.find("baseline_over_strategy"), std::string::npos) << json;
  EXPECT_NE(json.find("\"worst_case_violations\": 0"), std::string::npos) << json;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int lines(const fs::path& p) {
  std::string text = slurp(p);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

fs::path tempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

// A min-cluster search's sizes are kept in search order: an array in summary.json, one line in
// report.md and from searchTrail; a result without a search has neither.
TEST(ReportTest, MinClusterSearchTrailInSummaryAndReport) {
  auto s = summary();
  s.command = "min-cluster";
  sim::StrategyResult& m = s.strategies[0];
  m.min_nodes_at_baseline_rate = 25;
  m.min_cluster_search = {{50, 0.01, true}, {25, 0.125, true}, {12, 0.5, false}};
  const std::string json = sim::summaryJson(s);
  EXPECT_NE(json.find(R"json(      "min_cluster_search": [
        {
          "matches": true,
          "nodes": 50,
          "rate": 0.010000
        },
        {
          "matches": true,
          "nodes": 25,
          "rate": 0.125000
        },
        {
          "matches": false,
          "nodes": 12,
          "rate": 0.500000
        }
      ],
      "min_nodes_at_baseline_rate": 25,)json"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("min_cluster_search"), json.rfind("min_cluster_search"));  // baseline: none
  EXPECT_EQ(sim::searchTrail(m),
            "50 nodes 1.00% (matches), 25 nodes 12.50% (matches), 12 nodes 50.00% (above)");
  EXPECT_EQ(sim::searchTrail(s.strategies[1]), "");
  const fs::path dir = tempDir("report-search");
  ASSERT_TRUE(sim::writeReport((dir / "out").string(), s).isOk());
  const std::string md = slurp(dir / "out" / "report.md");
  EXPECT_NE(md.find("- morpheus: 25 nodes match the baseline's violation rate with the ad-hoc "
                    "load at 50 nodes (50.0% smaller)\n  - searched: 50 nodes 1.00% (matches), "
                    "25 nodes 12.50% (matches), 12 nodes 50.00% (above)\n"),
            std::string::npos)
      << md;
  fs::remove_all(dir);
}

// Without gnuplot on PATH the report says so and links no image; the CSVs and summary are written.
TEST(ReportTest, WriteReportWithoutGnuplotSaysSo) {
  const fs::path dir = tempDir("report-nognuplot");
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  Status st = sim::writeReport((dir / "out").string(), summary());
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(st.isOk()) << st.toString();
  const fs::path out = dir / "out";
  EXPECT_EQ(slurp(out / "summary.json"), sim::summaryJson(summary()));
  EXPECT_EQ(lines(out / "strategies.csv"), 3);
  EXPECT_EQ(lines(out / "baseline" / "instances.csv"), 101);
  EXPECT_EQ(lines(out / "baseline" / "adhoc.csv"), 6);
  EXPECT_EQ(lines(out / "morpheus" / "utilisation.csv"), 4);
  EXPECT_EQ(slurp(out / "morpheus" / "utilisation_binned.csv"),
            "first_step,mean_utilisation\n0,0.100000\n1,0.500000\n2,0.450000\n");
  EXPECT_EQ(lines(out / "morpheus" / "adhoc_jct_cdf.csv"), 5);  // header + 4 finished
  EXPECT_TRUE(fs::exists(out / "report.gp"));
  const std::string md = slurp(out / "report.md");
  EXPECT_NE(md.find("gnuplot is not installed"), std::string::npos);
  EXPECT_EQ(md.find(".png"), std::string::npos);
  // The paper's metric leads: worst-case count, rate and ratio, then the same with the ad-hoc load.
  EXPECT_NE(md.find("| morpheus | 100 | 5 | 5.00% | 5.2x | 1 | 1.00% | 13.0x |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- morpheus: 5 worst-case violations of 100 instances against the "
                    "baseline's 26 of 100 (baseline / strategy rate: 5.2x); with the ad-hoc load "
                    "1 against 13 (13.0x)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Morpheus §8's 5-13x"), std::string::npos);
  EXPECT_NE(md.find("50 nodes match the baseline's violation rate"), std::string::npos);
  fs::remove_all(dir);
}

// With gnuplot installed the four plots are drawn and linked (skipped, and said so, without
// gnuplot).
TEST(ReportTest, WriteReportDrawsPlotsWithGnuplot) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::printf("[  SKIPPED ] PNG check: gnuplot is not installed\n");
    GTEST_SKIP() << "gnuplot is not installed";
  }
  const fs::path dir = tempDir("report-gnuplot");
  ASSERT_TRUE(sim::writeReport(dir.string(), summary()).isOk());
  for (const char* png :
       {"violations.png", "provisioned_used_cdf.png", "utilisation.png", "adhoc_jct_cdf.png"}) {
    ASSERT_TRUE(fs::exists(dir / png)) << png << "\n" << slurp(dir / "gnuplot.log");
    EXPECT_GT(fs::file_size(dir / png), 1000u) << png;
    EXPECT_EQ(slurp(dir / png).substr(1, 3), "PNG");
  }
  const std::string md = slurp(dir / "report.md");
  EXPECT_NE(md.find("](violations.png)"), std::string::npos);
  EXPECT_EQ(md.find("gnuplot failed"), std::string::npos) << slurp(dir / "gnuplot.log");
  fs::remove_all(dir);
}

// Repeated strategy names are refused before anything is written; an unwritable directory is
// UNAVAILABLE naming it.
TEST(ReportTest, RefusesRepeatedNamesAndUnwritableDirectory) {
  const fs::path dir = tempDir("report-bad");
  auto s = summary();
  s.strategies.push_back(strategy("baseline", 10, 1));
  Status st = sim::writeReport(dir.string(), s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("strategies[2].name"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(dir));
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  st = sim::writeReport((dir / "file" / "out").string(), summary());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find((dir / "file" / "out").string()), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace morpheus
