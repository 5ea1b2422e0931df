// The DAG job description run by morpheus-dag-am: named stages of shell tasks
// with counts, per-task resources, dependencies between stages, and
// provenance (files read/written, Morpheus §4). Parsing validates everything
// before returning; errors are INVALID_ARGUMENT naming the field, e.g.
// "stages[1].depends_on: unknown stage 'mapp'".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::dagam {

// Node-attribute placement constraint of a stage's asks (Phoenix-style).
struct ConstraintSpec {
  std::string key;
  std::vector<std::string> values;  // non-empty
  bool hard = false;                // true: never place elsewhere
  // Operator: "in" (default), "at_least" (number) or "version_at_least";
  // the lower bounds take one value.
  std::string op = "in";
};

struct StageSpec {
  std::string name;                     // unique within the job; [A-Za-z0-9_.-]+
  int tasks = 0;                        // > 0
  std::string command;                  // run via `sh -c`
  Resource resources{256, 1};           // per task; default 256 MiB / 1 vcore
  std::vector<std::string> depends_on;  // names of stages that must complete first
  std::vector<int> deps;                // the same as stage indices (filled by the parser)
  int gang = 1;                         // gang size of the asks (1 = no gang), <= tasks
  int max_attempts = 3;                 // failed attempts allowed per task, >= 1
  // estimated_task_ms: the user's estimate of one task's run time, reported
  // to the RM until a task of the stage has succeeded (Carbyne's
  // altruistic share); 0 (default) = none, the RM then orders the job by DRF.
  Millis estimated_task{0};
  std::vector<ConstraintSpec> constraints;
  int64_t expected_task_ms = 0;            // Expected run time of one task (0 = unknown), ms
  std::vector<std::string> reads;          // provenance: files read (time = stage start)
  std::vector<std::string> writes;         // provenance: files written (time = stage end)
  std::map<std::string, std::string> env;  // extra environment for every task
};

struct JobSpec {
  std::string name;               // required, non-empty
  std::vector<StageSpec> stages;  // non-empty; dependencies form a DAG
};

// Parses and validates YAML text. `origin` (e.g. a file name) prefixes YAML
// syntax errors only; field errors name the field.
Result<JobSpec> parseJobSpec(const std::string& yaml_text, const std::string& origin = "job");
// Reads and parses a file. NOT_FOUND-style failures to read are INVALID_ARGUMENT
// naming the path (a job file is user input).
Result<JobSpec> loadJobSpec(const std::string& path);

}  // namespace morpheus::dagam
