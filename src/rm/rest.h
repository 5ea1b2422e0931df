// The RM's YARN-compatible REST surface for reservations, on the RM's HTTP
// port (the ReservationSystem endpoints of the YARN RM web services):
//   POST /ws/v1/cluster/reservation/new-reservation
//   POST /ws/v1/cluster/reservation/submit | update | delete
//   GET  /ws/v1/cluster/reservation/list?queue=&reservation-id=&start-time=&end-time=
//                                       &include-resource-allocations=
// Requests are translated to the ReservationService (called in-process) so
// REST and gRPC share validation, planning and persistence.
#pragma once

#include "common/http_server.h"
#include "morpheus/v1/reservation.grpc.pb.h"

namespace morpheus::rm {

// `service` must outlive `http`. The acting user is the "user" field of the
// body, else the `user.name` query parameter (YARN's pseudo auth), else
// "anonymous".
void registerReservationRest(HttpServer& http, v1::ReservationService::Service& service);

}  // namespace morpheus::rm
