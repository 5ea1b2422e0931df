// Query DAGs shaped like the Carbyne evaluation's workload (Grandl et al.,
// "Altruistic Scheduling in Multi-Resource Clusters", OSDI'16 §5.1, Tables
// 1-2): TPC-DS-, TPC-H- and BigBench-like jobs on a DAG engine, with six
// resources per task (CPU, memory, disk read/write, network in/out).
//
// What the generator is fitted to (docs/experiments/carbyne.md lists the
// figures and what each mix produces):
//  - stages per job: at least 7 at the median and 23 at the 95th percentile
//    (TPC-DS-like mix: log-normal, median 7, p95 23);
//  - critical path: 5 stages at the median (the spine's length grows as
//    stages^0.7, so larger plans are also deeper);
//  - several disjoint paths: every side branch starts with its own scan and
//    runs beside the spine until it joins it;
//  - multiple barriers: a stage starts only once every task of each parent
//    has finished (a shuffle), and joins wait for two or more parents;
//  - a job alone on the cluster runs for minutes to tens of minutes (its
//    critical path: one wave per stage of tasks of 20 s to 15 min).
// Our approximation of such plans, not a trace. The three mixes differ in
// plan size and task lengths (TPC-H: fewer joins; BigBench: long UDF and
// machine-learning stages), see carbyne_dags.cc.
//
// Resources: memory and vcores are Resource's own dimensions; disk read,
// disk write, network in and network out are extended resources in MB/s
// (kDiskIn ... kNetOut), so the scheduler's fit, dominant share and Tetris
// alignment see all six. Tasks' demands vary per stage and are not
// correlated across resources (Tetris SIGCOMM'14 §2.1): scans read disk,
// joins and aggregations read the network.
//
// Pure functions of their arguments (counter-based draws, workload_rng.h):
// the same seed gives the same jobs on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/resource.h"
#include "common/status.h"
#include "sim/workloads/workload.h"

namespace morpheus::sim {

// Extended resource names of the four bandwidth dimensions (MB/s).
inline constexpr const char* kDiskIn = "disk_in";
inline constexpr const char* kDiskOut = "disk_out";
inline constexpr const char* kNetIn = "net_in";
inline constexpr const char* kNetOut = "net_out";

// One server of the paper's cluster: 20 cores, 128 GiB, an SSD (1000 MB/s
// read and write) and a 10 Gbps NIC (1250 MB/s each way).
Resource carbyneServer();

enum class DagMix { kTpcDs, kTpcH, kBigBench };
// "tpcds", "tpch", "bigbench"; INVALID_ARGUMENT naming `field` otherwise.
Result<DagMix> parseDagMix(const std::string& name, const std::string& field);
const char* dagMixName(DagMix mix);

struct DagJobsOptions {
  DagMix mix = DagMix::kTpcDs;
  int64_t jobs = 250;  // >= 1
  uint64_t seed = 1;
  // Arrivals: 0 = all at time 0 (offline); > 0 = Poisson with this mean
  // inter-arrival (online; the paper: 20 s), the first job at 0.
  Millis mean_interarrival{0};
  int64_t users = 10;  // jobs go to users round robin (>= 1)
  // Job sizes: each job's scans read f times the tasks drawn (and its joins
  // may grow to f x 400 tasks), f log-normal with mean size_scale and
  // spread size_sigma, drawn per job; the defaults (0 and 1) keep every job
  // as drawn. Task durations, and so a job's critical path alone, do not
  // change. INVALID_ARGUMENT naming "size_sigma" outside [0, 3] or
  // "size_scale" outside (0, 10].
  double size_sigma = 0;
  double size_scale = 1;
};

// The jobs, sorted by submit, named "<mix>-<i>", stages in breadth-first
// order (a stage's parents come before it and its depth, the longest path of
// stages from a source, never decreases along the list), so stage index is
// Tez's breadth-first priority. INVALID_ARGUMENT naming the option
// ("jobs", "users", "mean_interarrival") when out of range.
Result<std::vector<AdhocJob>> generateDagJobs(const DagJobsOptions& options);

// Shape statistics of one job's DAG.
struct DagShape {
  int64_t stages = 0;
  int64_t critical_path = 0;  // stages on the longest path
  int64_t barriers = 0;       // stages that wait for a parent's every task (all with parents)
  int64_t joins = 0;          // stages waiting for two or more parents
  int64_t sources = 0;        // disjoint input paths: stages with no parent
  int64_t tasks = 0;
  double alone_s = 0;      // critical path with one wave per stage (nominal durations)
  double work_core_s = 0;  // sum of tasks x duration x vcores
};
DagShape dagShape(const AdhocJob& job);

}  // namespace morpheus::sim
