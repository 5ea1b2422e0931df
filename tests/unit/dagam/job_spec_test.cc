#include "dagam/job_spec.h"

#include <gtest/gtest.h>

#include <fstream>

namespace morpheus::dagam {
namespace {

const char* kWordcount = R"(
name: wordcount
stages:
  - name: map
    tasks: 4
    command: "echo map $MORPHEUS_TASK_INDEX"
    resources: {memory_mib: 256, vcores: 1, gpu: 1}
    gang: 2
    max_attempts: 5
    constraints: [{key: rack, values: [r1, r2], hard: true}]
    reads: [/data/input]
    writes: [/data/mid]
    env: {MODE: fast}
  - name: reduce
    depends_on: [map]
    tasks: 1
    command: "cat out-*"
    resources: {memory_mib: 512, vcores: 2}
)";

// Parses `yaml` and returns the error message ("" when it parsed).
std::string errorOf(const std::string& yaml) {
  auto r = parseJobSpec(yaml, "test.yaml");
  if (r.isOk()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

std::string twoStages(const std::string& second_extra) {
  return "name: j\nstages:\n  - {name: map, tasks: 1, command: 'true'}\n"
         "  - {name: reduce, tasks: 1, command: 'true'" +
         second_extra + "}\n";
}

// Every field of a full job is read into the spec, defaults where absent.
TEST(JobSpecTest, ParsesAllFieldsOfAFullJob) {
  auto r = parseJobSpec(kWordcount);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const JobSpec& j = *r;
  EXPECT_EQ(j.name, "wordcount");
  ASSERT_EQ(j.stages.size(), 2u);
  const StageSpec& m = j.stages[0];
  EXPECT_EQ(m.name, "map");
  EXPECT_EQ(m.tasks, 4);
  EXPECT_EQ(m.command, "echo map $MORPHEUS_TASK_INDEX");
  EXPECT_EQ(m.resources.memoryMib(), 256);
  EXPECT_EQ(m.resources.vcores(), 1);
  EXPECT_EQ(m.resources.extendedValue("gpu"), 1);
  EXPECT_EQ(m.gang, 2);
  EXPECT_EQ(m.max_attempts, 5);
  ASSERT_EQ(m.constraints.size(), 1u);
  EXPECT_EQ(m.constraints[0].key, "rack");
  EXPECT_EQ(m.constraints[0].values, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_TRUE(m.constraints[0].hard);
  EXPECT_EQ(m.reads, std::vector<std::string>{"/data/input"});
  EXPECT_EQ(m.writes, std::vector<std::string>{"/data/mid"});
  EXPECT_EQ(m.env.at("MODE"), "fast");
  const StageSpec& red = j.stages[1];
  EXPECT_EQ(red.depends_on, std::vector<std::string>{"map"});
  EXPECT_EQ(red.deps, std::vector<int>{0});
  EXPECT_EQ(red.max_attempts, 3);
  EXPECT_EQ(red.gang, 1);
  EXPECT_EQ(red.resources, Resource(512, 2));
}

// A stage without resources gets the documented default of 256 MiB / 1 vcore.
TEST(JobSpecTest, DefaultsResourcesWhenAbsent) {
  auto r = parseJobSpec("name: j\nstages: [{name: a, tasks: 2, command: 'true'}]\n");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->stages[0].resources, Resource(256, 1));
}

// depends_on naming a stage that does not exist is rejected, naming field and stage.
TEST(JobSpecTest, RejectsUnknownDependency) {
  EXPECT_EQ(errorOf(twoStages(", depends_on: [mapp]")),
            "stages[1].depends_on: unknown stage 'mapp'");
}

// A dependency cycle is rejected and the cycle is spelled out.
TEST(JobSpecTest, RejectsDependencyCycle) {
  std::string yaml =
      "name: j\nstages:\n"
      "  - {name: a, tasks: 1, command: 'true', depends_on: [c]}\n"
      "  - {name: b, tasks: 1, command: 'true', depends_on: [a]}\n"
      "  - {name: c, tasks: 1, command: 'true', depends_on: [b]}\n";
  std::string err = errorOf(yaml);
  EXPECT_EQ(err.rfind("stages: dependency cycle: ", 0), 0u) << err;
  EXPECT_NE(err.find("a -> c -> b -> a (X -> Y: X depends on Y)"), std::string::npos) << err;
}

// A stage depending on itself is a cycle too.
TEST(JobSpecTest, RejectsSelfDependency) {
  EXPECT_NE(
      errorOf(twoStages(", depends_on: [reduce]")).find("stages[1].depends_on: dependency cycle"),
      std::string::npos);
}

// tasks must be a positive integer.
TEST(JobSpecTest, RejectsNonPositiveTasks) {
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, tasks: 0, command: 'true'}]\n"),
            "stages[0].tasks: must be >= 1");
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, tasks: -3, command: 'true'}]\n"),
            "stages[0].tasks: must be >= 1");
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, tasks: many, command: 'true'}]\n"),
            "stages[0].tasks: must be an integer, got 'many'");
}

// Missing or blank command is rejected naming the field.
TEST(JobSpecTest, RejectsMissingCommand) {
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, tasks: 1}]\n"),
            "stages[0].command: is required and must not be empty");
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, tasks: 1, command: '  '}]\n"),
            "stages[0].command: is required and must not be empty");
}

// Required top-level and stage fields are named when absent.
TEST(JobSpecTest, RejectsMissingRequiredFields) {
  EXPECT_EQ(errorOf("stages: [{name: a, tasks: 1, command: 'true'}]\n"), "name: is required");
  EXPECT_EQ(errorOf("name: j\n"), "stages: at least one stage is required");
  EXPECT_EQ(errorOf("name: j\nstages: []\n"), "stages: at least one stage is required");
  EXPECT_EQ(errorOf("name: j\nstages: [{tasks: 1, command: 'true'}]\n"),
            "stages[0].name: is required");
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, command: 'true'}]\n"),
            "stages[0].tasks: is required");
}

// Misspelt keys are errors rather than silently ignored.
TEST(JobSpecTest, RejectsUnknownFields) {
  EXPECT_EQ(errorOf("name: j\nstages: [{name: a, tasks: 1, comand: 'true'}]\n"),
            "stages[0].comand: unknown field");
  EXPECT_EQ(errorOf("name: j\nstagez: []\n"), "stagez: unknown field (expected name, stages)");
}

// Two stages with one name are ambiguous for depends_on.
TEST(JobSpecTest, RejectsDuplicateStageNames) {
  EXPECT_EQ(errorOf("name: j\nstages:\n  - {name: a, tasks: 1, command: x}\n"
                    "  - {name: a, tasks: 1, command: y}\n"),
            "stages[1].name: duplicate stage name 'a'");
}

// Resources, gang, attempts and constraints are range-checked with the field named.
TEST(JobSpecTest, RejectsBadNumbersAndConstraints) {
  EXPECT_EQ(errorOf(twoStages(", resources: {memory_mib: 0, vcores: 1}")),
            "stages[1].resources.memory_mib: must be >= 1");
  EXPECT_EQ(errorOf(twoStages(", resources: {vcores: 1}")),
            "stages[1].resources.memory_mib: is required");
  EXPECT_EQ(errorOf(twoStages(", gang: 2")), "stages[1].gang: gang size 2 exceeds tasks 1");
  EXPECT_EQ(errorOf(twoStages(", max_attempts: 0")), "stages[1].max_attempts: must be >= 1");
  EXPECT_EQ(errorOf(twoStages(", constraints: [{key: rack}]")),
            "stages[1].constraints[0].values: must list at least one value");
  EXPECT_EQ(errorOf(twoStages(", constraints: [{values: [a]}]")),
            "stages[1].constraints[0].key: is required");
  EXPECT_EQ(errorOf(twoStages(", reads: /data/x")), "stages[1].reads: must be a list of strings");
}

// A stage's expected task time and constraint operators are read;
// an unknown operator is refused naming the field.
TEST(JobSpecTest, ReadsExpectedTaskTimeAndConstraintOps) {
  auto r = parseJobSpec(twoStages(
      ", expected_task_ms: 5000, constraints: [{key: cores, values: ['32'], op: at_least, "
      "hard: true}]"));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const StageSpec& s = r->stages[1];
  EXPECT_EQ(s.expected_task_ms, 5000);
  ASSERT_EQ(s.constraints.size(), 1u);
  EXPECT_EQ(s.constraints[0].op, "at_least");
  EXPECT_EQ(r->stages[0].expected_task_ms, 0);
  EXPECT_EQ(r->stages[0].constraints.size(), 0u);
  EXPECT_EQ(errorOf(twoStages(", constraints: [{key: cores, values: ['1'], op: bigger}]")),
            "stages[1].constraints[0].op: must be in, at_least or version_at_least");
  EXPECT_EQ(errorOf(twoStages(", expected_task_ms: -1")),
            "stages[1].expected_task_ms: must be >= 0");
}

// Syntax errors are reported against the origin, not as a crash.
TEST(JobSpecTest, RejectsMalformedYaml) {
  std::string err = errorOf("name: j\nstages: [\n");
  EXPECT_EQ(err.rfind("test.yaml: not valid YAML", 0), 0u) << err;
}

// loadJobSpec prefixes errors with the file path and reports unreadable files.
TEST(JobSpecTest, LoadNamesTheFile) {
  std::string path = ::testing::TempDir() + "/dagam_bad_job.yaml";
  {
    std::ofstream out(path);
    out << "name: j\nstages: [{name: a, tasks: 0, command: x}]\n";
  }
  auto r = loadJobSpec(path);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), path + ": stages[0].tasks: must be >= 1");
  auto missing = loadJobSpec(path + ".nope");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace morpheus::dagam
