// Inference service end to end: 30 days of synthetic runs and file
// provenance for 10 recurring jobs with known periods, earliest starts and
// deadlines (plus one ad-hoc job) are imported with morpheusctl; a refit
// recovers the SLOs within tolerance; owners accept; each reservation is in
// the RM's plan. Real RM, NM and inference daemons on loopback.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/metrics.h"
#include "harness.h"
#include "rm/runtime/telemetry.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int64_t kMin = 60000, kHour = 60 * kMin, kDay = 24 * kHour;

struct KnownJob {
  std::string key, owner;
  int64_t period;      // ms
  int64_t avail;       // input written at this offset (+0..4 min jitter)
  int64_t runtime;     // ms
  int64_t read_after;  // output read this long after the run ends (+0/+2 min jitter)
  // p95 of max(submit = avail + 5 min, input at avail + {0..4} min).
  int64_t expect_a() const { return avail + 5 * kMin; }
  int64_t expect_d() const { return avail + 5 * kMin + runtime + read_after + kMin; }  // median
};

std::vector<KnownJob> knownJobs() {
  std::vector<KnownJob> jobs;
  for (int i = 0; i < 5; i++) {
    jobs.push_back({"daily-" + std::to_string(i), i % 2 ? "bob" : "alice", kDay,
                    (1 + 2 * i) * kHour, (30 + 5 * i) * kMin, (60 + 10 * i) * kMin});
  }
  for (int i = 0; i < 3; i++) {
    jobs.push_back({"hourly-" + std::to_string(i), "alice", kHour, (2 + i) * kMin, (10 + i) * kMin,
                    15 * kMin});
  }
  for (int i = 0; i < 2; i++) {
    jobs.push_back({"halfhourly-" + std::to_string(i), "bob", 30 * kMin, kMin, 6 * kMin, 8 * kMin});
  }
  return jobs;
}

// One run of job k (index j) in period n, as JSON lines (run + its file
// events); `scale` multiplies its skyline.
void writeRun(std::ostream& out, const KnownJob& k, size_t j, int n, int64_t first_day, int scale) {
  int64_t base = first_day + n * k.period;
  std::string rid = k.key + "-" + std::to_string(n);
  int64_t avail = base + k.avail + (n % 5) * kMin;
  int64_t submit = base + k.avail + 5 * kMin;
  int64_t start = submit + 10000;
  int64_t end = start + k.runtime;
  int64_t read = end + k.read_after + (n % 2) * 2 * kMin;
  json sky = json::array();
  for (int64_t s = 0; s < k.runtime / kMin; s++) {
    sky.push_back(scale * (2 + static_cast<int>(j % 3) + static_cast<int>((s + n) % 4)));
  }
  out << json({{"type", "run"},
               {"job", k.key},
               {"run", rid},
               {"user", k.owner},
               {"submit_ms", submit},
               {"start_ms", start},
               {"end_ms", end},
               {"step_ms", kMin},
               {"skyline", sky},
               {"container", {{"memory_mib", 1024}, {"vcores", 1}}}})
             .dump()
      << "\n";
  std::string in = "/data/" + k.key + "/in/" + std::to_string(n);
  std::string outp = "/data/" + k.key + "/out/" + std::to_string(n);
  out << json({{"type", "event"},
               {"job", "ingest"},
               {"run", "ingest-" + rid},
               {"path", in},
               {"kind", "write"},
               {"time_ms", avail}})
             .dump()
      << "\n";
  out << json({{"type", "event"},
               {"job", k.key},
               {"run", rid},
               {"path", in},
               {"kind", "read"},
               {"time_ms", start + 1000}})
             .dump()
      << "\n";
  out << json({{"type", "event"},
               {"job", k.key},
               {"run", rid},
               {"path", outp},
               {"kind", "write"},
               {"time_ms", end - 1000}})
             .dump()
      << "\n";
  out << json({{"type", "event"},
               {"job", "consumer-of-" + k.key},
               {"run", "c-" + rid},
               {"path", outp},
               {"kind", "read"},
               {"time_ms", read}})
             .dump()
      << "\n";
}

int64_t firstDay(int64_t now) { return now / kDay * kDay - 30 * kDay; }
int periodsOf(const KnownJob& k, int64_t now) {
  int n = 0;
  while (firstDay(now) + (n + 1) * k.period < now - kHour) n++;
  return n;
}

// Writes the history as JSON lines; returns the number of runs.
int writeHistory(const std::string& path, const std::vector<KnownJob>& jobs, int64_t now) {
  std::ofstream out(path);
  int64_t first_day = firstDay(now);
  int runs = 0;
  for (size_t j = 0; j < jobs.size(); j++) {
    for (int n = 0; n < periodsOf(jobs[j], now); n++, runs++)
      writeRun(out, jobs[j], j, n, first_day, 1);
  }
  // An ad-hoc job: irregular submissions, no SLO.
  int64_t t = first_day;
  int64_t gaps[] = {17, 95, 33, 240, 61, 12, 180, 45, 300, 27};
  for (int i = 0; i < 10; i++) {
    t += gaps[i] * kMin;
    out << json({{"type", "run"},
                 {"job", "adhoc"},
                 {"run", "adhoc-" + std::to_string(i)},
                 {"user", "carol"},
                 {"submit_ms", t},
                 {"start_ms", t},
                 {"end_ms", t + 5 * kMin},
                 {"step_ms", kMin},
                 {"skyline", {1, 1, 1, 1, 1}}})
               .dump()
        << "\n";
    runs++;
  }
  return runs;
}

class InferenceIT : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = testTokenFile();
    rm_ = Process::startDaemon("rm", freshDir("rm"), {"--set", "rm.token-file=" + tokens_});
    ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
    std::vector<std::string> nm_args = {
        "--rm", rm_.grpcAddress(), "--resources", "memory=102400,vcores=100", "--node-id", "nm1"};
    for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
    nm_ = Process::startDaemon("nm", freshDir("nm"), nm_args);
    ASSERT_FALSE(nm_.grpcAddress().empty()) << nm_.log();
    dir_ = freshDir("inference");
    // Inference submits accepted proposals for their owners: an RM admin's token.
    std::string rm_token = dir_ + "-rm-token";
    writeSecretFile(rm_token, testToken("ops") + "\n");
    inf_ = Process::startDaemon("inference", dir_,
                                {"--rm", rm_.grpcAddress(), "--token-file", tokens_, "--set",
                                 "inference.rm-token-file=" + rm_token});
    ASSERT_FALSE(inf_.grpcAddress().empty()) << inf_.log();
    // The service runs one refit ~2 s after start (then daily). Wait for it,
    // so it cannot race the test's own refits and take their new proposals
    // (it did on a slow CI machine: the drift refit below then reported 0).
    ASSERT_TRUE(waitFor([&] { return inf_.log().find("refit created") != std::string::npos; }, 30s))
        << inf_.log();
    ASSERT_TRUE(waitFor(
        [&] {
          auto [code, out] = ctl({"plan", "show", "--json", "--to", "+2m"}, testToken("alice"));
          auto j = json::parse(out, nullptr, false);
          return code == 0 && !j.is_discarded() && j["capacity"]["vcores"] == 100;
        },
        15s))
        << rm_.log();
  }
  std::pair<int, std::string> ctl(std::vector<std::string> args, const std::string& token) {
    std::vector<std::string> argv = {binary("morpheusctl"), "--rm", rm_.grpcAddress(),
                                     "--inference", inf_.grpcAddress()};
    if (!token.empty()) {
      argv.push_back("--token");
      argv.push_back(token);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
  }
  // The proposal of `job` in alice's `slo list --json`; null if none.
  // An operator's daily reservation of `containers` 1-vcore containers over
  // [arrival, arrival + minutes) (ms since epoch), recurring every day.
  // Returns the blocker's reservation id ("" after a failed assertion).
  std::string submitDailyBlocker(int64_t arrival, int64_t minutes, int containers) {
    std::string blocker = dir_ + "-blocker.json";
    std::ofstream(blocker) << json{
        {"queue", "default"},
        {"reservation-definition",
         {{"arrival", arrival},
          {"deadline", arrival + minutes * kMin},
          {"recurrence-expression", std::to_string(kDay)},
          {"reservation-requests",
           {{"reservation-request-interpreter", 1},
            {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                  {"num-containers", containers},
                                                  {"min-concurrency", containers},
                                                  {"duration", minutes * kMin}}})}}}}}};
    auto [cb, ob] = ctl({"reservation", "submit", "-f", blocker, "--json"}, testToken("ops"));
    EXPECT_EQ(cb, 0) << ob << rm_.log();
    json sub = json::parse(ob, nullptr, false);
    if (sub.is_discarded() || !sub.contains("reservations")) return "";
    return sub["reservations"][0].value("reservation_id", "");
  }
  json listedProposal(const std::string& job) {
    auto [code, out] = ctl({"slo", "list", "--json"}, testToken("alice"));
    EXPECT_EQ(code, 0) << out;
    json found, listed = json::parse(out, nullptr, false);
    if (listed.is_discarded()) return found;
    for (const auto& x : listed["proposals"]) {
      if (x["job_key"] == job) found = x;
    }
    return found;
  }
  Process rm_, nm_, inf_;
  std::string dir_, tokens_;
};

TEST_F(InferenceIT, ThirtyDaysOfHistoryBecomeAcceptedReservations) {
  auto jobs = knownJobs();
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  std::string file = dir_ + "-history.jsonl";
  int runs = writeHistory(file, jobs, now);
  ASSERT_GT(runs, 5000);

  // A file with one bad line imports nothing and names the line.
  std::string bad = dir_ + "-bad.jsonl";
  {
    std::ifstream in(file);
    std::ofstream out(bad);
    std::string line;
    for (int i = 0; i < 3 && std::getline(in, line); i++) out << line << "\n";
    out << R"({"type":"run","job":"x","run":"y","submit_ms":5,"start_ms":1,"end_ms":9,"skyline":[1]})"
        << "\n";
  }
  auto [cb, ob] = ctl({"history", "import", bad, "--format", "jsonl"}, testToken("alice"));
  EXPECT_EQ(cb, 2) << ob;
  EXPECT_NE(ob.find("line 4: run.start_ms"), std::string::npos) << ob;
  auto [cr0, or0] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr0, 0) << or0;
  auto [cl0, ol0] = ctl({"slo", "list", "--json"}, testToken("alice"));
  ASSERT_EQ(cl0, 0) << ol0;
  EXPECT_TRUE(json::parse(ol0)["proposals"].empty()) << ol0;
  EXPECT_TRUE(json::parse(ol0)["not_actionable"].empty())
      << "nothing may have been stored: " << ol0;

  // The history names several owners: the operator (an admin) imports it for them.
  auto [ci, oi] = ctl({"history", "import", file, "--format", "jsonl"}, testToken("ops"));
  ASSERT_EQ(ci, 0) << oi << inf_.log();
  EXPECT_NE(oi.find("imported " + std::to_string(runs) + " run(s)"), std::string::npos) << oi;

  // Only an admin may trigger a refit.
  auto [cr1, or1] = ctl({"slo", "refit"}, testToken("bob"));
  EXPECT_EQ(cr1, 1) << or1;
  EXPECT_NE(or1.find("PERMISSION_DENIED"), std::string::npos) << or1;
  auto [cr, orf] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr, 0) << orf << inf_.log();

  auto [cl, ol] = ctl({"slo", "list", "--json"}, testToken("alice"));
  ASSERT_EQ(cl, 0) << ol;
  json list = json::parse(ol);
  std::map<std::string, json> by_job;
  for (const auto& p : list["proposals"]) by_job[p["job_key"]] = p;
  ASSERT_EQ(by_job.size(), jobs.size()) << ol;
  // Tolerance: a and d within 2 minutes of the generator's; period exact.
  for (const auto& k : jobs) {
    SCOPED_TRACE(k.key);
    ASSERT_TRUE(by_job.count(k.key)) << ol;
    const json& p = by_job[k.key];
    EXPECT_EQ(p["state"], "pending");
    EXPECT_EQ(p["owner"], k.owner);
    EXPECT_EQ(p["period_ms"].get<int64_t>(), k.period);
    EXPECT_NEAR(p["start_offset_ms"].get<double>(), static_cast<double>(k.expect_a()), 2.0 * kMin);
    EXPECT_NEAR(p["deadline_offset_ms"].get<double>(), static_cast<double>(k.expect_d()),
                2.0 * kMin);
    // The skyline covers the run time; its peak is the generator's peak.
    EXPECT_EQ(p["skyline"].size(), static_cast<size_t>(k.runtime / kMin));
    EXPECT_GT(p["reprovision_budget_container_ms"].get<int64_t>(), 0);
  }
  bool adhoc_listed = false;
  for (const auto& n : list["not_actionable"]) {
    if (n["job_key"] == "adhoc") {
      adhoc_listed = true;
      EXPECT_NE(n["reason"].get<std::string>().find("not periodic"), std::string::npos) << n.dump();
    }
  }
  EXPECT_TRUE(adhoc_listed) << ol;

  // A rejection is remembered while the history does not change materially.
  std::string rejected = by_job["halfhourly-1"]["proposal_id"];
  auto [cj, oj] =
      ctl({"slo", "reject", rejected, "--reason", "we run it by hand"}, testToken("bob"));
  ASSERT_EQ(cj, 0) << oj;
  auto [crr, orr] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(crr, 0) << orr;
  EXPECT_NE(orr.find("0 new proposal(s)"), std::string::npos) << orr;
  auto [cn, on] = ctl({"slo", "list", "--json"}, testToken("bob"));
  EXPECT_NE(on.find("owner rejected the proposal; history unchanged"), std::string::npos) << on;
  jobs.pop_back();  // halfhourly-1 is not accepted below

  // Only the owner (or an admin) signs off.
  std::string daily0 = by_job["daily-0"]["proposal_id"];  // alice's
  auto [cd, od] = ctl({"slo", "accept", daily0}, testToken("bob"));
  EXPECT_EQ(cd, 1) << od;
  EXPECT_NE(od.find("PERMISSION_DENIED"), std::string::npos) << od;

  // Accept every proposal (owners for two, the admin for the rest).
  std::map<std::string, std::string> reservation_of;
  for (const auto& k : jobs) {
    std::string token = k.key == "daily-0"   ? testToken("alice")
                        : k.key == "daily-1" ? testToken("bob")
                                             : testToken("ops");
    auto [ca, oa] = ctl({"slo", "accept", by_job[k.key]["proposal_id"], "--json"}, token);
    ASSERT_EQ(ca, 0) << k.key << ": " << oa << inf_.log();
    json acc = json::parse(oa)["proposals"][0];
    EXPECT_EQ(acc["state"], "accepted");
    EXPECT_FALSE(acc["reservation_id"].get<std::string>().empty());
    EXPECT_NE(acc["placement"].get<std::string>().find("first instance"), std::string::npos) << oa;
    reservation_of[k.key] = acc["reservation_id"];
  }
  // A second accept of the same proposal is refused.
  auto [c2, o2] = ctl({"slo", "accept", daily0}, testToken("alice"));
  EXPECT_EQ(c2, 1) << o2;

  // Every reservation is in the RM's plan: periodic, owned by the job owner,
  // with allocations inside [a, d] of its period.
  auto r = httpRequest(rm_.httpAddress(), "GET",
                       "/ws/v1/cluster/reservation/list?include-resource-allocations=true", "",
                       "application/json", bearer("ops"));
  ASSERT_EQ(r.status, 200) << r.body;
  json rl = json::parse(r.body);
  std::map<std::string, json> res;
  for (const auto& x : rl["reservations"]) res[x["reservation-id"]] = x;
  for (const auto& k : jobs) {
    SCOPED_TRACE(k.key);
    ASSERT_TRUE(res.count(reservation_of[k.key])) << r.body;
    const json& x = res[reservation_of[k.key]];
    EXPECT_EQ(x["user"], k.owner);
    ASSERT_FALSE(x["resource-allocations"].empty()) << x.dump();
    for (const auto& a : x["resource-allocations"]) {
      int64_t s = a["startTime"].get<int64_t>() % k.period,
              e = a["endTime"].get<int64_t>() % k.period;
      if (e == 0) e = k.period;
      EXPECT_GE(s, by_job[k.key]["start_offset_ms"].get<int64_t>() % k.period) << a.dump();
      EXPECT_LE(
          e, by_job[k.key]["deadline_offset_ms"].get<int64_t>() % k.period + (e < s ? k.period : 0))
          << a.dump();
    }
  }
  auto [cs, os] = ctl({"slo", "list", "--state", "accepted", "--json"}, testToken("alice"));
  ASSERT_EQ(cs, 0) << os;
  EXPECT_EQ(json::parse(os)["proposals"].size(), jobs.size());

  // A refit over the same history proposes nothing new (no material change).
  auto [cr2, or2] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr2, 0) << or2;
  EXPECT_NE(or2.find("0 new proposal(s)"), std::string::npos) << or2;

  // The recent runs of hourly-0 (accepted) and halfhourly-1 (rejected) now
  // use twice the containers: an update proposal for the first, a fresh
  // proposal for the second.
  std::string drift = dir_ + "-drift.jsonl";
  {
    std::ofstream out(drift);
    auto all = knownJobs();
    for (size_t j : {size_t{5}, size_t{9}}) {
      int n = periodsOf(all[j], now);
      for (int i = n - 30; i < n; i++) writeRun(out, all[j], j, i, firstDay(now), 2);
    }
  }
  auto [cdi, odi] = ctl({"history", "import", drift, "--format", "jsonl"}, testToken("ops"));
  ASSERT_EQ(cdi, 0) << odi;
  auto [cr3, or3] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr3, 0) << or3;
  EXPECT_NE(or3.find("2 new proposal(s)"), std::string::npos) << or3 << inf_.log();
  auto [cp, op] = ctl({"slo", "list", "--state", "pending", "--json"}, testToken("alice"));
  ASSERT_EQ(cp, 0) << op;
  std::map<std::string, json> pend;
  json pending = json::parse(op);
  for (const auto& p : pending["proposals"]) pend[p["job_key"]] = p;
  ASSERT_EQ(pend.size(), 2u) << op;
  EXPECT_TRUE(pend["hourly-0"]["is_update"].get<bool>()) << op;
  EXPECT_FALSE(pend["halfhourly-1"]["is_update"].get<bool>()) << op;
  // Accepting the update replaces the reservation in place.
  auto [cu, ou] =
      ctl({"slo", "accept", pend["hourly-0"]["proposal_id"], "--json"}, testToken("alice"));
  ASSERT_EQ(cu, 0) << ou;
  EXPECT_EQ(json::parse(ou)["proposals"][0]["reservation_id"], reservation_of["hourly-0"]);
  auto [cs2, os2] = ctl({"slo", "list", "--state", "superseded", "--json"}, testToken("alice"));
  EXPECT_EQ(json::parse(os2)["proposals"].size(), 1u) << os2;
}

}  // namespace
}  // namespace morpheus::testing

namespace morpheus::testing {
namespace {

// The RM's telemetry feed (rm::TelemetryForwarder) delivers finished runs and
// their file events to a real morpheus-inference, retrying while it is down.

// Bob cannot hijack alice's history. Re-importing her run
// ids as himself, with no owner (he is then the owner) or in her name, adding a
// newer run of her job, and importing without a token are refused; after a
// refit the job's proposal is still hers, fitted from her runs only, and bob
// cannot accept it. (Old code: every import succeeded, bob became the owner.)
// Morpheus §6 against a real RM: a 7-hourly job (7 h does not divide the
// one-day LCM) is proposed with per-instance one-off reservations; accepting
// it places one one-off reservation per instance whose window opens within
// the lead time (1 day) in the RM's plan. A failed run is stored, listed by
// `slo history` with its status, and not fitted.
TEST_F(InferenceIT, OffKilterJobGetsOneOffReservationsInTheRm) {
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  KnownJob seven{"seven", "alice", 7 * kHour, 30 * kMin, 40 * kMin, 20 * kMin};
  std::string file = dir_ + "-seven.jsonl";
  {
    std::ofstream out(file);
    for (int n = 0; n < periodsOf(seven, now); n++) writeRun(out, seven, 0, n, firstDay(now), 1);
    out << json({{"type", "run"},
                 {"job", "seven"},
                 {"run", "seven-failed"},
                 {"user", "alice"},
                 {"submit_ms", now - 2 * kHour},
                 {"start_ms", now - 2 * kHour},
                 {"end_ms", now - kHour},
                 {"step_ms", kMin},
                 {"skyline", std::vector<int>(60, 90)},
                 {"status", "failed"}})
               .dump()
        << "\n";
  }
  auto [ci, oi] = ctl({"history", "import", file, "--format", "jsonl"}, testToken("alice"));
  ASSERT_EQ(ci, 0) << oi << inf_.log();
  auto [cr, orf] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr, 0) << orf << inf_.log();
  json p = listedProposal("seven");
  ASSERT_FALSE(p.is_null()) << inf_.log();
  EXPECT_EQ(p["period_ms"].get<int64_t>(), 7 * kHour);
  EXPECT_TRUE(p["one_off_instances"].get<bool>()) << p.dump();
  EXPECT_GT(p["next_instance_arrival_ms"].get<int64_t>(), now);
  EXPECT_EQ(p["runs_failed"].get<int>(), 1) << p.dump();
  int64_t peak = 0;
  for (const auto& v : p["skyline"]) peak = std::max<int64_t>(peak, v.get<int64_t>());
  EXPECT_LT(peak, 90) << "the failed run is not fitted";
  const std::string id = p["proposal_id"];
  auto [cs, os] = ctl({"slo", "show", id}, testToken("alice"));
  ASSERT_EQ(cs, 0) << os;
  EXPECT_NE(os.find("per-instance one-off reservations"), std::string::npos) << os;
  auto [ch, oh] = ctl({"slo", "history", "seven"}, testToken("alice"));
  ASSERT_EQ(ch, 0) << oh;
  EXPECT_NE(oh.find("seven-failed"), std::string::npos) << oh;
  EXPECT_NE(oh.find("failed (not fitted)"), std::string::npos) << oh;

  auto [ca, oa] = ctl({"slo", "accept", id, "--json"}, testToken("alice"));
  ASSERT_EQ(ca, 0) << oa << inf_.log();
  json acc = json::parse(oa)["proposals"][0];
  EXPECT_EQ(acc["state"], "accepted");
  // Windows opening within the next day, 7 h apart: 3 or 4 of them.
  ASSERT_GE(acc["instances"].size(), 3u) << oa;
  ASSERT_LE(acc["instances"].size(), 4u) << oa;
  auto r = httpRequest(rm_.httpAddress(), "GET",
                       "/ws/v1/cluster/reservation/list?include-resource-allocations=true", "",
                       "application/json", bearer("ops"));
  ASSERT_EQ(r.status, 200) << r.body;
  std::map<std::string, json> res;
  json rl = json::parse(r.body);
  for (const auto& x : rl["reservations"]) res[x["reservation-id"]] = x;
  for (const auto& inst : acc["instances"]) {
    SCOPED_TRACE(inst.dump());
    EXPECT_EQ(inst["state"], "submitted");
    ASSERT_TRUE(res.count(inst["reservation_id"])) << r.body;
    const json& x = res[inst["reservation_id"]];
    EXPECT_EQ(x["user"], "alice");
    ASSERT_FALSE(x["resource-allocations"].empty()) << x.dump();
    for (const auto& a : x["resource-allocations"]) {
      EXPECT_GE(a["startTime"].get<int64_t>(), inst["arrival_ms"].get<int64_t>()) << a.dump();
      EXPECT_LE(a["endTime"].get<int64_t>(), inst["deadline_ms"].get<int64_t>()) << a.dump();
    }
  }
}

// Against a real RM: a daily job whose runs start slowly (10
// containers, 60 for their last 10 min) and every third one outlasts its
// window is proposed reshaped to it, front-loaded. A daily reservation
// holding 60 of the 100 vcores in the window's first 15 min leaves no room
// for the front-loaded skyline; accepting it places the same steps in the
// order the runs showed, and the accepted proposal says so.
TEST_F(InferenceIT, NoRoomForTheFrontLoadedSkylineReservesItInOrder) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t today = now / kDay * kDay;
  // The blocker: tomorrow's [01:05, 01:20), then daily.
  submitDailyBlocker(today + kDay + 65 * kMin, 15, 60);
  // 30 days: input at 01:00, submitted 01:05, 60 min runs (150 min every
  // third day) read at 02:15:10 (late runs: 1 min after they end).
  std::string file = dir_ + "-late.jsonl";
  {
    std::ofstream out(file);
    for (int n = 0; n < 30; n++) {
      const int64_t base = today - (30 - n) * kDay;
      const int64_t minutes = n % 3 == 0 ? 150 : 60;
      const int64_t start = base + 65 * kMin + 10000, end = start + minutes * kMin;
      std::vector<int> sky(static_cast<size_t>(minutes), 10);
      std::fill(sky.end() - 10, sky.end(), 60);
      const std::string rid = "late-" + std::to_string(n);
      writeHistoryRun(out, {"late", rid, "alice", base + 65 * kMin, start, end, sky});
      const std::string in = "/data/late/in/" + std::to_string(n);
      const std::string outp = "/data/late/out/" + std::to_string(n);
      writeHistoryEvent(out, "ingest", "ingest-" + rid, in, "write", base + 60 * kMin);
      writeHistoryEvent(out, "late", rid, in, "read", start + 1000);
      writeHistoryEvent(out, "late", rid, outp, "write", end - 1000);
      writeHistoryEvent(out, "report", "report-" + rid, outp, "read",
                        std::max(base + 135 * kMin + 10000, end + kMin));
    }
  }
  auto [ci, oi] = ctl({"history", "import", file, "--format", "jsonl"}, testToken("alice"));
  ASSERT_EQ(ci, 0) << oi << inf_.log();
  auto [cr, orf] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr, 0) << orf << inf_.log();
  json p = listedProposal("late");
  ASSERT_FALSE(p.is_null()) << inf_.log();
  const auto front = p["skyline"].get<std::vector<int64_t>>();
  ASSERT_FALSE(front.empty()) << p.dump();
  EXPECT_GT(front.front(), 40) << "front-loaded: no room next to the blocker " << p.dump();
  EXPECT_TRUE(std::is_sorted(front.rbegin(), front.rend())) << p.dump();

  auto [ca, oa] = ctl({"slo", "accept", p["proposal_id"], "--json"}, testToken("alice"));
  ASSERT_EQ(ca, 0) << oa << inf_.log() << rm_.log();
  json acc = json::parse(oa)["proposals"][0];
  EXPECT_EQ(acc["state"], "accepted") << oa;
  const auto held = acc["skyline"].get<std::vector<int64_t>>();
  EXPECT_LE(held.front(), 40) << oa;
  std::vector<int64_t> sorted = held;
  std::sort(sorted.rbegin(), sorted.rend());
  EXPECT_EQ(sorted, front) << "the same steps, in the runs' order";
  EXPECT_NE(oa.find("no room for the front-loaded skyline"), std::string::npos) << oa;
  auto r = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/reservation/list", "",
                       "application/json", bearer("ops"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["reservations"].size(), 2u) << r.body;
}

// Against a real RM: an hourly job (50 containers for 10 min,
// due at half past) meets a daily reservation holding 90 of the 100 vcores
// over [01:00, 01:30). The RM refuses its recurring reservation (hour 1 has
// room for 250 of its 500 container-minutes, even stretched), and sign-off falls back to one-off
// reservations per instance: the RM holds every instance due within the lead time except hour 1's,
// which the accepted proposal lists as refused with the RM's reason.
// Once the blocker is gone and an update of the job's SLO is accepted, the
// job gets its recurring reservation and the inference service cancels the
// one-offs of windows not yet open in the RM (they would hold those
// instances twice).
TEST_F(InferenceIT, RefusedHourlyReservationIsHeldPerInstanceWhereThereIsRoom) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t hour_now = now / kHour * kHour;
  const std::string blocker = submitDailyBlocker(now / kDay * kDay + kDay + kHour, 30, 90);
  ASSERT_FALSE(blocker.empty());
  // 48 hours of runs: input at :00, submitted :05, 10 min at `width`
  // containers, the output read at :30.
  auto importRuns = [&](const std::string& tag, int width) {
    std::string file = dir_ + "-" + tag + ".jsonl";
    {
      std::ofstream out(file);
      for (int n = 0; n < 48; n++) {
        const int64_t base = hour_now - (48 - n) * kHour;
        const int64_t start = base + 5 * kMin + 10000, end = start + 10 * kMin;
        const std::string rid = "hourly-" + std::to_string(n);
        writeHistoryRun(out, {"hourly", rid, "alice", base + 5 * kMin, start, end,
                              std::vector<int>(10, width)});
        const std::string in = "/data/hourly/in/" + std::to_string(n);
        const std::string outp = "/data/hourly/out/" + std::to_string(n);
        writeHistoryEvent(out, "ingest", "ingest-" + rid, in, "write", base);
        writeHistoryEvent(out, "hourly", rid, in, "read", start + 1000);
        writeHistoryEvent(out, "hourly", rid, outp, "write", end - 1000);
        writeHistoryEvent(out, "report", "report-" + rid, outp, "read", base + 30 * kMin);
      }
    }
    auto [ci, oi] = ctl({"history", "import", file, "--format", "jsonl"}, testToken("alice"));
    EXPECT_EQ(ci, 0) << oi << inf_.log();
  };
  importRuns("hourly", 50);
  auto [cr, orf] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr, 0) << orf << inf_.log();
  json p = listedProposal("hourly");
  ASSERT_FALSE(p.is_null()) << inf_.log();
  ASSERT_EQ(p["period_ms"].get<int64_t>(), kHour) << p.dump();
  ASSERT_FALSE(p["one_off_instances"].get<bool>()) << p.dump();

  auto [ca, oa] = ctl({"slo", "accept", p["proposal_id"], "--json"}, testToken("alice"));
  ASSERT_EQ(ca, 0) << oa << inf_.log() << rm_.log();
  json acc = json::parse(oa)["proposals"][0];
  EXPECT_EQ(acc["state"], "accepted") << oa;
  EXPECT_TRUE(acc["one_off_instances"].get<bool>()) << oa;
  EXPECT_NE(oa.find("no room for the recurring one"), std::string::npos) << oa;
  EXPECT_NE(oa.find("refused 1 of the instances"), std::string::npos) << oa;
  auto r = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/reservation/list", "",
                       "application/json", bearer("ops"));
  ASSERT_EQ(r.status, 200) << r.body;
  std::set<std::string> held;
  const json listed = json::parse(r.body);
  for (const auto& x : listed["reservations"]) held.insert(x["reservation-id"].get<std::string>());
  int refused = 0;
  ASSERT_GE(acc["instances"].size(), 23u) << oa;
  for (const auto& inst : acc["instances"]) {
    SCOPED_TRACE(inst.dump());
    const bool hour_one = inst["arrival_ms"].get<int64_t>() % kDay / kHour == 1;
    EXPECT_EQ(inst["state"], hour_one ? "refused" : "submitted");
    EXPECT_EQ(held.count(inst["reservation_id"].get<std::string>()), hour_one ? 0u : 1u);
    refused += hour_one ? 1 : 0;
  }
  EXPECT_EQ(refused, 1) << oa;
  EXPECT_EQ(held.size(), acc["instances"].size()) << "the blocker and the instances but hour 1's";

  auto [cd, od] = ctl({"reservation", "delete", blocker}, testToken("ops"));
  ASSERT_EQ(cd, 0) << od << rm_.log();
  importRuns("narrower", 30);  // the same runs at 30 containers: an update proposal
  auto [cr2, or2] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr2, 0) << or2 << inf_.log();
  json update;
  auto [cl, ol] = ctl({"slo", "list", "--json"}, testToken("alice"));
  ASSERT_EQ(cl, 0) << ol;
  const json proposals = json::parse(ol);
  for (const auto& x : proposals["proposals"]) {
    if (x["job_key"] == "hourly" && x["state"] == "pending") update = x;
  }
  ASSERT_FALSE(update.is_null()) << ol << inf_.log();
  const int64_t before = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto [cu, ou] = ctl({"slo", "accept", update["proposal_id"], "--json"}, testToken("alice"));
  ASSERT_EQ(cu, 0) << ou << inf_.log() << rm_.log();
  const int64_t after = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  json upd = json::parse(ou)["proposals"][0];
  EXPECT_FALSE(upd["one_off_instances"].get<bool>()) << ou;
  EXPECT_NE(ou.find("cancelled in the RM once no window they may serve is open"), std::string::npos)
      << ou;
  r = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/reservation/list", "",
                  "application/json", bearer("ops"));
  ASSERT_EQ(r.status, 200) << r.body;
  std::set<std::string> now_held;
  const json relisted = json::parse(r.body);
  for (const auto& x : relisted["reservations"])
    now_held.insert(x["reservation-id"].get<std::string>());
  EXPECT_EQ(now_held.count(upd["reservation_id"].get<std::string>()), 1u) << r.body;
  for (const auto& inst : acc["instances"]) {
    SCOPED_TRACE(inst.dump());
    const int64_t opens = inst["arrival_ms"].get<int64_t>();
    const bool kept = now_held.count(inst["reservation_id"].get<std::string>()) > 0;
    if (opens > after) {
      EXPECT_FALSE(kept) << "a window not yet open: cancelled";
    }
    if (opens <= before && inst["state"] == "submitted") {
      EXPECT_TRUE(kept) << "open window";
    }
  }
  EXPECT_LE(now_held.size(), 2u) << "the recurring one, and a one-off whose window is open";
}

TEST_F(InferenceIT, HistoryImportCannotHijackAnotherOwnersJob) {
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  KnownJob k{"alice-etl", "alice", kDay, 2 * kHour, 30 * kMin, 60 * kMin};
  auto write = [&](const std::string& tag, KnownJob job, int from, int to, int scale) {
    std::string path = dir_ + "-" + tag + ".jsonl";
    std::ofstream out(path);
    for (int n = from; n < to; n++) writeRun(out, job, 0, n, firstDay(now), scale);
    return path;
  };
  int periods = periodsOf(k, now);
  // Sent in small batches with progress on stderr; every run
  // arrives (the proposal below is fitted on them).
  auto [ca, oa] = ctl({"history", "import", write("alice", k, 0, periods, 1), "--format", "jsonl",
                       "--batch-bytes", "1024"},
                      testToken("alice"));
  ASSERT_EQ(ca, 0) << oa << inf_.log();
  EXPECT_NE(oa.find("history import: batch 2/"), std::string::npos) << oa;
  EXPECT_NE(oa.find("imported " + std::to_string(periods) + " run(s)"), std::string::npos) << oa;

  KnownJob as_bob = k;
  as_bob.owner = "bob";
  KnownJob unnamed = k;
  unnamed.owner = "";
  struct Attempt {
    std::string what, file, token;
  };
  std::vector<Attempt> attempts = {
      {"her run ids as bob", write("bob", as_bob, 0, periods, 5), testToken("bob")},
      {"her run ids without an owner", write("unnamed", unnamed, 0, periods, 5), testToken("bob")},
      {"her run ids in her name", write("forged", k, 0, periods, 5), testToken("bob")},
      {"a newer run of her job", write("newer", as_bob, periods, periods + 1, 5), testToken("bob")},
  };
  for (const auto& a : attempts) {
    auto [c, o] = ctl({"history", "import", a.file, "--format", "jsonl"}, a.token);
    EXPECT_EQ(c, 1) << a.what << ": " << o;
    EXPECT_NE(o.find("PERMISSION_DENIED"), std::string::npos) << a.what << ": " << o;
  }
  auto [cn, on] = ctl({"history", "import", attempts[0].file, "--format", "jsonl"}, "");
  EXPECT_EQ(cn, 1) << "no token: " << on;

  auto [cr, orf] = ctl({"slo", "refit"}, testToken("ops"));
  ASSERT_EQ(cr, 0) << orf;
  auto [cl, ol] = ctl({"slo", "list", "--json"}, testToken("alice"));
  ASSERT_EQ(cl, 0) << ol;
  json listed = json::parse(ol), proposal;
  for (const auto& p : listed["proposals"])
    if (p["job_key"] == "alice-etl") proposal = p;
  ASSERT_FALSE(proposal.is_null()) << ol << inf_.log();
  EXPECT_EQ(proposal["owner"], "alice") << proposal.dump();
  // Her runs use 2..5 containers; bob's copies 10..25.
  for (const auto& v : proposal["skyline"]) EXPECT_LE(v.get<int64_t>(), 5) << proposal.dump();
  auto [cb, ob] = ctl({"slo", "accept", proposal["proposal_id"]}, testToken("bob"));
  EXPECT_EQ(cb, 1) << ob;
  EXPECT_NE(ob.find("PERMISSION_DENIED"), std::string::npos) << ob;
}

// A job belongs to its established owner: bob's app run
// with alice's recurrence key reaches inference through the RM's feed (an
// admin token), and bob's made-up reads of her output are imported as his
// own job's provenance. Neither may make bob the owner of her proposal or
// move her deadline: the RM's run is refused (and dropped, not retried), the
// proposal is alice's with the deadline her consumer shows, bob's accept is
// refused and alice's creates her reservation. Real RM, NM and inference; on
// the old code the run was stored, the proposal was bob's (he accepted it
// into a reservation of his own with her key) and d moved to ~+2 min after
// her runs' end.
TEST(InferenceOwnerIT, ForwardedRunsAndReadsOfAnotherUserLeaveAJobItsOwners) {
  const std::string tokens = testTokenFile();
  // The inference port is chosen first: the RM feeds it, it submits to the
  // RM. Below the ephemeral range, and its start retries while the port is
  // taken (harness.h), not a port a probe daemon had and released.
  const int inf_port = freeLoopbackPort();
  ASSERT_GT(inf_port, 0);
  const std::string inf_address = "127.0.0.1:" + std::to_string(inf_port);
  const std::string dir = freshDir("owner");
  const std::string ops_token = dir + "-ops-token";
  writeSecretFile(ops_token, testToken("ops") + "\n");
  Process rm = Process::startDaemon(
      "rm", freshDir("rm"),
      {"--set", "rm.token-file=" + tokens, "--set", "rm.inference-address=" + inf_address, "--set",
       "rm.inference-token-file=" + ops_token});
  ASSERT_FALSE(rm.grpcAddress().empty()) << rm.log();
  std::vector<std::string> nm_args = {
      "--rm", rm.grpcAddress(), "--resources", "memory=102400,vcores=100", "--node-id", "nm1"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
  Process nm = Process::startDaemon("nm", freshDir("nm"), nm_args);
  ASSERT_FALSE(nm.grpcAddress().empty()) << nm.log();
  Process inf = Process::startDaemonOnPorts("inference", dir, inf_port, 0,
                                            {"--rm", rm.grpcAddress(), "--token-file", tokens,
                                             "--set", "inference.rm-token-file=" + ops_token},
                                            30s, dir + "-log");
  ASSERT_EQ(inf.grpcAddress(), inf_address) << inf.log();
  ASSERT_TRUE(waitFor([&] { return inf.log().find("refit created") != std::string::npos; }, 30s))
      << inf.log();
  auto ctl = [&](const std::string& who, std::vector<std::string> args) {
    std::vector<std::string> argv = {binary("morpheusctl"), "--rm",      rm.grpcAddress(),
                                     "--inference",         inf_address, "--token",
                                     testToken(who)};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
  };
  ASSERT_TRUE(waitFor(
      [&] {
        auto [code, out] = ctl("alice", {"plan", "show", "--json", "--to", "+2m"});
        auto j = json::parse(out, nullptr, false);
        return code == 0 && !j.is_discarded() && j["capacity"]["vcores"] == 100;
      },
      15s))
      << rm.log();

  // Alice's 30 days of "alice-etl", with her consumer's reads.
  const int64_t now = nowMs();
  KnownJob k{"alice-etl", "alice", kDay, 2 * kHour, 30 * kMin, 60 * kMin};
  const int periods = periodsOf(k, now);
  const std::string history = dir + "-alice.jsonl";
  {
    std::ofstream out(history);
    for (int n = 0; n < periods; n++) writeRun(out, k, 0, n, firstDay(now), 1);
  }
  auto [ci, oi] = ctl("alice", {"history", "import", history, "--format", "jsonl"});
  ASSERT_EQ(ci, 0) << oi << inf.log();

  // Bob's reads of her outputs 2 min after each of her runs ends, as his
  // own job, and as her consumer.
  const std::string reads = dir + "-bob-reads.jsonl", as_consumer = dir + "-bob-consumer.jsonl";
  {
    std::ofstream out(reads), consumer(as_consumer);
    for (int n = 0; n < periods; n++) {
      const int64_t end = firstDay(now) + n * kDay + k.avail + 5 * kMin + 10000 + k.runtime;
      const std::string path = "/data/alice-etl/out/" + std::to_string(n);
      writeHistoryEvent(out, "bob-report", "bob-" + std::to_string(n), path, "read",
                        end + 2 * kMin);
      writeHistoryEvent(consumer, "consumer-of-alice-etl", "bob-" + std::to_string(n), path, "read",
                        end + 2 * kMin);
    }
  }
  auto [cr, orr] = ctl("bob", {"history", "import", reads, "--format", "jsonl"});
  ASSERT_EQ(cr, 0) << "his own job's provenance is his to import: " << orr;
  auto [cc, oc] = ctl("bob", {"history", "import", as_consumer, "--format", "jsonl"});
  EXPECT_EQ(cc, 1) << "her consumer is hers: " << oc;
  EXPECT_NE(oc.find("PERMISSION_DENIED"), std::string::npos) << oc;

  // Bob runs an app under her key (she has no reservation yet: it runs ad hoc).
  const std::string job = freshDir("job") + "/job.yaml";
  std::ofstream(job) << "name: bob-in-alice-etl\n"
                        "stages:\n"
                        "  - name: work\n"
                        "    tasks: 1\n"
                        "    command: \"echo done\"\n"
                        "    resources: {memory_mib: 256, vcores: 1}\n";
  auto [cb, ob] = ctl("bob", {"app", "submit", job, "--recurrence", "alice-etl", "--wait"});
  ASSERT_EQ(cb, 0) << ob << rm.log();
  const std::string bob_app = ob.substr(0, ob.find('\n'));
  // The RM's feed delivers it or has it refused; either way it is done with it.
  auto metric = [&](const std::string& name) {
    auto r = httpRequest(rm.httpAddress(), "GET", "/metrics");
    size_t at = r.body.find("\n" + name + " ");
    return at == std::string::npos ? 0.0 : std::stod(r.body.substr(at + name.size() + 2));
  };
  ASSERT_TRUE(waitFor(
      [&] {
        return metric("morpheus_rm_telemetry_forwarded_total") +
                   metric("morpheus_rm_telemetry_refused_total") >=
               1;
      },
      30s))
      << rm.log() << inf.log();
  EXPECT_EQ(metric("morpheus_rm_telemetry_refused_total"), 1) << rm.log();
  EXPECT_NE(rm.log().find("refused by inference"), std::string::npos) << rm.log();
  auto [ch, oh] = ctl("alice", {"slo", "history", "alice-etl", "--json"});
  ASSERT_EQ(ch, 0) << oh;
  json runs = json::parse(oh, nullptr, false);
  ASSERT_FALSE(runs.is_discarded()) << oh;
  EXPECT_EQ(runs["runs"].size(), static_cast<size_t>(periods)) << oh;
  for (const auto& r : runs["runs"]) EXPECT_EQ(r["user"], "alice") << r.dump();

  auto [cf, of] = ctl("ops", {"slo", "refit"});
  ASSERT_EQ(cf, 0) << of << inf.log();
  auto [cl, ol] = ctl("alice", {"slo", "list", "--json"});
  ASSERT_EQ(cl, 0) << ol;
  json proposals = json::parse(ol, nullptr, false), proposal;
  for (const auto& p : proposals["proposals"]) {
    if (p["job_key"] == "alice-etl" && p["state"] == "pending") proposal = p;
  }
  ASSERT_FALSE(proposal.is_null()) << ol << inf.log();
  EXPECT_EQ(proposal["owner"], "alice") << proposal.dump();
  EXPECT_NEAR(proposal["deadline_offset_ms"].get<double>(), static_cast<double>(k.expect_d()),
              2.0 * kMin)
      << "bob's reads moved her deadline: " << proposal.dump();
  auto [cx, ox] = ctl("bob", {"slo", "accept", proposal["proposal_id"]});
  EXPECT_EQ(cx, 1) << ox;
  EXPECT_NE(ox.find("PERMISSION_DENIED"), std::string::npos) << ox;
  auto [ca, oa] = ctl("alice", {"slo", "accept", proposal["proposal_id"]});
  ASSERT_EQ(ca, 0) << oa << inf.log();
  auto [cv, ov] = ctl("alice", {"reservation", "list", "--json"});
  ASSERT_EQ(cv, 0) << ov;
  json listed = json::parse(ov, nullptr, false);
  int held = 0;
  for (const auto& r : listed["reservations"]) {
    if (r.dump().find("alice-etl") == std::string::npos) continue;
    held++;
    EXPECT_EQ(r["user"], "alice") << r.dump();
  }
  EXPECT_EQ(held, 1) << ov;
  EXPECT_EQ(inf.signalAndWait(SIGTERM, 10s), 0) << inf.log();
}

TEST(InferenceTelemetryIT, ForwarderDeliversRunsAndRetriesUntilTheServiceIsUp) {
  std::string dir = freshDir("inference-feed");
  // A port for the inference service, which starts only later (below the
  // ephemeral range; its start retries while the port is taken).
  const int inf_port = freeLoopbackPort();
  ASSERT_GT(inf_port, 0);
  std::string address = "127.0.0.1:" + std::to_string(inf_port);

  MetricsRegistry metrics;
  rm::TelemetryForwarder fwd(address, TlsOptions{}, metrics);
  fwd.start();
  int64_t t0 = 1'790'000'000'000;
  for (int i = 0; i < 4; i++) {
    rm::AppTelemetryRecord r;
    r.app = AppId("app_" + std::to_string(i));
    r.recurrence_key = JobKey("feed-job");
    r.user = UserId("alice");
    r.submit = fromEpochMs(t0 + i * kHour);
    r.start = r.submit + Millis(1000);
    r.finish = r.start + Millis(5 * kMin);
    r.skyline = {1, 2, 3, 2, 1};
    r.container = Resource(1024, 1);
    r.files = {{"/feed/out/" + std::to_string(i), r.finish - Millis(1000), true}};
    fwd.enqueue(r);
  }
  // Nothing listens yet: records wait in the queue.
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(fwd.queued(), 4u);

  Process inf = Process::startDaemonOnPorts(
      "inference", dir, inf_port, 0, {"--set", "inference.auth-disabled=true"}, 30s, dir + "-log");
  ASSERT_TRUE(waitFor([&] { return fwd.queued() == 0; }, 40s)) << inf.log();
  fwd.stop();
  // The runs are in the provenance store: a refit sees a periodic job whose
  // output nobody reads.
  auto [code, out] = runCommand({binary("morpheusctl"), "--inference", address, "slo", "refit"});
  ASSERT_EQ(code, 0) << out << inf.log();
  auto [c2, list] =
      runCommand({binary("morpheusctl"), "--inference", address, "slo", "list", "--json"});
  ASSERT_EQ(c2, 0) << list;
  EXPECT_NE(list.find("feed-job"), std::string::npos) << list;
  EXPECT_NE(list.find("no other job reads its output"), std::string::npos) << list;
}

}  // namespace
}  // namespace morpheus::testing
