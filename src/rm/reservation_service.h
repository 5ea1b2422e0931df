// gRPC edge of the reservation system: protobuf <-> planner types.
#pragma once

#include "morpheus/v1/reservation.grpc.pb.h"
#include "rm/reservation_manager.h"

namespace morpheus::rm {

// Validates a wire definition into planner types (INVALID_ARGUMENT naming the
// field; the planner validates the semantics).
Result<planner::ReservationDefinition> fromProto(const v1::ReservationDefinition& d,
                                                 const std::string& user, const std::string& queue);
void toProto(const ReservationRecord& r, bool include_allocations, v1::ReservationReport* out);

class ReservationServiceImpl final : public v1::ReservationService::Service {
 public:
  explicit ReservationServiceImpl(ReservationManager& manager) : manager_(manager) {}

  grpc::Status NewReservation(grpc::ServerContext*, const v1::NewReservationRequest*,
                              v1::NewReservationResponse*) override;
  grpc::Status SubmitReservation(grpc::ServerContext*, const v1::SubmitReservationRequest*,
                                 v1::SubmitReservationResponse*) override;
  grpc::Status UpdateReservation(grpc::ServerContext*, const v1::UpdateReservationRequest*,
                                 v1::UpdateReservationResponse*) override;
  grpc::Status DeleteReservation(grpc::ServerContext*, const v1::DeleteReservationRequest*,
                                 v1::DeleteReservationResponse*) override;
  grpc::Status ListReservations(grpc::ServerContext*, const v1::ListReservationsRequest*,
                                v1::ListReservationsResponse*) override;
  grpc::Status GetPlan(grpc::ServerContext*, const v1::GetPlanRequest*,
                       v1::GetPlanResponse*) override;

 private:
  ReservationManager& manager_;
};

}  // namespace morpheus::rm
