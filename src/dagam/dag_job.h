// DagJob: the pure core of morpheus-dag-am. A state machine over the tasks of
// a JobSpec with no I/O and no threads: the driver feeds it what the RM and
// NMs report (allocated containers, completed containers, preemption notices,
// resync) and asks it what to do next (asks, launches, releases, progress,
// final state). Time comes from the injected Clock (a VirtualClock in tests).
//
// Task life cycle: kWaiting (stage not runnable) -> kPending (needs a
// container) -> kLaunching (container assigned, start requested) -> kRunning
// -> kSucceeded | back to kPending (retry) | kFailed (attempts exhausted).
// A stage is runnable when every stage it depends on has completed.
//
// Attempt accounting: a non-zero exit, memory-limit kill or launch failure is
// a failed attempt; a container preempted, lost with its node, or killed
// without the task failing is not (the task is simply run again).
//
// Thread-safety: none; the driver owns the object on one thread.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "dagam/job_spec.h"

namespace morpheus::dagam {

enum class TaskState { kWaiting, kPending, kLaunching, kRunning, kSucceeded, kFailed };
const char* taskStateName(TaskState s);

// How a container ended (mirrors the wire ContainerExitReason without
// depending on generated code).
enum class ExitKind {
  kSuccess,
  kFailure,
  kKilled,
  kPreempted,
  kMemoryExceeded,
  kNodeLost,
  kLaunchFailed,
  kUnknown
};

struct Ask {
  std::string request_id;  // stage name
  int priority = 0;        // stage index
  Resource capability;
  int count = 0;  // containers still wanted (0 cancels)
  int gang_size = 1;
  std::vector<ConstraintSpec> constraints;
  int64_t expected_ms = 0;  // StageSpec::expected_task_ms
};

struct Grant {
  std::string container_id;
  std::string node_id;
  std::string node_address;
  std::string request_id;  // Container.allocation_request_id ("" = match by priority)
  int priority = 0;
  Resource resource;
};

struct Launch {
  std::string container_id;
  std::string node_address;
  int stage = 0;
  int index = 0;
  int attempt = 0;                         // 1-based launch number of this task
  std::string command;                     // the shell command; the driver runs it via `sh -c`
  std::map<std::string, std::string> env;  // MORPHEUS_* plus the stage's env
};

struct Completion {
  std::string container_id;
  ExitKind kind = ExitKind::kUnknown;
  int exit_status = 0;
  std::string diagnostics;
};

struct StageReport {
  std::string name;
  std::vector<std::string> depends_on;
  int tasks = 0;
  int completed = 0;                    // succeeded
  std::vector<Millis> running_elapsed;  // per kLaunching/kRunning task, since its launch
  Millis mean_task{0};                  // of the succeeded tasks' run times; 0 = none yet
  Resource task_resource;               // per task (the stage's resources)
  Millis estimated_task{0};             // the spec's estimate; 0 = none
};

struct FileEvent {
  std::string path;
  TimePoint time;
};

struct Task {
  int stage = 0;
  int index = 0;
  TaskState state = TaskState::kWaiting;
  int failed_attempts = 0;   // counted against max_attempts
  int launches = 0;          // every launch, including preempted/lost ones
  std::string container_id;  // while kLaunching/kRunning
  bool preemption_noted = false;
  std::string last_diagnostics;
  std::optional<TimePoint> launched;  // current launch (kLaunching/kRunning)
  std::optional<Millis> ran;          // run time of the successful launch
};

class DagJob {
 public:
  // `clock` must outlive the DagJob.
  DagJob(JobSpec spec, std::string app_id, const Clock& clock);

  const JobSpec& spec() const { return spec_; }

  // --- inputs ---------------------------------------------------------------
  // Largest container the cluster grants (RegisterApplicationMasterResponse).
  // Fails the job at once when a stage asks for more (it could never run).
  void setMaxContainer(const Resource& max);
  // Assigns granted containers to pending tasks of their stage and returns the
  // launches to perform; containers nobody needs are queued for release.
  std::vector<Launch> onAllocated(const std::vector<Grant>& grants);
  // The NM accepted the start of `container_id`.
  void onLaunchSucceeded(const std::string& container_id);
  // The NM refused or could not be reached. `counts_as_attempt`: the failure
  // is the task's (bad command/token) rather than transient. The container is
  // queued for release.
  void onLaunchFailed(const std::string& container_id, bool counts_as_attempt,
                      const std::string& message);
  void onCompleted(const std::vector<Completion>& completions);
  // The RM will kill `container_id` after its grace period; its task reruns
  // (without counting an attempt) when the kill is reported.
  void onPreemptionNotice(const std::string& container_id, const std::string& reason);
  // The AM re-registered after an RM restart; `running` are the containers of
  // this app the RM still knows to be running. Tasks on other containers are
  // treated as lost (rerun, not counted); unknown running containers are
  // queued for release.
  void onResync(const std::set<std::string>& running);

  // --- outputs --------------------------------------------------------------
  // One ask per runnable, unfinished stage (count may be 0 to cancel).
  std::vector<Ask> asks() const;
  // Container ids to release; cleared by the call.
  std::vector<std::string> takeReleases();
  double progress() const;                              // succeeded tasks / all tasks
  std::map<std::string, double> stageProgress() const;  // per stage name
  // Jockey's view of the job (EuroSys'12 §4.1, AllocateRequest.stages): per
  // stage its task counts, the elapsed time of its running tasks and the mean
  // duration of its tasks that succeeded in this run; in spec order.
  std::vector<StageReport> stageReports() const;
  bool finished() const { return succeeded() || failed(); }
  bool succeeded() const;
  bool failed() const { return failed_; }
  const std::string& diagnostics() const { return diagnostics_; }
  // Provenance: reads of started stages at stage start, writes of completed
  // stages at stage end; one entry per path (earliest read, latest write).
  std::vector<FileEvent> filesRead() const;
  std::vector<FileEvent> filesWritten() const;

  // --- inspection (logs, tests) ----------------------------------------------
  const std::vector<Task>& tasks() const { return tasks_; }
  const Task& task(int stage, int index) const;
  bool stageRunnable(int stage) const;
  bool stageCompleted(int stage) const;
  int stageSucceeded(int stage) const;
  int runningContainers() const;  // kLaunching + kRunning
  // One-line human summary: "map 4/4, reduce 0/1 (1 running)".
  std::string summary() const;
  // Operator-facing event lines since the last call (task launched, failed,
  // retried, stage completed, ...); the driver logs them.
  std::vector<std::string> takeEvents();

 private:
  int taskIndex(int stage, int index) const { return stage_offset_[stage] + index; }
  int stageForGrant(const Grant& g) const;
  void refreshRunnable();
  void taskEnded(int t, bool counts, const std::string& why);
  void fail(const std::string& why);
  void release(const std::string& container_id) { releases_.push_back(container_id); }

  JobSpec spec_;
  std::string app_id_;
  const Clock& clock_;

  std::vector<int> stage_offset_;  // first task index of each stage
  std::vector<Task> tasks_;
  std::map<std::string, int> by_container_;  // container id -> task index (kLaunching/kRunning)
  std::vector<std::optional<TimePoint>> stage_start_;
  std::vector<std::optional<TimePoint>> stage_end_;
  std::vector<std::string> releases_;
  std::set<std::string> released_;  // ids we gave back (their completions are ignored)
  std::vector<std::string> events_;
  bool failed_ = false;
  std::string diagnostics_;
};

}  // namespace morpheus::dagam
