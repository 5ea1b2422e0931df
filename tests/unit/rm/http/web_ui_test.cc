// The RM's web UI (rm/http/web_ui.h) over real HTTP in the test process:
// the static page and its assets (public, right content type, no secret),
// the token gate of the data endpoints, each data endpoint's JSON for a
// small known state (exact values), and the proposal list read from an
// in-process InferenceService with per-user filtering.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "morpheus/v1/inference.grpc.pb.h"
#include "rm/http/ui_assets.h"
#include "rm_http_fixture.h"

namespace morpheus::rm::httptest {
namespace {

constexpr int64_t kT1 = RmHttpTest::kT0 + 11'000;  // buildKnownState's "now"

const std::vector<std::string> kDataEndpoints = {"/ui/api/cluster", "/ui/api/plan",
                                                 "/ui/api/reservation?id=x", "/ui/api/proposals"};

// {"error": {"code": CODE, "message": ...}} with `status`, as JSON.
void expectJsonError(const Reply& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.show();
  EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "application/json")
      << r.show();
  json j = r.parsed();
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.show();
  EXPECT_EQ(j["error"]["code"], code) << r.show();
  EXPECT_TRUE(j["error"]["message"].is_string()) << r.show();
}

class WebUiTest : public RmHttpTest {
 protected:
  void expectNoSecret(const Reply& r, const std::string& what) {
    for (const auto& s : secrets()) {
      EXPECT_EQ(r.body.find(s), std::string::npos) << what << " carries a secret: " << r.body;
    }
  }
};

// The page and every embedded asset are served without a token (a wrong
// one does not matter either), byte for byte as embedded, with the content
// type of their kind; the HTML and script carry no secret, and the page
// keeps the token out of persistent storage.
TEST_F(WebUiTest, StaticPagesArePublicTypedAndCarryNoSecret) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  struct Page {
    std::string target, asset, type;
  };
  std::vector<Page> pages = {{"/", "index.html", "text/html; charset=utf-8"},
                             {"/ui", "index.html", "text/html; charset=utf-8"},
                             {"/ui/", "index.html", "text/html; charset=utf-8"},
                             {"/ui/?token=" + kAlice, "index.html", "text/html; charset=utf-8"}};
  for (const auto& [name, _] : uiAssets()) {
    std::string type = name.ends_with(".html")  ? "text/html; charset=utf-8"
                       : name.ends_with(".js")  ? "text/javascript; charset=utf-8"
                       : name.ends_with(".css") ? "text/css; charset=utf-8"
                                                : "application/octet-stream";
    pages.push_back({"/ui/" + name, name, type});
  }
  ASSERT_GE(pages.size(), 7u) << "index.html, app.js and app.css are embedded";
  for (const auto& p : pages) {
    for (const std::string& token : {std::string(), std::string("tok-nobody-000000000000")}) {
      Reply r = get(p.target, token);
      ASSERT_EQ(r.status, 200) << p.target << ": " << r.show();
      EXPECT_EQ(r.headers["content-type"], p.type) << p.target;
      EXPECT_EQ(r.headers["x-content-type-options"], "nosniff") << p.target;
      EXPECT_EQ(r.body, std::string(uiAssets().at(p.asset))) << p.target;
      expectNoSecret(r, p.target);
    }
  }
  const std::string js(uiAssets().at("app.js"));
  EXPECT_NE(js.find("sessionStorage"), std::string::npos);
  EXPECT_EQ(js.find("localStorage"), std::string::npos) << "the token must not outlive the tab";
  EXPECT_EQ(js.find("document.cookie"), std::string::npos);
}

// Each data endpoint: 401 without a token (with the Bearer challenge RFC
// 9110 requires), with an unknown, malformed or expired one; 403 for a node
// credential; every refusal is the JSON error. Any user token passes.
TEST_F(WebUiTest, DataEndpointsNeedAUserToken) {
  for (const auto& t : kDataEndpoints) {
    SCOPED_TRACE(t);
    Reply none = get(t, "");
    expectJsonError(none, 401, "PERMISSION_DENIED");
    EXPECT_EQ(none.headers["www-authenticate"], kBearerChallenge) << none.show();
    expectJsonError(get(t, "tok-nobody-000000000000"), 401, "PERMISSION_DENIED");
    expectJsonError(httpCall(port_, "GET", t, "", "", {{"Authorization", "Token " + kAlice}}), 401,
                    "PERMISSION_DENIED");
    Reply expired = get(t, kExpired);
    expectJsonError(expired, 401, "PERMISSION_DENIED");
    EXPECT_NE(expired.parsed()["error"]["message"].get<std::string>().find("expired"),
              std::string::npos)
        << expired.show();
    Reply node = get(t, kNode);
    expectJsonError(node, 403, "PERMISSION_DENIED");
    EXPECT_NE(node.parsed()["error"]["message"].get<std::string>().find("node credential"),
              std::string::npos)
        << node.show();
    for (const std::string& who : {kAlice, kBob, kOps}) {
      Reply ok = get(t, who);
      EXPECT_NE(ok.status, 401) << ok.show();
      EXPECT_NE(ok.status, 403) << ok.show();
    }
  }
}

// /ui/api/cluster: the nodes (lost ones too), capacity and use of the live
// ones, each configured leaf and the reservation as queues with their
// counts, and the live apps (not the killed one).
TEST_F(WebUiTest, ClusterViewMatchesTheKnownState) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply r = get("/ui/api/cluster", kBob);
  ASSERT_EQ(r.status, 200) << r.show();
  EXPECT_EQ(r.headers["content-type"], "application/json");
  auto res = [](int64_t mib, int64_t vcores) {
    return json{{"memory_mib", mib}, {"vcores", vcores}};
  };
  auto app = [&](const AppId& id, const std::string& name, const std::string& user,
                 const std::string& queue, const std::string& reservation, const std::string& state,
                 int containers, const json& used, int64_t submit) {
    return json{{"id", id.value()},
                {"name", name},
                {"user", user},
                {"queue", queue},
                {"reservation", reservation},
                {"state", state},
                {"progress", 0.0},
                {"containers", containers},
                {"used", used},
                {"submit_ms", submit},
                {"pending_reasons", json::array()},  // no scheduling pass passed them over
                {"altruism", nullptr}};
  };
  const json expected = {
      {"now_ms", kT1},
      {"live_nodes", 1},
      {"lost_nodes", 1},
      {"capacity", res(8192, 8)},
      {"used", res(3072, 3)},
      {"nodes", json::array({{{"id", "nm1"},
                              {"live", true},
                              {"admin_state", "in-service"},
                              {"http_address", "127.0.0.1:8042"},
                              {"total", res(8192, 8)},
                              {"used", res(3072, 3)},
                              {"containers", 3},
                              {"last_heartbeat_ms", kT1}},
                             {{"id", "nm2"},
                              {"live", false},
                              {"admin_state", "in-service"},
                              {"http_address", "127.0.0.2:8042"},
                              {"total", res(4096, 4)},
                              {"used", res(0, 0)},
                              {"containers", 0},
                              {"last_heartbeat_ms", kT0}}})},
      {"queues", json::array({{{"name", "root.default"},
                               {"kind", "ad-hoc"},
                               {"weight", 3.0},
                               {"guarantee", res(0, 0)},
                               {"running", 1},
                               {"pending", 0},
                               {"used", res(3072, 3)}},
                              {{"name", "root.other"},
                               {"kind", "ad-hoc"},
                               {"weight", 1.0},
                               {"guarantee", res(0, 0)},
                               {"running", 0},
                               {"pending", 1},
                               {"used", res(0, 0)}},
                              {{"name", rid_},
                               {"kind", "reservation"},
                               {"weight", 0.0},
                               {"guarantee", res(2048, 2)},
                               {"running", 0},
                               {"pending", 1},
                               {"used", res(0, 0)}}})},
      {"apps",
       json::array({app(etl_, "etl", "alice", "root.default", "", "RUNNING", 3, res(3072, 3), kT0),
                    app(probe_, "probe", "bob", "root.other", "", "SUBMITTED", 0, res(0, 0), kT1),
                    app(in_res_, "in-res", "alice", "", rid_, "SUBMITTED", 0, res(0, 0), kT1)})}};
  EXPECT_EQ(r.parsed(), expected) << r.body;
}

// A config reload's new weights show on the page at once: the UI reads the
// scheduler's queues, not the weights the RM started with.
TEST_F(WebUiTest, QueueWeightsFollowAReload) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  ASSERT_TRUE(rm_->runtime().setQueueConfig({{"root.default", 1}, {"root.other", 5}}, {}).isOk());
  Reply r = get("/ui/api/cluster", kBob);
  ASSERT_EQ(r.status, 200) << r.show();
  const json page = r.parsed();
  std::map<std::string, double> weights;
  for (const auto& q : page["queues"]) {
    if (q["kind"] == "ad-hoc") weights[q["name"].get<std::string>()] = q["weight"].get<double>();
  }
  EXPECT_EQ(weights, (std::map<std::string, double>{{"root.default", 1}, {"root.other", 5}}))
      << r.body;
}

// /ui/api/plan over the LCM day containing now (1 day, 60 s steps: 720
// points of 2 steps): alice's reservation holds 2 GiB / 2 vcores in the
// five points of [t0, t0 + 10 min) and nothing elsewhere.
TEST_F(WebUiTest, PlanSeriesHoldsTheReservationWhereItIsPlaced) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply r = get("/ui/api/plan", kCarol);
  ASSERT_EQ(r.status, 200) << r.show();
  const int64_t day = 86'400'000;
  const int64_t from = kT0 / day * day;
  const int64_t bucket = 2 * kStepMs;
  json mem = json::array();
  json cores = json::array();
  for (int64_t i = 0; i < 720; i++) {
    int64_t start = from + i * bucket;
    bool held = start >= kT0 && start < kT0 + 600'000;
    mem.push_back(held ? 2048 : 0);
    cores.push_back(held ? 2 : 0);
  }
  const json expected = {{"now_ms", kT1},
                         {"from_ms", from},
                         {"to_ms", from + day},
                         {"bucket_ms", bucket},
                         {"plan_step_ms", kStepMs},
                         {"capacity", {{"memory_mib", 8192}, {"vcores", 8}}},
                         {"series", json::array({{{"memory_mib", mem},
                                                  {"vcores", cores},
                                                  {"id", rid_},
                                                  {"name", "nightly"},
                                                  {"user", "alice"},
                                                  {"queue", "default"},
                                                  {"periodic", false},
                                                  {"status", "active"}}})}};
  EXPECT_EQ(r.parsed(), expected) << r.body;
}

// /ui/api/reservation?id=: the definition, the planned allocation as
// offsets into the window, no runs yet, the pending app not running; a
// missing id is 400 naming id, an unknown one 404 naming it.
TEST_F(WebUiTest, ReservationDetailAndItsErrors) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply r = get("/ui/api/reservation?id=" + rid_, kBob);
  ASSERT_EQ(r.status, 200) << r.show();
  json got = r.parsed();
  // The planned intervals tile [0, 10 min) of the window at 2 GiB / 2 vcores.
  int64_t next = 0;
  for (const auto& p : got["planned"]) {
    EXPECT_EQ(p["offset_ms"], next) << got.dump();
    EXPECT_EQ(p["resource"], (json{{"memory_mib", 2048}, {"vcores", 2}})) << got.dump();
    next = p["end_offset_ms"].get<int64_t>();
  }
  EXPECT_EQ(next, 600'000) << got.dump();
  got.erase("planned");
  const json expected = {{"id", rid_},
                         {"name", "nightly"},
                         {"user", "alice"},
                         {"queue", "default"},
                         {"recurrence_key", ""},
                         {"status", "active"},
                         {"status_reason", ""},
                         {"arrival_ms", kT0},
                         {"deadline_ms", kT0 + 600'000},
                         {"period_ms", 0},
                         {"window_ms", 600'000},
                         {"budget_container_ms", 0},
                         {"budget_used_container_ms", 0},
                         {"runs", json::array()},
                         {"running", json::array()},
                         {"dra_history", json::array()}};
  EXPECT_EQ(got, expected) << r.body;

  Reply none = get("/ui/api/reservation", kBob);
  expectJsonError(none, 400, "INVALID_ARGUMENT");
  EXPECT_EQ(none.parsed()["error"]["message"], "id: is required");
  expectJsonError(get("/ui/api/reservation?id=", kBob), 400, "INVALID_ARGUMENT");
  Reply unknown = get("/ui/api/reservation?id=reservation_1_99", kBob);
  expectJsonError(unknown, 404, "NOT_FOUND");
  EXPECT_EQ(unknown.parsed()["error"]["message"], "reservation 'reservation_1_99'");
}

// Without rm.inference-address the proposal list says so (200).
TEST_F(WebUiTest, ProposalsWithoutInferenceSayNotConfigured) {
  Reply r = get("/ui/api/proposals", kAlice);
  ASSERT_EQ(r.status, 200) << r.show();
  EXPECT_EQ(r.parsed(),
            (json{{"configured", false},
                  {"message",
                   "no inference service configured (rm.inference-address); proposals are "
                   "listed by `morpheusctl slo list` against morpheus-inference"}}));
}

// Paths below /ui the RM does not serve are 404; a known path with another
// method 405 with Allow: GET; nothing outside the embedded files is
// reachable. Under /ui/api/ those answers are the data endpoints' JSON
// error, elsewhere (the page's paths) plain text.
TEST_F(WebUiTest, UnknownPathsAre404AndOtherMethodsAre405) {
  for (const char* t :
       {"/ui/api/nope", "/ui/api", "/ui/api/", "/ui/nope.js", "/ui/../src/rm/http/ui/app.js",
        "/ui/%2e%2e/etc/passwd", "/ui/api/cluster/x", "/index.html", "/ui/ui_assets.h"}) {
    Reply r = get(t, kOps);
    EXPECT_EQ(r.status, 404) << t;
    if (std::string(t).starts_with("/ui/api/")) {
      expectJsonError(r, 404, "NOT_FOUND");
    } else {
      EXPECT_EQ(r.headers["content-type"], "text/plain; charset=utf-8") << t;
      EXPECT_EQ(r.body, "NOT_FOUND: no resource at " + std::string(t) + "\n") << t;
    }
  }
  for (const char* t : {"/", "/ui/", "/ui/app.js", "/ui/api/cluster", "/ui/api/plan",
                        "/ui/api/reservation", "/ui/api/proposals"}) {
    for (const char* method : {"POST", "PUT", "DELETE"}) {
      Reply r = call(method, t, kOps, "{}");
      EXPECT_EQ(r.status, 405) << method << " " << t;
      EXPECT_EQ(r.headers["allow"], "GET") << method << " " << t;
      if (std::string(t).starts_with("/ui/api/")) expectJsonError(r, 405, "INVALID_ARGUMENT");
    }
  }
}

// No data answer, to a user or an admin, carries a token, the RM's token
// key, a node's container-token key, an AM token or a launch context.
TEST_F(WebUiTest, NoDataAnswerCarriesASecret) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  for (const std::string& who : {kAlice, kOps, std::string(), kNode}) {
    for (const std::string& t :
         {std::string("/ui/api/cluster"), std::string("/ui/api/plan"),
          "/ui/api/reservation?id=" + rid_, std::string("/ui/api/proposals")}) {
      Reply r = get(t, who);
      ASSERT_NE(r.status, 0) << t;
      expectNoSecret(r, t);
    }
  }
}

// A reservation id that is not UTF-8 once percent-decoded, or a malformed
// escape in it, is 400 naming id in the data endpoints' JSON error shape
// (the value shown percent-encoded, as the client wrote it), never echoed
// raw into the JSON answer.
TEST_F(WebUiTest, UndecodableReservationIdIs400NamingId) {
  Reply r = get("/ui/api/reservation?id=%FF", kAlice);
  expectJsonError(r, 400, "INVALID_ARGUMENT");
  EXPECT_EQ(r.parsed()["error"]["message"], "id: '%FF' is not UTF-8 once percent-decoded");
  Reply escape = get("/ui/api/reservation?id=reservation_%zz", kAlice);
  expectJsonError(escape, 400, "INVALID_ARGUMENT");
  EXPECT_EQ(escape.parsed()["error"]["message"],
            "id: malformed percent escape '%zz' in 'reservation_%zz' (a '%' is followed by two "
            "hex digits)");
}

// An InferenceService on 127.0.0.1:<free port> in this process with two
// pending proposals (alice's and bob's) and one non-actionable job; it
// records what the RM sent.
class FakeInference final : public v1::InferenceService::Service {
 public:
  grpc::Status ListProposals(grpc::ServerContext* ctx, const v1::ListProposalsRequest* req,
                             v1::ListProposalsResponse* resp) override {
    calls++;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = ctx->client_metadata().find("authorization");
      authorization = it == ctx->client_metadata().end()
                          ? ""
                          : std::string(it->second.data(), it->second.size());
      state = req->state();
    }
    for (const auto& [id, owner] :
         std::vector<std::pair<std::string, std::string>>{{"p-alice", "alice"}, {"p-bob", "bob"}}) {
      auto* p = resp->add_proposals();
      p->set_proposal_id(id);
      p->set_owner(owner);
      p->set_job_key(owner + "-hourly");
      p->set_state(v1::PROPOSAL_PENDING);
    }
    auto* na = resp->add_not_actionable();
    na->set_job_key("bob-secret-job");
    na->set_reason("too few runs");
    return grpc::Status::OK;
  }
  std::atomic<int> calls{0};
  std::mutex mu;
  std::string authorization;  // GUARDED_BY(mu)
  int state = -1;             // GUARDED_BY(mu)
};

class WebUiProposalsTest : public WebUiTest {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&fake_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_ != nullptr);
    ASSERT_GT(port, 0);
    inference_address_ = "127.0.0.1:" + std::to_string(port);
    RmHttpTest::SetUp();
  }
  void TearDown() override {
    RmHttpTest::TearDown();
    if (server_) server_->Shutdown();
  }
  std::vector<std::string> idsFor(const std::string& token, json* out = nullptr) {
    Reply r = get("/ui/api/proposals", token);
    EXPECT_EQ(r.status, 200) << r.show();
    json j = r.parsed();
    EXPECT_EQ(j["configured"], true) << r.body;
    EXPECT_EQ(j["address"], inference_address_) << r.body;
    std::vector<std::string> ids;
    for (const auto& p : j["proposals"]) ids.push_back(p["proposal_id"]);
    expectNoSecret(r, "/ui/api/proposals");
    if (out) *out = j;
    return ids;
  }

  FakeInference fake_;
  std::unique_ptr<grpc::Server> server_;
};

// The RM asks for pending proposals with rm.inference-token-file's token;
// a user sees only their own proposals and no other owners' job names, an
// admin (token role or rm.admins) sees everything; one answer is reused for
// 3 s of the RM's clock.
TEST_F(WebUiProposalsTest, EachUserSeesOwnProposalsAdminsSeeAll) {
  using V = std::vector<std::string>;
  json alice, ops;
  EXPECT_EQ(idsFor(kAlice, &alice), V({"p-alice"}));
  EXPECT_FALSE(alice.contains("not_actionable")) << alice.dump();
  EXPECT_EQ(idsFor(kBob), V({"p-bob"}));
  EXPECT_EQ(idsFor(kCarol), V{});
  EXPECT_EQ(idsFor(kOps, &ops), V({"p-alice", "p-bob"}));
  ASSERT_EQ(ops["not_actionable"].size(), 1u) << ops.dump();
  EXPECT_EQ(ops["not_actionable"][0]["job_key"], "bob-secret-job");
  EXPECT_EQ(idsFor(kRooty), V({"p-alice", "p-bob"}));
  {
    std::lock_guard<std::mutex> lk(fake_.mu);
    EXPECT_EQ(fake_.authorization, "Bearer " + kInferenceToken);
    EXPECT_EQ(fake_.state, v1::PROPOSAL_PENDING);
  }
  EXPECT_EQ(fake_.calls.load(), 1) << "one answer serves every reader for 3 s";
  clock_.advance(Millis(2'999));
  idsFor(kAlice);
  EXPECT_EQ(fake_.calls.load(), 1);
  clock_.advance(Millis(1));
  idsFor(kAlice);
  EXPECT_EQ(fake_.calls.load(), 2);
}

class WebUiDeadInferenceTest : public WebUiTest {
 protected:
  void SetUp() override {
    inference_address_ = "127.0.0.1:1";  // nothing listens there
    RmHttpTest::SetUp();
  }
};

// An unreachable inference service is a 503 naming its address (not an
// empty list), without the RM's inference token.
TEST_F(WebUiDeadInferenceTest, UnreachableInferenceIs503NamingTheAddress) {
  Reply r = get("/ui/api/proposals", kAlice);
  expectJsonError(r, 503, "UNAVAILABLE");
  EXPECT_NE(r.body.find("inference service at 127.0.0.1:1 did not list proposals"),
            std::string::npos)
      << r.show();
  expectNoSecret(r, "/ui/api/proposals");
}

}  // namespace
}  // namespace morpheus::rm::httptest
