// gRPC edge of the reservation system: protobuf <-> planner types.
#pragma once

#include "morpheus/v1/reservation.grpc.pb.h"
#include "rm/core/access.h"
#include "rm/core/reservation_manager.h"

namespace morpheus::rm {

// Validates a wire definition into planner types (INVALID_ARGUMENT naming the
// field; the planner validates the semantics).
Result<planner::ReservationDefinition> fromProto(const v1::ReservationDefinition& d,
                                                 const std::string& user, const std::string& queue);
void toProto(const ReservationRecord& r, bool include_allocations, v1::ReservationReport* out);

// Every RPC first authenticates its caller (RmAccess); the *As forms take an
// already authenticated caller (the REST edge authenticates HTTP requests
// itself). Submit needs submit on the queue and an id NewReservation issued
// to the caller (or to the acting user; an admin may also use an id issued
// to nobody); update and delete need the owner, a queue administrator or an
// admin; a stated `user` other than the caller needs an admin. Listing is
// open to every authenticated user. `manager` and `access` must outlive the
// service.
class ReservationServiceImpl final : public v1::ReservationService::Service {
 public:
  ReservationServiceImpl(ReservationManager& manager, const RmAccess& access)
      : manager_(manager), access_(access) {}

  grpc::Status submitAs(const Principal& who, const v1::SubmitReservationRequest& req,
                        v1::SubmitReservationResponse* resp);
  grpc::Status updateAs(const Principal& who, const v1::UpdateReservationRequest& req,
                        v1::UpdateReservationResponse* resp);
  grpc::Status deleteAs(const Principal& who, const v1::DeleteReservationRequest& req);
  grpc::Status list(const v1::ListReservationsRequest& req, v1::ListReservationsResponse* resp);
  // An id issued to `who` (ReservationManager::issueId).
  Result<std::string> newIdFor(const Principal& who);

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
  const RmAccess& access_;
};

}  // namespace morpheus::rm
