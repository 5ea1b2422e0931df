// morpheus-sim: the trace-driven simulator over the real planner,
// scheduler core, DRA policies, skyline LP and SLO inference (sim/engine/engine.h).
//
//   morpheus-sim run --nodes N [--node-size memory=MIB,vcores=V] --days D
//       --periodic-jobs J [--adhoc-trace FILE] [--adhoc-load F] [--strategy S]...
//       [--alpha LIST] [--seed S] --out DIR
//   morpheus-sim min-cluster (same flags) [--match worst-case|with-adhoc-load]
//       [--train-size nodes|each]
//       [--sizes N,N,...]
//   morpheus-sim trace --trace FILE [--json]     (summary of a SWIM trace)
//
// Exit codes: 0 done (also after Ctrl-C: what was done is written), 1 the
// report could not be written, 2 bad input (one line on stderr).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/version.h"
#include "inference/model/skyline_fit.h"
#include "planner/agent.h"
#include "sim/engine/engine.h"
#include "sim/engine/report.h"
#include "sim/engine/strategy.h"
#include "sim/engine/task_model.h"
#include "sim/phoenix/phoenix_cli.h"
#include "sim/workloads/swim_trace.h"
#include "sim/workloads/workload.h"

using namespace morpheus;

namespace {

std::atomic<bool> g_stop{false};

extern "C" void onSigint(int) { g_stop.store(true); }

int fail(const std::string& message) {
  std::cerr << "morpheus-sim: " << message << "\n";
  return 2;
}

int traceSummary(const std::string& trace, bool json) {
  sim::SwimRates rates;
  auto jobs = sim::loadSwimTrace(trace, rates);
  if (!jobs.isOk()) return fail(jobs.status().message());
  int64_t maps = 0, reduces = 0;
  double container_hours = 0;
  Millis span(0);
  for (const auto& j : *jobs) {
    maps += j.map_tasks;
    reduces += j.reduce_tasks;
    container_hours += (static_cast<double>(j.map_tasks) * j.map_task_duration.count() +
                        static_cast<double>(j.reduce_tasks) * j.reduce_task_duration.count()) /
                       3.6e6;
    span = std::max(span, j.submit);
  }
  if (json) {
    nlohmann::json out = {{"jobs", jobs->size()},
                          {"map_tasks", maps},
                          {"reduce_tasks", reduces},
                          {"container_hours", container_hours},
                          {"span_s", span.count() / 1000}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf(
        "trace %s: %zu jobs over %lld s; %lld map + %lld reduce tasks; %.1f container-hours "
        "(1-vcore containers, rates in sim/workloads/swim_trace.h)\n",
        trace.c_str(), jobs->size(), static_cast<long long>(span.count() / 1000),
        static_cast<long long>(maps), static_cast<long long>(reduces), container_hours);
  }
  return 0;
}

// Flags shared by `run` and `min-cluster`.
// Defaults: a small experiment that runs in about a minute on 2 cores.
struct SimFlags {
  int64_t nodes = 20;
  std::string node_size = "memory=65536,vcores=16";
  int64_t days = 7;
  int64_t periodic_jobs = 30;
  double periodic_load = 0.4;
  std::string adhoc_trace = "data/swim/swim-fb2009-24h.tsv";
  bool adhoc_trace_given = false;
  double adhoc_load = 0.3;
  std::string workload;  // JSON trace of the user's own jobs (replaces the generator)
  std::vector<std::string> strategies;
  std::string alpha;
  std::string tie_break = planner::tieBreakName(planner::AgentOptions{}.tie_break);
  std::string skyline_steps = planner::skylineStepsName(sim::ExperimentOptions{}.skyline_steps);
  uint64_t seed = 1;
  std::string out = "sim-out";
  // Carbyne: see ExperimentOptions.
  std::string adhoc_policy = "drf";
  double altruistic_share = 1.0;
  double estimate_noise = 0.0;
  bool adhoc_diverse_shapes = false;  // AdhocOptions::diverse_shapes
  sim::TaskModel task_model;          // --task-model, --task-group (sim/engine/task_model.h)
  // --adhoc-model, --adhoc-step (ExperimentOptions::aggregate_adhoc_step).
  std::string adhoc_model = "task";
  // min-cluster: --match worst-case|with-adhoc-load.
  std::string match = "worst-case";
  // min-cluster: --train-size nodes|each (ExperimentOptions::min_cluster_retrain).
  std::string train_size = "nodes";
  // min-cluster: --sizes a,b,... (ExperimentOptions::min_cluster_sizes);
  // empty: search.
  std::string sizes;
  bool sizes_given = false;
  int64_t adhoc_step_s = 10;
  // --adhoc-refill on|off (ExperimentOptions::aggregate_adhoc_refill).
  std::string adhoc_refill = "on";
  // --adhoc-fill on|off (ExperimentOptions::aggregate_adhoc_fill).
  std::string adhoc_fill = "off";
  // --train-adhoc-model same|task|aggregate
  // (ExperimentOptions::training_aggregate_adhoc_step).
  std::string train_adhoc_model = "same";
  // ExperimentOptions::train_segments, train_warmup_days.
  int64_t train_segments = sim::ExperimentOptions{}.train_segments;
  int64_t train_warmup_days = sim::ExperimentOptions{}.train_warmup_days;
  // ExperimentOptions::eval_segments, eval_warmup_days (run only).
  int64_t eval_segments = sim::ExperimentOptions{}.eval_segments;
  int64_t eval_warmup_days = sim::ExperimentOptions{}.eval_warmup_days;
  // Strategies simulated side by side (ExperimentOptions::threads).
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double preemption_grace_s = 15;  // ExperimentOptions::preemption_grace (rm.preemption-grace)
  // ExperimentOptions::preemption_interval (rm.preemption-interval).
  double preemption_interval_s = 3;
  // ExperimentOptions::dra_budget_fraction (morpheus-inference's proposal.budget-fraction).
  double dra_budget_fraction = sim::ExperimentOptions{}.dra_budget_fraction;
  bool dra_grant_when_ahead = false;  // ExperimentOptions::dra_grant_when_ahead
  double dra_ahead_window_s = 0;      // ExperimentOptions::dra_ahead_window
};

void addCarbyneFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option(
         "--adhoc-policy", f.adhoc_policy,
         "Ordering inside the ad-hoc queues (scheduler.policy): drf, fifo, carbyne or phoenix")
      ->capture_default_str();
  cmd->add_option("--altruistic-share", f.altruistic_share,
                  "Share of ad-hoc jobs whose AM reports its DAG (altruistic under carbyne)")
      ->capture_default_str();
  cmd->add_flag("--adhoc-diverse-shapes", f.adhoc_diverse_shapes,
                "SWIM tasks draw multi-resource shapes per stage (vcores 1/2/4, memory 1/4-2x "
                "per vcore) instead of 1 vcore + the node's memory per vcore");
  cmd->add_option("--estimate-noise", f.estimate_noise,
                  "Reported task durations are off by a factor uniform in [1-x, 1+x], x < 1")
      ->capture_default_str();
}

// Scale: the coarser model is an explicit choice (sim/engine/task_model.h).
void addTaskModelFlags(CLI::App* cmd, sim::TaskModel& m) {
  cmd->add_option("--task-model", m.name,
                  "task: every task is simulated (default); grouped: up to --task-group tasks "
                  "of a stage run as one container (faster, coarser: see README); fluid: ad-hoc "
                  "jobs as fluid work advanced every --fluid-step, periodic jobs grouped by "
                  "--task-group (the scale model: see README)")
      ->capture_default_str();
  cmd->add_option("--task-group", m.group,
                  "grouped and fluid models: most tasks of one stage of a job (fluid: of a "
                  "periodic job) per simulated container (>= 1)")
      ->capture_default_str();
  cmd->add_option_function<int64_t>(
         "--fluid-step", [&m](const int64_t& s) { m.fluid_step = Millis(s * 1000); },
         "fluid model: seconds between steps of the fluid ad-hoc pools (>= 1)")
      ->default_str("10");
}

// The aggregate ad-hoc model (sim/engine/aggregate_adhoc.h).
void addAdhocModelFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("--adhoc-model", f.adhoc_model,
                  "task: ad-hoc jobs run in the scheduler as tasks (default); aggregate: as "
                  "capacity over time outside it, recomputed every --adhoc-step (the scale "
                  "model, validated against task: see docs/experiments/simulator.md)")
      ->capture_default_str();
  cmd->add_option("--adhoc-step", f.adhoc_step_s,
                  "aggregate ad-hoc model: seconds between its steps (>= 1)")
      ->capture_default_str();
  cmd->add_option("--adhoc-refill", f.adhoc_refill,
                  "aggregate ad-hoc model: on: capacity periodic tasks free between steps goes "
                  "to ad-hoc pools below their fair share first; off: to the periodic apps "
                  "until the next step")
      ->capture_default_str();
  cmd->add_option("--adhoc-fill", f.adhoc_fill,
                  "aggregate ad-hoc model: on: room a scheduling pass leaves on a node goes to "
                  "ad-hoc pools with demand beyond their share until the next step; off: it "
                  "stays idle")
      ->capture_default_str();
  cmd->add_option("--train-adhoc-model", f.train_adhoc_model,
                  "the ad-hoc model of the training days alone: same (as --adhoc-model), "
                  "task or aggregate (at --adhoc-step); crossing the models separates what a "
                  "model does to what the training teaches from what it does to the evaluation")
      ->capture_default_str();
}

void addFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("--nodes", f.nodes, "Simulated nodes (> 0)")->capture_default_str();
  cmd->add_option("--node-size", f.node_size, "Node capacity, memory in MiB and vcores")
      ->capture_default_str();
  cmd->add_option("--days", f.days, "Simulated days; the first 70% train (>= 2)")
      ->capture_default_str();
  cmd->add_option("--periodic-jobs", f.periodic_jobs, "Generated periodic jobs")
      ->capture_default_str();
  cmd->add_option("--periodic-load", f.periodic_load,
                  "Share of cluster capacity the periodic jobs use on average")
      ->capture_default_str();
  cmd->add_option("--adhoc-trace", f.adhoc_trace,
                  "SWIM trace (TSV) of the ad-hoc load, repeated daily; '' for none")
      ->capture_default_str();
  cmd->add_option("--adhoc-load", f.adhoc_load, "Share of cluster capacity used by ad-hoc jobs")
      ->capture_default_str();
  cmd->add_option("--workload", f.workload,
                  "JSON trace of periodic and ad-hoc jobs (README); replaces the generator");
  cmd->add_option("--strategy", f.strategies,
                  "Strategy to run (repeatable; default all): baseline, morpheus, slo-packing, "
                  "lp-skyline, no-dra, greedy-planner, jockey-dra");
  cmd->add_option("--alpha", f.alpha, "Alpha sweep, e.g. 0.01,0.1,0.5,0.9 (morpheus-alphaA)");
  cmd->add_option("--tie-break", f.tie_break,
                  "LowCost's rule among equally cheap positions: latest, earliest or slack "
                  "(planner.tie-break)")
      ->capture_default_str();
  cmd->add_option("--skyline-steps", f.skyline_steps,
                  "How skylines are planned: whole (each step held at its height, or refused) "
                  "or stretchable (a step may spread over later steps) (proposal.skyline-steps)")
      ->capture_default_str();
  cmd->add_option("--preemption-grace", f.preemption_grace_s,
                  "Seconds a preempted container has to finish before it is killed "
                  "(rm.preemption-grace; 0 to 86400)")
      ->capture_default_str();
  cmd->add_option("--preemption-interval", f.preemption_interval_s,
                  "Seconds between the scheduler's preemption checks, 0 = at every node "
                  "heartbeat (rm.preemption-interval; 0 to 86400)")
      ->capture_default_str();
  cmd->add_option("--dra-budget-fraction", f.dra_budget_fraction,
                  "DRA budget of each instance as a share of its reserved skyline's area "
                  "(proposal.budget-fraction; 0 to 10)")
      ->capture_default_str();
  cmd->add_flag("--dra-grant-when-ahead", f.dra_grant_when_ahead,
                "morpheus-dra also grants to jobs that used more than they were guaranteed so "
                "far (dra.grant-when-ahead; the rule is on by default)");
  cmd->add_option("--dra-ahead-window", f.dra_ahead_window_s,
                  "Seconds over which morpheus-dra judges a job ahead of its plan "
                  "(0 = since the instance's first review, as the RM; 0 to 86400)")
      ->capture_default_str();
  cmd->add_option("--seed", f.seed, "Random seed")->capture_default_str();
  cmd->add_option("--threads", f.threads,
                  "Strategies simulated (run) or searched (min-cluster) side by side "
                  "(default: the machine's cores); results do not depend on it")
      ->capture_default_str();
  cmd->add_option("--train-segments", f.train_segments,
                  "Split the training days into this many consecutive segments, each "
                  "simulated from a cold cluster (side by side on --threads) and their "
                  "histories merged before SLO inference: a fidelity choice for scale, see "
                  "docs/experiments/simulator.md (1 = one simulation of every training day)")
      ->capture_default_str();
  cmd->add_option("--train-warmup-days", f.train_warmup_days,
                  "With --train-segments > 1: days each segment but the first is simulated "
                  "before its first recorded day, not recorded (>= 0)")
      ->capture_default_str();
  cmd->add_option("--eval-segments", f.eval_segments,
                  "run only: split each strategy's evaluation days into this many consecutive "
                  "segments, each simulated from a cold cluster with the strategy's "
                  "reservations admitted at its start (side by side on --threads), their "
                  "results merged: a fidelity choice for scale, see "
                  "docs/experiments/simulator.md (1 = one simulation of the evaluation days)")
      ->capture_default_str();
  cmd->add_option("--eval-warmup-days", f.eval_warmup_days,
                  "With --eval-segments > 1: days each evaluation segment but the first is "
                  "simulated before its first recorded day, not recorded (>= 0)")
      ->capture_default_str();
  cmd->add_option("--out", f.out, "Output directory")->capture_default_str();
  addCarbyneFlags(cmd, f);
  addTaskModelFlags(cmd, f.task_model);
  addAdhocModelFlags(cmd, f);
  cmd->add_option("--match", f.match,
                  "min-cluster: the baseline's rate to match, worst-case (reserved capacity "
                  "only, the paper's metric) or with-adhoc-load")
      ->capture_default_str();
  cmd->add_option("--train-size", f.train_size,
                  "min-cluster: nodes: every size plans from one training at --nodes (the "
                  "cluster's own history); each: every size is trained anew at its size")
      ->capture_default_str();
}

// --sizes: node counts, comma-separated, each in [1, nodes], none twice.
// Errors name the flag.
Result<std::vector<int64_t>> parseSizes(const std::string& text, int64_t nodes) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size()) {
      return invalidArgument("sizes", "'" + item + "' is not a node count (expected e.g. 12,15)");
    }
    if (v < 1 || v > nodes) {
      return invalidArgument(
          "sizes", std::to_string(v) + " is not in [1, --nodes = " + std::to_string(nodes) + "]");
    }
    if (std::find(out.begin(), out.end(), v) != out.end()) {
      return invalidArgument("sizes", std::to_string(v) + " is given twice");
    }
    out.push_back(v);
  }
  if (out.empty()) return invalidArgument("sizes", "empty list (expected e.g. 12,15)");
  return out;
}

Result<sim::Workload> buildWorkload(const SimFlags& f, const Resource& node_size) {
  sim::Workload w;
  if (!f.workload.empty()) {
    MORPHEUS_ASSIGN_OR_RETURN(w, sim::loadWorkloadJson(f.workload));
  } else {
    sim::GeneratorOptions g;
    g.periodic_jobs = f.periodic_jobs;
    g.days = f.days;
    g.seed = f.seed;
    g.node_size = node_size;
    g.nodes = f.nodes;
    g.periodic_load = f.periodic_load;
    MORPHEUS_ASSIGN_OR_RETURN(w, sim::generatePeriodic(g));
  }
  if (!f.adhoc_trace.empty() && f.adhoc_load > 0) {
    if (!f.adhoc_trace_given && !std::filesystem::exists(f.adhoc_trace)) {
      std::cerr << "morpheus-sim: note: default ad-hoc trace " << f.adhoc_trace
                << " not found; running without ad-hoc load\n";
      return w;
    }
    sim::AdhocOptions a;
    a.trace_path = f.adhoc_trace;
    a.days = f.days;
    a.load = f.adhoc_load;
    a.seed = f.seed;
    a.node_size = node_size;
    a.nodes = f.nodes;
    a.diverse_shapes = f.adhoc_diverse_shapes;
    MORPHEUS_RETURN_IF_ERROR(sim::addAdhocLoad(w, a));
  }
  return w;
}

// One line per group of phases that run at the same time (with --threads
// >= 2 the baseline's evaluation runs beside the training): every phase
// reported since the line began, each with its own bar; the line ends once
// all of them are done. The caller serialises calls.
class ProgressBar {
 public:
  void operator()(const std::string& phase, int64_t done, int64_t total) {
    const int pct =
        total > 0 ? static_cast<int>(std::min<int64_t>(done, total) * 100 / total) : 100;
    auto it = std::find_if(phases_.begin(), phases_.end(),
                           [&](const auto& p) { return p.first == phase; });
    if (it == phases_.end()) {
      phases_.emplace_back(phase, pct);
    } else if (it->second == pct) {
      return;
    } else {
      it->second = pct;
    }
    std::string line;
    bool all_done = true;
    for (const auto& [name, p] : phases_) {
      std::string bar(static_cast<size_t>(p / 5), '#');
      bar.resize(20, '.');
      char part[160];
      std::snprintf(part, sizeof part, "%s%-20s [%s] %3d%%", line.empty() ? "" : "  ", name.c_str(),
                    bar.c_str(), p);
      line += part;
      all_done = all_done && p >= 100;
    }
    std::fprintf(stderr, "\r%s%s", line.c_str(), all_done ? "\n" : "");
    std::fflush(stderr);
    if (all_done) phases_.clear();
  }

 private:
  std::vector<std::pair<std::string, int>> phases_;  // in the order first reported
};

int simulate(const SimFlags& f, bool min_cluster) {
  if (f.nodes <= 0) return fail("nodes: must be > 0");
  if (f.days < 2) return fail("days: must be >= 2 (training and evaluation days)");
  if (f.periodic_jobs < 0) return fail("periodic-jobs: must be >= 0");
  if (f.threads < 1) return fail("threads: must be >= 1");
  if (!(f.adhoc_load >= 0 && f.adhoc_load <= 1)) return fail("adhoc-load: must be in [0, 1]");
  if (!(f.preemption_grace_s >= 0 && f.preemption_grace_s <= 86400)) {
    return fail("preemption-grace: must be in [0, 86400] seconds");
  }
  if (!(f.preemption_interval_s >= 0 && f.preemption_interval_s <= 86400)) {
    return fail("preemption-interval: must be in [0, 86400] seconds");
  }
  if (!(f.dra_budget_fraction >= 0 && f.dra_budget_fraction <= 10)) {
    return fail("dra-budget-fraction: must be in [0, 10]");
  }
  if (!(f.dra_ahead_window_s >= 0 && f.dra_ahead_window_s <= 86400)) {
    return fail("dra-ahead-window: must be in [0, 86400] seconds");
  }
  auto tie_break = planner::parseTieBreak(f.tie_break);
  if (!tie_break.isOk()) return fail("tie-break: " + tie_break.status().message());
  auto skyline_steps = planner::parseSkylineSteps(f.skyline_steps, "skyline-steps");
  if (!skyline_steps.isOk()) return fail(skyline_steps.status().message());
  auto node_size = Resource::parse(f.node_size, "node-size");
  if (!node_size.isOk()) return fail(node_size.status().message());
  std::vector<double> alphas;
  if (!f.alpha.empty()) {
    auto a = sim::parseAlphaList(f.alpha);
    if (!a.isOk()) return fail(a.status().message());
    alphas = *a;
  }
  auto specs = sim::parseStrategies(f.strategies, alphas, inference::FitParams{}.alpha);
  if (!specs.isOk()) return fail(specs.status().message());
  if (Status st = sim::validateTaskModel(f.task_model); !st.isOk()) return fail(st.message());
  const bool aggregate = f.adhoc_model == "aggregate";
  if (!aggregate && f.adhoc_model != "task") {
    return fail("adhoc-model: must be task or aggregate, got '" + f.adhoc_model + "'");
  }
  if (f.adhoc_step_s < 1) return fail("adhoc-step: must be >= 1");
  if (f.train_adhoc_model != "same" && f.train_adhoc_model != "task" &&
      f.train_adhoc_model != "aggregate") {
    return fail("train-adhoc-model: must be same, task or aggregate, got '" + f.train_adhoc_model +
                "'");
  }
  if (f.train_adhoc_model == "aggregate" && f.task_model.name == "fluid") {
    return fail(
        "train-adhoc-model: aggregate replaces the fluid ad-hoc pools; use --task-model "
        "task or grouped with it");
  }
  if (f.train_adhoc_model == "aggregate" && f.adhoc_policy != "drf") {
    return fail(
        "train-adhoc-model: aggregate shares ad-hoc capacity max-min (drf); "
        "--adhoc-policy '" +
        f.adhoc_policy + "' needs task");
  }
  if (f.adhoc_refill != "on" && f.adhoc_refill != "off") {
    return fail("adhoc-refill: must be on or off, got '" + f.adhoc_refill + "'");
  }
  if (f.adhoc_fill != "on" && f.adhoc_fill != "off") {
    return fail("adhoc-fill: must be on or off, got '" + f.adhoc_fill + "'");
  }
  if (f.train_size != "nodes" && f.train_size != "each") {
    return fail("train-size: must be nodes or each, got '" + f.train_size + "'");
  }
  if (f.match != "worst-case" && f.match != "with-adhoc-load") {
    return fail("match: must be worst-case or with-adhoc-load, got '" + f.match + "'");
  }
  std::vector<int64_t> sizes;
  if (f.sizes_given) {
    auto parsed = parseSizes(f.sizes, f.nodes);
    if (!parsed.isOk()) return fail(parsed.status().message());
    sizes = std::move(*parsed);
  }
  if (aggregate && f.task_model.name == "fluid") {
    return fail(
        "adhoc-model: aggregate replaces the fluid ad-hoc pools; use --task-model task "
        "or grouped with it");
  }
  if (aggregate && f.adhoc_policy != "drf") {
    return fail("adhoc-model: aggregate shares ad-hoc capacity max-min (drf); --adhoc-policy '" +
                f.adhoc_policy + "' needs --adhoc-model task");
  }
  auto built = buildWorkload(f, *node_size);
  if (!built.isOk()) return fail(built.status().message());
  auto original = std::make_shared<const sim::Workload>(std::move(*built));
  const sim::Workload workload = sim::groupWorkload(*original, f.task_model, *node_size);

  sim::ExperimentOptions o;
  o.nodes = f.nodes;
  o.node_size = *node_size;
  o.days = f.days;
  o.seed = f.seed;
  o.tie_break = *tie_break;
  o.skyline_steps = *skyline_steps;
  o.realize = sim::groupDraw(original, f.task_model, *node_size);
  o.adhoc_policy = f.adhoc_policy;
  o.altruistic_share = f.altruistic_share;
  o.estimate_noise = f.estimate_noise;
  o.fluid_adhoc_step = sim::fluidAdhocStep(f.task_model);
  o.aggregate_adhoc_step = aggregate ? Millis(f.adhoc_step_s * 1000) : Millis(0);
  o.aggregate_adhoc_refill = f.adhoc_refill == "on";
  o.aggregate_adhoc_fill = f.adhoc_fill == "on";
  if (f.train_adhoc_model == "task") o.training_aggregate_adhoc_step = Millis(0);
  if (f.train_adhoc_model == "aggregate") {
    o.training_aggregate_adhoc_step = Millis(f.adhoc_step_s * 1000);
  }
  o.min_cluster_worst_case = f.match == "worst-case";
  o.min_cluster_retrain = f.train_size == "each";
  o.min_cluster_sizes = sizes;
  o.threads = f.threads;
  if (f.train_segments < 1 || f.train_segments > sim::trainDays(o)) {
    return fail("train-segments: must be in [1, training days = " +
                std::to_string(sim::trainDays(o)) + "], got " + std::to_string(f.train_segments));
  }
  if (f.train_warmup_days < 0) return fail("train-warmup-days: must be >= 0");
  o.train_segments = f.train_segments;
  o.train_warmup_days = f.train_warmup_days;
  const int64_t eval_days = f.days - sim::trainDays(o);
  if (f.eval_segments < 1 || f.eval_segments > eval_days) {
    return fail("eval-segments: must be in [1, evaluation days = " + std::to_string(eval_days) +
                "], got " + std::to_string(f.eval_segments));
  }
  if (min_cluster && f.eval_segments != 1) {
    return fail("eval-segments: run only (min-cluster evaluates each size in one simulation)");
  }
  if (f.eval_warmup_days < 0) return fail("eval-warmup-days: must be >= 0");
  o.eval_segments = f.eval_segments;
  o.eval_warmup_days = f.eval_warmup_days;
  o.preemption_grace = Millis(std::llround(f.preemption_grace_s * 1000));
  o.preemption_interval = Millis(std::llround(f.preemption_interval_s * 1000));
  o.dra_budget_fraction = f.dra_budget_fraction;
  o.dra_grant_when_ahead = f.dra_grant_when_ahead;
  o.dra_ahead_window = Millis(std::llround(f.dra_ahead_window_s * 1000));
  std::signal(SIGINT, onSigint);
  ProgressBar bar;
  sim::ProgressFn progress = [&bar](const std::string& p, int64_t d, int64_t t) { bar(p, d, t); };
  const auto wall_start = std::chrono::steady_clock::now();
  auto summary = min_cluster ? sim::runMinCluster(workload, o, *specs, progress, &g_stop)
                             : sim::runExperiment(workload, o, *specs, progress, &g_stop);
  if (!summary.isOk()) return fail(summary.status().message());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (summary->interrupted) std::fprintf(stderr, "\ninterrupted: writing what is done so far\n");
  Status st = sim::writeReport(f.out, *summary);
  if (!st.isOk()) {
    std::cerr << "morpheus-sim: " << st.message() << "\n";
    return 1;
  }
  std::fprintf(stderr, "%zu periodic jobs, %zu ad-hoc jobs; %.1f s wall; report in %s\n",
               workload.periodic.size(), workload.adhoc.size(), wall, f.out.c_str());
  for (const auto& s : summary->strategies) {
    std::string tail;
    if (s.min_nodes_at_baseline_rate) {
      tail = ", min nodes " + std::to_string(*s.min_nodes_at_baseline_rate);
    } else if (auto m = s.extra.find("matches_baseline_rate"); m != s.extra.end()) {
      tail = m->second > 0 ? ", matches the baseline's rate" : ", above the baseline's rate";
    }
    // The paper's metric first (Morpheus §8 counts worst-case misses).
    std::fprintf(stderr,
                 "  %-22s worst-case violations %lld/%lld (%.4f), with the ad-hoc load %lld "
                 "(%.4f), util %.3f%s\n",
                 s.name.c_str(), static_cast<long long>(s.worst_case_violations),
                 static_cast<long long>(s.periodic_instances), s.worst_case_violation_rate,
                 static_cast<long long>(s.deadline_violations), s.violation_rate, s.utilisation,
                 tail.c_str());
    if (!s.min_cluster_search.empty()) {
      std::fprintf(stderr, "    searched: %s\n", sim::searchTrail(s).c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"morpheus-sim: trace-driven simulator over the real planner and scheduler"};
  app.set_version_flag("--version", morpheus::versionLine("morpheus-sim"),
                       "Print the version and git revision");
  app.require_subcommand(1);
  SimFlags run_flags, min_flags;
  auto* run = app.add_subcommand("run", "Run the strategies on one cluster size");
  addFlags(run, run_flags);
  auto* min = app.add_subcommand(
      "min-cluster", "Smallest cluster at which each strategy matches the baseline's violations");
  addFlags(min, min_flags);
  min->add_option("--sizes", min_flags.sizes,
                  "No search: evaluate every strategy but the baseline at exactly these node "
                  "counts (comma-separated, each in [1, --nodes]), one result per size named "
                  "STRATEGY@N that says whether it matches the baseline's rate. Checks an "
                  "answer A cheaply: rates assumed not to rise with nodes (as the search "
                  "assumes), matching at A+1 and not at A-2 puts the smallest size in "
                  "[A-1, A+1]");
  std::string trace;
  bool json = false;
  auto* tr = app.add_subcommand("trace", "Summarise a SWIM trace");
  tr->add_option("--trace", trace, "SWIM trace (TSV), e.g. data/swim/swim-fb2009-24h.tsv")
      ->required();
  tr->add_flag("--json", json, "Machine-readable summary");
  sim::PhoenixCliFlags phoenix_flags;
  auto* phoenix = sim::addPhoenixCommand(app, phoenix_flags);
  sim::PhoenixCalibrateFlags calibrate_flags;
  auto* calibrate = sim::addPhoenixCalibrateCommand(app, calibrate_flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }
  if (tr->parsed()) return traceSummary(trace, json);
  if (phoenix->parsed()) return sim::runPhoenixCommand(phoenix_flags);
  if (calibrate->parsed()) return sim::runPhoenixCalibrateCommand(calibrate_flags);
  SimFlags& f = run->parsed() ? run_flags : min_flags;
  CLI::App* cmd = run->parsed() ? run : min;
  f.adhoc_trace_given = cmd->count("--adhoc-trace") > 0;
  f.sizes_given = min->parsed() && min->count("--sizes") > 0;
  return simulate(f, min->parsed());
}
