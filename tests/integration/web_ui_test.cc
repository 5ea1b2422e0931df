// The RM's web UI in a real browser. A real RM + NMs on loopback,
// reservations submitted through morpheusctl, and the page at /ui/ loaded in
// Debian's headless Chromium: the rendered DOM must hold one chart series per
// reservation that exists, and a screenshot is saved under the build dir.
// Skips (with the reason) when chromium is not installed; CI installs it
// (deploy/install-deps.sh).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "browser.h"
#include "harness.h"
#include "test_paths.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A reservation definition: `containers` x (1024 MiB, 1 vcore) for 5 min in
// [arrival, arrival + 10 min), recurring every `period_ms` (0 = one-off).
json definition(const std::string& name, int64_t arrival, int containers, int64_t period_ms) {
  return {{"arrival", arrival},
          {"deadline", arrival + 600000},
          {"reservation-name", name},
          {"recurrence-expression", std::to_string(period_ms)},
          {"reservation-requests",
           {{"reservation-request-interpreter", 1},
            {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                  {"num-containers", containers},
                                                  {"min-concurrency", containers},
                                                  {"duration", 300000}}})}}}};
}

class WebUiIT : public ClusterTest {};

// GET `target` from `address` with `headers`: the status and the response
// headers, names in lower case (0 and none when it could not connect).
std::pair<int, std::map<std::string, std::string>> responseHeaders(
    const std::string& address, const std::string& target,
    const std::map<std::string, std::string>& headers) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  std::map<std::string, std::string> out;
  try {
    auto colon = address.rfind(':');
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket sock(io);
    sock.connect({boost::asio::ip::make_address(address.substr(0, colon)),
                  static_cast<unsigned short>(std::stoi(address.substr(colon + 1)))});
    http::request<http::string_body> req(http::verb::get, target, 11);
    req.set(http::field::host, address);
    for (const auto& [name, value] : headers) req.set(name, value);
    http::write(sock, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(sock, buf, res);
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out[name] = std::string(f.value());
    }
    return {static_cast<int>(res.result_int()), out};
  } catch (const std::exception&) {
    return {0, out};
  }
}

// Series ids of the rendered chart: data-reservation attributes inside #chart.
std::multiset<std::string> chartSeries(const std::string& dom) {
  std::multiset<std::string> ids;
  auto chart = dom.find("id=\"chart\"");
  if (chart == std::string::npos) return ids;
  auto end = dom.find("id=\"legend\"", chart);
  std::string part = dom.substr(chart, end == std::string::npos ? std::string::npos : end - chart);
  std::regex re("class=\"series[^\"]*\" data-reservation=\"([^\"]+)\"");
  for (std::sregex_iterator it(part.begin(), part.end(), re), e; it != e; ++it)
    ids.insert((*it)[1]);
  return ids;
}

// Static assets are public, the data needs a token; in Chromium the chart has
// exactly one series per existing reservation, and a screenshot is saved
// (the browser part is skipped, with the reason, when chromium is absent).
TEST_F(WebUiIT, ChartShowsEveryReservationInHeadlessChromium) {
  startCluster(2);
  const std::string addr = rm_.httpAddress();
  auto page = httpRequest(addr, "GET", "/ui/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("/ui/app.js"), std::string::npos);
  EXPECT_EQ(httpRequest(addr, "GET", "/").status, 200);
  EXPECT_EQ(httpRequest(addr, "GET", "/ui/app.js").status, 200);
  for (const char* api :
       {"/ui/api/cluster", "/ui/api/plan", "/ui/api/reservation?id=x", "/ui/api/proposals"}) {
    EXPECT_EQ(httpRequest(addr, "GET", api).status, 401) << api;  // data needs a token
  }
  EXPECT_EQ(httpRequest(addr, "GET", "/ui/api/reservation", "", "", bearer("bob")).status, 400);
  EXPECT_EQ(httpRequest(addr, "GET", "/ui/api/reservation?id=nope", "", "", bearer("bob")).status,
            404);
  EXPECT_EQ(httpRequest(addr, "GET", "/ui/api/cluster", "", "", bearer("nm1")).status, 403);

  const int64_t arrival = (nowMs() / 60000 + 2) * 60000;
  std::string periodic = submitReservation(definition("hourly-etl", arrival, 2, 3600000));
  std::string one_off = submitReservation(definition("backfill", arrival, 1, 0));
  ASSERT_FALSE(periodic.empty());
  ASSERT_FALSE(one_off.empty());

  // The JSON the page draws: the periodic reservation holds 2 GiB in every hour.
  auto t_plan = std::chrono::steady_clock::now();
  auto plan_resp = httpRequest(addr, "GET", "/ui/api/plan", "", "", bearer("alice"));
  std::cout << "GET /ui/api/plan (2 reservations, 1440 plan steps): "
            << std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::steady_clock::now() - t_plan)
                   .count()
            << " us, " << plan_resp.body.size() << " bytes\n";
  auto plan = json::parse(plan_resp.body, nullptr, false);
  ASSERT_FALSE(plan.is_discarded());
  ASSERT_EQ(plan["series"].size(), 2u);
  for (const auto& s : plan["series"]) {
    if (s["id"] != periodic) continue;
    int64_t peak = 0;
    for (const auto& v : s["memory_mib"]) peak = std::max<int64_t>(peak, v.get<int64_t>());
    EXPECT_EQ(peak, 2048);
  }
  EXPECT_EQ(plan["capacity"]["memory_mib"], 2 * 4096);

  if (chromiumBinary().empty()) {
    GTEST_SKIP()
        << "chromium not installed (Debian package 'chromium', see "
           "deploy/install-deps.sh; or set MORPHEUS_CHROMIUM): web UI browser test skipped";
  }
  // The page opens the periodic reservation's detail (#reservation=) too.
  const std::string url =
      "http://" + addr + "/ui/#token=" + testToken("alice") + "&reservation=" + periodic;
  auto t0 = std::chrono::steady_clock::now();
  BrowserRun dom = runChromium({"--virtual-time-budget=4000", "--dump-dom", url}, 25s);
  ASSERT_EQ(dom.exit_code, 0) << dom.log;
  EXPECT_NE(dom.output.find("data-state=\"ready\""), std::string::npos) << dom.output << dom.log;
  EXPECT_EQ(chartSeries(dom.output), (std::multiset<std::string>{periodic, one_off})) << dom.output;
  EXPECT_NE(dom.output.find("class=\"now\""), std::string::npos);
  EXPECT_NE(dom.output.find("class=\"capacity\""), std::string::npos);
  EXPECT_NE(dom.output.find("hourly-etl"), std::string::npos);        // legend
  EXPECT_EQ(dom.output.find(testToken("alice")), std::string::npos);  // never rendered
  // The detail: its id, one planned rectangle per allocation of the placement.
  EXPECT_NE(dom.output.find("id=\"detail-id\">" + periodic), std::string::npos);
  EXPECT_NE(dom.output.find("class=\"planned\""), std::string::npos);

  // A wrong token: the page asks for one and shows no data.
  BrowserRun refused = runChromium(
      {"--virtual-time-budget=3000", "--dump-dom", "http://" + addr + "/ui/#token=not-a-token"},
      25s);
  ASSERT_EQ(refused.exit_code, 0) << refused.log;
  EXPECT_NE(refused.output.find("data-state=\"login\""), std::string::npos) << refused.output;
  EXPECT_EQ(chartSeries(refused.output).size(), 0u) << refused.output;

  std::string artifacts = std::string(buildBinDir()) + "/../test-artifacts";
  std::filesystem::create_directories(artifacts);
  std::string png = std::filesystem::weakly_canonical(artifacts + "/web_ui.png").string();
  std::filesystem::remove(png);
  BrowserRun shot = runChromium(
      {"--virtual-time-budget=4000", "--window-size=1280,1800", "--screenshot=" + png, url}, 25s);
  ASSERT_EQ(shot.exit_code, 0) << shot.log;
  std::ifstream f(png, std::ios::binary);
  std::string head(8, '\0');
  f.read(head.data(), 8);
  EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8)) << png;
  std::cout << "web UI screenshot: " << png << " (" << std::filesystem::file_size(png)
            << " bytes); browser runs took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - t0)
                   .count()
            << " ms\n";
}

// Two days of an hourly job of alice's (runs of 10 min of 2-3 containers,
// input written 2 min into the hour, output read 15 min after the run) as
// `history import` JSON lines, ending an hour before `now`.
void writeHourlyHistory(const std::string& path, int64_t now) {
  constexpr int64_t kMin = 60000, kHour = 60 * kMin;
  std::ofstream out(path);
  const int64_t first = (now / kHour - 49) * kHour;
  for (int n = 0; n < 48; n++) {
    const int64_t base = first + n * kHour, submit = base + 4 * kMin, end = submit + 10 * kMin;
    const std::string run = "web-report-" + std::to_string(n);
    std::vector<int> sky;
    for (int k = 0; k < 10; k++) sky.push_back(2 + (k + n) % 2);
    writeHistoryRun(out, {"web-report", run, "alice", submit, submit, end, sky});
    const std::string in = "/data/web/in/" + std::to_string(n);
    const std::string result = "/data/web/out/" + std::to_string(n);
    writeHistoryEvent(out, "ingest", "ingest-" + run, in, "write", base + 2 * kMin);
    writeHistoryEvent(out, "web-report", run, in, "read", submit + 1000);
    writeHistoryEvent(out, "web-report", run, result, "write", end - 1000);
    writeHistoryEvent(out, "dashboard", "dash-" + run, result, "read", end + 15 * kMin);
  }
}

// The proposals panel: the RM reads pending proposals from a real
// morpheus-inference with its rm.inference token and the page lists each
// user's own (an admin's page all of them); an unreachable service is a 503
// naming its address, not an empty list. Before, any user token (bob's) read
// every owner's proposals through the RM's inference token.
TEST_F(WebUiIT, ProposalsPanelReadsPendingProposalsFromInference) {
  const std::string tokens = testTokenFile();
  const std::string inf_dir = freshDir("inference");
  // Inference calls the RM only to submit accepted proposals (not done here).
  Process inference =
      Process::startDaemon("inference", inf_dir, {"--rm", "127.0.0.1:1", "--token-file", tokens});
  ASSERT_FALSE(inference.grpcAddress().empty()) << inference.log();
  auto infCtl = [&](const std::string& who, std::vector<std::string> args) {
    std::vector<std::string> argv = {binary("morpheusctl"), "--inference", inference.grpcAddress(),
                                     "--token", testToken(who)};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
  };
  const std::string history = inf_dir + "-history.jsonl";
  writeHourlyHistory(history, nowMs());
  auto [ci, oi] = infCtl("alice", {"history", "import", history, "--format", "jsonl"});
  ASSERT_EQ(ci, 0) << oi;
  json pending;
  ASSERT_TRUE(waitFor(
      [&] {
        infCtl("ops", {"slo", "refit"});
        auto [code, out] = infCtl("alice", {"slo", "list", "--state", "pending", "--json"});
        pending = json::parse(out, nullptr, false);
        return code == 0 && !pending.is_discarded() && !pending["proposals"].empty();
      },
      20s))
      << pending.dump() << inference.log();
  const std::string proposal = pending["proposals"][0]["proposal_id"];

  const std::string rm_token = inf_dir + "-rm-token";
  writeSecretFile(rm_token, testToken("ops") + "\n");
  startCluster(1, {"--set", "rm.inference-address=" + inference.grpcAddress(), "--set",
                   "rm.inference-token-file=" + rm_token});
  const std::string addr = rm_.httpAddress();
  auto idsFor = [&](const std::string& who) {
    auto r = httpRequest(addr, "GET", "/ui/api/proposals", "", "", bearer(who));
    EXPECT_EQ(r.status, 200) << who << ": " << r.body;
    json listed = json::parse(r.body, nullptr, false);
    EXPECT_FALSE(listed.is_discarded()) << r.body;
    EXPECT_EQ(listed["configured"], true) << r.body;
    std::set<std::string> ids;
    for (const auto& p : listed["proposals"]) {
      ids.insert(p["proposal_id"].get<std::string>());
      if (who != "ops") {
        EXPECT_EQ(p["owner"], who) << r.body;
      }
    }
    if (who != "ops") {
      EXPECT_FALSE(listed.contains("not_actionable")) << r.body;
    }
    return ids;
  };
  EXPECT_EQ(idsFor("alice").count(proposal), 1u) << "alice owns it";
  EXPECT_EQ(idsFor("ops").count(proposal), 1u) << "an admin sees every proposal";
  EXPECT_TRUE(idsFor("bob").empty()) << "bob owns no proposal";
  HttpResult resp;

  if (chromiumBinary().empty()) {
    std::cout << "chromium not installed: the proposals panel is not checked in a browser\n";
  } else {
    BrowserRun dom = runChromium({"--virtual-time-budget=4000", "--dump-dom",
                                  "http://" + addr + "/ui/#token=" + testToken("alice")},
                                 25s);
    ASSERT_EQ(dom.exit_code, 0) << dom.log;
    auto table = dom.output.find("id=\"proposals\"");
    ASSERT_NE(table, std::string::npos) << dom.output;
    EXPECT_NE(dom.output.find(proposal, table), std::string::npos) << dom.output;
  }

  ASSERT_EQ(inference.signalAndWait(SIGTERM, 10s), 0) << inference.log();
  // The last answer is reused for up to 3 s; then the failure shows.
  EXPECT_TRUE(waitFor(
      [&] {
        resp = httpRequest(addr, "GET", "/ui/api/proposals", "", "", bearer("bob"));
        return resp.status == 503;
      },
      10s))
      << resp.status << " " << resp.body;
  EXPECT_NE(resp.body.find(inference.grpcAddress()), std::string::npos) << resp.body;
}

// Every HTTP answer of the RM (the page, its assets, its data, the REST
// surface, /metrics and errors) forbids framing and content sniffing and
// carries a Content-Security-Policy that allows only this server's scripts
// and styles (the page still renders under it: the Chromium test above).
// Before, none of these headers was sent.
TEST_F(WebUiIT, EveryAnswerCarriesSecurityHeaders) {
  ASSERT_NO_FATAL_FAILURE(startCluster(1));
  const std::string addr = rm_.httpAddress();
  struct Probe {
    std::string target;
    std::map<std::string, std::string> headers;
  };
  for (const Probe& p : std::vector<Probe>{{"/ui/", {}},
                                           {"/ui/app.js", {}},
                                           {"/ui/api/cluster", bearer("alice")},
                                           {"/ui/api/cluster", {}},
                                           {"/ws/v1/cluster/info", bearer("alice")},
                                           {"/metrics", {}},
                                           {"/no-such-page", {}}}) {
    auto [status, got] = responseHeaders(addr, p.target, p.headers);
    ASSERT_NE(status, 0) << p.target;
    EXPECT_EQ(got["x-frame-options"], "DENY") << p.target;
    EXPECT_EQ(got["x-content-type-options"], "nosniff") << p.target;
    const std::string csp = got["content-security-policy"];
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << p.target << ": " << csp;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << p.target << ": " << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << p.target << ": " << csp;
  }
}

}  // namespace
}  // namespace morpheus::testing
