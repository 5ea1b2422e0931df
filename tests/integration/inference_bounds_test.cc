// FitSkyline against a real morpheus-inference on loopback (authentication
// on): the caller needs a token, a fit is bounded in its step and size
// (skyline.min-fit-step, skyline.max-fit-samples) and in time
// (skyline.max-fit-time), and a running fit stops when its caller goes away
// and when the daemon gets SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <string>

#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/inference.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kMin = 60000, kHour = 60 * kMin;

// `runs` runs of 3 h each, sampled every minute, fitted at `step_ms`.
v1::FitSkylineRequest threeHourRuns(int runs, int64_t step_ms) {
  v1::FitSkylineRequest req;
  req.set_step_ms(step_ms);
  const int64_t t0 = 1'790'000'000'000;
  for (int i = 0; i < runs; i++) {
    auto* r = req.add_runs();
    r->set_job_key("etl");
    r->set_run_id("etl-" + std::to_string(i));
    r->set_submit_ms(t0 + i * 24 * kHour);
    r->set_start_ms(r->submit_ms());
    r->set_end_ms(r->start_ms() + 3 * kHour);
    r->set_step_ms(kMin);
    for (int k = 0; k < 180; k++) r->add_skyline(2 + (k + i) % 5);
  }
  return req;
}

struct FitOutcome {
  grpc::Status status;
  v1::FitSkylineResponse response;
};

// FitSkyline presenting `bearer` ("" = no authorization) with a `deadline`.
FitOutcome fit(const std::string& address, const std::string& bearer,
               const v1::FitSkylineRequest& req, Millis deadline) {
  auto stub = v1::InferenceService::NewStub(makeChannel(address, TlsOptions{}));
  auto ctx = makeContext(deadline);
  if (!bearer.empty()) ctx->AddMetadata("authorization", "Bearer " + bearer);
  FitOutcome out;
  out.status = stub->FitSkyline(ctx.get(), req, &out.response);
  return out;
}

// The value of an unlabelled metric on the daemon's /metrics (-1 if absent).
double metric(const Process& p, const std::string& name) {
  auto r = httpRequest(p.httpAddress(), "GET", "/metrics");
  auto at = r.body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(r.body.substr(at + name.size() + 2));
}

Process startInference(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--rm", "127.0.0.1:1", "--token-file", testTokenFile()};
  args.insert(args.end(), extra.begin(), extra.end());
  return Process::startDaemon("inference", freshDir("inference"), args);
}

// The attack: 3 runs of 3 h at step_ms=20 with no token. Before, it was
// fitted (540,000 steps per run; the RSS went past 1 GB, a core stayed busy
// for minutes) and SIGTERM waited for it. Now it is PERMISSION_DENIED, with
// a token the step is refused naming skyline.min-fit-step, a fit larger than
// skyline.max-fit-samples is refused naming it, a normal fit still works and
// SIGTERM stops the daemon.
TEST(InferenceBoundsIT, FitSkylineNeedsATokenAndABoundedStep) {
  Process inf = startInference();
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  const v1::FitSkylineRequest attack = threeHourRuns(3, 20);

  for (const std::string& bearer : {std::string(), std::string("not-a-known-token")}) {
    FitOutcome anon = fit(inf.grpcAddress(), bearer, attack, Millis(10000));
    EXPECT_EQ(anon.status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << "bearer '" << bearer << "': " << anon.status.error_message();
    EXPECT_EQ(anon.response.skyline_size(), 0);
  }

  FitOutcome small_step = fit(inf.grpcAddress(), testToken("alice"), attack, Millis(10000));
  EXPECT_EQ(small_step.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << small_step.status.error_message();
  EXPECT_EQ(small_step.status.error_message().rfind("step_ms: 20 ", 0), 0u)
      << small_step.status.error_message();
  EXPECT_NE(small_step.status.error_message().find("skyline.min-fit-step"), std::string::npos)
      << small_step.status.error_message();

  // 50 runs x 10,800 one-second steps = 540,000 samples, over the default
  // skyline.max-fit-samples (500,000).
  FitOutcome too_big =
      fit(inf.grpcAddress(), testToken("alice"), threeHourRuns(50, 1000), Millis(10000));
  EXPECT_EQ(too_big.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << too_big.status.error_message();
  EXPECT_EQ(too_big.status.error_message().rfind("step_ms: ", 0), 0u)
      << too_big.status.error_message();
  EXPECT_NE(too_big.status.error_message().find("skyline.max-fit-samples"), std::string::npos)
      << too_big.status.error_message();

  // One-minute steps: 3 x 180 samples, fitted.
  FitOutcome ok = fit(inf.grpcAddress(), testToken("alice"), threeHourRuns(3, kMin), Millis(30000));
  ASSERT_TRUE(ok.status.ok()) << ok.status.error_message();
  EXPECT_EQ(ok.response.skyline_size(), 180);

  EXPECT_EQ(inf.signalAndWait(SIGTERM, 10s), 0) << inf.log();
}

// With the bounds raised by the operator, the attack's fit runs: it stops
// when its caller's deadline passes, at skyline.max-fit-time, and when the
// daemon gets SIGTERM (which then exits cleanly instead of waiting for it).
TEST(InferenceBoundsIT, ALongFitStopsForItsCallerItsTimeLimitAndSigterm) {
  const std::vector<std::string> raised = {"--set", "skyline.min-fit-step=1ms", "--set",
                                           "skyline.max-fit-samples=100000000"};
  const v1::FitSkylineRequest attack = threeHourRuns(3, 20);
  {
    std::vector<std::string> args = raised;
    args.insert(args.end(), {"--set", "skyline.max-fit-time=1s"});
    Process inf = startInference(args);
    ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
    // The caller gives up first: the fit stops (fits_running back to 0).
    FitOutcome gone = fit(inf.grpcAddress(), testToken("alice"), attack, Millis(300));
    EXPECT_EQ(gone.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << gone.status.error_message();
    // The time limit: FAILED_PRECONDITION naming the option.
    FitOutcome limited = fit(inf.grpcAddress(), testToken("alice"), attack, Millis(60000));
    EXPECT_EQ(limited.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
        << limited.status.error_message();
    EXPECT_NE(limited.status.error_message().find("skyline.max-fit-time"), std::string::npos)
        << limited.status.error_message();
    // Bounds far above the usual milliseconds, for a starved machine.
    EXPECT_TRUE(waitFor([&] { return metric(inf, "morpheus_inference_fits_running") == 0; }, 30s))
        << metric(inf, "morpheus_inference_fits_running");
    EXPECT_GE(metric(inf, "morpheus_inference_fits_stopped_total"), 2);
    EXPECT_EQ(inf.signalAndWait(SIGTERM, 30s), 0) << inf.log();
  }

  std::vector<std::string> args = raised;
  args.insert(args.end(), {"--set", "skyline.max-fit-time=1h"});
  Process inf = startInference(args);
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  auto running = std::async(std::launch::async, [&] {
    return fit(inf.grpcAddress(), testToken("alice"), attack, Millis(120000));
  });
  ASSERT_TRUE(waitFor([&] { return metric(inf, "morpheus_inference_fits_running") == 1; }, 20s))
      << inf.log();
  EXPECT_EQ(inf.signalAndWait(SIGTERM, 30s), 0) << "SIGTERM did not stop the fit: " << inf.log();
  FitOutcome stopped = running.get();
  EXPECT_FALSE(stopped.status.ok());
  EXPECT_EQ(stopped.response.skyline_size(), 0);
}

}  // namespace
}  // namespace morpheus::testing
