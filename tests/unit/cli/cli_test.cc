// morpheusctl's command tree (cli.h: the very code the binary runs) driven in
// process against the real RM services (RmCore, AppManager,
// ReservationManager, RmRuntime, ClientServiceImpl, ReservationServiceImpl,
// wired as src/rm/main.cc wires them, on SQLite in memory) and the real
// inference service (InferenceCore over SQLite, submitting accepted SLOs to
// that RM), both served on 127.0.0.1:0 in this process with bearer-token
// authentication. One virtual clock drives both, so the state is known to
// the millisecond; nodes and heartbeats are direct calls, no AM is launched
// (the runtime is not started).
//
// Checked: the tables (row by row, column by column) and --json output for
// that state, exit codes (0; 1 for a failed call; 2 for bad usage or input),
// and the errors: RM or inference unreachable, a refused token, bad
// arguments whose message names the flag or field as the user wrote it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.h"
#include "common/auth.h"
#include "common/config.h"
#include "common/wire.h"
#include "inference/service/inference_core.h"
#include "inference/service/service.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/core/rm_options.h"
#include "rm/grpc/client_service.h"
#include "rm/grpc/reservation_service.h"
#include "rm/runtime/runtime.h"
#include "store/provenance/provenance_store.h"
#include "store/state/state_store.h"
#include "test_paths.h"

namespace morpheus::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kMin = 60000, kHour = 60 * kMin, kDay = 24 * kHour;
// The clock of both services: day 400 since the epoch, 00:00 UTC.
const TimePoint kNow = fromEpochMs(400 * kDay);

// What one morpheusctl run printed and returned.
struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the command tree with argv[0] "morpheusctl" over `ctx`, its stdout and
// stderr (file descriptors 1 and 2: printf, iostreams and CLI11 alike)
// captured in files.
CliRun runCli(CliContext ctx, const std::vector<std::string>& args) {
  static int seq = 0;
  const fs::path dir = fs::temp_directory_path();
  const fs::path out_path = dir / ("cli-out-" + std::to_string(seq));
  const fs::path err_path = dir / ("cli-err-" + std::to_string(seq++));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  ::close(out_fd);
  ::close(err_fd);
  std::vector<const char*> argv{"morpheusctl"};
  for (const auto& a : args) argv.push_back(a.c_str());
  CliRun r;
  r.code = runMorpheusctl(static_cast<int>(argv.size()), argv.data(), ctx);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  r.out = readAll(out_path);
  r.err = readAll(err_path);
  fs::remove(out_path);
  fs::remove(err_path);
  return r;
}

std::string show(const CliRun& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout:\n" + r.out + "--- stderr:\n" + r.err;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A table row as its cells: the text between runs of two or more spaces
// (format.h: a cell never holds two spaces in a row).
std::vector<std::string> columns(const std::string& row) {
  std::vector<std::string> out;
  size_t i = row.find_first_not_of(' ');
  while (i != std::string::npos && i < row.size()) {
    size_t end = row.find("  ", i);
    out.push_back(row.substr(i, end == std::string::npos ? std::string::npos : end - i));
    if (end == std::string::npos) break;
    i = row.find_first_not_of(' ', end);
  }
  return out;
}

// The row of a table whose first column is `key` (empty when none).
std::vector<std::string> rowOf(const std::string& table, const std::string& key) {
  for (const auto& l : lines(table)) {
    auto c = columns(l);
    if (!c.empty() && c[0] == key) return c;
  }
  return {};
}

// Whether every row of a table starts each column at the same offset as its
// header does (aligned to the content, format.h).
bool aligned(const std::string& table) {
  auto ls = lines(table);
  if (ls.empty()) return false;
  std::vector<size_t> starts;  // where the header's cells start
  for (size_t i = 0; i < ls[0].size(); i++) {
    if (ls[0][i] != ' ' && (i == 0 || (i >= 2 && ls[0][i - 1] == ' ' && ls[0][i - 2] == ' '))) {
      starts.push_back(i);
    }
  }
  for (const auto& l : ls) {
    for (size_t k = 1; k < starts.size(); k++) {
      if (starts[k] >= l.size()) break;
      if (l[starts[k] - 1] != ' ' || l[starts[k]] == ' ') return false;
    }
  }
  return true;
}

json parseJson(const CliRun& r) {
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << show(r);
  return j;
}

// A port nothing listens on: bound, never listening (so no other process
// can take it while the test runs).
class DeadPort {
 public:
  DeadPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~DeadPort() { ::close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Bearer tokens of the RM and the inference service. "svc-token" is the
// inference service's own (an RM admin: it submits reservations for owners).
std::map<std::string, Principal> tokens() {
  return {{"alice-token", {"alice", false}},
          {"bob-token", {"bob", false}},
          {"root-token", {"root", true}},
          {"svc-token", {"inference", true}}};
}

// The RM as src/rm/main.cc wires it (queues root.a weight 3 and
// root.default), serving ClientService and ReservationService.
class InProcessRm {
 public:
  explicit InProcessRm(VirtualClock& clock) : clock_(clock) {
    ConfigSchema schema("morpheus-rm");
    rm::declareRmOptions(schema, &opts_);  // the daemon's defaults
    store_ = std::move(store::openStateStore("sqlite", ":memory:")).value();
    core_ = std::make_unique<rm::RmCore>(opts_, clock_, metrics_, "cli-test-secret");
    rm::ReservationManagerOptions rmo;
    rmo.reservable_queues = {"default"};
    reservations_ = std::make_unique<rm::ReservationManager>(
        rmo, std::move(planner::Planner::create(opts_.planner, Resource())).value(), *store_,
        clock_, metrics_);
    EXPECT_TRUE(reservations_->recover().isOk());
    core_->setCapacityListener([this](const Resource& live, bool allow_drop) {
      reservations_->onCapacity(live, allow_drop);
    });
    rm::AppManagerOptions amo;
    amo.queues = {"root.a", "root.default"};
    apps_ = std::make_unique<rm::AppManager>(
        amo, *store_, clock_, metrics_, core_->signer(),
        [this](const JobKey& k) { return rm::bindTargets(*reservations_, k); },
        [this](const ReservationId& r) { return rm::bindTarget(*reservations_, r); });
    EXPECT_TRUE(apps_->recover().isOk());
    rm::RuntimeOptions rto;
    rto.telemetry_step = opts_.planner.step;
    rto.queue_weights = {{"root.a", 3}, {"root.default", 1}};
    runtime_ = std::make_unique<rm::RmRuntime>(
        rto, *core_, *apps_, clock_, metrics_, nullptr,
        [this](const ReservationId& r) { return reservations_->isPeriodic(r); },
        [this](const ReservationId& r, TimePoint t) { return reservations_->guaranteedAt(r, t); });
    core_->setNodeLostListener(
        [this](const NodeId& n, const std::string& why) { runtime_->onNodeLost(n, why); });
    runtime_->setStore(store_.get());
    client_ = std::make_unique<rm::ClientServiceImpl>(*core_, access_, apps_.get(), runtime_.get());
    client_->setQueueSources(reservations_.get(), &clock_);
    reservation_service_ = std::make_unique<rm::ReservationServiceImpl>(*reservations_, access_);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(client_.get());
    b.RegisterService(reservation_service_.get());
    server_ = b.BuildAndStart();
    EXPECT_GT(port_, 0);
  }
  ~InProcessRm() {
    server_->Shutdown();
    core_->setNodeLostListener(nullptr);
    core_->setCapacityListener(nullptr);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Registers a node with the core and the runtime, as the NM's RegisterNode does.
  void addNode(const std::string& id, int vcores, std::map<std::string, std::string> attrs = {}) {
    rm::NodeInfo info;
    info.id = NodeId(id);
    info.total = Resource(1024 * vcores, vcores);
    info.container_manager_address = "127.0.0.1:1";
    info.attributes = attrs;
    ASSERT_TRUE(core_->registerNode(info).isOk());
    runtime_->onNodeRegistered(
        {info.id, info.container_manager_address, info.http_address, info.total, attrs});
  }
  // One NM heartbeat: liveness and usage to the core, then the runtime's
  // scheduling (places AM containers of submitted apps).
  void heartbeat(const std::string& id, const Resource& used = Resource(), int containers = 0) {
    ASSERT_TRUE(core_->nodeHeartbeat(NodeId(id), ++seq_, used, 0, 0, containers).isOk());
    rm::NodeHeartbeatCall call;
    call.node = NodeId(id);
    runtime_->onNodeHeartbeat(std::move(call));
  }
  rm::RmCore& core() { return *core_; }
  rm::AppManager& apps() { return *apps_; }
  // The container id the runtime gives attempt `attempt` of `app`'s AM.
  std::string amContainer(const std::string& app, int attempt) const {
    return app + "_" + std::to_string(toEpochMs(kNow)) + "_am" + std::to_string(attempt);
  }

 private:
  VirtualClock& clock_;
  MetricsRegistry metrics_;
  rm::RmOptions opts_;
  const Authenticator auth_{tokens(), /*open=*/false};
  const rm::RmAccess access_{auth_, {}, rm::QueueAcls()};
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<rm::RmCore> core_;
  std::unique_ptr<rm::ReservationManager> reservations_;
  std::unique_ptr<rm::AppManager> apps_;
  std::unique_ptr<rm::RmRuntime> runtime_;
  std::unique_ptr<rm::ClientServiceImpl> client_;
  std::unique_ptr<rm::ReservationServiceImpl> reservation_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int64_t seq_ = 0;
};

// morpheus-inference as src/inference/main.cc wires it (default options),
// submitting accepted SLOs to `rm_address` with the service's admin token.
class InProcessInference {
 public:
  InProcessInference(VirtualClock& clock, const std::string& rm_address)
      : rm_(rm_address, TlsOptions(), "svc-token") {
    path_ = (fs::temp_directory_path() / "provenance.db").string();
    store_ = std::move(store::openProvenanceStore("sqlite", path_)).value();
    core_ = std::make_unique<inference::InferenceCore>(opts_, *store_, rm_, clock, metrics_);
    service_ = std::make_unique<inference::InferenceServiceImpl>(*core_, auth_, opts_);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    EXPECT_GT(port_, 0);
  }
  ~InProcessInference() {
    server_->Shutdown();
    service_.reset();
    core_.reset();
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) fs::remove(path_ + suffix);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::string path_;
  inference::InferenceCoreOptions opts_;
  MetricsRegistry metrics_;
  inference::RmReservationClient rm_;
  const Authenticator auth_{tokens(), /*open=*/false};
  std::unique_ptr<store::ProvenanceStore> store_;
  std::unique_ptr<inference::InferenceCore> core_;
  std::unique_ptr<inference::InferenceServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The services log through spdlog to stdout, which the runs capture.
    spdlog::set_level(spdlog::level::off);
  }
  void SetUp() override {
    rm_ = std::make_unique<InProcessRm>(clock_);
    inference_ = std::make_unique<InProcessInference>(clock_, rm_->address());
    // `app submit` needs an executable morpheus-dag-am; it is never started here.
    dag_am_ = write("morpheus-dag-am", "#!/bin/sh\nexit 0\n");
    ::chmod(dag_am_.c_str(), 0755);
    ::setenv("MORPHEUS_DAG_AM", dag_am_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("MORPHEUS_DAG_AM");
    inference_.reset();
    rm_.reset();
  }
  // A run as `token`'s user (--token; "" = none), as main() would start it
  // with MORPHEUS_RM and MORPHEUS_INFERENCE set.
  CliRun ctl(const std::vector<std::string>& args, const std::string& token = "alice-token") {
    CliContext ctx;
    ctx.rm_address = rm_->address();
    ctx.rm_http_address = "127.0.0.1:1";
    ctx.inference_address = inference_->address();
    ctx.clock = &clock_;
    std::vector<std::string> all;
    if (!token.empty()) all = {"--token", token};
    all.insert(all.end(), args.begin(), args.end());
    return runCli(ctx, all);
  }
  std::string write(const std::string& name, const std::string& text) {
    fs::path p = fs::temp_directory_path() / name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), 0600);
    return p.string();
  }
  std::string jobFile() {
    return write("etl.yaml",
                 "name: etl\n"
                 "stages:\n"
                 "  - name: extract\n"
                 "    tasks: 2\n"
                 "    command: \"true\"\n");
  }
  // Submits the job as alice to `queue`; returns the application id.
  std::string submitApp(const std::string& queue = "root.a") {
    CliRun r = ctl({"app", "submit", jobFile(), "--queue", queue});
    EXPECT_EQ(r.code, 0) << show(r);
    auto l = lines(r.out);
    EXPECT_EQ(l.size(), 1u) << show(r);
    return l.empty() ? "" : l[0];
  }
  // A YARN reservation document: 2 containers of 1 GiB / 1 vcore for one
  // hour, in the window [now + 1 h, now + 4 h).
  std::string reservationFile(const std::string& id, int containers = 2) {
    json def = {
        {"arrival", toEpochMs(kNow) + kHour},
        {"deadline", toEpochMs(kNow) + 4 * kHour},
        {"reservation-name", "nightly"},
        {"reservation-requests",
         {{"reservation-request-interpreter", 1},
          {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                {"num-containers", containers},
                                                {"min-concurrency", 1},
                                                {"duration", kHour}}})}}}};
    json doc = {{"queue", "default"}, {"reservation-definition", def}};
    if (!id.empty()) doc["reservation-id"] = id;
    return write("reservation-" + id + "-" + std::to_string(containers) + ".json", doc.dump());
  }

  VirtualClock clock_{kNow};
  std::unique_ptr<InProcessRm> rm_;
  std::unique_ptr<InProcessInference> inference_;
  std::string dag_am_;
};

// cluster status: one live node with usage and an attribute, one lost
// (listed only with --include-lost), as a table and as JSON.
TEST_F(CliTest, ClusterStatusTableAndJson) {
  rm_->addNode("n1", 8, {{"zone", "a"}});
  rm_->addNode("n2", 4);
  clock_.advance(Millis(11000));  // past rm.node-expiry (10 s) for n2
  rm_->heartbeat("n1", Resource(2048, 2), 2);
  rm_->core().checkLiveness();
  clock_.advance(Millis(3000));

  CliRun t = ctl({"cluster", "status"});
  ASSERT_EQ(t.code, 0) << show(t);
  auto l = lines(t.out);
  ASSERT_EQ(l.size(), 3u) << show(t);
  EXPECT_EQ(l[0], "RM " + rm_->address() +
                      ": 1 live node(s), 1 lost; capacity 8 GiB / 8 vcores; used 2 GiB / 2 vcores");
  EXPECT_EQ(columns(l[1]),
            (std::vector<std::string>{"NODE", "STATE", "USED", "TOTAL", "CONTAINERS",
                                      "HARVEST CLASS", "LAST HEARTBEAT", "ATTRIBUTES"}));
  EXPECT_EQ(columns(l[2]),
            (std::vector<std::string>{"n1", "RUNNING", "2 GiB / 2 vcores", "8 GiB / 8 vcores", "2",
                                      "-", "3s ago", "zone=a"}));
  EXPECT_TRUE(aligned(t.out)) << t.out;
  EXPECT_TRUE(t.err.empty()) << show(t);

  CliRun j = ctl({"cluster", "status", "--include-lost", "--json"});
  ASSERT_EQ(j.code, 0) << show(j);
  json s = parseJson(j);
  EXPECT_EQ(s["rm"], rm_->address());
  EXPECT_EQ(s["live_nodes"], 1);
  EXPECT_EQ(s["lost_nodes"], 1);
  EXPECT_EQ(s["capacity"], json({{"memory_mib", 8192}, {"vcores", 8}}));
  EXPECT_EQ(s["used"], json({{"memory_mib", 2048}, {"vcores", 2}}));
  ASSERT_EQ(s["nodes"].size(), 2u) << s.dump(2);
  std::map<std::string, json> by_id;
  for (const auto& n : s["nodes"]) by_id[n["node_id"]] = n;
  EXPECT_EQ(by_id["n1"]["state"], "RUNNING");
  EXPECT_EQ(by_id["n1"]["containers"], 2);
  EXPECT_EQ(by_id["n1"]["attributes"], json({{"zone", "a"}}));
  EXPECT_EQ(by_id["n1"]["total"], json({{"memory_mib", 8192}, {"vcores", 8}}));
  EXPECT_EQ(by_id["n1"]["last_heartbeat_ms"], toEpochMs(kNow) + 11000);
  EXPECT_EQ(by_id["n1"]["last_heartbeat_time"], "1971-02-05T00:00:11Z");
  EXPECT_EQ(by_id["n2"]["state"], "LOST");
  EXPECT_EQ(by_id["n2"]["total"], json({{"memory_mib", 4096}, {"vcores", 4}}));
  EXPECT_EQ(s["harvest_classes"], json::array());
}

// app submit / status / list / kill through the RM: the submitted app waits
// for its AM, runs once a heartbeat placed it, and ends KILLED with the
// reason; another user may not kill it.
TEST_F(CliTest, AppSubmitStatusListAndKill) {
  rm_->addNode("n1", 8);
  const std::string id = submitApp();
  ASSERT_FALSE(id.empty());

  CliRun s = ctl({"app", "status", id, "--json"});
  ASSERT_EQ(s.code, 0) << show(s);
  ASSERT_EQ(parseJson(s)["applications"].size(), 1u) << s.out;
  json a = parseJson(s)["applications"][0];
  EXPECT_EQ(a["application_id"], id);
  EXPECT_EQ(a["name"], "etl");
  EXPECT_EQ(a["user"], "alice");
  EXPECT_EQ(a["queue"], "root.a");
  EXPECT_EQ(a["state"], "ACCEPTED");  // the REST API's name
  EXPECT_EQ(a["submit_ms"], toEpochMs(kNow));
  EXPECT_EQ(a["submit_time"], "1971-02-05T00:00:00Z");
  EXPECT_EQ(a["finish_ms"], 0);
  EXPECT_EQ(a["finish_time"], nullptr);
  EXPECT_EQ(a["am_attempt"], 0);
  EXPECT_EQ(a["running_containers"], 0);

  rm_->heartbeat("n1");  // places the AM (256 MiB, 1 vcore)
  const std::string am = rm_->amContainer(id, 1);
  CliRun t = ctl({"app", "status", id});
  ASSERT_EQ(t.code, 0) << show(t);
  EXPECT_EQ(t.out, "Application:   " + id +
                       "\n"
                       "Name:          etl\n"
                       "User:          alice\n"
                       "Queue:         root.a\n"
                       "State:         RUNNING\n"
                       "Progress:      0%\n"
                       "Submitted:     1971-02-05T00:00:00Z\n"
                       "Started:       1971-02-05T00:00:00Z\n"
                       "Finished:      -\n"
                       "Used:          256 MiB / 1 vcore in 1 container(s)\n"
                       "AM:            attempt 1, container " +
                       am +
                       " on node n1\n"
                       "Usage:         0 MiB-s, 0 vcore-s\n");

  const std::string other = submitApp("root.default");  // waits: no heartbeat since
  CliRun l = ctl({"app", "list"});
  ASSERT_EQ(l.code, 0) << show(l);
  ASSERT_EQ(lines(l.out).size(), 3u) << show(l);
  EXPECT_EQ(columns(lines(l.out)[0]),
            (std::vector<std::string>{"APPLICATION", "NAME", "USER", "QUEUE", "STATE", "PROGRESS",
                                      "CONTAINERS", "USED", "SUBMITTED", "WAITING"}));
  EXPECT_EQ(rowOf(l.out, id),
            (std::vector<std::string>{id, "etl", "alice", "root.a", "RUNNING", "0%", "1",
                                      "256 MiB / 1 vcore", "1971-02-05T00:00:00Z", "-"}));
  EXPECT_EQ(rowOf(l.out, other),
            (std::vector<std::string>{other, "etl", "alice", "root.default", "ACCEPTED", "0%", "0",
                                      "0 MiB / 0 vcores", "1971-02-05T00:00:00Z", "-"}));
  EXPECT_TRUE(aligned(l.out)) << l.out;

  CliRun running = ctl({"app", "list", "--state", "running", "--json"});
  ASSERT_EQ(running.code, 0) << show(running);
  json ra = parseJson(running)["applications"];
  ASSERT_EQ(ra.size(), 1u) << ra.dump(2);
  EXPECT_EQ(ra[0]["application_id"], id);
  EXPECT_EQ(ra[0]["am_node_id"], "n1");
  EXPECT_EQ(ra[0]["am_container_id"], am);
  EXPECT_EQ(ra[0]["used"], json({{"memory_mib", 256}, {"vcores", 1}}));
  CliRun in_default = ctl({"app", "list", "--queue", "root.default", "--json"});
  ASSERT_EQ(in_default.code, 0) << show(in_default);
  ASSERT_EQ(parseJson(in_default)["applications"].size(), 1u);
  EXPECT_EQ(parseJson(in_default)["applications"][0]["application_id"], other);

  // Bob is neither the owner nor an admin: refused, nothing changes.
  CliRun bob = ctl({"app", "kill", id}, "bob-token");
  EXPECT_EQ(bob.code, 1) << show(bob);
  EXPECT_TRUE(bob.out.empty()) << show(bob);
  EXPECT_EQ(bob.err.rfind("morpheusctl: PERMISSION_DENIED: RM at " + rm_->address() + ": ", 0), 0u)
      << show(bob);
  EXPECT_NE(bob.err.find("bob"), std::string::npos) << show(bob);
  EXPECT_EQ(rm_->apps().get(AppId(id))->state, rm::AppState::kRunning);

  CliRun k = ctl({"app", "kill", id, "--reason", "rerun tomorrow"});
  ASSERT_EQ(k.code, 0) << show(k);
  EXPECT_EQ(k.out, "kill requested for " + id + "\n");
  json killed = parseJson(ctl({"app", "status", id, "--json"}))["applications"][0];
  EXPECT_EQ(killed["state"], "KILLED");
  EXPECT_NE(killed["diagnostics"].get<std::string>().find("rerun tomorrow"), std::string::npos)
      << killed.dump(2);
  CliRun finals = ctl({"app", "list", "--state", "KILLED", "--state", "FAILED", "--json"});
  ASSERT_EQ(finals.code, 0) << show(finals);
  ASSERT_EQ(parseJson(finals)["applications"].size(), 1u);
  EXPECT_EQ(parseJson(finals)["applications"][0]["application_id"], id);

  // submit and kill --json: the application's record, in the one shape.
  const std::string third = submitApp("root.default");
  CliRun kj = ctl({"app", "kill", third, "--json"});
  ASSERT_EQ(kj.code, 0) << show(kj);
  ASSERT_EQ(parseJson(kj)["applications"].size(), 1u) << kj.out;
  EXPECT_EQ(parseJson(kj)["applications"][0]["application_id"], third);
  EXPECT_EQ(parseJson(kj)["applications"][0]["state"], "KILLED");
  CliRun sj = ctl({"app", "submit", jobFile(), "--queue", "root.a", "--json"});
  ASSERT_EQ(sj.code, 0) << show(sj);
  json submitted = parseJson(sj)["applications"];
  ASSERT_EQ(submitted.size(), 1u) << sj.out;
  EXPECT_EQ(submitted[0]["state"], "ACCEPTED");
  EXPECT_EQ(submitted[0]["user"], "alice");
  EXPECT_EQ(submitted[0]["application_id"].get<std::string>().rfind("application_", 0), 0u);

  CliRun missing = ctl({"app", "status", "application_0_0"});
  EXPECT_EQ(missing.code, 1) << show(missing);
  EXPECT_EQ(missing.err.rfind("morpheusctl: NOT_FOUND: RM at " + rm_->address() + ": ", 0), 0u)
      << show(missing);
}

// The ids of an `app list --json`, in order.
std::vector<std::string> appIds(const CliRun& r) {
  std::vector<std::string> out;
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("applications")) return {"(not a listing: " + r.err + ")"};
  for (const auto& a : j["applications"]) out.push_back(a["application_id"]);
  return out;
}

// app list's filters: states in any case (repeated or comma-separated, the
// REST API's names), --user, --since (a duration or a time), --limit (the
// most recent); oldest first.
TEST_F(CliTest, AppListFiltersByStateUserSinceAndLimit) {
  rm_->addNode("n1", 8);
  const std::string a1 = submitApp();  // alice at 00:00
  clock_.advance(Millis(kHour));
  CliRun b = ctl({"app", "submit", jobFile(), "--queue", "root.a"}, "bob-token");
  ASSERT_EQ(b.code, 0) << show(b);
  const std::string b1 = lines(b.out).at(0);  // bob at 01:00
  clock_.advance(Millis(kHour));
  const std::string a2 = submitApp();  // alice at 02:00
  ASSERT_EQ(ctl({"app", "kill", a1}).code, 0);

  using Ids = std::vector<std::string>;
  EXPECT_EQ(appIds(ctl({"app", "list", "--json"})), (Ids{a1, b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--state", "accepted", "--json"})), (Ids{b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--state", "Killed,ACCEPTED", "--json"})),
            (Ids{a1, b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--state", "submitted", "--json"})), (Ids{b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--user", "alice", "--json"})), (Ids{a1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--user", "bob", "--json"})), (Ids{b1}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--since", "90m", "--json"})), (Ids{b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--since", "30m", "--json"})), (Ids{a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--since", "1971-02-05T01:00:00Z", "--json"})),
            (Ids{b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--limit", "2", "--json"})), (Ids{b1, a2}));
  EXPECT_EQ(appIds(ctl({"app", "list", "--limit", "1", "--user", "alice", "--json"})), (Ids{a2}));
  CliRun t = ctl({"app", "list", "--state", "KILLED"});
  ASSERT_EQ(t.code, 0) << show(t);
  ASSERT_EQ(lines(t.out).size(), 2u) << t.out;
  EXPECT_EQ(rowOf(t.out, a1).at(4), "KILLED") << t.out;
}

// queue list: the ad-hoc leaves with their weights and what runs in them.
TEST_F(CliTest, QueueListTableAndJson) {
  rm_->addNode("n1", 8);
  submitApp("root.a");
  rm_->heartbeat("n1");
  submitApp("root.a");  // waits for its AM

  CliRun j = ctl({"queue", "list", "--json"});
  ASSERT_EQ(j.code, 0) << show(j);
  const json listed = parseJson(j);
  std::map<std::string, json> by_name;
  for (const auto& q : listed["queues"]) by_name[q["name"]] = q;
  ASSERT_TRUE(by_name.count("root.a")) << j.out;
  ASSERT_TRUE(by_name.count("root.default")) << j.out;
  const json& a = by_name["root.a"];
  EXPECT_DOUBLE_EQ(a["weight"].get<double>(), 3.0);
  EXPECT_EQ(a["used"], json({{"memory_mib", 256}, {"vcores", 1}}));
  EXPECT_EQ(a["running_apps"], 1);
  EXPECT_EQ(a["pending_apps"], 1);
  EXPECT_DOUBLE_EQ(by_name["root.default"]["weight"].get<double>(), 1.0);
  EXPECT_EQ(by_name["root.default"]["used"], json({{"memory_mib", 0}, {"vcores", 0}}));
  EXPECT_EQ(by_name["root.default"]["running_apps"], 0);

  CliRun t = ctl({"queue", "list"});
  ASSERT_EQ(t.code, 0) << show(t);
  EXPECT_EQ(columns(lines(t.out)[0]),
            (std::vector<std::string>{"QUEUE", "KIND", "WEIGHT", "GUARANTEED", "USED", "PENDING",
                                      "RUNNING", "WAITING"}));
  auto row = rowOf(t.out, "root.a");
  ASSERT_EQ(row.size(), 8u) << t.out;
  EXPECT_EQ(row[1], a["kind"]);
  EXPECT_EQ(row[2], "3.00");
  EXPECT_EQ(row[4], "256 MiB / 1 vcore");
  EXPECT_EQ(row[5], "0 MiB / 0 vcores");
  EXPECT_EQ(row[6], "1");
  EXPECT_EQ(row[7], "1");
  EXPECT_TRUE(aligned(t.out)) << t.out;
}

// reservation new / submit / list / show / delete and plan show: the
// accepted reservation is in the plan at its allocation, and gone after the
// delete.
TEST_F(CliTest, ReservationLifecycleAndPlan) {
  rm_->addNode("n1", 8);
  CliRun n = ctl({"reservation", "new", "--json"});
  ASSERT_EQ(n.code, 0) << show(n);
  const std::string id = parseJson(n)["reservations"][0]["reservation_id"];
  ASSERT_FALSE(id.empty());

  CliRun s = ctl({"reservation", "submit", "--file", reservationFile(id), "--json"});
  ASSERT_EQ(s.code, 0) << show(s);
  ASSERT_EQ(parseJson(s)["reservations"].size(), 1u) << s.out;
  json placed = parseJson(s)["reservations"][0];
  EXPECT_EQ(placed["reservation_id"], id);
  ASSERT_FALSE(placed["allocations"].empty()) << placed.dump(2);
  int64_t alloc_start = INT64_MAX, alloc_end = 0;
  for (const auto& al : placed["allocations"]) {
    alloc_start = std::min(alloc_start, al["start_ms"].get<int64_t>());
    alloc_end = std::max(alloc_end, al["end_ms"].get<int64_t>());
    EXPECT_EQ(al["start_time"], formatTime(al["start_ms"].get<int64_t>()));
  }
  EXPECT_GE(alloc_start, toEpochMs(kNow) + kHour);
  EXPECT_LE(alloc_end, toEpochMs(kNow) + 4 * kHour);

  CliRun l = ctl({"reservation", "list"});
  ASSERT_EQ(l.code, 0) << show(l);
  EXPECT_EQ(columns(lines(l.out)[0]),
            (std::vector<std::string>{"RESERVATION", "USER", "QUEUE", "PERIOD", "ARRIVAL",
                                      "DEADLINE", "STATUS"}));
  auto row = rowOf(l.out, id);
  ASSERT_EQ(row.size(), 7u) << l.out;
  EXPECT_EQ(row[1], "alice");
  EXPECT_EQ(row[2], "default");
  EXPECT_EQ(row[3], "one-off");
  EXPECT_EQ(row[4], "1971-02-05T01:00:00Z");
  EXPECT_EQ(row[5], "1971-02-05T04:00:00Z");
  EXPECT_TRUE(aligned(l.out)) << l.out;

  CliRun sh = ctl({"reservation", "show", id});
  ASSERT_EQ(sh.code, 0) << show(sh);
  auto sl = lines(sh.out);
  ASSERT_GE(sl.size(), 6u) << show(sh);
  EXPECT_EQ(sl[0], "reservation " + id + " (nightly)");
  EXPECT_EQ(sl[2], "  window 1971-02-05T01:00:00Z .. 1971-02-05T04:00:00Z, one-off, 1 stage(s)");
  EXPECT_EQ(sl[3], "  stage 0: 2 container(s) of 1 GiB / 1 vcore for 1h each, in gangs of 1");
  EXPECT_EQ(sl[4], "  allocations (current instance):");
  EXPECT_EQ(columns(sl[5]), (std::vector<std::string>{"START", "END", "ALLOCATED"}));
  CliRun shj = ctl({"reservation", "show", id, "--json"});
  ASSERT_EQ(shj.code, 0) << show(shj);
  json listed = parseJson(shj)["reservations"];
  ASSERT_EQ(listed.size(), 1u) << shj.out;
  EXPECT_EQ(listed[0]["reservation_id"], id);
  EXPECT_EQ(listed[0]["user"], "alice");
  EXPECT_EQ(listed[0]["definition"]["arrival_time"], "1971-02-05T01:00:00Z");
  EXPECT_EQ(listed[0]["definition"]["stages"][0],
            json({{"capability", {{"memory_mib", 1024}, {"vcores", 1}}},
                  {"num_containers", 2},
                  {"min_concurrency", 1},
                  {"duration_ms", kHour}}));
  EXPECT_EQ(listed[0]["allocations"], placed["allocations"]);

  // Every plan step of the six hours holds exactly the allocations that
  // cover it, as one-off load: two container-hours in all.
  CliRun p = ctl({"plan", "show", "--from", "now", "--to", "now+6h", "--json"});
  ASSERT_EQ(p.code, 0) << show(p);
  json plan = parseJson(p);
  EXPECT_EQ(plan["reservation_count"], 1);
  EXPECT_EQ(plan["step_ms"], kMin);
  EXPECT_EQ(plan["capacity"], json({{"memory_mib", 8192}, {"vcores", 8}}));
  ASSERT_EQ(plan["steps"].size(), 360u) << plan.dump();
  int64_t vcore_steps = 0;
  for (const auto& st : plan["steps"]) {
    const int64_t t = st["start_ms"];
    int64_t mem = 0, vcores = 0;
    for (const auto& al : placed["allocations"]) {
      if (al["start_ms"].get<int64_t>() <= t && t < al["end_ms"].get<int64_t>()) {
        mem += al["resource"]["memory_mib"].get<int64_t>();
        vcores += al["resource"]["vcores"].get<int64_t>();
      }
    }
    EXPECT_EQ(st["one_off"], json({{"memory_mib", mem}, {"vcores", vcores}})) << st.dump();
    EXPECT_EQ(st["periodic"], json({{"memory_mib", 0}, {"vcores", 0}})) << st.dump();
    vcore_steps += st["one_off"]["vcores"].get<int64_t>();
  }
  EXPECT_EQ(vcore_steps, 2 * 60) << "2 containers for an hour, in 1 min steps";
  CliRun chart =
      ctl({"plan", "show", "--from", "1971-02-05T00:00:00Z", "--to", "+6h", "--width", "36"});
  ASSERT_EQ(chart.code, 0) << show(chart);
  EXPECT_EQ(lines(chart.out)[0],
            "plan 1971-02-05T00:00:00Z .. 1971-02-05T06:00:00Z, step 1m, 1 reservation(s)");
  EXPECT_NE(chart.out.find('+'), std::string::npos) << chart.out;  // the one-off load

  CliRun bob = ctl({"reservation", "delete", id}, "bob-token");
  EXPECT_EQ(bob.code, 1) << show(bob);
  EXPECT_NE(bob.err.find("PERMISSION_DENIED"), std::string::npos) << show(bob);
  CliRun d = ctl({"reservation", "delete", id});
  ASSERT_EQ(d.code, 0) << show(d);
  EXPECT_EQ(d.out, "reservation " + id + " deleted\n");
  CliRun gone = ctl({"reservation", "show", id});
  EXPECT_EQ(gone.code, 1) << show(gone);
  EXPECT_EQ(gone.err, "morpheusctl: NOT_FOUND: RM at " + rm_->address() + ": reservation " + id +
                          " does not exist\n");
  CliRun empty = ctl({"reservation", "list", "--json"});
  ASSERT_EQ(empty.code, 0) << show(empty);
  EXPECT_TRUE(parseJson(empty)["reservations"].empty()) << empty.out;
}

// reservation create: a reservation from flags with times and sizes as people
// type them; its allocations, the refusals of bad flags (nothing created) and
// the RM's explanation of an infeasible one all in ISO-8601 times.
TEST_F(CliTest, ReservationCreateFromFlags) {
  rm_->addNode("n1", 8);  // 8 GiB / 8 vcores
  CliRun c = ctl({"reservation", "create",  "--queue",      "default", "--start",  "now+1h",
                  "--deadline",  "now+3h",  "--containers", "4",       "--memory", "1GiB",
                  "--vcores",    "1",       "--duration",   "10m",     "--gang",   "2",
                  "--name",      "nightly", "--json"});
  ASSERT_EQ(c.code, 0) << show(c);
  json placed = parseJson(c)["reservations"].at(0);
  const std::string id = placed["reservation_id"];
  ASSERT_FALSE(placed["allocations"].empty()) << c.out;
  for (const auto& al : placed["allocations"]) {
    EXPECT_GE(al["start_ms"].get<int64_t>(), toEpochMs(kNow) + kHour) << al.dump();
    EXPECT_LE(al["end_ms"].get<int64_t>(), toEpochMs(kNow) + 3 * kHour) << al.dump();
  }
  json r = parseJson(ctl({"reservation", "show", id, "--json"}))["reservations"].at(0);
  EXPECT_EQ(r["queue"], "default");
  EXPECT_EQ(r["user"], "alice");
  EXPECT_EQ(r["definition"]["name"], "nightly");
  EXPECT_EQ(r["definition"]["arrival_time"], "1971-02-05T01:00:00Z");
  EXPECT_EQ(r["definition"]["deadline_time"], "1971-02-05T03:00:00Z");
  EXPECT_EQ(r["definition"]["period_ms"], 0);
  EXPECT_EQ(r["definition"]["stages"],
            json::array({{{"capability", {{"memory_mib", 1024}, {"vcores", 1}}},
                          {"num_containers", 4},
                          {"min_concurrency", 2},
                          {"duration_ms", 10 * kMin}}}));
  // Its queue has a guarantee, not a weight: the table prints none.
  auto qrow = rowOf(ctl({"queue", "list"}).out, id);
  ASSERT_EQ(qrow.size(), 8u) << id;
  EXPECT_EQ(qrow[1], "reservation-oneoff");
  EXPECT_EQ(qrow[2], "-");

  // Recurring, ISO times, MiB and a compound duration; the text output.
  CliRun daily = ctl({"reservation", "create", "--start", "1971-02-05T06:00:00Z", "--deadline",
                      "1971-02-05T08:30:00Z", "--containers", "2", "--memory", "512MiB",
                      "--duration", "1h30m", "--every", "1d", "--recurrence-key", "etl"});
  ASSERT_EQ(daily.code, 0) << show(daily);
  auto dl = lines(daily.out);
  ASSERT_GE(dl.size(), 3u) << daily.out;
  std::string did;
  std::istringstream(dl[0]).ignore(12) >> did;  // after "reservation "
  EXPECT_EQ(dl[0], "reservation " + did + " accepted");
  EXPECT_EQ(columns(dl[1]), (std::vector<std::string>{"START", "END", "ALLOCATED"}));
  EXPECT_EQ(columns(dl[2]).size(), 3u) << daily.out;
  EXPECT_NE(dl[2].find(" MiB / "), std::string::npos) << daily.out;
  CliRun sh = ctl({"reservation", "show", did});
  ASSERT_EQ(sh.code, 0) << show(sh);
  EXPECT_EQ(lines(sh.out).at(2),
            "  window 1971-02-05T06:00:00Z .. 1971-02-05T08:30:00Z, every 1d, 1 stage(s), "
            "recurrence key etl");
  EXPECT_EQ(lines(sh.out).at(3),
            "  stage 0: 2 container(s) of 512 MiB / 1 vcore for 1h30m each, in gangs of 1");

  // Bad flags: exit 2 naming the flag, nothing created.
  const std::vector<std::string> base = {"reservation",  "create", "--deadline", "now+3h",
                                         "--containers", "4",      "--memory",   "1GiB",
                                         "--duration",   "10m"};
  struct Bad {
    std::vector<std::string> extra;
    std::string err;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"--memory", "1GB"},
            "morpheusctl: --memory: unknown size unit 'GB' (use MiB, GiB or "
            "TiB)\n"},
           {{"--memory", "0.3MiB"},
            "morpheusctl: --memory: '0.3MiB' is not a whole number of MiB\n"},
           {{"--start", "tomorrow"},
            "morpheusctl: --start: 'tomorrow' is not a time: use ISO-8601 "
            "UTC (2026-12-01T10:00:00Z), now, now+DURATION or "
            "now-DURATION (DURATION like 90s, 10m, 1h30m, 1d)\n"},
           {{"--start", "1971-02-30T00:00:00Z"},
            "morpheusctl: --start: '1971-02-30T00:00:00Z' is "
            "not a time"},
           {{"--start", "now+4h"},
            "morpheusctl: --deadline: 1971-02-05T03:00:00Z is not after "
            "--start 1971-02-05T04:00:00Z\n"},
           {{"--duration", "0s"}, "morpheusctl: --duration: '0s' must be more than 0\n"},
           {{"--duration", "ten"}, "morpheusctl: --duration: 'ten' is not a duration"},
           {{"--gang", "5"}, "morpheusctl: --gang: must be between 1 and --containers (4)\n"},
       }) {
    std::vector<std::string> args = base;
    args.insert(args.end(), b.extra.begin(), b.extra.end());
    CliRun bad = ctl(args);
    EXPECT_EQ(bad.code, 2) << b.extra[1] << "\n" << show(bad);
    EXPECT_EQ(bad.err.rfind(b.err, 0), 0u) << b.extra[1] << "\n" << show(bad);
  }
  EXPECT_EQ(parseJson(ctl({"reservation", "list", "--json"}))["reservations"].size(), 2u);

  // The whole node for [02:00, 03:00), then a gang of the whole node for
  // 30 minutes by 03:00: refused with the saturated steps and the earliest
  // feasible deadline as times, never ms since the epoch.
  ASSERT_EQ(ctl({"reservation", "create", "--start", "now+2h", "--deadline", "now+3h",
                 "--containers", "8", "--memory", "1GiB", "--duration", "1h", "--gang", "8"})
                .code,
            0);
  CliRun no = ctl({"reservation", "create", "--start", "now+2h", "--deadline", "now+3h",
                   "--containers", "8", "--memory", "1GiB", "--duration", "30m", "--gang", "8"});
  EXPECT_EQ(no.code, 1) << show(no);
  EXPECT_EQ(no.err.rfind("morpheusctl: FAILED_PRECONDITION: RM at " + rm_->address() + ": ", 0), 0u)
      << show(no);
  EXPECT_NE(no.err.find("saturated steps: [1971-02-05T02:00:00Z, 1971-02-05T03:00:00Z)"),
            std::string::npos)
      << show(no);
  EXPECT_NE(no.err.find("earliest feasible deadline with the same arrival: 1971-02-05T03:30:00Z"),
            std::string::npos)
      << show(no);
  for (size_t i = 0, run = 0; i < no.err.size(); i++) {
    run = std::isdigit(static_cast<unsigned char>(no.err[i])) ? run + 1 : 0;
    ASSERT_LT(run, 10u) << "a raw epoch-ms number in: " << no.err;
  }
}

// The RM's refusal of a reservation file names the field as the file spells
// it (YARN JSON, as the REST edge reports it), not the wire API's name.
TEST_F(CliTest, RefusedReservationNamesTheFileField) {
  rm_->addNode("n1", 8);
  const std::string field =
      "reservation-definition.reservation-requests.reservation-request[0].num-containers: ";
  CliRun r = ctl({"reservation", "submit", "--file", reservationFile("", 0)});
  EXPECT_EQ(r.code, 2) << show(r);
  EXPECT_NE(r.err.find(field), std::string::npos) << show(r);
  EXPECT_EQ(r.err.find("definition.stages"), std::string::npos) << show(r);

  // The same for an update, which leaves the reservation as it was.
  CliRun n = ctl({"reservation", "new"});
  ASSERT_EQ(n.code, 0) << show(n);
  const std::string id = lines(n.out).at(0);
  ASSERT_EQ(ctl({"reservation", "submit", "--file", reservationFile(id)}).code, 0);
  CliRun u = ctl({"reservation", "update", "--file", reservationFile(id, 0)});
  EXPECT_EQ(u.code, 2) << show(u);
  EXPECT_NE(u.err.find(field), std::string::npos) << show(u);
  json shown = parseJson(ctl({"reservation", "show", id, "--json"}));
  EXPECT_EQ(shown["reservations"][0]["definition"]["stages"][0]["num_containers"], 2)
      << shown.dump(2);
}

// Seconds since `t0` on the steady clock.
double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// An RM that is down or misnamed: one line within --timeout (default 2 s)
// saying which address failed, why, and how to name another; exit 1, nothing
// on stdout, no gRPC or resolver wording.
TEST_F(CliTest, RmUnreachableSaysWhereAndHowToChoose) {
  DeadPort dead;
  CliContext ctx;
  ctx.rm_address = "127.0.0.1:1";  // --rm overrides it
  auto t0 = std::chrono::steady_clock::now();
  CliRun r = runCli(ctx, {"--rm", dead.address(), "--token", "alice-token", "cluster", "status"});
  const double took = secondsSince(t0);
  EXPECT_EQ(r.code, 1) << show(r);
  EXPECT_TRUE(r.out.empty()) << show(r);
  EXPECT_EQ(r.err, "morpheusctl: cannot reach the RM at " + dead.address() +
                       ": nothing listens there (connection refused); name the RM with --rm "
                       "HOST:PORT or MORPHEUS_RM (--timeout to wait longer)\n")
      << show(r);
  EXPECT_LT(took, 2.8) << "the default --timeout is 2s";

  // --timeout, after the subcommand like every global option.
  t0 = std::chrono::steady_clock::now();
  r = runCli(ctx, {"queue", "list", "--rm", dead.address(), "--timeout", "300ms"});
  EXPECT_LT(secondsSince(t0), 1.2);
  EXPECT_EQ(r.code, 1) << show(r);
  EXPECT_EQ(r.err.rfind("morpheusctl: cannot reach the RM at " + dead.address() + ": ", 0), 0u)
      << show(r);

  // A host name that does not resolve (".invalid" never does, RFC 2606).
  t0 = std::chrono::steady_clock::now();
  r = runCli(ctx, {"app", "list", "--rm", "rm.example.invalid:8030", "--timeout", "1s"});
  EXPECT_LT(secondsSince(t0), 1.8);
  EXPECT_EQ(r.code, 1) << show(r);
  ASSERT_EQ(lines(r.err).size(), 1u) << show(r);
  EXPECT_EQ(r.err.rfind("morpheusctl: cannot reach the RM at rm.example.invalid:8030: ", 0), 0u)
      << show(r);
  EXPECT_NE(r.err.find("--rm HOST:PORT or MORPHEUS_RM"), std::string::npos) << show(r);
  for (const char* internal : {"UNAVAILABLE", "DNS", "c-ares", "failed to connect"}) {
    EXPECT_EQ(r.err.find(internal), std::string::npos) << internal << "\n" << show(r);
  }

  // Both RMs of an HA pair down: both named.
  DeadPort standby;
  r = runCli(ctx, {"cluster", "status", "--rm", dead.address() + "," + standby.address(),
                   "--timeout", "200ms"});
  EXPECT_EQ(r.code, 1) << show(r);
  EXPECT_NE(r.err.find(dead.address() + ": nothing listens there"), std::string::npos) << show(r);
  EXPECT_NE(r.err.find("; " + standby.address() + ": nothing listens there"), std::string::npos)
      << show(r);

  CliRun bad = runCli(ctx, {"cluster", "status", "--timeout", "soon"});
  EXPECT_EQ(bad.code, 2) << show(bad);
  EXPECT_EQ(bad.err.rfind("morpheusctl: --timeout: ", 0), 0u) << show(bad);
}

// A token the RM does not know, or none: exit 1 with the hint naming every
// way to pass one; the same for the inference service.
TEST_F(CliTest, RefusedTokenGetsTheHint) {
  for (const std::string& token : {std::string("stolen-token"), std::string()}) {
    CliRun r = ctl({"queue", "list"}, token);
    EXPECT_EQ(r.code, 1) << show(r);
    EXPECT_TRUE(r.out.empty()) << show(r);
    EXPECT_EQ(r.err.rfind("morpheusctl: RM at " + rm_->address() + " refused the credentials (", 0),
              0u)
        << show(r);
    EXPECT_NE(r.err.find("): pass a valid token with --token, --token-file or MORPHEUS_TOKEN\n"),
              std::string::npos)
        << show(r);
  }
  // --token-file wins over --token.
  const std::string file = write("alice.token", "\n  alice-token  \n");
  CliRun f = ctl({"--token-file", file, "queue", "list", "--json"}, "stolen-token");
  EXPECT_EQ(f.code, 0) << show(f);
  CliRun inf = ctl({"slo", "list"}, "stolen-token");
  EXPECT_EQ(inf.code, 1) << show(inf);
  EXPECT_EQ(inf.err.rfind(
                "morpheusctl: PERMISSION_DENIED: inference at " + inference_->address() + ": ", 0),
            0u)
      << show(inf);
}

// Bad arguments: exit 2 and a line starting "morpheusctl: " naming the flag
// or file as typed, without a status code (nothing was called); nothing
// reaches the RM (no app, no reservation).
TEST_F(CliTest, BadArgumentsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string names;  // what the message must contain
  };
  const std::string job = jobFile();
  const std::string missing = (fs::temp_directory_path() / "nope.json").string();
  const std::vector<Case> cases = {
      {{"app", "list", "--state", "DONE"},
       "morpheusctl: --state: 'DONE' is not one of ACCEPTED, RUNNING, FINISHED, FAILED, KILLED"},
      {{"app", "list", "--since", "yesterday"}, "morpheusctl: --since: 'yesterday' is neither"},
      {{"app", "list", "--limit", "-1"}, "morpheusctl: --limit: must be at least 1"},
      {{"plan", "show", "--from", "yesterday"},
       "morpheusctl: --from: 'yesterday' is not a time: use ISO-8601 UTC (2026-12-01T10:00:00Z), "
       "now, now+DURATION or now-DURATION"},
      {{"plan", "show", "--from", "+2h", "--to", "+1h"}, "morpheusctl: --to: must be after --from"},
      {{"plan", "show", "--width", "5"}, "morpheusctl: --width: "},
      {{"reservation", "submit", "--file", missing},
       "morpheusctl: --file: cannot read reservation file " + missing +
           ": No such file or directory\n"},
      {{"reservation", "submit", "-f", missing},
       "morpheusctl: -f: cannot read reservation file " + missing +
           ": No such file or directory\n"},
      {{"reservation", "submit", "-f"}, "morpheusctl: -f: "},
      {{"app", "submit", job, "--queue", "root.a", "--reservation", "r1"}, "--reservation"},
      {{"app", "submit", missing},
       "morpheusctl: cannot read job file " + missing + ": No such file or directory\n"},
      {{"app", "submit", job, "--priority", "high"}, "--priority"},
      {{"--rm", "no-port-here", "cluster", "status"}, "morpheusctl: --rm: "},
      {{"--token-file", missing, "cluster", "status"}, "morpheusctl: --token-file: "},
      {{"--tls-cert", missing, "cluster", "status"}, "--tls-"},
      {{"slo", "list", "--state", "open"}, "--state"},
      {{"cluster", "status", "--verbose"},
       "morpheusctl: The following argument was not expected: --verbose\n"
       "Run 'morpheusctl cluster status --help' for usage.\n"},
      {{"cluster"}, "subcommand"},
  };
  for (const auto& c : cases) {
    CliRun r = ctl(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += " " + a;
    EXPECT_EQ(r.code, 2) << cmd << "\n" << show(r);
    EXPECT_NE(r.err.find(c.names), std::string::npos) << cmd << "\n" << show(r);
    EXPECT_EQ(r.err.rfind("morpheusctl: ", 0), 0u) << cmd << "\n" << show(r);
    EXPECT_EQ(r.err.find("INVALID_ARGUMENT"), std::string::npos) << cmd << "\n" << show(r);
    EXPECT_TRUE(r.out.empty()) << cmd << "\n" << show(r);
  }
  EXPECT_TRUE(rm_->apps().list({}, "").empty());
  CliRun res = ctl({"reservation", "list", "--json"});
  EXPECT_TRUE(parseJson(res)["reservations"].empty()) << res.out;
}

// Global options anywhere: --rm, --token, --token-file, --json and --user
// after the subcommand (and its positionals) work as before it. The context's
// RM address is a dead one, so a --rm that was not taken fails the run.
TEST_F(CliTest, GlobalOptionsAfterTheSubcommand) {
  rm_->addNode("n1", 8);
  DeadPort dead;
  CliContext ctx;
  ctx.rm_address = dead.address();
  ctx.inference_address = inference_->address();
  CliRun q =
      runCli(ctx, {"queue", "list", "--rm", rm_->address(), "--token", "alice-token", "--json"});
  ASSERT_EQ(q.code, 0) << show(q);
  EXPECT_FALSE(parseJson(q)["queues"].empty()) << q.out;

  const std::string token = write("alice-after.token", "alice-token\n");
  CliRun c =
      runCli(ctx, {"--json", "cluster", "status", "--rm", rm_->address(), "--token-file", token});
  ASSERT_EQ(c.code, 0) << show(c);
  EXPECT_EQ(parseJson(c)["live_nodes"], 1) << c.out;

  // An admin acting for alice, --user after the positional: the app is hers.
  ctx.rm_address = rm_->address();
  CliRun s = runCli(ctx, {"app", "submit", jobFile(), "--queue", "root.a", "--token", "root-token",
                          "--user", "alice"});
  ASSERT_EQ(s.code, 0) << show(s);
  const std::string id = lines(s.out).at(0);
  EXPECT_EQ(rm_->apps().get(AppId(id))->spec.user.value(), "alice");
  CliRun st = runCli(ctx, {"app", "status", id, "--token", "bob-token", "--json"});
  ASSERT_EQ(st.code, 0) << show(st);
  EXPECT_NE(st.out.find("\"alice\""), std::string::npos) << st.out;

  // What no level knows is still refused, naming it.
  CliRun bad = runCli(ctx, {"queue", "list", "--token", "alice-token", "--colour"});
  EXPECT_EQ(bad.code, 2) << show(bad);
  EXPECT_NE(bad.err.find("--colour"), std::string::npos) << show(bad);
}

// --help and --version exit 0 on stdout.
TEST_F(CliTest, HelpAndVersionExitZero) {
  CliRun h = ctl({"app", "submit", "--help"});
  EXPECT_EQ(h.code, 0) << show(h);
  EXPECT_NE(h.out.find("--max-am-attempts"), std::string::npos) << show(h);
  CliRun v = ctl({"--version"});
  EXPECT_EQ(v.code, 0) << show(v);
  EXPECT_EQ(v.out.rfind("morpheusctl ", 0), 0u) << show(v);
}

// A daily job's history in JSON lines: run `k` of "etl" (day k) starts after
// its input appears at 01:30, runs 30 min on 2 containers, and its output is
// read an hour later.
std::string etlHistory(int first_day, int last_day) {
  std::string out;
  for (int64_t k = first_day; k <= last_day; k++) {
    const int64_t base = k * kDay, avail = base + 90 * kMin;
    const std::string rid = "etl-" + std::to_string(k);
    const int64_t submit = avail + 5 * kMin, start = submit + 10000, end = start + 30 * kMin;
    out += json({{"type", "run"},
                 {"job", "etl"},
                 {"run", rid},
                 {"user", "alice"},
                 {"submit_ms", submit},
                 {"start_ms", start},
                 {"end_ms", end},
                 {"step_ms", kMin},
                 {"skyline", std::vector<double>(30, 2.0)}})
               .dump() +
           "\n";
    auto event = [&](const std::string& job, const std::string& run, const std::string& path,
                     const std::string& kind, int64_t t) {
      out += json({{"type", "event"},
                   {"job", job},
                   {"run", run},
                   {"path", path},
                   {"kind", kind},
                   {"time_ms", t}})
                 .dump() +
             "\n";
    };
    event("src", "src-" + rid, "/in/" + rid, "write", avail);
    event("etl", rid, "/in/" + rid, "read", start + kMin);
    event("etl", rid, "/out/" + rid, "write", end - kMin);
    event("report", "report-" + rid, "/out/" + rid, "read", end + kHour);
  }
  return out;
}

// history import, slo history, refit, list, show and accept: the accepted
// SLO becomes a recurring reservation in the RM, which reservation list shows.
TEST_F(CliTest, SloFromImportedHistoryToReservation) {
  rm_->addNode("n1", 8);
  const std::string file = write("etl.jsonl", etlHistory(390, 399));
  CliRun imp = ctl({"history", "import", file, "--owner", "alice"});
  ASSERT_EQ(imp.code, 0) << show(imp);
  EXPECT_EQ(imp.out, "imported 10 run(s) and 40 file event(s) from " + file + "\n");

  CliRun h = ctl({"slo", "history", "etl"});
  ASSERT_EQ(h.code, 0) << show(h);
  ASSERT_EQ(lines(h.out).size(), 11u) << show(h);
  EXPECT_EQ(columns(lines(h.out)[0]),
            (std::vector<std::string>{"RUN", "USER", "SUBMITTED", "DURATION", "STATUS"}));
  EXPECT_EQ(
      rowOf(h.out, "etl-399"),
      (std::vector<std::string>{"etl-399", "alice", "1971-02-04T01:35:00Z", "30m", "succeeded"}));
  EXPECT_TRUE(aligned(h.out)) << h.out;
  json hj = parseJson(ctl({"slo", "history", "etl", "--json"}));
  EXPECT_EQ(hj["job_key"], "etl");
  EXPECT_EQ(hj["runs"].size(), 10u);
  EXPECT_EQ(hj["runs"][9]["submit_time"], "1971-02-04T01:35:00Z");

  CliRun none = ctl({"slo", "list", "--json"});
  ASSERT_EQ(none.code, 0) << show(none);
  EXPECT_TRUE(parseJson(none)["proposals"].empty()) << none.out;

  CliRun refit = ctl({"slo", "refit"}, "root-token");
  ASSERT_EQ(refit.code, 0) << show(refit);
  EXPECT_EQ(refit.out, "refit done: 1 new proposal(s); see 'morpheusctl slo list'\n");

  CliRun lj = ctl({"slo", "list", "--state", "pending", "--json"});
  ASSERT_EQ(lj.code, 0) << show(lj);
  json proposals = parseJson(lj)["proposals"];
  ASSERT_EQ(proposals.size(), 1u) << lj.out;
  const json p = proposals[0];
  const std::string pid = p["proposal_id"];
  EXPECT_EQ(p["job_key"], "etl");
  EXPECT_EQ(p["owner"], "alice");
  EXPECT_EQ(p["state"], "pending");
  EXPECT_EQ(p["period_ms"], kDay);
  EXPECT_EQ(p["skyline"], json(std::vector<int>(30, 2)));
  EXPECT_EQ(p["runs_used"], 10);

  CliRun lt = ctl({"slo", "list"});
  ASSERT_EQ(lt.code, 0) << show(lt);
  auto row = rowOf(lt.out, pid);
  ASSERT_EQ(row.size(), 9u) << lt.out;
  EXPECT_EQ(row[1], "etl");
  EXPECT_EQ(row[2], "alice");
  EXPECT_EQ(row[3], "pending");
  EXPECT_EQ(row[4], "every 1d");
  EXPECT_EQ(row[7], "2 containers");  // peak
  EXPECT_EQ(row[8], "recurring");
  EXPECT_TRUE(aligned(lt.out)) << lt.out;
  EXPECT_EQ(parseJson(ctl({"slo", "list", "--state", "PENDING", "--json"}))["proposals"].size(),
            1u);

  CliRun bob = ctl({"slo", "accept", pid}, "bob-token");
  EXPECT_EQ(bob.code, 1) << show(bob);
  EXPECT_NE(bob.err.find("PERMISSION_DENIED"), std::string::npos) << show(bob);

  CliRun acc = ctl({"slo", "accept", pid, "--json"});
  ASSERT_EQ(acc.code, 0) << show(acc);
  ASSERT_EQ(parseJson(acc)["proposals"].size(), 1u) << acc.out;
  json accepted = parseJson(acc)["proposals"][0];
  EXPECT_EQ(accepted["state"], "accepted");
  const std::string rid = accepted["reservation_id"];
  ASSERT_FALSE(rid.empty()) << acc.out;

  CliRun res = ctl({"reservation", "show", rid, "--json"});
  ASSERT_EQ(res.code, 0) << show(res);
  json r = parseJson(res)["reservations"][0];
  EXPECT_EQ(r["user"], "alice");
  EXPECT_EQ(r["queue"], "default");
  EXPECT_EQ(r["definition"]["recurrence_key"], "etl");
  EXPECT_EQ(r["definition"]["period_ms"], kDay);

  CliRun shown = ctl({"slo", "show", pid});
  ASSERT_EQ(shown.code, 0) << show(shown);
  EXPECT_EQ(lines(shown.out)[0], "proposal " + pid + " for job etl (owner alice): accepted");
  EXPECT_NE(shown.out.find("  reservation: " + rid + "\n"), std::string::npos) << shown.out;

  CliRun unknown = ctl({"slo", "show", "p-nope"});
  EXPECT_EQ(unknown.code, 1) << show(unknown);
  EXPECT_EQ(unknown.err.rfind("morpheusctl: NOT_FOUND: inference at " + inference_->address(), 0),
            0u)
      << show(unknown);
}

// What `sh -c SCRIPT` prints on stdout ("" when the shell is missing).
std::string shellOutput(const std::string& script) {
  std::string out;
  FILE* p = ::popen(script.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

bool haveShell(const std::string& shell) {
  return shellOutput("command -v " + shell + " >/dev/null 2>&1 && echo yes") == "yes\n";
}

// The words of `text`, sorted.
std::vector<std::string> wordsOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  std::sort(out.begin(), out.end());
  return out;
}

// completion bash|zsh|fish: each script, run in its shell when the machine
// has it, completes subcommands by prefix, a subcommand's options, and the
// global options after a subcommand.
TEST_F(CliTest, CompletionForBashZshAndFish) {
  std::map<std::string, std::string> scripts;
  for (const std::string shell : {"bash", "zsh", "fish"}) {
    CliRun r = ctl({"completion", shell}, "");
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_NE(r.out.find("morpheusctl reservation create"), std::string::npos) << r.out;
    scripts[shell] = write("completion." + shell, r.out);
  }
  CliRun none = ctl({"completion", "tcsh"}, "");
  EXPECT_EQ(none.code, 2) << show(none);

  using W = std::vector<std::string>;
  // Each case: the words typed, the last one being completed, and what the
  // candidates must include (and, for a prefix, be exactly).
  struct Case {
    std::vector<std::string> typed;
    W want;
    bool exact;
  };
  const std::vector<Case> cases = {
      {{"app", "l"}, {"list", "logs"}, true},
      {{"reservation", "cr"}, {"create"}, true},
      {{"app", "list", "--to"}, {"--token", "--token-file"}, true},
      {{"reservation", "create", "--du"}, {"--duration"}, true},
      {{"app", "list", "--s"}, {"--since", "--state"}, true},
      {{"completion", ""}, {"bash", "fish", "zsh"}, false},
  };
  auto joined = [](const std::vector<std::string>& v, const std::string& sep, const char* quote) {
    std::string out;
    for (const auto& w : v) out += (out.empty() ? "" : sep) + quote + w + quote;
    return out;
  };
  int shells = 0;
  if (haveShell("bash")) {
    shells++;
    for (const auto& c : cases) {
      const std::string script = "bash -c 'source " + scripts["bash"] +
                                 "; COMP_WORDS=(morpheusctl " + joined(c.typed, " ", "\"") +
                                 "); COMP_CWORD=" + std::to_string(c.typed.size()) +
                                 "; _morpheusctl; echo \"${COMPREPLY[*]}\"'";
      W got = wordsOf(shellOutput(script));
      if (c.exact) {
        EXPECT_EQ(got, c.want) << script;
      } else {
        for (const auto& w : c.want) EXPECT_NE(std::find(got.begin(), got.end(), w), got.end());
      }
    }
  }
  if (haveShell("zsh")) {
    shells++;
    // The completion system's builtins stubbed: compadd prints its candidates.
    for (const auto& c : cases) {
      const std::string script =
          "zsh -f -c 'compadd() { shift; print -r -- \"$@\"; }; _files() { :; }; "
          "compdef() { :; }; source " +
          scripts["zsh"] + "; words=(morpheusctl " + joined(c.typed, " ", "\"") +
          "); CURRENT=" + std::to_string(c.typed.size() + 1) + "; _morpheusctl'";
      W all = wordsOf(shellOutput(script)), got;
      const std::string prefix = c.typed.back();
      for (const auto& w : all) {
        if (w.rfind(prefix, 0) == 0) got.push_back(w);
      }
      if (c.exact) {
        EXPECT_EQ(got, c.want) << script;
      } else {
        for (const auto& w : c.want) EXPECT_NE(std::find(got.begin(), got.end(), w), got.end());
      }
    }
  }
  if (haveShell("fish")) {
    shells++;
    for (const auto& c : cases) {
      const std::string script = "fish -c 'source " + scripts["fish"] +
                                 "; complete -C \"morpheusctl " + joined(c.typed, " ", "") + "\"'";
      W got;
      for (const auto& l : lines(shellOutput(script))) got.push_back(columns(l + "  ").at(0));
      std::sort(got.begin(), got.end());
      if (c.exact) {
        EXPECT_EQ(got, c.want) << script;
      } else {
        for (const auto& w : c.want) EXPECT_NE(std::find(got.begin(), got.end(), w), got.end());
      }
    }
  }
  if (shells < 3) std::cerr << "note: only " << shells << " of bash, zsh, fish installed\n";
  EXPECT_GE(shells, 1) << "no shell to run a completion script in";
}

// deploy/local-cluster.sh: --help prints the usage; `env` prints (and
// writes, 0600) the exports of the cluster a start left in its var dir, and
// morpheusctl with that environment reaches the cluster at whatever port it
// chose (here: the in-process RM and inference service).
TEST_F(CliTest, LocalClusterScriptExportsWhereTheClusterIs) {
  const std::string script = std::string(testing::sourceDir()) + "/deploy/local-cluster.sh";
  for (const std::string help : {"--help", "-h", "start --help"}) {
    const std::string out = shellOutput(script + " " + help + "; echo rc=$?");
    EXPECT_EQ(out.rfind("A local Morpheus cluster on loopback", 0), 0u) << help << ": " << out;
    EXPECT_NE(out.find("Usage: deploy/local-cluster.sh start|stop|status|env"), std::string::npos)
        << out;
    EXPECT_NE(out.find("\nrc=0\n"), std::string::npos) << help << ": " << out;
  }
  EXPECT_NE(shellOutput(script + " start --bogus 2>&1; echo rc=$?").find("rc=1"),
            std::string::npos);

  // The var dir as `start` leaves it.
  const fs::path var = fs::temp_directory_path() / "local-cluster-var";
  fs::create_directories(var);
  std::ofstream(var / "cluster.env") << "RM=" << rm_->address() << "\nRM_HTTP=127.0.0.1:1\n"
                                     << "INFERENCE=" << inference_->address()
                                     << "\nINFERENCE_HTTP=127.0.0.1:1\nBIN=/nonexistent\n";
  std::ofstream(var / "operator.token") << "alice-token\n";
  const std::string out = shellOutput(script + " env --var " + var.string());
  std::map<std::string, std::string> env;
  for (const auto& l : lines(out)) {
    ASSERT_EQ(l.rfind("export ", 0), 0u) << out;
    const size_t eq = l.find('=');
    env[l.substr(7, eq - 7)] = l.substr(eq + 1);
  }
  EXPECT_EQ(env["MORPHEUS_RM"], rm_->address()) << out;
  EXPECT_EQ(env["MORPHEUS_INFERENCE"], inference_->address()) << out;
  EXPECT_EQ(env["MORPHEUS_TOKEN"], "alice-token") << out;
  EXPECT_EQ(readAll(var / "env"), out);
  EXPECT_EQ(fs::status(var / "env").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // What main() takes from the environment, then a command and a sign-off read.
  CliContext ctx;
  ctx.rm_address = env["MORPHEUS_RM"];
  ctx.rm_http_address = env["MORPHEUS_RM_HTTP"];
  ctx.inference_address = env["MORPHEUS_INFERENCE"];
  ctx.token = env["MORPHEUS_TOKEN"];
  CliRun q = runCli(ctx, {"queue", "list", "--json"});
  EXPECT_EQ(q.code, 0) << show(q);
  CliRun sl = runCli(ctx, {"slo", "list", "--json"});
  EXPECT_EQ(sl.code, 0) << show(sl);
  fs::remove_all(var);
}

// A history file with a bad line imports nothing and names the line and field.
TEST_F(CliTest, BadHistoryFileImportsNothing) {
  std::string text = etlHistory(398, 399);
  text += "{\"type\":\"run\",\"job\":\"etl\",\"run\":\"x\",\"submit_ms\":1}\n";
  const std::string file = write("bad.jsonl", text);
  CliRun r = ctl({"history", "import", file});
  EXPECT_EQ(r.code, 2) << show(r);
  EXPECT_NE(r.err.find("line 11: start_ms"), std::string::npos) << show(r);
  CliRun h = ctl({"slo", "history", "etl", "--json"});
  EXPECT_EQ(h.code, 1) << show(h);
  EXPECT_EQ(h.err,
            "morpheusctl: the inference service has no runs of job 'etl'; 'morpheusctl slo list "
            "--why' lists the jobs it knows\n");
  EXPECT_TRUE(h.out.empty()) << show(h);
}

// One run each of `n` ad-hoc jobs ("adhoc-1", ...): jobs the inference
// service can propose no SLO for.
std::string adhocHistory(int n) {
  std::string out;
  for (int k = 1; k <= n; k++) {
    const int64_t submit = 399 * kDay + k * kHour;
    out += json({{"type", "run"},
                 {"job", "adhoc-" + std::to_string(k)},
                 {"run", "adhoc-" + std::to_string(k) + "-1"},
                 {"user", "alice"},
                 {"submit_ms", submit},
                 {"start_ms", submit + 1000},
                 {"end_ms", submit + 1000 + 5 * kMin},
                 {"step_ms", kMin},
                 {"skyline", std::vector<double>(5, 1.0)}})
               .dump() +
           "\n";
  }
  return out;
}

// Sign-off paths that lead somewhere: ad-hoc jobs are one summary line of
// `slo list` (each with --why or --job), an unknown job is an error, and a
// sign-off of an accepted proposal says what to do instead.
TEST_F(CliTest, SignOffPathsLeadSomewhere) {
  rm_->addNode("n1", 8);
  ASSERT_EQ(
      ctl({"history", "import", write("etl.jsonl", etlHistory(390, 399)), "--owner", "alice"}).code,
      0);
  ASSERT_EQ(ctl({"history", "import", write("adhoc.jsonl", adhocHistory(3))}).code, 0);
  ASSERT_EQ(ctl({"slo", "refit"}, "root-token").code, 0);

  CliRun l = ctl({"slo", "list"});
  ASSERT_EQ(l.code, 0) << show(l);
  EXPECT_EQ(l.out.find("adhoc-"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("\n3 job(s) have no SLO proposal yet (too few runs, not periodic, ...): "
                       "'morpheusctl slo list --why' says why for each\n"),
            std::string::npos)
      << l.out;
  CliRun why = ctl({"slo", "list", "--why"});
  ASSERT_EQ(why.code, 0) << show(why);
  auto row = rowOf(why.out, "adhoc-2");
  ASSERT_EQ(row.size(), 2u) << why.out;
  EXPECT_EQ(row[1].rfind("needs at least", 0), 0u) << why.out;
  CliRun one = ctl({"slo", "list", "--job", "adhoc-1"});
  ASSERT_EQ(one.code, 0) << show(one);
  EXPECT_EQ(columns(lines(one.out).at(0)), (std::vector<std::string>{"JOB WITHOUT SLO", "WHY"}));
  EXPECT_EQ(rowOf(one.out, "adhoc-1").size(), 2u) << one.out;
  EXPECT_EQ(lines(one.out).size(), 2u) << one.out;
  json lj = parseJson(ctl({"slo", "list", "--json"}));
  EXPECT_EQ(lj["not_actionable"].size(), 3u) << lj.dump(2);

  // Unknown job names are errors, not empty answers.
  CliRun nope = ctl({"slo", "list", "--job", "etl-typo"});
  EXPECT_EQ(nope.code, 1) << show(nope);
  EXPECT_EQ(nope.err.rfind("morpheusctl: --job: the inference service knows no job 'etl-typo'", 0),
            0u)
      << show(nope);
  CliRun hist = ctl({"slo", "history", "etl-typo"});
  EXPECT_EQ(hist.code, 1) << show(hist);
  EXPECT_NE(hist.err.find("no runs of job 'etl-typo'"), std::string::npos) << show(hist);

  // Overriding (or rejecting) an accepted SLO names its reservation and the
  // way to change it.
  json p = parseJson(ctl({"slo", "list", "--job", "etl", "--json"}))["proposals"].at(0);
  const std::string pid = p["proposal_id"];
  CliRun acc = ctl({"slo", "accept", pid, "--json"});
  ASSERT_EQ(acc.code, 0) << show(acc);
  const std::string rid = parseJson(acc)["proposals"][0]["reservation_id"];
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"slo", "override", pid, "--deadline", "4h"},
        std::vector<std::string>{"slo", "reject", pid}}) {
    CliRun ov = ctl(args);
    EXPECT_EQ(ov.code, 1) << show(ov);
    EXPECT_EQ(lines(ov.err).size(), 1u) << show(ov);
    EXPECT_NE(ov.err.find("proposal " + pid +
                          " is not pending: it was accepted and runs as "
                          "reservation " +
                          rid +
                          ". To change the running SLO, change its "
                          "reservation ('morpheusctl reservation show " +
                          rid + "'"),
              std::string::npos)
        << show(ov);
    EXPECT_NE(ov.err.find("'morpheusctl slo list --job etl'"), std::string::npos) << show(ov);
  }
}

// Whether every key of `j` (recursively) is snake_case; the maps of
// user-given names (node attributes) are not keys of the contract.
bool snakeKeys(const json& j, std::string* bad) {
  if (j.is_array()) {
    for (const auto& e : j) {
      if (!snakeKeys(e, bad)) return false;
    }
  }
  if (!j.is_object()) return true;
  for (const auto& [k, v] : j.items()) {
    for (char c : k) {
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
        *bad = k;
        return false;
      }
    }
    if (k != "attributes" && !snakeKeys(v, bad)) return false;
  }
  return true;
}

// --json on every command (app logs aside: it needs an NM), one shape: an
// object holding its records as a list under a plural key, snake_case keys,
// a time as NAME_ms with NAME_time (ISO-8601) beside it.
TEST_F(CliTest, EveryCommandPrintsTheOneJsonShape) {
  rm_->addNode("n1", 8);
  std::string etl = etlHistory(390, 399), elt = etl;
  for (size_t at = elt.find("etl"); at != std::string::npos; at = elt.find("etl", at + 3)) {
    elt.replace(at, 3, "elt");
  }
  const std::string history = write("two.jsonl", etl + elt);
  const std::string res_file = reservationFile("");
  struct Step {
    std::vector<std::string> args;
    std::string key;  // where the records are
    std::string token = "alice-token";
  };
  std::string app, rid, etl_p, elt_p;
  std::vector<Step> steps = {
      {{"cluster", "status"}, "nodes"},
      {{"queue", "list"}, "queues"},
      {{"app", "submit", jobFile(), "--queue", "root.a"}, "applications"},
      {{"app", "list"}, "applications"},
      {{"app", "telemetry"}, "applications"},
      {{"reservation", "new"}, "reservations"},
      {{"reservation", "create", "--deadline", "now+3h", "--containers", "1", "--memory", "1GiB",
        "--duration", "10m"},
       "reservations"},
      {{"reservation", "submit", "-f", res_file}, "reservations"},
      {{"reservation", "list"}, "reservations"},
      {{"plan", "show", "--to", "now+2h"}, "steps"},
      {{"history", "import", history, "--owner", "alice"}, "imports"},
      {{"slo", "refit"}, "refits", "root-token"},
      {{"slo", "list"}, "proposals"},
      {{"slo", "history", "etl"}, "runs"},
      {{"skyline", "fit", "--input", history, "--format", "jsonl", "--job", "etl"}, "skylines"},
  };
  auto run = [&](const Step& st) -> json {
    std::vector<std::string> args = st.args;
    args.push_back("--json");
    CliRun r = ctl(args, st.token);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.code, 0) << cmd << "\n" << show(r);
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << cmd << "\n" << r.out;
    if (!j.is_object()) return json::object();
    EXPECT_TRUE(j.contains(st.key) && j[st.key].is_array()) << cmd << "\n" << r.out;
    std::string bad;
    EXPECT_TRUE(snakeKeys(j, &bad)) << cmd << ": key '" << bad << "'\n" << r.out;
    for (const auto& [k, v] : j.items()) {
      if (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0 && k != "step_ms") {
        EXPECT_TRUE(j.contains(k.substr(0, k.size() - 3) + "_time")) << cmd << ": " << k;
      }
    }
    return j;
  };
  for (const auto& st : steps) {
    json j = run(st);
    if (st.args[1] == "submit" && st.args[0] == "app") app = j["applications"][0]["application_id"];
    if (st.args[1] == "create") rid = j["reservations"][0]["reservation_id"];
    if (st.args[0] == "slo" && st.args[1] == "list") {
      for (const auto& p : j["proposals"]) {
        (p["job_key"] == "etl" ? etl_p : elt_p) = p["proposal_id"];
      }
    }
  }
  ASSERT_FALSE(app.empty());
  ASSERT_FALSE(rid.empty());
  ASSERT_FALSE(etl_p.empty());
  ASSERT_FALSE(elt_p.empty());
  json a = run({{"app", "status", app}, "applications"});
  EXPECT_EQ(a["applications"][0]["submit_time"], "1971-02-05T00:00:00Z");
  run({{"app", "kill", app}, "applications"});
  json shown = run({{"reservation", "show", rid}, "reservations"});
  EXPECT_EQ(shown["reservations"][0]["acceptance_time"], "1971-02-05T00:00:00Z");
  run({{"reservation", "update", "-f", reservationFile(rid, 3)}, "reservations"});
  run({{"reservation", "delete", rid}, "reservations"});
  run({{"slo", "show", etl_p}, "proposals"});
  run({{"slo", "override", etl_p, "--deadline", "4h"}, "proposals"});
  run({{"slo", "reject", elt_p, "--reason", "by hand"}, "proposals"});
  run({{"slo", "list", "--state", "rejected"}, "proposals"});

  // A script-only command has no JSON: said, not ignored.
  CliRun c = ctl({"completion", "bash", "--json"});
  EXPECT_EQ(c.code, 2) << show(c);
  EXPECT_EQ(c.err.rfind("morpheusctl: --json: ", 0), 0u) << show(c);
}

// The inference service unreachable: exit 1 naming its address and how to
// name another.
TEST_F(CliTest, InferenceUnreachableFailsNamingIt) {
  DeadPort dead;
  CliContext ctx;
  ctx.rm_address = rm_->address();
  CliRun r = runCli(ctx, {"--inference", dead.address(), "--token", "alice-token", "slo", "list"});
  EXPECT_EQ(r.code, 1) << show(r);
  EXPECT_EQ(r.err, "morpheusctl: cannot reach the inference service at " + dead.address() +
                       ": nothing listens there (connection refused); name the inference service "
                       "with --inference HOST:PORT or MORPHEUS_INFERENCE (--timeout to wait "
                       "longer)\n")
      << show(r);
}

}  // namespace
}  // namespace morpheus::cli
