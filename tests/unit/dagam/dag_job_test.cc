#include "dagam/dag_job.h"

#include <gtest/gtest.h>

namespace morpheus::dagam {
namespace {

JobSpec spec(const std::string& yaml) {
  auto r = parseJobSpec(yaml);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return std::move(r).value();
}

// map (3 tasks) -> reduce (1 task); map reads /in, reduce writes /out.
const char* kTwoStage = R"(
name: wc
stages:
  - {name: map, tasks: 3, command: "echo m", max_attempts: 2, reads: [/in], writes: [/mid]}
  - {name: reduce, tasks: 1, command: "echo r", depends_on: [map], reads: [/mid], writes: [/out]}
)";

class DagJobFixture : public ::testing::Test {
 protected:
  VirtualClock clock_{fromEpochMs(1000000)};
  int next_ = 0;

  Grant grant(const std::string& stage, int priority = 0) {
    Grant g;
    g.container_id = "c" + std::to_string(++next_);
    g.node_id = "n1";
    g.node_address = "127.0.0.1:1";
    g.request_id = stage;
    g.priority = priority;
    g.resource = Resource(256, 1);
    return g;
  }
  // Grants and starts `n` containers for `stage`; returns their launches.
  std::vector<Launch> run(DagJob& job, const std::string& stage, int n) {
    std::vector<Grant> gs;
    for (int i = 0; i < n; ++i) gs.push_back(grant(stage));
    auto ls = job.onAllocated(gs);
    for (const auto& l : ls) job.onLaunchSucceeded(l.container_id);
    return ls;
  }
  static Completion done(const std::string& cid, ExitKind kind, int status = 0) {
    return Completion{cid, kind, status, ""};
  }
  static const Ask* askFor(const std::vector<Ask>& asks, const std::string& stage) {
    for (const auto& a : asks) {
      if (a.request_id == stage) return &a;
    }
    return nullptr;
  }
};

// Only stages whose dependencies completed are asked for; reduce waits for every map task.
TEST_F(DagJobFixture, DependenciesGateStages) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  auto asks = job.asks();
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].request_id, "map");
  EXPECT_EQ(asks[0].priority, 0);
  EXPECT_EQ(asks[0].count, 3);
  EXPECT_EQ(job.task(1, 0).state, TaskState::kWaiting);

  auto ls = run(job, "map", 3);
  ASSERT_EQ(ls.size(), 3u);
  job.onCompleted(
      {done(ls[0].container_id, ExitKind::kSuccess), done(ls[1].container_id, ExitKind::kSuccess)});
  EXPECT_EQ(askFor(job.asks(), "reduce"), nullptr);
  // A reduce container arriving early is surplus and released.
  EXPECT_TRUE(job.onAllocated({grant("reduce", 1)}).empty());
  EXPECT_EQ(job.takeReleases().size(), 1u);

  job.onCompleted({done(ls[2].container_id, ExitKind::kSuccess)});
  EXPECT_TRUE(job.stageCompleted(0));
  const Ask* r = askFor(job.asks(), "reduce");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->count, 1);
  EXPECT_EQ(r->priority, 1);
  EXPECT_EQ(askFor(job.asks(), "map"), nullptr);
}

// The ask count shrinks by one per container granted, and surplus grants are released.
TEST_F(DagJobFixture, AsksShrinkAsContainersArrive) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 3);
  run(job, "map", 1);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 2);
  auto ls = job.onAllocated({grant("map"), grant("map"), grant("map")});
  EXPECT_EQ(ls.size(), 2u);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 0);
  auto rel = job.takeReleases();
  ASSERT_EQ(rel.size(), 1u);
  EXPECT_EQ(rel[0], "c4");
  EXPECT_TRUE(job.takeReleases().empty());
}

// Launches carry the command and the MORPHEUS_* environment of the task.
TEST_F(DagJobFixture, LaunchCarriesTaskEnvironment) {
  DagJob job(spec(kTwoStage), "app_7", clock_);
  auto ls = run(job, "map", 2);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[1].command, "echo m");
  EXPECT_EQ(ls[1].node_address, "127.0.0.1:1");
  EXPECT_EQ(ls[1].env.at("MORPHEUS_TASK_INDEX"), "1");
  EXPECT_EQ(ls[1].env.at("MORPHEUS_STAGE"), "map");
  EXPECT_EQ(ls[1].env.at("MORPHEUS_ATTEMPT"), "1");
  EXPECT_EQ(ls[1].env.at("MORPHEUS_APP_ID"), "app_7");
  EXPECT_EQ(job.task(0, 1).state, TaskState::kRunning);
}

// A grant without request id is matched to its stage by priority (= stage index).
TEST_F(DagJobFixture, GrantWithoutRequestIdMatchedByPriority) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  auto ls = job.onAllocated({grant("", 0)});
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].stage, 0);
}

// A failing task is retried until max_attempts failures, then the job fails and releases all.
TEST_F(DagJobFixture, RetriesUpToMaxAttemptsThenFails) {
  DagJob job(spec(kTwoStage), "app_1", clock_);  // map max_attempts: 2
  auto ls = run(job, "map", 3);
  job.onCompleted({done(ls[0].container_id, ExitKind::kFailure, 3)});
  EXPECT_FALSE(job.finished());
  EXPECT_EQ(job.task(0, 0).state, TaskState::kPending);
  EXPECT_EQ(job.task(0, 0).failed_attempts, 1);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 1);

  auto retry = run(job, "map", 1);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].index, 0);
  EXPECT_EQ(retry[0].env.at("MORPHEUS_ATTEMPT"), "2");
  job.onCompleted({done(retry[0].container_id, ExitKind::kMemoryExceeded, 137)});
  EXPECT_TRUE(job.finished());
  EXPECT_TRUE(job.failed());
  EXPECT_FALSE(job.succeeded());
  EXPECT_EQ(job.task(0, 0).state, TaskState::kFailed);
  EXPECT_NE(job.diagnostics().find("map[0] failed 2 attempt(s)"), std::string::npos)
      << job.diagnostics();
  EXPECT_NE(job.diagnostics().find("memory"), std::string::npos) << job.diagnostics();
  // The still-running map[1] and map[2] are given back; no more containers asked.
  auto rel = job.takeReleases();
  EXPECT_EQ(rel.size(), 2u);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 0);
}

// Preempted, node-lost and killed tasks rerun without using up attempts.
TEST_F(DagJobFixture, PreemptedAndLostTasksRerunWithoutCountingAttempts) {
  DagJob job(spec(kTwoStage), "app_1", clock_);  // max_attempts 2
  auto ls = run(job, "map", 3);
  job.onPreemptionNotice(ls[0].container_id, "reservation r_1 reclaims its guarantee");
  job.onCompleted({done(ls[0].container_id, ExitKind::kPreempted, 143),
                   done(ls[1].container_id, ExitKind::kNodeLost),
                   done(ls[2].container_id, ExitKind::kKilled, 137)});
  EXPECT_EQ(askFor(job.asks(), "map")->count, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(job.task(0, i).failed_attempts, 0);
    EXPECT_EQ(job.task(0, i).state, TaskState::kPending);
  }
  // Twice more: still not failed although launches exceed max_attempts.
  for (int round = 0; round < 2; ++round) {
    auto again = run(job, "map", 3);
    std::vector<Completion> cs;
    for (const auto& l : again) cs.push_back(done(l.container_id, ExitKind::kPreempted));
    job.onCompleted(cs);
  }
  EXPECT_FALSE(job.finished());
  EXPECT_EQ(job.task(0, 0).launches, 3);
  auto last = run(job, "map", 3);
  EXPECT_EQ(last[0].env.at("MORPHEUS_ATTEMPT"), "4");
  std::vector<Completion> cs;
  for (const auto& l : last) cs.push_back(done(l.container_id, ExitKind::kSuccess));
  job.onCompleted(cs);
  EXPECT_TRUE(job.stageCompleted(0));
}

// A preemption notice alone does not end the task; it keeps running until killed.
TEST_F(DagJobFixture, PreemptionNoticeIsNotedOnly) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  auto ls = run(job, "map", 1);
  job.takeEvents();
  job.onPreemptionNotice(ls[0].container_id, "reclaim");
  EXPECT_TRUE(job.task(0, 0).preemption_noted);
  EXPECT_EQ(job.task(0, 0).state, TaskState::kRunning);
  auto ev = job.takeEvents();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_NE(ev[0].find("preemption notice"), std::string::npos);
}

// A gang stage asks with gang_size, shrunk to what is still missing.
TEST_F(DagJobFixture, GangAsks) {
  DagJob job(spec("name: g\nstages: [{name: train, tasks: 4, command: x, gang: 4}]\n"), "a",
             clock_);
  auto a = job.asks();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].count, 4);
  EXPECT_EQ(a[0].gang_size, 4);
  auto ls = run(job, "train", 4);
  job.onCompleted({done(ls[2].container_id, ExitKind::kFailure, 1)});
  a = job.asks();
  EXPECT_EQ(a[0].count, 1);
  EXPECT_EQ(a[0].gang_size, 1);
}

// Constraints and capability of the stage are passed on in its ask.
TEST_F(DagJobFixture, AskCarriesCapabilityAndConstraints) {
  DagJob job(spec("name: g\nstages: [{name: s, tasks: 2, command: x, resources: {memory_mib: "
                  "1024, vcores: 2}, constraints: [{key: rack, values: [r1]}]}]\n"),
             "a", clock_);
  auto a = job.asks();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].capability, Resource(1024, 2));
  ASSERT_EQ(a[0].constraints.size(), 1u);
  EXPECT_EQ(a[0].constraints[0].key, "rack");
  EXPECT_FALSE(a[0].constraints[0].hard);
}

// Progress is the fraction of succeeded tasks, overall and per stage.
TEST_F(DagJobFixture, ProgressValues) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  EXPECT_DOUBLE_EQ(job.progress(), 0.0);
  auto ls = run(job, "map", 3);
  job.onCompleted({done(ls[0].container_id, ExitKind::kSuccess)});
  EXPECT_DOUBLE_EQ(job.progress(), 0.25);
  auto sp = job.stageProgress();
  EXPECT_DOUBLE_EQ(sp.at("map"), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(sp.at("reduce"), 0.0);
  job.onCompleted({done(ls[1].container_id, ExitKind::kSuccess),
                   done(ls[2].container_id, ExitKind::kUnknown, 0)});
  auto r = run(job, "reduce", 1);
  job.onCompleted({done(r[0].container_id, ExitKind::kSuccess)});
  EXPECT_DOUBLE_EQ(job.progress(), 1.0);
  EXPECT_DOUBLE_EQ(job.stageProgress().at("reduce"), 1.0);
  EXPECT_TRUE(job.succeeded());
  EXPECT_TRUE(job.asks().empty());
}

// Stage reports (Jockey's input): counts, running tasks' elapsed time, mean of succeeded run times.
TEST_F(DagJobFixture, StageReportsFollowTheTasks) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  auto r = job.stageReports();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "map");
  EXPECT_EQ(r[0].tasks, 3);
  EXPECT_EQ(r[1].depends_on, std::vector<std::string>{"map"});
  EXPECT_EQ(r[0].mean_task, Millis(0)) << "nothing ran yet";
  auto ls = run(job, "map", 3);
  clock_.advance(Millis(10000));
  job.onCompleted({done(ls[0].container_id, ExitKind::kSuccess)});
  clock_.advance(Millis(4000));
  job.onCompleted({done(ls[1].container_id, ExitKind::kSuccess)});
  clock_.advance(Millis(1000));
  r = job.stageReports();
  EXPECT_EQ(r[0].completed, 2);
  EXPECT_EQ(r[0].mean_task, Millis(12000)) << "(10 s + 14 s) / 2";
  EXPECT_EQ(r[0].running_elapsed, std::vector<Millis>{Millis(15000)});
  EXPECT_EQ(r[1].completed, 0);
  EXPECT_TRUE(r[1].running_elapsed.empty());
}

// Reads are stamped at stage start (first launch), writes at stage end (last success).
TEST_F(DagJobFixture, ProvenanceListsUseStageTimes) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  TimePoint t0 = clock_.now();
  auto ls = run(job, "map", 3);
  clock_.advance(Millis(5000));
  job.onCompleted(
      {done(ls[0].container_id, ExitKind::kSuccess), done(ls[1].container_id, ExitKind::kSuccess)});
  EXPECT_TRUE(job.filesWritten().empty());
  clock_.advance(Millis(1000));
  job.onCompleted({done(ls[2].container_id, ExitKind::kSuccess)});
  TimePoint map_end = clock_.now();
  clock_.advance(Millis(2000));
  TimePoint reduce_start = clock_.now();
  auto r = run(job, "reduce", 1);
  clock_.advance(Millis(3000));
  job.onCompleted({done(r[0].container_id, ExitKind::kSuccess)});
  TimePoint reduce_end = clock_.now();

  auto reads = job.filesRead();
  ASSERT_EQ(reads.size(), 2u);  // sorted by path
  EXPECT_EQ(reads[0].path, "/in");
  EXPECT_EQ(reads[0].time, t0);
  EXPECT_EQ(reads[1].path, "/mid");
  EXPECT_EQ(reads[1].time, reduce_start);
  auto writes = job.filesWritten();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].path, "/mid");
  EXPECT_EQ(writes[0].time, map_end);
  EXPECT_EQ(writes[1].path, "/out");
  EXPECT_EQ(writes[1].time, reduce_end);
}

// After an RM restart, containers still running stay tracked; the others rerun uncounted.
TEST_F(DagJobFixture, ResyncKeepsRunningContainers) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  auto ls = run(job, "map", 3);
  job.onResync({ls[0].container_id, ls[2].container_id, "stranger"});
  EXPECT_EQ(job.task(0, 0).state, TaskState::kRunning);
  EXPECT_EQ(job.task(0, 0).container_id, ls[0].container_id);
  EXPECT_EQ(job.task(0, 1).state, TaskState::kPending);
  EXPECT_EQ(job.task(0, 1).failed_attempts, 0);
  EXPECT_EQ(job.task(0, 2).state, TaskState::kRunning);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 1);
  EXPECT_EQ(job.takeReleases(), std::vector<std::string>{"stranger"});
  // Completion of a kept container after the resync still counts.
  job.onCompleted({done(ls[0].container_id, ExitKind::kSuccess)});
  EXPECT_EQ(job.task(0, 0).state, TaskState::kSucceeded);
}

// A launch refused by the NM counts as an attempt; an unreachable NM does not.
TEST_F(DagJobFixture, LaunchFailuresCountOnlyWhenTheTasksFault) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  auto ls = job.onAllocated({grant("map"), grant("map")});
  job.onLaunchFailed(ls[0].container_id, true, "PERMISSION_DENIED: bad token");
  job.onLaunchFailed(ls[1].container_id, false, "UNAVAILABLE");
  EXPECT_EQ(job.task(0, 0).failed_attempts, 1);
  EXPECT_EQ(job.task(0, 1).failed_attempts, 0);
  EXPECT_EQ(job.takeReleases().size(), 2u);
  EXPECT_EQ(askFor(job.asks(), "map")->count, 3);
}

// A stage asking for more than the largest container fails the job at once.
TEST_F(DagJobFixture, StageLargerThanMaxContainerFailsJob) {
  DagJob job(spec("name: g\nstages: [{name: big, tasks: 1, command: x, resources: {memory_mib: "
                  "9000, vcores: 1}}]\n"),
             "a", clock_);
  job.setMaxContainer(Resource(8192, 8));
  EXPECT_TRUE(job.failed());
  EXPECT_NE(job.diagnostics().find("stages[0].resources"), std::string::npos);
}

// Completions of containers the job released or never knew are ignored.
TEST_F(DagJobFixture, IgnoresCompletionsOfUnknownContainers) {
  DagJob job(spec(kTwoStage), "app_1", clock_);
  job.onCompleted({done("nobody", ExitKind::kFailure, 1)});
  EXPECT_FALSE(job.finished());
  EXPECT_EQ(askFor(job.asks(), "map")->count, 3);
}

}  // namespace
}  // namespace morpheus::dagam
