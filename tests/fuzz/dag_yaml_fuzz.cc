// Fuzz target: the DAG job YAML parser run by morpheus-dag-am and
// `morpheusctl app` (src/dagam/job_spec.h, parseJobSpec).
//
// Property (job_spec.h's contract, which the DAG AM relies on without
// re-checking): an accepted job has a valid name, at least one stage, unique
// stage names, 1 <= gang <= tasks, max_attempts >= 1, a non-blank command,
// memory >= 1 MiB, constraints with a key and values, and `deps` holding
// in-range indices of `depends_on` that form a DAG.
#include <set>

#include "dagam/job_spec.h"
#include "fuzz_util.h"

using namespace morpheus;

namespace {

bool isDag(const dagam::JobSpec& job) {
  // Kahn's algorithm: every stage is eventually free of unfinished deps.
  const size_t n = job.stages.size();
  std::vector<size_t> pending(n);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; i++) {
    pending[i] = job.stages[i].deps.size();
    for (int d : job.stages[i].deps) dependents[static_cast<size_t>(d)].push_back(i);
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; i++)
    if (pending[i] == 0) ready.push_back(i);
  size_t done = 0;
  while (!ready.empty()) {
    size_t u = ready.back();
    ready.pop_back();
    done++;
    for (size_t v : dependents[u])
      if (--pending[v] == 0) ready.push_back(v);
  }
  return done == n;
}

void checkStage(const dagam::JobSpec& job, size_t i, std::set<std::string>* names) {
  const dagam::StageSpec& s = job.stages[i];
  const std::string at = "stages[" + std::to_string(i) + "] ";
  FUZZ_CHECK(!s.name.empty() && names->insert(s.name).second, at + "name '" + s.name + "'");
  FUZZ_CHECK(s.tasks >= 1 && s.gang >= 1 && s.gang <= s.tasks, at + "tasks/gang");
  FUZZ_CHECK(s.max_attempts >= 1, at + "max_attempts");
  FUZZ_CHECK(s.command.find_first_not_of(" \t\n") != std::string::npos, at + "blank command");
  FUZZ_CHECK(s.resources.memoryMib() >= 1 && !s.resources.anyNegative(), at + "resources");
  FUZZ_CHECK(s.deps.size() <= s.depends_on.size(), at + "deps beyond depends_on");
  for (int d : s.deps) {
    FUZZ_CHECK(d >= 0 && static_cast<size_t>(d) < job.stages.size() && static_cast<size_t>(d) != i,
               at + "dep index " + std::to_string(d));
  }
  for (const auto& c : s.constraints) {
    FUZZ_CHECK(!c.key.empty() && !c.values.empty(), at + "constraint without key or values");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto job = dagam::parseJobSpec(std::string(fuzz::asText(data, size)), "fuzz.yaml");
  if (!job.isOk()) return 0;
  FUZZ_CHECK(!job->name.empty(), "empty job name");
  FUZZ_CHECK(!job->stages.empty(), "no stages");
  std::set<std::string> names;
  for (size_t i = 0; i < job->stages.size(); i++) checkStage(*job, i, &names);
  FUZZ_CHECK(isDag(*job), "dependencies form a cycle");
  return 0;
}
