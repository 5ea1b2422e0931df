// morpheus-sim workloads: what the simulator runs, independent of
// how it runs it. Two producers fill a Workload — the periodic-job generator
// (Morpheus OSDI'16 §2 trace findings) and the JSON trace loader — and the
// SWIM loader adds the ad-hoc background. The engine (sim/engine/engine.h) consumes
// a Workload and never generates anything itself.
//
// Ground truth vs what Morpheus sees: a PeriodicJob carries the true SLO
// (input availability and the consumer's read of the output) only so the
// evaluation can judge a run; strategies that infer SLOs see nothing but
// provenance (run records and file events) produced while the simulation
// runs, exactly as the inference service does.
//
// Determinism: every random draw is a pure function of (seed, job index,
// instance index, draw name) — see drawInstance — so a strategy's run does not
// change another's draws, and the same seed gives byte-identical output.
//
// Pure library: no I/O except the explicit load functions; no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"
#include "store/provenance/provenance_store.h"

namespace morpheus::sim {

// One stage of a job's DAG: `tasks` tasks of `task_resource`, each nominally
// running `task_duration`; it starts when every stage in `depends_on` (indices
// of earlier stages) has finished all its tasks.
struct SimStage {
  std::string name;
  int64_t tasks = 1;
  Millis task_duration{60000};
  Resource task_resource;  // e.g. Resource(1024 MiB, 1 vcore)
  std::vector<int> depends_on;
};

// A recurring production job (Morpheus §2): submitted every `period` at
// `submit_offset` after each period start (period starts are multiples of
// `period` since the simulation's epoch, time 0).
struct PeriodicJob {
  JobKey key;
  UserId owner;
  std::string queue = "root.prod";
  Millis period{3600000};
  Millis submit_offset{0};
  std::vector<SimStage> stages;  // nominal DAG (day 0)

  // Run-to-run variance, applied by drawInstance.
  double duration_noise_cv = 0.1;       // lognormal noise on each task's duration
  double straggler_probability = 0.01;  // per task
  double straggler_factor = 3.0;        // a straggler runs this many times longer
  double failure_probability = 0.0;     // per instance: the run fails (status failed)
  double input_growth_per_day = 0.0;    // tasks of every stage grow by this fraction per day
  int64_t code_change_day = -1;         // from this day on, task durations x code_change_factor
  double code_change_factor = 1.0;

  // Ground truth SLO, offsets from the period start (Morpheus §4): the job's
  // input is written by its producer at `input_available`, and its consumer
  // (a scheduled job, see consumerRun) starts at `deadline` and reads the
  // output then (the run must end by then).
  Millis input_available{0};
  Millis deadline{3600000};

  // Provenance: the path the producer writes and the job reads, and the path
  // the job writes and its consumer reads.
  std::string input_path;
  std::string output_path;

  // User provisioning (the baseline, Morpheus Fig. 2a): the owner's static
  // request — `user_containers` containers of `user_container_resource` held
  // from submit until the deadline of each instance.
  int64_t user_containers = 1;
  Resource user_container_resource;
};

// An ad-hoc (non-recurring) job: SWIM background or a user's trace.
struct AdhocJob {
  std::string name;
  UserId user;
  std::string queue = "root.default";
  Millis submit{0};  // since the simulation's epoch
  std::vector<SimStage> stages;
};

// One realised instance k of a periodic job: the DAG with this run's task
// counts and per-task durations (stragglers, noise, growth already applied).
struct RealizedStage {
  std::vector<Millis> task_durations;  // size = this run's task count
};
struct RealizedInstance {
  int64_t index = 0;                  // k: submitted at k * period + submit_offset
  TimePoint submit;                   // absolute
  TimePoint input_available;          // absolute, ground truth
  TimePoint deadline;                 // absolute, ground truth
  bool fails = false;                 // the run ends as failed (counted, never fitted)
  std::vector<RealizedStage> stages;  // parallel to PeriodicJob::stages
};

struct Workload {
  std::vector<PeriodicJob> periodic;
  std::vector<AdhocJob> adhoc;  // sorted by submit
};

// Deterministic realisation of instance k of periodic job number `job_index`.
RealizedInstance drawInstance(const PeriodicJob& job, size_t job_index, int64_t k, uint64_t seed);
// drawInstance with each stage's durations grouped in consecutive runs of
// `group` (>= 1), each run's duration its longest: the same durations as
// grouping drawInstance's, with fewer draws completed (only those that may
// be their run's longest).
RealizedInstance drawGroupedInstance(const PeriodicJob& job, size_t job_index, int64_t k,
                                     uint64_t seed, int64_t group);

// The consumer of instance `inst`'s output (Morpheus §4: production
// pipelines, where the dependent job is itself scheduled): a job of its own,
// "consumer:" + output_path, with a fixed schedule — submitted and started
// at the instance's true deadline, every period. It reads the output at its
// start or, when the output is late, as soon as it is written; its run ends
// at that read (its own work is not simulated: no tasks, no skyline).
// Provenance gets both its run record (submit/start = the scheduled start)
// and the read (event of the consumer's run), so inference can tell when the
// data was needed from when it was read.
struct ConsumerRun {
  store::RunRecord run;
  store::FileEvent read;
};
// nullopt when the job has no output path. `output_written`: when the
// instance wrote its output.
std::optional<ConsumerRun> consumerRun(const PeriodicJob& job, const RealizedInstance& inst,
                                       TimePoint output_written);

// ---- Generator (Morpheus §2 findings; defaults documented in workload.cc) ----
struct GeneratorOptions {
  int64_t periodic_jobs = 50;  // jobs generated (>= 0)
  int64_t days = 10;           // simulated days the demand is averaged over (>= 1)
  uint64_t seed = 1;           // every draw derives from it
  Resource node_size;          // one node's capacity; containers are sized against it
  int64_t nodes = 50;          // the jobs' total average demand is scaled to `periodic_load`
  double periodic_load = 0.4;  // share of cluster capacity used on average by periodic jobs
};
// INVALID_ARGUMENT naming the option when one is out of range, or when
// periodic_load cannot be reached within 25% (too many jobs for the cluster:
// "periodic_jobs"; too few to fill it: "periodic_load").
Result<Workload> generatePeriodic(const GeneratorOptions& options);

// ---- Ad-hoc load from a SWIM trace (sim/workloads/swim_trace.h), repeated daily over
// `days` and scaled (by sampling jobs, deterministically) so the ad-hoc work
// is `load` of the cluster's capacity on average. Jobs are a map stage, then
// a reduce stage when the trace job shuffles; 1-vcore containers with the
// node's memory per vcore. Sorted by submit. ----
struct AdhocOptions {
  std::string trace_path;  // SWIM TSV
  int64_t days = 10;       // the trace's day is repeated this many times (>= 1)
  double load = 0.3;       // share of cluster capacity, in [0, 1]
  uint64_t seed = 1;       // sampling and user assignment derive from it
  Resource node_size;      // one node's capacity
  int64_t nodes = 50;      // cluster size the load is relative to (>= 1)
  // Task shapes. false (default): every task is 1 vcore + the
  // node's memory per vcore. true: multi-resource diversity as Tetris
  // (SIGCOMM'14 §2.1) and Carbyne (OSDI'16 §2) measure in production
  // clusters: each stage of a job draws its own shape, vcores uniform in
  // {1, 2, 4} and memory log-uniform in [1/4, 2] x the node's memory per
  // vcore times its vcores, independent of each other and between map and
  // reduce; the load counts each task by its dominant share, so the offered
  // load stays `load`.
  bool diverse_shapes = false;
};
Result<std::vector<AdhocJob>> loadAdhoc(const AdhocOptions& options);
// loadAdhoc's jobs appended to `workload`'s ad-hoc jobs, which stay sorted by
// submit (stable: a user trace's order among equal submits is kept). On error
// the workload is unchanged.
Status addAdhocLoad(Workload& workload, const AdhocOptions& options);

// ---- User traces: the documented JSON format (README "morpheus-sim") ----
// INVALID_ARGUMENT naming the JSON path (e.g. "periodic[3].stages[0].tasks")
// of the first bad field; nothing is returned then.
Result<Workload> parseWorkloadJson(const std::string& text);
Result<Workload> loadWorkloadJson(const std::string& path);
// The same format written out (every field, durations as "1h2m3s"), so a
// generated workload can be saved, edited and fed back: parseWorkloadJson of
// the result gives the workload back exactly.
std::string workloadJson(const Workload& workload);

}  // namespace morpheus::sim
