// The reservation system's gRPC edge (ReservationServiceImpl) called in
// process over a real ReservationManager (SQLite in memory, virtual clock).
#include "rm/grpc/reservation_service.h"

#include <gtest/gtest.h>

#include "common/auth.h"
#include "rm/core/access.h"

namespace morpheus::rm {
namespace {

class ReservationServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(store::openStateStore("sqlite", ":memory:")).value();
    mgr_ = std::make_unique<ReservationManager>(
        ReservationManagerOptions{}, std::move(planner::Planner::create({}, Resource())).value(),
        *store_, clock_, metrics_);
    mgr_->onCapacity(Resource(8192, 8), true);
    service_ = std::make_unique<ReservationServiceImpl>(*mgr_, access_);
  }
  grpc::Status getPlan(int64_t start_ms, int64_t end_ms) {
    v1::GetPlanRequest req;
    req.set_start_ms(start_ms);
    req.set_end_ms(end_ms);
    v1::GetPlanResponse resp;
    grpc::ServerContext ctx;
    return service_->GetPlan(&ctx, &req, &resp);
  }
  // No server, so no token metadata: authentication off (the caller is an admin).
  const Authenticator auth_{{}, /*open=*/true};
  const RmAccess access_{auth_, {}, QueueAcls()};
  VirtualClock clock_{fromEpochMs(1800000000000)};
  MetricsRegistry metrics_;
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<ReservationManager> mgr_;
  std::unique_ptr<ReservationServiceImpl> service_;
};

// Fuzz finding (rm_grpc): plan queries after year 9999 are INVALID_ARGUMENT.
// The old handler overflowed int64 (start + 1 day, and the step walk up to
// end_ms) and answered OK with wrapped-around steps.
TEST_F(ReservationServiceTest, GetPlanRefusesTimesAfterYear9999) {
  grpc::Status st = getPlan(9223372036800000000, INT64_MAX);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "start_ms: must not be after year 9999");
  EXPECT_EQ(getPlan(1800000000000, 9223372036854775000).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(getPlan(1800000000000, 1800003600000).ok());
}

}  // namespace
}  // namespace morpheus::rm
