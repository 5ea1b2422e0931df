// Shared by the RM's HTTP handler tests (cluster_rest_test.cc,
// web_ui_test.cc): the RM's real components wired as src/rm/main.cc wires
// them (tests/support/inproc_rm.h: RmCore, ReservationManager, AppManager
// over SQLite, RmRuntime, RmAccess from a real token file, the
// ReservationService), the reservation
// REST, web UI and YARN cluster REST registered on a real HttpServer on
// 127.0.0.1:<any free port> inside the test process, and a small HTTP/1.1
// client. Time is a VirtualClock, so every number a handler reports follows
// from the state the test built.
//
// NMs and AMs are played by direct calls with the wire messages, as the
// ResourceTracker and ApplicationMaster services make them; no AM is launched
// (the runtime is not started).
#pragma once

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/http_server.h"
#include "common/wire.h"
#include "inproc_rm.h"
#include "rm/http/cluster_rest.h"
#include "rm/http/rest.h"
#include "rm/http/web_ui.h"

namespace morpheus::rm::httptest {

using nlohmann::json;

// One HTTP answer: status (0 = no answer), headers (names lower-cased), body.
struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  // The body as JSON; discarded (is_discarded()) when it is not JSON.
  json parsed() const { return json::parse(body, nullptr, false); }
  // For failure messages.
  std::string show() const { return std::to_string(status) + " " + body; }
};

// `method` `target` on 127.0.0.1:`port` over a fresh connection, with
// "Authorization: Bearer `token`" unless `token` is empty, and `headers`
// (sent after it, so they may replace it). Gives up after 10 s.
inline Reply httpCall(int port, const std::string& method, const std::string& target,
                      const std::string& token, const std::string& body = "",
                      const std::map<std::string, std::string>& headers = {}) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  Reply out;
  try {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(stream, buf, res);
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    out.body = res.body();
    beast::error_code ignored;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& e) {
    out.status = 0;
    out.body = e.what();
  }
  return out;
}

// A YARN reservation document: `containers` x (1024 MiB, 1 vcore) for
// `duration_ms`, all at once (min-concurrency = containers), in
// [arrival, deadline) of queue "default".
inline json yarnReservation(const std::string& id, const std::string& name, int64_t arrival,
                            int64_t deadline, int containers, int64_t duration_ms) {
  return {
      {"reservation-id", id},
      {"queue", "default"},
      {"reservation-definition",
       {{"arrival", arrival},
        {"deadline", deadline},
        {"reservation-name", name},
        {"reservation-requests",
         {{"reservation-request-interpreter", 0},
          {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                {"num-containers", containers},
                                                {"min-concurrency", containers},
                                                {"duration", duration_ms}}})}}}}}};
}

class RmHttpTest : public ::testing::Test {
 public:
  // The plan step (planner.step) and the start of the virtual clock, a whole step.
  static constexpr int64_t kStepMs = 60'000;
  static constexpr int64_t kT0 = 1'800'000'000'000;  // 2027-01-15T08:00:00Z

  // Bearer tokens of rm.token-file (written as the operator would).
  inline static const std::string kAlice = "tok-alice-5c1e0a9f27d4";
  inline static const std::string kBob = "tok-bob-8e2b7d1c3f60";
  inline static const std::string kCarol = "tok-carol-4a7f9e0d2b13";
  inline static const std::string kOps = "tok-ops-admin-1d9c8b7a6e5f";    // role admin
  inline static const std::string kRooty = "tok-rooty-6b5a4c3d2e1f";      // user in rm.admins
  inline static const std::string kNode = "tok-nm1-node-0f1e2d3c4b5a";    // role node
  inline static const std::string kExpired = "tok-old-9a8b7c6d5e4f3a2b";  // expired in 2020
  // Other secrets no answer may carry.
  inline static const std::string kTokenSecret = "rm-token-secret-2f6c1b9e8d7a4053";
  inline static const std::string kInferenceToken = "tok-rm-to-inference-7e6d5c4b3a29";
  inline static const std::string kLaunchSecret = "LAUNCH-ENV-SECRET-31c4e8a09b7d";

 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("rm-http-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    testing::InProcRmOptions o;
    o.state_store = (dir_ / "rm-state.db").string();
    o.token_secret = kTokenSecret;
    o.token_file = (dir_ / "tokens").string();  // written as the operator would
    o.tokens = kAlice + " alice\n" + kBob + " bob\n" + kCarol + " carol\n" + kOps + " ops admin\n" +
               kRooty + " rooty\n" + kNode + " nm1 node\n" + kExpired +
               " olduser expires=2020-01-01\n";
    o.rm.planner.step = Millis(kStepMs);
    o.reservations.reservable_queues = {"default"};
    o.reservations.admins = {"rooty"};
    o.apps.queues = {"root.default", "root.other"};
    o.runtime.telemetry_step = Millis(kStepMs);
    o.runtime.queue_weights = {{"root.default", 3}, {"root.other", 1}};
    o.admins = {"rooty"};
    auto rm = testing::InProcRm::start(clock_, std::move(o));
    ASSERT_TRUE(rm.isOk()) << rm.status().toString();
    rm_ = std::move(rm).value();

    http_ = std::make_unique<HttpServer>(HttpServerOptions{}, rm_->metrics());
    const Authenticator* a = &rm_->authenticator();
    http_->setPrincipalOf([a](const HttpRequest& req) {
      auto who = a->identify(req);
      return who.isOk() ? who->user : std::string();
    });
    registerReservationRest(*http_, rm_->reservationService(), rm_->access());
    const testing::InProcRmOptions& wired = rm_->options();
    registerWebUi(
        *http_, {&rm_->core(), &rm_->apps(), &rm_->runtime(), &rm_->reservations(), &rm_->access(),
                 &clock_, wired.apps.queues, wired.rm.planner.lcm, wired.rm.planner.step,
                 inference_address_, TlsOptions{}, kInferenceToken});
    registerClusterRest(*http_, {rm_->core(), rm_->apps(), rm_->runtime(), rm_->reservations(),
                                 rm_->access(), clock_, fromEpochMs(kT0)});
    auto port = http_->start("127.0.0.1", 0);
    ASSERT_TRUE(port.isOk()) << port.status().toString();
    port_ = *port;
  }

  void TearDown() override {
    if (http_) http_->stop();  // no handler runs past here
    http_.reset();
    rm_.reset();
    std::filesystem::remove_all(dir_);
  }

  Reply get(const std::string& target, const std::string& token) {
    return httpCall(port_, "GET", target, token);
  }
  Reply call(const std::string& method, const std::string& target, const std::string& token,
             const std::string& body = "") {
    return httpCall(port_, method, target, token, body);
  }

  // An NM's registration (ResourceTracker RegisterNode): core, then runtime.
  void registerNode(const std::string& id, int vcores, const std::string& cm_address,
                    const std::string& http_address,
                    const std::map<std::string, std::string>& attrs = {}) {
    Status st =
        rm_->registerNode(testing::nodeRegistration(id, vcores, attrs, cm_address, http_address));
    ASSERT_TRUE(st.isOk()) << st.toString();
  }
  // An NM's heartbeat: its usage report to the core, then (when `schedule`)
  // the runtime's scheduling pass on the node, as ResourceTrackerService does.
  void heartbeat(const std::string& id, const Resource& used, int64_t rss_mib, double cpu,
                 int32_t containers, bool schedule) {
    Status st =
        rm_->core().nodeHeartbeat(NodeId(id), ++sequence_[id], used, rss_mib, cpu, containers);
    ASSERT_TRUE(st.isOk()) << st.toString();
    if (!schedule) return;
    v1::NodeHeartbeatRequest req;
    req.set_node_id(id);
    req.set_sequence(sequence_[id]);
    toProto(used, req.mutable_used());
    v1::NodeHeartbeatResponse resp;
    ASSERT_TRUE(rm_->nodeHeartbeat(req, &resp).isOk());
  }
  AppId submitApp(const std::string& user, const std::string& name, const std::string& queue,
                  const std::string& reservation = "",
                  const std::map<std::string, std::string>& tags = {}, int priority = 0) {
    AppSpec s;
    s.name = name;
    s.user = UserId(user);
    s.queue = queue;
    s.reservation = ReservationId(reservation);
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = kLaunchSecret;
    s.tags = tags;
    s.priority = priority;
    auto rec = rm_->apps().submit(s, [](const BindTarget&) { return Status::ok(); });
    EXPECT_TRUE(rec.isOk()) << rec.status().toString();
    return rec.isOk() ? rec->id : AppId("");
  }
  // The AM of `app` registers and asks for `count` task containers of
  // (1024 MiB, 1 vcore) under one request id (a later ask replaces it).
  void amAsks(const AppId& app, int count) {
    if (!am_registered_.count(app.value())) {
      Status st = rm_->registerAm(app);
      ASSERT_TRUE(st.isOk()) << st.toString();
      am_registered_.insert(app.value());
    }
    v1::AllocateResponse resp;
    Status st = rm_->allocate(testing::taskAsk(app, rm_->apps().amToken(app, 1), count), &resp);
    ASSERT_TRUE(st.isOk()) << st.toString();
  }

  // The state most tests read, built through the same calls the RM's
  // services make:
  //  t0 = kT0     nm1 (8 vcores, 8 GiB, zone=a) and nm2 (4 vcores, 4 GiB)
  //               register; alice gets an id and submits reservation
  //               "nightly" over REST: 2 x (1 GiB, 1 vcore) for 10 min in
  //               [t0, t0 + 10 min); alice submits app "etl" (root.default,
  //               tags nightly and team=data, priority 3), nm1's heartbeat
  //               starts its AM; the AM asks 2 tasks, the next heartbeat
  //               grants both (3 containers: 3 GiB, 3 vcores), the AM
  //               reads them, then asks 50 more (pending).
  //  t1 = t0+11s  nm1 reports 3 GiB / 3 vcores in use, 3 containers, RSS
  //               2000 MiB, 1.5 cores; nm2 never reported and is lost. bob
  //               submits "probe" to root.other, alice "in-res" into the
  //               reservation (both wait for an AM: no heartbeat since);
  //               carol submits "doomed" and kills it.
  void buildKnownState() {
    ASSERT_NO_FATAL_FAILURE(
        registerNode("nm1", 8, "127.0.0.1:45454", "127.0.0.1:8042", {{"zone", "a"}}));
    ASSERT_NO_FATAL_FAILURE(registerNode("nm2", 4, "127.0.0.2:45454", "127.0.0.2:8042"));

    Reply id = call("POST", "/ws/v1/cluster/reservation/new-reservation", kAlice);
    ASSERT_EQ(id.status, 200) << id.show();
    rid_ = id.parsed()["reservation-id"].get<std::string>();
    Reply sub = call("POST", "/ws/v1/cluster/reservation/submit", kAlice,
                     yarnReservation(rid_, "nightly", kT0, kT0 + 600'000, 2, 600'000).dump());
    ASSERT_EQ(sub.status, 200) << sub.show();

    etl_ = submitApp("alice", "etl", "root.default", "", {{"team", "data"}, {"nightly", ""}}, 3);
    ASSERT_NO_FATAL_FAILURE(heartbeat("nm1", Resource(), 0, 0, 0, true));
    ASSERT_EQ(rm_->apps().get(etl_)->state, AppState::kRunning);
    ASSERT_NO_FATAL_FAILURE(amAsks(etl_, 2));
    ASSERT_NO_FATAL_FAILURE(heartbeat("nm1", Resource(1024, 1), 0, 0, 1, true));
    ASSERT_NO_FATAL_FAILURE(amAsks(etl_, 0));  // reads the two grants
    ASSERT_NO_FATAL_FAILURE(amAsks(etl_, 50));

    clock_.advance(Millis(11'000));
    ASSERT_NO_FATAL_FAILURE(heartbeat("nm1", Resource(3072, 3), 2000, 1.5, 3, false));
    rm_->core().checkLiveness();

    probe_ = submitApp("bob", "probe", "root.other");
    in_res_ = submitApp("alice", "in-res", "", rid_);
    doomed_ = submitApp("carol", "doomed", "root.default");
    ASSERT_TRUE(rm_->apps().kill(doomed_, UserId("carol"), false, "not needed").isOk());
    rm_->runtime().onAppKilled(doomed_);
  }

  // Every secret the RM holds that no answer may carry.
  std::vector<std::string> secrets() const {
    std::vector<std::string> out = {kAlice,          kBob,         kCarol,   kOps,
                                    kRooty,          kNode,        kExpired, kTokenSecret,
                                    kInferenceToken, kLaunchSecret};
    out.push_back(rm_->core().nodeKey(NodeId("nm1")));
    out.push_back(rm_->core().nodeKey(NodeId("nm2")));
    for (const auto& a : rm_->apps().list({}, "")) out.push_back(rm_->apps().amToken(a.id, 1));
    return out;
  }

  VirtualClock clock_{fromEpochMs(kT0)};
  std::string inference_address_;  // rm.inference-address; set before SetUp
  std::filesystem::path dir_;
  std::unique_ptr<testing::InProcRm> rm_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  std::map<std::string, int64_t> sequence_;
  std::set<std::string> am_registered_;
  // buildKnownState's objects.
  std::string rid_;
  AppId etl_, probe_, in_res_, doomed_;
};

}  // namespace morpheus::rm::httptest
