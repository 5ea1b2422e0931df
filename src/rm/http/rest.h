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
#include "rm/core/access.h"
#include "rm/grpc/reservation_service.h"

namespace morpheus::rm {

// `service` and `access` must outlive `http`. Every request is authenticated
// by its "Authorization: Bearer TOKEN" header: 401 without valid credentials,
// 403 for a node credential. The caller is the token's principal; a "user"
// field in the body or a `user.name` query parameter (YARN's pseudo auth)
// other than the caller is refused with 403 unless the caller is an admin.
// A handler that receives the authenticated caller.
using AuthedHandler = std::function<HttpResponse(const Principal&, const HttpRequest&)>;
// Wraps `h` so it runs only for a valid user token (see above): 401 with
// YARN's AuthenticationException without one, 403 for a node credential.
// `access` must outlive the handler.
HttpHandler authenticatedRest(const RmAccess& access, AuthedHandler h);

void registerReservationRest(HttpServer& http, ReservationServiceImpl& service,
                             const RmAccess& access);

}  // namespace morpheus::rm
