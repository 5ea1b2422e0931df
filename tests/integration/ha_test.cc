// Active/standby RMs on a real 3-member etcd cluster: failover of
// a SIGKILLed active under load, an etcd member lost, and an active
// partitioned from etcd. Clients (morpheusctl, NMs, the DAG AM) are given the
// list of both RMs and follow the active one.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/rm_failover.h"
#include "common/wire.h"
#include "etcd_cluster.h"
#include "harness.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/reservation.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// One-off reservation: 1 container of 1 GiB / 1 vcore for 10 min within 2 h from t0.
json smallReservation(int64_t t0) {
  return {{"arrival", t0},
          {"deadline", t0 + 7200000},
          {"reservation-name", "ha-load"},
          {"priority", 0},
          {"recurrence-expression", "0"},
          {"reservation-requests",
           {{"reservation-request-interpreter", 1},
            {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                  {"num-containers", 1},
                                                  {"min-concurrency", 1},
                                                  {"duration", 600000}}})}}}};
}

constexpr int64_t kMin = 60000, kHour = 60 * kMin, kDay = 24 * kHour;

// 30 days of daily runs of job `key` (alice's): the run with its skyline and
// the file events the SLO inference derives the window from (input written at
// `avail` into the day, output read an hour after the 30 min run).
void writeDailyHistory(std::ostream& out, const std::string& key, int64_t avail, int64_t now) {
  const int64_t first_day = now / kDay * kDay - 30 * kDay;
  for (int n = 0; first_day + (n + 1) * kDay < now - kHour; ++n) {
    const int64_t base = first_day + n * kDay, written = base + avail + (n % 5) * kMin;
    const int64_t start = base + avail + 5 * kMin + 10000, end = start + 30 * kMin;
    const std::string rid = key + "-" + std::to_string(n);
    const std::string in = "/data/" + key + "/in/" + std::to_string(n);
    const std::string outp = "/data/" + key + "/out/" + std::to_string(n);
    std::vector<int> sky;
    for (int s = 0; s < 30; ++s) sky.push_back(2 + (s + n) % 4);
    writeHistoryRun(out, {key, rid, "alice", start - 10000, start, end, sky});
    writeHistoryEvent(out, "ingest", "ingest-" + rid, in, "write", written);
    writeHistoryEvent(out, key, rid, in, "read", start + 1000);
    writeHistoryEvent(out, key, rid, outp, "write", end - 1000);
    writeHistoryEvent(out, "consumer-of-" + key, "c-" + rid, outp, "read", end + kHour);
  }
}

class HaIT : public ClusterTest {
 protected:
  void SetUp() override {
    if (!EtcdCluster::available()) GTEST_SKIP() << "etcd is not installed: HA tests skipped";
    // Slower raft timing than the unit tests: the suite shares a loaded machine.
    etcd_ = std::make_unique<EtcdCluster>(3, 100, 1000);
    ASSERT_TRUE(etcd_->ok()) << etcd_->log();
    ports_ = freeLoopbackPorts(2);  // distinct, below the ephemeral range
    ASSERT_EQ(ports_.size(), 2u);
    rm_addr_ = "127.0.0.1:" + std::to_string(ports_[0]) + ",127.0.0.1:" + std::to_string(ports_[1]);
    tokens_ = testTokenFile();
  }

  // Starts RM `i` of the pair on its fixed port, its store on `endpoints`;
  // started again while another process holds the port (the pair's addresses
  // are fixed).
  Process startRm(int i, const std::string& endpoints) {
    dirs_[i] = freshDir("rm" + std::to_string(i));
    return Process::startDaemonOnPorts(
        "rm", dirs_[i], ports_[i], 0,
        {"--set", "state-store.kind=etcd", "--set", "state-store.location=" + endpoints, "--set",
         "rm.ha.lease-ttl=" + lease_ttl_, "--set", "rm.ha.rm-addresses=" + rm_addr_, "--set",
         "rm.heartbeat-interval=300ms", "--set", "rm.token-file=" + tokens_});
  }
  // RM `i`'s "grpc" or "http" address from its endpoints file (a standby
  // writes it too: it listens from the start); "" while there is none.
  std::string endpoint(int i, const std::string& which) {
    std::ifstream in(dirs_[i] + "/rm.endpoints.json");
    auto j = json::parse(in, nullptr, false);
    return j.is_discarded() ? "" : j.value(which, "");
  }
  // Whether RM `i` is active: its /readyz answers 200 (a standby's 503).
  bool active(int i) {
    std::string http = endpoint(i, "http");
    return !http.empty() && httpRequest(http, "GET", "/readyz").status == 200;
  }
  bool isStandby(Process& p) { return p.log().find("the active RM is") != std::string::npos; }

  // Starts the pair: RM 0 active, RM 1 standby.
  void startPair(const std::string& endpoints0, const std::string& endpoints1) {
    rms_[0] = startRm(0, endpoints0);
    ASSERT_TRUE(waitFor([&] { return active(0); }, 20s)) << rms_[0].log();
    rms_[1] = startRm(1, endpoints1);
    ASSERT_TRUE(waitFor([&] { return isStandby(rms_[1]); }, 20s)) << rms_[1].log();
    EXPECT_FALSE(active(1));
  }

  void startNms(int n) {
    for (int i = 0; i < n; i++) {
      std::string node = "nm" + std::to_string(i + 1);
      std::vector<std::string> args = {"--rm",        rm_addr_,
                                       "--node-id",   node,
                                       "--resources", "memory=4096,vcores=4",
                                       "--set",       "nm.monitor-interval=200ms",
                                       "--set",       "nm.heartbeat-interval=300ms"};
      for (auto& a : nmAuthArgs(node)) args.push_back(std::move(a));
      nms_.push_back(Process::startDaemon("nm", freshDir("nm"), args));
      ASSERT_FALSE(nms_.back().grpcAddress().empty()) << nms_.back().log();
    }
    ASSERT_TRUE(waitFor(
        [&] {
          auto [c, o] = ctl({"cluster", "status", "--json"});
          auto j = json::parse(o, nullptr, false);
          return c == 0 && !j.is_discarded() && j["live_nodes"] == n;
        },
        15s));
  }

  // Submits one reservation; on success records its allocations in acked_.
  bool submitOne(int64_t t0) {
    std::string path = freshDir("res") + "/r.json";
    std::ofstream(path)
        << json({{"queue", "default"}, {"reservation-definition", smallReservation(t0)}}).dump();
    auto [code, out] = ctl({"reservation", "submit", "-f", path, "--json"});
    if (code != 0) return false;
    auto j = json::parse(out, nullptr, false);
    if (j.is_discarded() || !j.contains("reservations")) return false;
    std::lock_guard<std::mutex> lk(mu_);
    acked_[j["reservations"][0]["reservation_id"]] = j["reservations"][0]["allocations"];
    return true;
  }

  size_t ackedCount() {
    std::lock_guard<std::mutex> lk(mu_);
    return acked_.size();
  }

  // id -> reservation entry of `reservation list --json` (empty on failure).
  std::map<std::string, json> listed() {
    auto [code, out] = ctl({"reservation", "list", "--json"});
    std::map<std::string, json> m;
    auto j = json::parse(out, nullptr, false);
    if (code != 0 || j.is_discarded()) return m;
    for (const auto& r : j["reservations"]) m[r["reservation_id"]] = r;
    return m;
  }

  // id -> report of `app list --json` (empty on failure).
  std::map<std::string, json> apps() {
    auto [code, out] = ctl({"app", "list", "--json"});
    std::map<std::string, json> m;
    auto j = json::parse(out, nullptr, false);
    if (code != 0 || j.is_discarded()) return m;
    for (const auto& a : j["applications"]) m[a["application_id"]] = a;
    return m;
  }

  std::unique_ptr<EtcdCluster> etcd_;
  std::string lease_ttl_ = "4s";  // rm.ha.lease-ttl of both RMs
  std::vector<int> ports_;
  std::string dirs_[2];
  Process rms_[2];
  std::string tokens_;
  std::mutex mu_;
  std::map<std::string, json> acked_;  // GUARDED_BY(mu_)
};

// kill -9 of the active under load (reservations being submitted, a DAG job
// running): the standby serves within 10 s, every acknowledged reservation is
// there with identical allocations, and the job finishes on its first AM attempt.
TEST_F(HaIT, ActiveKilledStandbyTakesOverAndNothingIsLost) {
  ASSERT_NO_FATAL_FAILURE(startPair(etcd_->endpoints(), etcd_->endpoints()));
  ASSERT_NO_FATAL_FAILURE(startNms(2));
  // An app acknowledged and finished before the failover: it must still be
  // listed afterwards with the same final report.
  std::string quick = writeJob(
      "name: finished-before-failover\n"
      "stages:\n"
      "  - name: once\n"
      "    tasks: 1\n"
      "    command: \"echo quick\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n");
  auto [qcode, qout] = ctl({"app", "submit", quick, "--wait"});
  ASSERT_EQ(qcode, 0) << qout << rms_[0].log();
  std::string job = writeJob(
      "name: survives-failover\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 3\n"
      "    command: \"sleep 8; echo done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitRunning(id, 3, 20s)) << rms_[0].log();

  int64_t t0 = (nowMs() / 60000 + 60) * 60000;
  std::atomic<bool> stop{false};
  std::atomic<int> refused{0};
  std::thread load([&] {
    while (!stop) {
      if (!submitOne(t0)) refused++;
    }
  });
  ASSERT_TRUE(waitFor([&] { return ackedCount() >= 5; }, 20s));
  auto before = listed();
  ASSERT_GE(before.size(), 5u);
  const std::map<std::string, json> apps_before = apps();
  ASSERT_EQ(apps_before.size(), 2u);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(rms_[0].signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  ASSERT_TRUE(waitFor([&] { return active(1); }, 10s)) << rms_[1].log();
  auto active_after = std::chrono::steady_clock::now() - killed_at;
  size_t acked_at_failover = ackedCount();
  ASSERT_TRUE(waitFor([&] { return ackedCount() >= acked_at_failover + 3; }, 15s))
      << "submissions resume on the new active";
  auto serving_after = std::chrono::steady_clock::now() - killed_at;
  stop = true;
  load.join();

  auto after = listed();
  std::lock_guard<std::mutex> lk(mu_);
  size_t lost = 0, changed = 0;
  for (const auto& [rid, entry] : before) {
    if (!after.count(rid))
      lost++;
    else if (after[rid] != entry)
      changed++;
  }
  for (const auto& [rid, allocs] : acked_) {
    if (!after.count(rid))
      lost++;
    else if (after[rid]["allocations"] != allocs)
      changed++;
  }
  std::cout << "[ failover ] standby active after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(active_after).count()
            << " ms, submissions served again after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(serving_after).count()
            << " ms; acknowledged reservations " << acked_.size() << ", lost " << lost
            << ", allocations changed " << changed << ", refused during failover " << refused
            << "\n";
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(changed, 0u);
  EXPECT_LT(active_after, 10s);

  // Every acknowledged app is on the new active: the finished one with its
  // identical final report, the running one still under the same AM.
  const std::map<std::string, json> apps_after = apps();
  size_t apps_lost = 0;
  for (const auto& [aid, report] : apps_before) {
    auto it = apps_after.find(aid);
    if (it == apps_after.end()) {
      apps_lost++;
      continue;
    }
    if (report["state"] == "FINISHED") {
      EXPECT_EQ(it->second, report) << "finished app changed across the failover";
    } else {
      EXPECT_EQ(it->second["am_container_id"], report["am_container_id"]) << it->second.dump();
      EXPECT_EQ(it->second["submit_ms"], report["submit_ms"]) << it->second.dump();
    }
  }
  std::cout << "[ failover ] acknowledged apps " << apps_before.size() << ", lost " << apps_lost
            << "\n";
  EXPECT_EQ(apps_lost, 0u);

  ASSERT_TRUE(waitFinal(id, 40s)) << app(id).dump() << "\n"
                                  << rms_[1].log() << nms_[0].log() << nms_[1].log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump() << rms_[1].log();
  EXPECT_EQ(a["am_attempt"], 1) << "the AM carried on across the failover: " << a.dump();
  EXPECT_NE(rms_[1].log().find("re-adopted running container"), std::string::npos) << rms_[1].log();
}

// An acknowledged drain is in etcd: the standby that takes over after a
// kill -9 of the active still has the node drained
// (docs/operator/node-operations.md).
TEST_F(HaIT, DrainSurvivesAFailover) {
  ASSERT_NO_FATAL_FAILURE(startPair(etcd_->endpoints(), etcd_->endpoints()));
  ASSERT_NO_FATAL_FAILURE(startNms(2));
  auto [code, out] = ctlAs("ops", {"node", "drain", "nm2"});
  ASSERT_EQ(code, 0) << out << rms_[0].log();
  ASSERT_EQ(rms_[0].signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  ASSERT_TRUE(waitFor([&] { return active(1); }, 10s)) << rms_[1].log();
  ASSERT_TRUE(waitLiveNodes(2)) << rms_[1].log();
  auto [lc, lo] = ctl({"node", "list", "--json"});
  ASSERT_EQ(lc, 0) << lo;
  std::map<std::string, std::string> states;
  const json listed_nodes = json::parse(lo);
  for (const auto& n : listed_nodes["nodes"]) {
    states[n["node_id"].get<std::string>()] = n["state"].get<std::string>();
  }
  EXPECT_EQ(states["nm1"], "RUNNING") << lo;
  EXPECT_EQ(states["nm2"], "DRAINED") << lo << rms_[1].log();
}

// Losing one of three etcd members changes nothing: the active stays active,
// the standby standby, and writes go on. The member killed is etcd's raft
// leader, so the survivors elect for one or more rounds of the 1 s election
// timeout (2 s seen under load, with a split vote); the RMs run the lease TTL
// README recommends for that (>= 5 election timeouts, here 8 s), not the 4 s
// the failover tests use to fail over fast.
TEST_F(HaIT, KillingOneEtcdMemberHasNoEffect) {
  lease_ttl_ = "8s";
  ASSERT_NO_FATAL_FAILURE(startPair(etcd_->endpoints(), etcd_->endpoints()));
  ASSERT_NO_FATAL_FAILURE(startNms(1));
  int64_t t0 = (nowMs() / 60000 + 60) * 60000;
  ASSERT_TRUE(submitOne(t0));
  const int leader = etcd_->leaderIndex();
  ASSERT_GE(leader, 0) << etcd_->log();
  auto killed_at = std::chrono::steady_clock::now();
  etcd_->kill(leader);
  ASSERT_TRUE(waitFor([&] { return submitOne(t0); }, 10s)) << rms_[0].log();
  std::cout << "[ etcd member ] killed raft leader m" << leader
            << "; next write acknowledged after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - killed_at)
                   .count()
            << " ms\n";
  for (int i = 0; i < 3; i++) EXPECT_TRUE(submitOne(t0));
  EXPECT_TRUE(rms_[0].running());
  EXPECT_TRUE(rms_[1].running());
  EXPECT_FALSE(active(1)) << rms_[1].log();
  EXPECT_EQ(rms_[0].log().find("leadership lost"), std::string::npos) << rms_[0].log();
  EXPECT_EQ(listed().size(), 5u);
}

// The active cut off from etcd (its traffic goes through a proxy the test
// freezes) steps down and exits; the standby takes over and serves.
TEST_F(HaIT, ActivePartitionedFromEtcdStepsDown) {
  std::string member = etcd_->endpoint(0);
  TcpProxy proxy(std::stoi(member.substr(member.rfind(':') + 1)));
  ASSERT_NO_FATAL_FAILURE(
      startPair("127.0.0.1:" + std::to_string(proxy.port()), etcd_->endpoints()));
  ASSERT_NO_FATAL_FAILURE(startNms(1));
  int64_t t0 = (nowMs() / 60000 + 60) * 60000;
  ASSERT_TRUE(submitOne(t0));
  proxy.freeze();
  auto frozen_at = std::chrono::steady_clock::now();
  EXPECT_EQ(rms_[0].wait(10s), 3) << "exit 3: leadership lost\n" << rms_[0].log();
  auto stepped_down = std::chrono::steady_clock::now() - frozen_at;
  EXPECT_NE(rms_[0].log().find("leadership lost"), std::string::npos) << rms_[0].log();
  ASSERT_TRUE(waitFor([&] { return active(1); }, 10s)) << rms_[1].log();
  ASSERT_TRUE(waitFor([&] { return submitOne(t0); }, 10s)) << rms_[1].log();
  std::cout << "[ partition ] active stepped down "
            << std::chrono::duration_cast<std::chrono::milliseconds>(stepped_down).count()
            << " ms after losing etcd\n";
  EXPECT_EQ(listed().size(), 2u);
}

// A standby listens from the start and serves nothing: every RM RPC
// (client, reservation, node tracker) is refused UNAVAILABLE naming the
// active RM, in the message and as `morpheus-leader` metadata; HTTP answers
// /healthz 200, /readyz 503 and /metrics (role gauge 0) and refuses the web UI
// and REST, mutations included, with 503 naming the active's HTTP address.
// morpheusctl given "standby,active" follows the hint.
TEST_F(HaIT, StandbyAnswersUnavailableNamingTheActive) {
  ASSERT_NO_FATAL_FAILURE(startPair(etcd_->endpoints(), etcd_->endpoints()));
  const std::string leader = "127.0.0.1:" + std::to_string(ports_[0]);
  const std::string standby = "127.0.0.1:" + std::to_string(ports_[1]);
  ASSERT_EQ(endpoint(1, "grpc"), standby);
  auto channel = makeChannel(standby, TlsOptions{});
  auto expectRefused = [&](const char* what, grpc::ClientContext& ctx, const grpc::Status& st) {
    SCOPED_TRACE(what);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_EQ(st.error_message(), "standby; active RM is " + leader);
    EXPECT_EQ(leaderHint(ctx).value_or("(none)"), leader);
  };
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + testToken("alice"));
    v1::ClusterMetrics m;
    auto st = v1::ClientService::NewStub(channel)->GetClusterMetrics(
        &ctx, v1::GetClusterMetricsRequest(), &m);
    expectRefused("GetClusterMetrics", ctx, st);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + testToken("ops"));
    v1::NewReservationResponse r;
    auto st = v1::ReservationService::NewStub(channel)->NewReservation(
        &ctx, v1::NewReservationRequest(), &r);
    expectRefused("NewReservation", ctx, st);
  }
  {
    grpc::ClientContext ctx;
    v1::RegisterNodeRequest req;
    req.set_node_id("nm1");
    v1::RegisterNodeResponse r;
    auto st = v1::ResourceTracker::NewStub(channel)->RegisterNode(&ctx, req, &r);
    expectRefused("RegisterNode", ctx, st);
  }
  const std::string http = endpoint(1, "http"), leader_http = endpoint(0, "http");
  EXPECT_EQ(httpRequest(http, "GET", "/healthz").status, 200);
  auto ready = httpRequest(http, "GET", "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("standby; active RM is " + leader_http), std::string::npos)
      << ready.body;
  auto metrics = httpRequest(http, "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("morpheus_rm_ha_active 0\n"), std::string::npos) << metrics.body;
  EXPECT_NE(httpRequest(leader_http, "GET", "/metrics").body.find("morpheus_rm_ha_active 1\n"),
            std::string::npos);
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/"},
           {"GET", "/ui/api/cluster"},
           {"GET", "/ws/v1/cluster/info"},
           {"POST", "/ws/v1/cluster/reservation/new-reservation"},
           {"POST", "/ws/v1/cluster/reservation/delete"}}) {
    auto r = httpRequest(http, method, path, "{}", "application/json", bearer("ops"));
    EXPECT_EQ(r.status, 503) << method << " " << path << ": " << r.body;
    EXPECT_NE(r.body.find("active RM is " + leader_http), std::string::npos) << r.body;
  }
  rm_addr_ = standby + "," + leader;  // morpheusctl tries the standby first
  auto [code, out] = ctl({"cluster", "status", "--json"});
  EXPECT_EQ(code, 0) << out;
  ASSERT_NO_FATAL_FAILURE(startNms(1));  // given the same order; capacity to reserve
  ASSERT_TRUE(submitOne((nowMs() / 60000 + 60) * 60000)) << "a mutation through the list";
  EXPECT_EQ(listed().size(), 1u);
}

// The inference service and an NM configured with both RMs (the standby
// first) keep working across kill -9 of the active: the NM registers with the
// new active and the inference service's reservation submissions succeed again.
TEST_F(HaIT, NmAndInferenceFollowTheActiveAcrossKill9) {
  ASSERT_NO_FATAL_FAILURE(startPair(etcd_->endpoints(), etcd_->endpoints()));
  const std::string both = "127.0.0.1:" + std::to_string(ports_[1]) +
                           ",127.0.0.1:" + std::to_string(ports_[0]);  // standby first
  std::vector<std::string> nm_args = {"--rm",        both,
                                      "--node-id",   "nm1",
                                      "--resources", "memory=102400,vcores=100",
                                      "--set",       "nm.heartbeat-interval=300ms"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
  nms_.push_back(Process::startDaemon("nm", freshDir("nm"), nm_args));
  ASSERT_FALSE(nms_.back().grpcAddress().empty()) << nms_.back().log();
  std::string inf_dir = freshDir("inference"), rm_token = inf_dir + "-rm-token";
  writeSecretFile(rm_token, testToken("ops") + "\n");
  Process inf = Process::startDaemon(
      "inference", inf_dir,
      {"--rm", both, "--token-file", tokens_, "--set", "inference.rm-token-file=" + rm_token});
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  ASSERT_TRUE(waitFor([&] { return inf.log().find("refit created") != std::string::npos; }, 30s))
      << inf.log();
  auto ctlInf = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {
        binary("morpheusctl"), "--rm",    rm_addr_,        "--inference",
        inf.grpcAddress(),     "--token", testToken("ops")};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
  };
  const int64_t now = nowMs();
  std::string history = inf_dir + "-history.jsonl";
  {
    std::ofstream out(history);
    writeDailyHistory(out, "ha-a", 2 * kHour, now);
    writeDailyHistory(out, "ha-b", 5 * kHour, now);
  }
  auto [ci, oi] = ctlInf({"history", "import", history, "--format", "jsonl"});
  ASSERT_EQ(ci, 0) << oi << inf.log();
  auto [cr, orf] = ctlInf({"slo", "refit"});
  ASSERT_EQ(cr, 0) << orf << inf.log();
  auto [cl, ol] = ctlInf({"slo", "list", "--json"});
  ASSERT_EQ(cl, 0) << ol;
  std::map<std::string, std::string> proposal;
  const json listed_proposals = json::parse(ol);
  for (const auto& p : listed_proposals["proposals"])
    proposal[p["job_key"].get<std::string>()] = p["proposal_id"].get<std::string>();
  ASSERT_EQ(proposal.size(), 2u) << ol;
  auto accept = [&](const std::string& job) {
    auto [c, o] = ctlInf({"slo", "accept", proposal[job], "--json"});
    EXPECT_EQ(c, 0) << o << inf.log();
    auto j = json::parse(o, nullptr, false);
    if (j.is_discarded() || !j.contains("proposals")) return std::string();
    return j["proposals"][0].value("reservation_id", "");
  };
  auto liveNodes = [&] {
    auto [c, o] = ctl({"cluster", "status", "--json"});
    auto j = json::parse(o, nullptr, false);
    return c == 0 && !j.is_discarded() ? j["live_nodes"].get<int>() : -1;
  };
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s)) << nms_.back().log();
  const std::string before = accept("ha-a");  // through the standby's refusal
  ASSERT_FALSE(before.empty());

  ASSERT_EQ(rms_[0].signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  ASSERT_TRUE(waitFor([&] { return active(1); }, 10s)) << rms_[1].log();
  ASSERT_TRUE(waitFor([&] { return liveNodes() == 1; }, 15s))
      << "the NM registered with the new active\n"
      << nms_.back().log();
  const std::string after = accept("ha-b");  // the old active is gone: the list moves on
  ASSERT_FALSE(after.empty());
  auto now_listed = listed();
  EXPECT_TRUE(now_listed.count(before)) << "accepted before the failover";
  EXPECT_TRUE(now_listed.count(after)) << "accepted after the failover";
}

}  // namespace
}  // namespace morpheus::testing
