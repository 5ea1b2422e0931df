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
// by its "Authorization: Bearer TOKEN" header: 401 without valid credentials
// (with the server's WWW-Authenticate: Bearer challenge), 403 for a node
// credential. The caller is the token's principal. A write (submit, update,
// delete) acts as the user a "user" field in the body or a `user.name` query
// parameter (YARN's pseudo auth) names: another user than the caller is
// refused with 403 unless the caller is an admin. The list acts as nobody:
// any user may read every reservation, so it ignores `user.name`.
//
// Errors, the HTTP server's own 400/404/405 under /ws/ included
// (yarnErrorAnswer), are YARN's RemoteException JSON naming the field or
// parameter.

// The path prefix of YARN's REST surfaces (reservation and cluster REST).
inline constexpr const char* kYarnRestPrefix = "/ws/";

// YARN's error shape, {"RemoteException": {"exception", "message",
// "javaClassName"}} (yarnErrorJson), answered with `http_status`: 400
// BadRequestException, 403 ForbiddenException, 404 NotFoundException, 405
// Jersey's WebApplicationException. An ErrorFormat (http_server.h): both REST
// surfaces register it for kYarnRestPrefix, so every error under /ws/ has
// one shape.
HttpResponse yarnErrorAnswer(int http_status, const Status& error);

// A handler that receives the authenticated caller.
using AuthedHandler = std::function<HttpResponse(const Principal&, const HttpRequest&)>;
// Wraps `h` so it runs only for a valid user token (see above): 401 with
// YARN's AuthenticationException without one, 403 for a node credential.
// `access` must outlive the handler.
HttpHandler authenticatedRest(const RmAccess& access, AuthedHandler h);

void registerReservationRest(HttpServer& http, ReservationServiceImpl& service,
                             const RmAccess& access);

}  // namespace morpheus::rm
