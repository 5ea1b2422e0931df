// InferenceCore (Morpheus §4-§6) on a real SQLite provenance store, a
// virtual clock and a fake RM: which runs feed the fit and the SLO
// statistics, the history window, window warnings, the default alpha, and
// per-instance one-off reservations of jobs whose period does not divide the
// LCM.
#include "inference/service/inference_core.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>

#include "common/config.h"
#include "inference/service/inference_options.h"
#include "inference/service/service.h"

namespace morpheus::inference {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMin = 60000, kHour = 60 * kMin, kDay = 24 * kHour;

// The RM as a recorder: recurring and one-off submissions, ALREADY_EXISTS
// for a one-off id it has seen (as the real RM does).
class FakeRm final : public ReservationClient {
 public:
  Result<SubmittedReservation> submit(const RecurringRequest& r, TimePoint,
                                      const std::string& existing_id) override {
    recurring.push_back(r);
    if (Status full = noRoom(r); !full.isOk()) return full;
    if (refuse_recurring) return infeasible("hour 5 is full");
    const std::string id = existing_id.empty() ? "res_" + r.job_key : existing_id;
    recurring_ids.insert(id);
    return SubmittedReservation{id, "placed"};
  }
  Result<SubmittedReservation> submitOneOff(const OneOffRequest& r) override {
    one_off_calls++;
    auto def = oneOffDefinition(r);
    if (!def.isOk()) return def.status();
    if (Status full = noRoom(r.slo); !full.isOk()) return full;
    if (refused_hours.count(toEpochMs(r.period_start) % kDay / kHour) > 0) {
      return infeasible("no room in hour " +
                        std::to_string(toEpochMs(r.period_start) % kDay / kHour));
    }
    if (!squatter.empty() && !ids.count(r.reservation_id)) {
      ids.insert(r.reservation_id);  // someone else's reservation took the id first
      held[r.reservation_id] = *def;
      owners[r.reservation_id] = squatter;
    }
    if (!ids.insert(r.reservation_id).second) {
      return alreadyExists("reservation " + r.reservation_id + " exists");
    }
    one_offs.push_back(*def);
    held[r.reservation_id] = *def;
    return SubmittedReservation{r.reservation_id, "placed"};
  }
  Status cancel(const std::string& id) override {
    if (refuse_cancel) return unavailable("RM unreachable");
    if (!ids.erase(id) && !recurring_ids.erase(id)) return notFound("no reservation " + id);
    held.erase(id);
    cancelled.push_back(id);
    return Status::ok();
  }
  Status verifyOneOff(const OneOffRequest& r) override {
    auto it = held.find(r.reservation_id);
    if (it == held.end()) return notFound("no reservation " + r.reservation_id);
    v1::ReservationReport report;
    report.set_reservation_id(r.reservation_id);
    report.set_user(owners.count(r.reservation_id) ? owners[r.reservation_id] : r.slo.owner);
    report.set_queue(r.slo.queue);
    *report.mutable_definition() = it->second;
    return sameOneOff(report, r);
  }
  Status noRoom(const RecurringRequest& r) const {
    if (first_step_room && !r.skyline.empty() && r.skyline.front() > *first_step_room) {
      return infeasible("no room for " + std::to_string(r.skyline.front()) + " containers");
    }
    return Status::ok();
  }
  std::vector<RecurringRequest> recurring;
  std::optional<int64_t> first_step_room;  // refuses skylines wider at their first step
  bool refuse_recurring = false;           // refuses every recurring reservation
  std::set<int64_t> refused_hours;         // refuses one-offs of instances starting then
  std::vector<v1::ReservationDefinition> one_offs;
  std::set<std::string> ids;                              // one-offs in the RM
  std::map<std::string, v1::ReservationDefinition> held;  // the definitions of `ids`
  std::set<std::string> recurring_ids;                    // recurring reservations in the RM
  std::vector<std::string> cancelled;
  bool refuse_cancel = false;
  int one_off_calls = 0;
  std::string squatter;                       // non-empty: takes every new one-off id first
  std::map<std::string, std::string> owners;  // held one-offs of another user than the SLO's
};

// A recurring job's history: instance k is the period [k*P, (k+1)*P); "src"
// writes its input at +avail, it runs `dur` from +avail+5 min, and "report"
// reads its output `read_after` after it ends.
struct JobShape {
  std::string key;
  int64_t period, avail, dur, read_after;
  std::vector<double> skyline;  // per minute; empty = 2 containers throughout
  store::RunStatus status = store::RunStatus::kSucceeded;
  std::string run_tag{};  // in run ids and paths: runs of another schedule of the same job
};

void addInstance(store::IngestBatch* b, const JobShape& j, int64_t k) {
  const int64_t base = k * j.period;
  const std::string rid = j.key + j.run_tag + "-" + std::to_string(k);
  const std::string in = "/in/" + rid, out = "/out/" + rid;
  store::RunRecord r;
  r.job = JobKey(j.key);
  r.run = RunId(rid);
  r.user = "alice";
  r.submit = fromEpochMs(base + j.avail + 5 * kMin);
  r.start = r.submit + Millis(10000);
  r.end = r.start + Millis(j.dur);
  r.step = Millis(kMin);
  r.skyline =
      j.skyline.empty() ? std::vector<double>(static_cast<size_t>(j.dur / kMin), 2.0) : j.skyline;
  r.container = Resource(1024, 1);
  r.status = j.status;
  b->runs.push_back(r);
  auto ev = [&](const std::string& job, const std::string& run, const std::string& path,
                store::FileAccess kind, TimePoint t) {
    b->events.push_back({JobKey(job), RunId(run), path, kind, t});
  };
  ev("src", "src-" + rid, in, store::FileAccess::kWrite, fromEpochMs(base + j.avail));
  ev(j.key, rid, in, store::FileAccess::kRead, r.start + Millis(kMin));
  ev(j.key, rid, out, store::FileAccess::kWrite, r.end - Millis(kMin));
  ev("report", "report-" + rid, out, store::FileAccess::kRead, r.end + Millis(j.read_after));
}

class InferenceCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("inference_core_test_" + std::to_string(::getpid()) +
                                          "_" + std::to_string(counter_++) + ".db"))
                .string();
    removeDb();
    auto s = store::openProvenanceStore("sqlite", path_);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    core_.reset();
    store_.reset();
    removeDb();
  }
  void removeDb() {
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) fs::remove(path_ + suffix);
  }
  InferenceCore& core() {
    if (!core_) core_ = std::make_unique<InferenceCore>(opts_, *store_, rm_, clock_, metrics_);
    return *core_;
  }
  void ingest(const store::IngestBatch& b) { ASSERT_TRUE(core().ingest(b).isOk()); }
  // The only proposal of `job` in `state`.
  Proposal only(const std::string& job, store::ProposalState state) {
    auto all = core().proposals(state);
    EXPECT_TRUE(all.isOk());
    std::vector<Proposal> mine;
    for (auto& p : *all) {
      if (p.record.job.value() == job) mine.push_back(p);
    }
    EXPECT_EQ(mine.size(), 1u) << job;
    return mine.empty() ? Proposal{} : mine.front();
  }
  // Daily job "etl" whose runs take 60 min, every third 150 min (a tail
  // outlasting its ~85 min window), `shape(minutes)` containers per minute;
  // refits and returns its pending proposal.
  Proposal proposeWithSlowRuns(const std::function<std::vector<double>(int64_t)>& shape) {
    JobShape usual{"etl", kDay, 90 * kMin, 60 * kMin, 10 * kMin, shape(60)};
    JobShape slow = usual;
    slow.dur = 150 * kMin;
    slow.skyline = shape(150);
    store::IngestBatch b;
    for (int64_t k = 380; k < 399; k++) addInstance(&b, k % 3 == 0 ? slow : usual, k);
    ingest(b);
    EXPECT_TRUE(core().refit().isOk()) << notActionableReason("etl");
    return only("etl", store::ProposalState::kPending);
  }
  // `count` instances of `j` ending before the clock's start (day 400),
  // refitted: the job's pending proposal.
  Proposal proposeRecent(const JobShape& j, int64_t count) {
    store::IngestBatch b;
    const int64_t last = 400 * kDay / j.period - 1;
    for (int64_t k = last - count + 1; k <= last; k++) addInstance(&b, j, k);
    ingest(b);
    EXPECT_TRUE(core().refit().isOk()) << notActionableReason(j.key);
    return only(j.key, store::ProposalState::kPending);
  }
  // A 7-hourly job ("seven", input at +30 min) accepted on per-instance
  // one-offs (one-day lead), 2.5 days later, after its due instances were
  // submitted: returns that accepted proposal; its input now arrives at +90
  // min, refitted into a pending update (same period, later window).
  Proposal acceptSevenHourlyThenDelayItsInput() {
    opts_.history_window = Millis(2 * kDay);
    opts_.one_off_lead = Millis(kDay);
    JobShape early{"seven", 7 * kHour, 30 * kMin, 40 * kMin, 20 * kMin, {}};
    EXPECT_TRUE(core().accept(proposeRecent(early, 9).record.id, alice_, false).isOk());
    clock_.advance(Millis(5 * kDay / 2));
    const int64_t now = toEpochMs(clock_.now());
    EXPECT_TRUE(core().submitDueInstances().isOk());
    Proposal old = only("seven", store::ProposalState::kAccepted);
    EXPECT_EQ(old.payload.start_offset, Millis(35 * kMin));
    JobShape late = early;
    late.avail = 90 * kMin;
    late.run_tag = "-late";
    store::IngestBatch b;
    for (int64_t k = now / (7 * kHour) - 6; k < now / (7 * kHour); k++) addInstance(&b, late, k);
    ingest(b);
    EXPECT_TRUE(core().refit().isOk());
    return old;
  }
  std::string notActionableReason(const std::string& job) {
    for (const auto& n : core().notActionable()) {
      if (n.job.value() == job) return n.reason;
    }
    return "";
  }

  static inline int counter_ = 0;
  std::string path_;
  InferenceCoreOptions opts_;
  std::unique_ptr<store::ProvenanceStore> store_;
  FakeRm rm_;
  VirtualClock clock_{fromEpochMs(400 * kDay)};
  MetricsRegistry metrics_;
  std::unique_ptr<InferenceCore> core_;
  Principal alice_{"alice", false};
};

// Morpheus §9: alpha = 1% by default, everywhere a fit is configured, and
// skyline.alpha still changes it.
TEST_F(InferenceCoreTest, DefaultAlphaIsOnePercent) {
  EXPECT_DOUBLE_EQ(kDefaultSkylineAlpha, 0.01);
  EXPECT_DOUBLE_EQ(InferenceCoreOptions{}.alpha, 0.01);
  EXPECT_DOUBLE_EQ(FitParams{}.alpha, 0.01);
  EXPECT_DOUBLE_EQ(SkylineProblem{}.alpha, 0.01);
  InferenceOptions o;
  ConfigSchema s("morpheus-inference");
  declareInferenceOptions(s, &o);
  EXPECT_DOUBLE_EQ(o.alpha, 0.01);
  ASSERT_TRUE(s.set("skyline.alpha", "0.2").isOk());
  EXPECT_DOUBLE_EQ(o.alpha, 0.2);
  EXPECT_EQ(o.history_window, Millis(30 * kDay));
}

// Failed and killed runs are stored but neither fitted nor counted in the
// SLO statistics: their huge skylines and late ends change nothing, and the
// proposal says how many were left out.
TEST_F(InferenceCoreTest, FitAndSloIgnoreFailedAndKilledRuns) {
  JobShape ok{"etl", kDay, 90 * kMin, 30 * kMin, 60 * kMin, {}};
  JobShape bad = ok;
  bad.skyline = std::vector<double>(120, 50.0);
  bad.dur = 120 * kMin;
  bad.read_after = 5 * kHour;
  store::IngestBatch b;
  for (int64_t k = 380; k < 390; k++) addInstance(&b, ok, k);
  bad.status = store::RunStatus::kFailed;
  for (int64_t k = 390; k < 394; k++) addInstance(&b, bad, k);
  bad.status = store::RunStatus::kKilled;
  for (int64_t k = 394; k < 396; k++) addInstance(&b, bad, k);
  ingest(b);
  ASSERT_TRUE(core().refit().isOk());
  Proposal p = only("etl", store::ProposalState::kPending);
  EXPECT_EQ(p.payload.skyline, std::vector<int64_t>(30, 2));
  EXPECT_EQ(p.payload.runs_used, 10);
  EXPECT_EQ(p.payload.runs_failed, 4);
  EXPECT_EQ(p.payload.runs_killed, 2);
  // d = end of a 30 min run from 01:35:10 + 60 min of slack, not the failed runs' 5 h.
  EXPECT_EQ(p.payload.deadline_offset, Millis(90 * kMin + 5 * kMin + 10000 + 90 * kMin));
  auto runs = core().runsOf(JobKey("etl"));
  ASSERT_TRUE(runs.isOk());
  EXPECT_EQ(runs->size(), 16u);  // all stored, with their status
  EXPECT_EQ(runs->back().status, store::RunStatus::kKilled);
}

// SLO statistics use slo.history-window (30 days): a job whose consumer
// moved from 60 min to 4 h after the run 40 days ago gets the new deadline,
// although 60 of its 100 days of history say otherwise.
TEST_F(InferenceCoreTest, DeadlineThatMovedFortyDaysAgoIsTheNewOne) {
  JobShape old_shape{"etl", kDay, 90 * kMin, 30 * kMin, 60 * kMin, {}};
  JobShape new_shape = old_shape;
  new_shape.read_after = 4 * kHour;
  store::IngestBatch b;
  for (int64_t k = 300; k < 360; k++) addInstance(&b, old_shape, k);
  for (int64_t k = 360; k < 400; k++) addInstance(&b, new_shape, k);
  ingest(b);
  ASSERT_TRUE(core().refit().isOk());
  Proposal p = only("etl", store::ProposalState::kPending);
  EXPECT_EQ(p.payload.deadline_offset,
            Millis(90 * kMin + 5 * kMin + 10000 + 30 * kMin + 4 * kHour));
}

// A window d - a shorter than the skyline is proposed as inferred, with a
// warning the owner sees (also on the wire), not widened towards the period
// start before the input is available.
TEST_F(InferenceCoreTest, WindowShorterThanTheSkylineIsAWarningNotWidened) {
  JobShape usual{"etl", kDay, 90 * kMin, 60 * kMin, 10 * kMin, {}};
  JobShape slow = usual;
  slow.dur = 150 * kMin;  // a long tail the fit covers (alpha 0.01 fears under-allocation)
  store::IngestBatch b;
  for (int64_t k = 380; k < 399; k++) addInstance(&b, k % 3 == 0 ? slow : usual, k);
  ingest(b);
  ASSERT_TRUE(core().refit().isOk()) << notActionableReason("etl");
  Proposal p = only("etl", store::ProposalState::kPending);
  // a = when a run could start: input there at 01:30, submitted at 01:35.
  EXPECT_EQ(p.payload.start_offset, Millis(95 * kMin));
  const Millis window = p.payload.deadline_offset - p.payload.start_offset;
  ASSERT_GT(Millis(kMin) * static_cast<int64_t>(p.payload.skyline.size()), window);
  ASSERT_EQ(p.payload.warnings.size(), 1u);
  EXPECT_NE(p.payload.warnings[0].find("shorter than the skyline"), std::string::npos)
      << p.payload.warnings[0];
  v1::Proposal wire;
  toProto(p, clock_.now(), &wire);
  ASSERT_EQ(wire.warnings_size(), 1);
  EXPECT_EQ(wire.warnings(0), p.payload.warnings[0]);
}

// A job that ran 10 wide before a long 1-container tail: its skyline (the
// slow runs' 150 min tail, alpha 0.01) outlasts the ~85 min window, but its
// area fits the window at the width its runs reached, so the proposal holds
// the skyline reshaped to the window (Morpheus §5/§6) and says so.
TEST_F(InferenceCoreTest, SkylineLongerThanTheWindowIsReshapedUpToTheWidestRun) {
  Proposal p = proposeWithSlowRuns([](int64_t minutes) {
    std::vector<double> s(static_cast<size_t>(minutes), 1.0);
    std::fill(s.begin(), s.begin() + 10, 10.0);
    return s;
  });
  EXPECT_EQ(p.payload.start_offset, Millis(95 * kMin));  // a and d as inferred
  const Millis window = p.payload.deadline_offset - p.payload.start_offset;
  EXPECT_LE(Millis(kMin) * static_cast<int64_t>(p.payload.skyline.size()), window);
  int64_t area = 0;
  for (int64_t c : p.payload.skyline) {
    EXPECT_LE(c, 10);
    area += c;
  }
  EXPECT_GE(area, 10 * 10 + 140) << "the slow runs' area is kept";
  ASSERT_EQ(p.payload.warnings.size(), 1u);
  EXPECT_NE(p.payload.warnings[0].find("reshaped to the window"), std::string::npos)
      << p.payload.warnings[0];
}

// 1 container per minute, then 10 for the last 10 minutes: a run that
// waited for capacity before its bulk.
std::vector<double> lateBulk(int64_t minutes) {
  std::vector<double> s(static_cast<size_t>(minutes), 1.0);
  std::fill(s.end() - 10, s.end(), 10.0);
  return s;
}

// Runs that started slowly (1 container, then 10 wide at their end) and
// outlast the window: the proposal reserves the compression front-loaded
// and keeps it in order; an RM with no room for the front-loaded
// shape gets the in-order one, which the accepted proposal then holds.
TEST_F(InferenceCoreTest, RmWithoutRoomForTheFrontLoadedSkylineGetsItInOrder) {
  Proposal p = proposeWithSlowRuns(lateBulk);
  const std::vector<int64_t> front = p.payload.skyline, in_order = p.payload.in_order_skyline;
  ASSERT_FALSE(in_order.empty());
  EXPECT_TRUE(std::is_sorted(front.rbegin(), front.rend())) << "front-loaded";
  EXPECT_LT(in_order.front(), in_order.back()) << "the runs' order: the bulk last";
  std::vector<int64_t> sorted = in_order;
  std::sort(sorted.rbegin(), sorted.rend());
  EXPECT_EQ(sorted, front) << "the same steps";

  rm_.first_step_room = in_order.front();
  auto acc = core().accept(p.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  ASSERT_EQ(rm_.recurring.size(), 2u);
  EXPECT_EQ(rm_.recurring[0].skyline, front);
  EXPECT_EQ(rm_.recurring[1].skyline, in_order);
  Proposal accepted = only("etl", store::ProposalState::kAccepted);
  EXPECT_EQ(accepted.payload.skyline, in_order);
  EXPECT_NE(accepted.payload.warnings.back().find("no room for the front-loaded"),
            std::string::npos);
}

// An RM without room for either shape leaves the proposal pending with the
// front-loaded skyline's refusal, and an owner's override is reserved as
// given, with no in-order alternative.
TEST_F(InferenceCoreTest, RefusedBothWaysStaysPendingAndAnOverrideHasNoAlternative) {
  Proposal p = proposeWithSlowRuns(lateBulk);
  ASSERT_FALSE(p.payload.in_order_skyline.empty());
  rm_.first_step_room = 0;
  auto acc = core().accept(p.record.id, alice_, false);
  ASSERT_FALSE(acc.isOk());
  EXPECT_NE(acc.status().message().find(std::to_string(p.payload.skyline.front()) + " containers"),
            std::string::npos)
      << acc.status().message();
  EXPECT_EQ(rm_.recurring.size(), 2u);
  only("etl", store::ProposalState::kPending);

  rm_.recurring.clear();
  OverrideParams o;
  o.skyline_scale = 2.0;
  acc = core().override(p.record.id, alice_, o);
  ASSERT_FALSE(acc.isOk());
  EXPECT_EQ(rm_.recurring.size(), 1u) << "the owner's skyline only";
}

// An hourly job whose recurring reservation the RM refuses (one hour of the
// day is full) is accepted with a one-off reservation per instance due
// within the lead time; the instances starting in the full hour are refused,
// listed on the proposal with the RM's reason, and reserved by a later check
// once the hour has room. With no room in any hour it stays pending and the
// RM holds nothing of it.
TEST_F(InferenceCoreTest, RefusedRecurringReservationFallsBackToInstancesThatFit) {
  JobShape j{"hourly", kHour, 5 * kMin, 20 * kMin, 10 * kMin, {}};
  Proposal p = proposeRecent(j, 48);
  ASSERT_FALSE(p.payload.one_off_instances);

  rm_.refuse_recurring = true;
  for (int64_t h = 0; h < 24; h++) rm_.refused_hours.insert(h);
  auto acc = core().accept(p.record.id, alice_, false);
  ASSERT_FALSE(acc.isOk());
  EXPECT_NE(acc.status().message().find("hour 5 is full"), std::string::npos)
      << acc.status().message();
  EXPECT_TRUE(rm_.one_offs.empty());
  only("hourly", store::ProposalState::kPending);

  rm_.refused_hours = {5};
  acc = core().accept(p.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  Proposal a = only("hourly", store::ProposalState::kAccepted);
  EXPECT_TRUE(a.payload.one_off_instances);
  EXPECT_NE(a.payload.placement.find("no room for the recurring one"), std::string::npos);
  ASSERT_EQ(a.payload.warnings.size() >= 2, true);
  EXPECT_NE(a.payload.warnings[a.payload.warnings.size() - 2].find("hour 5 is full"),
            std::string::npos);
  EXPECT_NE(a.payload.warnings.back().find("refused 1 of the instances"), std::string::npos)
      << a.payload.warnings.back();
  int refused = 0;
  for (const auto& i : a.payload.instances) {
    const int64_t hour = toEpochMs(i.period_start) % kDay / kHour;
    EXPECT_EQ(i.state, hour == 5 ? "refused" : "submitted") << hour;
    refused += i.state == "refused" ? 1 : 0;
  }
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(rm_.one_offs.size() + 1, a.payload.instances.size());
  EXPECT_GE(rm_.one_offs.size(), 23u);

  rm_.refused_hours.clear();
  auto n = core().submitDueInstances();
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 1);
  a = only("hourly", store::ProposalState::kAccepted);
  for (const auto& i : a.payload.instances) EXPECT_EQ(i.state, "submitted");
}

// Morpheus §6: a 7-hourly job (7 h does not divide the day) is proposed, not
// rejected; accepting it submits no recurring reservation but a one-off one
// per instance whose window opens within the lead time, each once, also
// across a restart; later instances follow as the clock advances.
TEST_F(InferenceCoreTest, OffKilterJobGetsOneOffReservationsPerInstance) {
  opts_.one_off_lead = Millis(kDay);
  JobShape j{"seven", 7 * kHour, 30 * kMin, 40 * kMin, 20 * kMin, {}};
  store::IngestBatch b;
  const int64_t last = 400 * kDay / (7 * kHour) - 1;  // an instance that ended before now
  for (int64_t k = last - 20; k <= last; k++) addInstance(&b, j, k);
  ingest(b);
  ASSERT_TRUE(core().refit().isOk()) << notActionableReason("seven");
  Proposal p = only("seven", store::ProposalState::kPending);
  EXPECT_TRUE(p.payload.one_off_instances);
  EXPECT_EQ(p.payload.period, Millis(7 * kHour));
  v1::Proposal wire;
  toProto(p, clock_.now(), &wire);
  EXPECT_TRUE(wire.one_off_instances());
  // a = 35 min: input at 30 min, submitted 5 min later (addInstance).
  const int64_t a = 35 * kMin;
  EXPECT_EQ(p.payload.start_offset, Millis(a));
  const int64_t next = ((toEpochMs(clock_.now()) - a) / (7 * kHour) + 1) * 7 * kHour;
  EXPECT_EQ(wire.next_instance_arrival_ms(), next + a);

  auto acc = core().accept(p.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  EXPECT_TRUE(rm_.recurring.empty());
  // Windows opening within one day of now (~4.5 h, 11.5 h, 18.5 h ahead), 7 h apart.
  ASSERT_EQ(rm_.one_offs.size(), 3u);
  for (size_t i = 0; i < rm_.one_offs.size(); i++) {
    const auto& d = rm_.one_offs[i];
    EXPECT_EQ(d.period_ms(), 0);
    EXPECT_EQ(d.arrival_ms(), next + static_cast<int64_t>(i) * 7 * kHour + a);
    EXPECT_EQ(d.deadline_ms() - d.arrival_ms(),
              (p.payload.deadline_offset - p.payload.start_offset).count());
    EXPECT_EQ(d.recurrence_key(), "seven");
  }
  ASSERT_TRUE(core().submitDueInstances().isOk());
  EXPECT_EQ(rm_.one_offs.size(), 3u) << "nothing submitted twice";

  // A restarted service (new core, same store) submits nothing again.
  core_.reset();
  FakeRm fresh;
  InferenceCore restarted(opts_, *store_, fresh, clock_, metrics_);
  auto n = restarted.submitDueInstances();
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 0);
  EXPECT_TRUE(fresh.one_offs.empty());
  // Seven hours later the fourth instance (25.5 h from the start) is due, and only it.
  clock_.advance(Millis(7 * kHour));
  n = restarted.submitDueInstances();
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(fresh.one_offs.size(), 1u);
  EXPECT_EQ(fresh.one_offs[0].arrival_ms(), next + 3 * 7 * kHour + a);
  auto shown = restarted.proposal(p.record.id);
  ASSERT_TRUE(shown.isOk());
  EXPECT_EQ(shown->payload.instances.size(), 4u);
}

// An instance's deterministic id already held in the RM by another user's
// reservation (ALREADY_EXISTS) is not taken as the instance's own: the
// instance stays refused, naming the owner that differs; the id held with
// the instance's own owner and definition (a restart) still counts as
// submitted.
TEST_F(InferenceCoreTest, OneOffIdHeldByAnotherUsersReservationIsNotTheInstances) {
  opts_.one_off_lead = Millis(kDay);
  rm_.squatter = "mallory";
  JobShape j{"seven", 7 * kHour, 30 * kMin, 40 * kMin, 20 * kMin, {}};
  Proposal p = proposeRecent(j, 21);
  ASSERT_TRUE(p.payload.one_off_instances);
  auto acc = core().accept(p.record.id, alice_, false);
  EXPECT_FALSE(acc.isOk()) << "no instance is reserved";
  EXPECT_EQ(only("seven", store::ProposalState::kPending).record.id, p.record.id);
  EXPECT_NE(acc.status().message().find("user is 'mallory', not 'alice'"), std::string::npos)
      << acc.status().toString();

  rm_.squatter.clear();
  rm_.owners.clear();  // the ids are now held with alice's own definition
  acc = core().accept(p.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  ASSERT_FALSE(acc->payload.instances.empty());
  for (const auto& i : acc->payload.instances) {
    EXPECT_EQ(i.state, "submitted") << i.detail;
    EXPECT_EQ(i.detail, "submitted earlier");
  }
}

// A half-hourly job on per-instance one-offs has 48 windows within the one
// day lead, more than the closed instances a proposal remembers: every one
// of them stays on the proposal (none is submitted again at the next check),
// and only closed ones are forgotten as the day goes by.
TEST_F(InferenceCoreTest, EveryInstanceNotYetClosedStaysOnTheProposal) {
  JobShape j{"halfhourly", 30 * kMin, 2 * kMin, 10 * kMin, 5 * kMin, {}};
  const Proposal first = proposeRecent(j, 48);
  rm_.refuse_recurring = true;
  ASSERT_TRUE(core().accept(first.record.id, alice_, false).isOk());
  EXPECT_EQ(only("halfhourly", store::ProposalState::kAccepted).payload.instances.size(), 48u);
  const int calls = rm_.one_off_calls;
  ASSERT_TRUE(core().submitDueInstances().isOk());
  EXPECT_EQ(rm_.one_off_calls, calls) << "nothing submitted again";
  clock_.advance(Millis(kDay));
  ASSERT_TRUE(core().submitDueInstances().isOk());
  const Proposal later = only("halfhourly", store::ProposalState::kAccepted);
  EXPECT_EQ(rm_.one_off_calls, calls + 48) << "the next day's, once each";
  EXPECT_GE(later.payload.instances.size(), 48u);
  EXPECT_LE(later.payload.instances.size(), 48u + 32u);
}

// A job on per-instance one-offs because the RM had no room for its
// recurring reservation gets one when an update is accepted: the one-offs of
// windows not yet open are cancelled in the RM (they would hold those
// instances twice); the one of the window open now stays for the instance
// running in it. A cancellation the RM refuses is kept on the proposal and
// retried at the next check, also by a restarted service.
TEST_F(InferenceCoreTest, OneOffsAreCancelledWhenARecurringReservationReplacesThem) {
  JobShape j{"hourly", kHour, 5 * kMin, 20 * kMin, 10 * kMin, {}};
  const Proposal first = proposeRecent(j, 48);
  rm_.refuse_recurring = true;
  ASSERT_TRUE(core().accept(first.record.id, alice_, false).isOk());
  const Proposal fallback = only("hourly", store::ProposalState::kAccepted);
  ASSERT_TRUE(fallback.payload.one_off_instances);
  ASSERT_EQ(rm_.ids.size(), 24u);

  // The first instance's window is open; its successors' are not.
  clock_.advance(fallback.payload.start_offset + Millis(kMin));
  store::IngestBatch wider;
  j.skyline.assign(20, 4.0);
  const int64_t last = 400 * 24 - 1;
  for (int64_t k = last - 29; k <= last; k++) addInstance(&wider, j, k);
  ingest(wider);
  ASSERT_TRUE(core().refit().isOk());
  const Proposal update = only("hourly", store::ProposalState::kPending);
  ASSERT_TRUE(update.payload.is_update);
  ASSERT_FALSE(update.payload.one_off_instances);
  rm_.refuse_recurring = false;
  rm_.refuse_cancel = true;
  auto acc = core().accept(update.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  EXPECT_EQ(acc->payload.retiring.size(), 23u) << "kept for the next check";
  EXPECT_NE(acc->payload.warnings.back().find("replaces 23 reservation(s) of the superseded "
                                              "proposal " +
                                              fallback.record.id.value()),
            std::string::npos)
      << acc->payload.warnings.back();
  EXPECT_TRUE(rm_.cancelled.empty());

  rm_.refuse_cancel = false;
  core_.reset();  // a restarted service finds them in the store
  ASSERT_TRUE(core().submitDueInstances().isOk());
  ASSERT_EQ(rm_.cancelled.size(), 23u);
  const std::string open_now = fallback.payload.instances.front().reservation_id;
  EXPECT_EQ(rm_.ids, std::set<std::string>{open_now});
  EXPECT_TRUE(only("hourly", store::ProposalState::kAccepted).payload.retiring.empty());
  ASSERT_TRUE(core().submitDueInstances().isOk());
  EXPECT_EQ(rm_.cancelled.size(), 23u) << "nothing cancelled twice";
}

// A job whose period changes from hourly to 7 h (no longer dividing the
// LCM) moves from its recurring reservation to per-instance one-offs: the
// recurring one is cancelled once the hourly window open at sign-off has
// closed, not before (an instance may be running in it), and not left in
// the RM holding capacity for a schedule the job no longer has.
TEST_F(InferenceCoreTest, RecurringReservationIsCancelledAfterItsOpenWindowWhenOneOffsReplaceIt) {
  opts_.history_window = Millis(2 * kDay);
  JobShape hourly{"shift", kHour, 5 * kMin, 20 * kMin, 10 * kMin, {}};
  ASSERT_TRUE(core().accept(proposeRecent(hourly, 48).record.id, alice_, false).isOk());
  const Proposal recurring = only("shift", store::ProposalState::kAccepted);
  ASSERT_EQ(recurring.record.reservation_id, "res_shift");

  // Three days later only 7-hourly runs are in the history window.
  JobShape seven{"shift", 7 * kHour, 30 * kMin, 40 * kMin, 20 * kMin, {}};
  const int64_t now_ms = 403 * kDay + recurring.payload.start_offset.count() + kMin;
  store::IngestBatch later;
  for (int64_t k = now_ms / (7 * kHour) - 8; k < now_ms / (7 * kHour); k++)
    addInstance(&later, seven, k);
  ingest(later);
  clock_.advance(Millis(now_ms) - (clock_.now() - fromEpochMs(0)));
  ASSERT_TRUE(core().refit().isOk()) << notActionableReason("shift");
  const Proposal update = only("shift", store::ProposalState::kPending);
  ASSERT_TRUE(update.payload.one_off_instances);
  auto acc = core().accept(update.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  ASSERT_EQ(acc->payload.retiring.size(), 1u);
  const TimePoint window_end =
      fromEpochMs(403 * kDay) + recurring.payload.deadline_offset;  // the hourly window open now
  EXPECT_EQ(acc->payload.retiring[0], (RetiringReservation{"res_shift", window_end}));
  EXPECT_TRUE(rm_.cancelled.empty());
  EXPECT_FALSE(rm_.one_offs.empty());

  clock_.advance(window_end - clock_.now() - Millis(1000));
  ASSERT_TRUE(core().submitDueInstances().isOk());
  EXPECT_TRUE(rm_.cancelled.empty()) << "the window is still open";
  clock_.advance(Millis(1000));
  ASSERT_TRUE(core().submitDueInstances().isOk());
  EXPECT_EQ(rm_.cancelled, std::vector<std::string>{"res_shift"});
  EXPECT_TRUE(only("shift", store::ProposalState::kAccepted).payload.retiring.empty());
}

// An off-kilter job whose period changes (7 h to 10 h) keeps per-instance
// one-offs, on the new schedule: the old schedule's one-offs of windows not
// yet open are cancelled, except any the new schedule holds under the same
// id (an instance both schedules share).
TEST_F(InferenceCoreTest, OneOffsOfAnOldScheduleAreCancelledWhenThePeriodChanges) {
  opts_.history_window = Millis(2 * kDay);
  opts_.one_off_lead = Millis(4 * kDay);
  JobShape seven{"drift", 7 * kHour, 30 * kMin, 40 * kMin, 20 * kMin, {}};
  ASSERT_TRUE(core().accept(proposeRecent(seven, 9).record.id, alice_, false).isOk());
  const Proposal old = only("drift", store::ProposalState::kAccepted);
  ASSERT_GE(old.payload.instances.size(), 13u);

  // Two and a half days later only 10-hourly runs are in the history window.
  clock_.advance(Millis(5 * kDay / 2));
  const int64_t now = toEpochMs(clock_.now());
  JobShape ten{"drift", 10 * kHour, 30 * kMin, 40 * kMin, 20 * kMin, {}};
  ten.run_tag = "-10h";
  store::IngestBatch later;
  for (int64_t k = now / (10 * kHour) - 4; k < now / (10 * kHour); k++) addInstance(&later, ten, k);
  ingest(later);
  ASSERT_TRUE(core().refit().isOk());
  ASSERT_EQ(notActionableReason("drift"), "");
  const Proposal update = only("drift", store::ProposalState::kPending);
  ASSERT_EQ(update.payload.period, Millis(10 * kHour));
  ASSERT_TRUE(update.payload.one_off_instances);
  auto acc = core().accept(update.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  std::set<std::string> now_held;
  for (const auto& i : acc->payload.instances) now_held.insert(i.reservation_id);
  std::vector<std::string> expected;
  for (const auto& i : old.payload.instances) {
    if (toEpochMs(i.period_start + old.payload.start_offset) > now &&
        now_held.count(i.reservation_id) == 0)
      expected.push_back(i.reservation_id);
  }
  ASSERT_GE(expected.size(), 3u);
  EXPECT_EQ(rm_.cancelled, expected);
  EXPECT_TRUE(acc->payload.retiring.empty());
  for (const auto& id : now_held) EXPECT_EQ(rm_.ids.count(id), 1u) << id;
}

// An update with the same period but a later window (the job's input now
// arrives an hour later): every one-off of a window not yet open is replaced
// by one of the new window, the old ones are cancelled, and none is held
// twice; the instance whose window is open keeps its reservation. Before,
// the old one-offs kept their ids, the new ones met ALREADY_EXISTS, and the
// RM kept reserving the old window until it passed.
TEST_F(InferenceCoreTest, AnUpdatedWindowReplacesTheOneOffsOfWindowsNotYetOpen) {
  const Proposal old = acceptSevenHourlyThenDelayItsInput();
  const int64_t now = toEpochMs(clock_.now());
  const Proposal update = only("seven", store::ProposalState::kPending);
  ASSERT_EQ(update.payload.period, Millis(7 * kHour));
  ASSERT_EQ(update.payload.start_offset, Millis(95 * kMin));
  auto acc = core().accept(update.record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();

  std::map<int64_t, int> per_instance;  // period start -> one-offs held
  int new_window = 0;
  for (const auto& [id, def] : rm_.held) {
    const int64_t a = def.arrival_ms() % (7 * kHour);
    if (def.arrival_ms() <= now) continue;  // open now: the old window, kept
    EXPECT_EQ(a, 95 * kMin) << id << " reserves the old window";
    per_instance[def.arrival_ms() - a]++;
    new_window++;
  }
  EXPECT_GE(new_window, 3);
  for (const auto& [start, n] : per_instance) EXPECT_EQ(n, 1) << "instance of " << start;
  std::set<std::string> cancelled(rm_.cancelled.begin(), rm_.cancelled.end());
  int old_future = 0;
  for (const auto& i : old.payload.instances) {
    if (toEpochMs(i.period_start + old.payload.start_offset) <= now) continue;
    old_future++;
    EXPECT_EQ(cancelled.count(i.reservation_id), 1u) << i.reservation_id;
  }
  EXPECT_GE(old_future, 3);
  EXPECT_TRUE(acc->payload.retiring.empty());
}

// The same update where the RM refuses the new one-off of one instance (its
// room is what the old one holds, say): that instance keeps its old one-off,
// so it stays reserved, and the proposal says so; once the new one is held
// at a later check, the old one is cancelled. Nothing acknowledged is left
// unreserved by an update.
TEST_F(InferenceCoreTest, ARefusedNewOneOffKeepsTheOldOneUntilItIsHeld) {
  const Proposal old = acceptSevenHourlyThenDelayItsInput();
  const int64_t now = toEpochMs(clock_.now());
  const InstanceReservation* blocked = nullptr;
  for (const auto& i : old.payload.instances) {
    if (toEpochMs(i.period_start + old.payload.start_offset) > now + kHour) blocked = &i;
  }
  ASSERT_NE(blocked, nullptr);
  const std::string old_id = blocked->reservation_id;
  rm_.refused_hours = {toEpochMs(blocked->period_start) % kDay / kHour};
  auto acc = core().accept(only("seven", store::ProposalState::kPending).record.id, alice_, false);
  ASSERT_TRUE(acc.isOk()) << acc.status().toString();
  EXPECT_EQ(rm_.ids.count(old_id), 1u) << "the refused instance keeps its old one-off";
  EXPECT_EQ(std::count(rm_.cancelled.begin(), rm_.cancelled.end(), old_id), 0);
  bool warned = false;
  for (const auto& w : acc->payload.warnings) warned |= w.find("keep the superseded") != w.npos;
  EXPECT_TRUE(warned);
  v1::Proposal wire;  // what the owner sees (morpheusctl slo show)
  toProto(*acc, clock_.now(), &wire);
  int shown = 0;
  for (const auto& i : wire.instances()) shown += i.replaces() == old_id ? 1 : 0;
  EXPECT_EQ(shown, 1);

  // A restart in between loses nothing: the record names the old one-off.
  core_.reset();
  rm_.refused_hours.clear();
  ASSERT_TRUE(core().submitDueInstances().isOk());
  EXPECT_EQ(rm_.ids.count(old_id), 0u) << "cancelled once the new one is held";
  EXPECT_EQ(std::count(rm_.cancelled.begin(), rm_.cancelled.end(), old_id), 1);
  const Proposal now_held = only("seven", store::ProposalState::kAccepted);
  for (const auto& i : now_held.payload.instances) {
    if (i.period_start != blocked->period_start) continue;
    EXPECT_EQ(i.state, "submitted");
    EXPECT_TRUE(i.replaces.empty());
    EXPECT_EQ(rm_.held.at(i.reservation_id).arrival_ms() % (7 * kHour), 95 * kMin);
  }
  EXPECT_TRUE(now_held.payload.retiring.empty());
}

// A weekly job (longer than the one-day LCM) is likewise proposed with
// per-instance one-off reservations instead of being reported not actionable.
TEST_F(InferenceCoreTest, WeeklyJobIsProposedWithPerInstanceReservations) {
  JobShape j{"weekly", 7 * kDay, 2 * kHour, 40 * kMin, 30 * kMin, {}};
  store::IngestBatch b;
  for (int64_t k = 50; k < 57; k++) addInstance(&b, j, k);
  ingest(b);
  ASSERT_TRUE(core().refit().isOk()) << notActionableReason("weekly");
  Proposal p = only("weekly", store::ProposalState::kPending);
  EXPECT_TRUE(p.payload.one_off_instances);
  EXPECT_EQ(p.payload.period, Millis(7 * kDay));
}

// Refit's phases (InferenceCore::refit, docs/design/inference.md): a refit
// held between its compute and apply phases (setRefitHookForTest) by a gate
// the test opens, to act while it is in flight.
class InferenceCoreRefitTest : public InferenceCoreTest {
 protected:
  // Where a refit waits until release(); every refit passes once released.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    int entered = 0;
    bool released = false;
    void pass() {
      std::unique_lock<std::mutex> lk(mu);
      entered++;
      cv.notify_all();
      cv.wait(lk, [&] { return released; });
    }
    bool waitEntered(int n) {
      std::unique_lock<std::mutex> lk(mu);
      return cv.wait_for(lk, kPatience, [&] { return entered >= n; });
    }
    void release() {
      std::lock_guard<std::mutex> lk(mu);
      released = true;
      cv.notify_all();
    }
    int enteredCount() {
      std::lock_guard<std::mutex> lk(mu);
      return entered;
    }
  };
  static constexpr std::chrono::seconds kPatience{30};

  void TearDown() override {
    gate_.release();  // a failed assertion must not leave a refit waiting
    if (refit_.valid()) refit_.wait();
    InferenceCoreTest::TearDown();
  }
  // Starts a refit on another thread; it stops at the gate after computing.
  void startGatedRefit() {
    core().setRefitHookForTest([this] { gate_.pass(); });
    refit_ = std::async(std::launch::async, [this] { return core().refit(); });
    ASSERT_TRUE(gate_.waitEntered(1)) << "the refit never reached its apply phase";
  }
  // Runs `f` on another thread while the refit is held: whether it finished
  // within kPatience (it must not need the refit to finish). The gate opens
  // either way.
  template <class F>
  auto whileRefitHeld(F f) -> std::pair<bool, decltype(f())> {
    auto call = std::async(std::launch::async, f);
    const bool done = call.wait_for(kPatience) == std::future_status::ready;
    gate_.release();
    return {done, call.get()};
  }
  int count(const std::string& job, store::ProposalState state) {
    auto all = core().proposals(state);
    EXPECT_TRUE(all.isOk());
    return static_cast<int>(std::count_if(
        all->begin(), all->end(), [&](const Proposal& p) { return p.record.job.value() == job; }));
  }
  // Daily job "etl" two containers wide on days 370-389, refitted: its
  // pending proposal. Then runs 8 wide on days 390-399 are ingested, so the
  // next refit finds its history materially different.
  Proposal proposeThenWiden() {
    JobShape narrow{"etl", kDay, 90 * kMin, 30 * kMin, 60 * kMin, {}};
    store::IngestBatch b;
    for (int64_t k = 370; k < 390; k++) addInstance(&b, narrow, k);
    ingest(b);
    EXPECT_TRUE(core().refit().isOk()) << notActionableReason("etl");
    Proposal p = only("etl", store::ProposalState::kPending);
    JobShape wide = narrow;
    wide.skyline = std::vector<double>(30, 8.0);
    store::IngestBatch w;
    for (int64_t k = 390; k < 400; k++) addInstance(&w, wide, k);
    ingest(w);
    return p;
  }

  Gate gate_;
  std::future<Result<int>> refit_;
};

// No lock is held while a refit computes: another job's sign-off and the
// listings complete while the refit is held before applying, and the
// refit then applies its result for the job nobody touched (superseding
// its pending proposal as a refit without company does).
TEST_F(InferenceCoreRefitTest, SignOffAndListingCompleteWhileARefitComputes) {
  const Proposal other =
      proposeRecent(JobShape{"other", kDay, 2 * kHour, 40 * kMin, 30 * kMin, {}}, 10);
  const Proposal etl = proposeThenWiden();
  startGatedRefit();
  auto [done, signed_off] = whileRefitHeld([&] {
    auto accepted = core().accept(other.record.id, alice_, false);
    auto listed = core().proposals(std::nullopt);
    core().notActionable();
    return accepted.isOk() && listed.isOk() ? Status::ok()
           : accepted.isOk()                ? listed.status()
                                            : accepted.status();
  });
  ASSERT_TRUE(done) << "sign-off or listing waited for the refit";
  EXPECT_TRUE(signed_off.isOk()) << signed_off.toString();
  auto created = refit_.get();
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  EXPECT_EQ(*created, 1);
  EXPECT_EQ(only("other", store::ProposalState::kAccepted).record.id, other.record.id);
  EXPECT_EQ(count("other", store::ProposalState::kPending), 0);
  auto old = core().proposal(etl.record.id);
  ASSERT_TRUE(old.isOk());
  EXPECT_EQ(old->record.state, store::ProposalState::kSuperseded);
  Proposal next = only("etl", store::ProposalState::kPending);
  EXPECT_FALSE(next.payload.is_update);
  EXPECT_GT(*std::max_element(next.payload.skyline.begin(), next.payload.skyline.end()),
            *std::max_element(etl.payload.skyline.begin(), etl.payload.skyline.end()));
}

// A refit's result for a job whose proposal was rejected while it computed
// is stale: it does not supersede the rejection. The next refit decides the
// job again (its history now differs from what was rejected: a new
// proposal).
TEST_F(InferenceCoreRefitTest, StaleRefitResultDoesNotOverwriteARejection) {
  const Proposal etl = proposeThenWiden();
  startGatedRefit();
  auto [done, rejected] =
      whileRefitHeld([&] { return core().reject(etl.record.id, alice_, "too small").status(); });
  ASSERT_TRUE(done) << "reject waited for the refit";
  ASSERT_TRUE(rejected.isOk()) << rejected.toString();
  auto created = refit_.get();
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  EXPECT_EQ(*created, 0) << "the stale result was applied";
  auto kept = core().proposal(etl.record.id);
  ASSERT_TRUE(kept.isOk());
  EXPECT_EQ(kept->record.state, store::ProposalState::kRejected);
  EXPECT_EQ(kept->record.reason, "too small");
  EXPECT_EQ(count("etl", store::ProposalState::kPending), 0);

  core().setRefitHookForTest(nullptr);
  ASSERT_TRUE(core().refit().isOk());
  EXPECT_FALSE(only("etl", store::ProposalState::kPending).payload.is_update);
  EXPECT_EQ(core().proposal(etl.record.id)->record.state, store::ProposalState::kRejected);
}

// Likewise an acceptance: the stale result (a new proposal, not an update)
// neither supersedes the accepted proposal nor sits beside it; the next
// refit proposes the drift as an update of the accepted SLO.
TEST_F(InferenceCoreRefitTest, StaleRefitResultDoesNotOverwriteAnAcceptance) {
  const Proposal etl = proposeThenWiden();
  startGatedRefit();
  auto [done, accepted] =
      whileRefitHeld([&] { return core().accept(etl.record.id, alice_, false).status(); });
  ASSERT_TRUE(done) << "accept waited for the refit";
  ASSERT_TRUE(accepted.isOk()) << accepted.toString();
  auto created = refit_.get();
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  EXPECT_EQ(*created, 0) << "the stale result was applied";
  EXPECT_EQ(only("etl", store::ProposalState::kAccepted).record.id, etl.record.id);
  EXPECT_EQ(count("etl", store::ProposalState::kPending), 0);

  core().setRefitHookForTest(nullptr);
  ASSERT_TRUE(core().refit().isOk());
  EXPECT_TRUE(only("etl", store::ProposalState::kPending).payload.is_update);
  EXPECT_EQ(only("etl", store::ProposalState::kAccepted).record.id, etl.record.id);
}

// Refits do not overlap: one called while another is held waits, then runs
// its own from a fresh snapshot (it sees the first one's proposal, so it
// makes none and nothing flaps).
TEST_F(InferenceCoreRefitTest, ASecondRefitWaitsForTheRunningOneThenRunsItsOwn) {
  const Proposal etl = proposeThenWiden();
  startGatedRefit();
  auto second = std::async(std::launch::async, [this] { return core().refit(); });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the second refit ran beside the first";
  EXPECT_EQ(gate_.enteredCount(), 1);
  gate_.release();
  auto first = refit_.get();
  auto then = second.get();
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_TRUE(then.isOk()) << then.status().toString();
  EXPECT_EQ(*first, 1);
  EXPECT_EQ(*then, 0);
  EXPECT_EQ(gate_.enteredCount(), 2) << "the second refit computed after the first";
  EXPECT_EQ(count("etl", store::ProposalState::kPending), 1);
  EXPECT_EQ(core().proposal(etl.record.id)->record.state, store::ProposalState::kSuperseded);
}

}  // namespace
}  // namespace morpheus::inference
