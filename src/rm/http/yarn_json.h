// YARN-compatible reservation JSON (the ReservationSystem REST API's field
// names) <-> the wire API. Used by the RM's REST endpoints and by
// `morpheusctl reservation submit -f FILE`.
//
// Accepted document (numbers may also be given as strings):
//   {"reservation-id": "...", "queue": "default", "user": "alice",   // user: Morpheus extension
//    "reservation-definition": {
//      "arrival": MS, "deadline": MS, "reservation-name": "...", "priority": 0,
//      "recurrence-expression": "86400000",        // period in ms; "0" or absent = one-off
//      "recurrence-key": "...", "problematic": false,           // Morpheus extensions
//      "reprovision-budget": CONTAINER_MS,                       // Morpheus extension
//      "reservation-requests": {
//        "reservation-request-interpreter": 0..3,  // 0 ANY, 1 ALL, 2 ORDER, 3 ORDER_NO_GAP
//        "reservation-request": [{"capability": {"memory": MIB, "vCores": N},
//                                 "num-containers": N, "min-concurrency": N, "duration": MS}]}}}
// "reservation-request" may be a single object instead of a list (YARN's
// JAXB quirk). Errors are INVALID_ARGUMENT naming the JSON path of the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "morpheus/v1/reservation.pb.h"

namespace morpheus::rm {

// The YARN JSON path of a wire-API (gRPC) field path, e.g.
// "definition.stages[0].duration_ms" ->
// "reservation-definition.reservation-requests.reservation-request[0].duration".
// Unknown paths are returned unchanged.
std::string yarnFieldPath(const std::string& grpc_field);
// An INVALID_ARGUMENT "<field>: ..." from the wire API with its field renamed
// by yarnFieldPath (other statuses unchanged): what the REST edge reports.
Status withYarnFieldPath(const Status& s);

Result<v1::ReservationDefinition> parseYarnDefinition(const nlohmann::json& j,
                                                      const std::string& path);
// Parses a whole submit/update document.
Result<v1::SubmitReservationRequest> parseYarnSubmit(const std::string& body);
// Parses {"reservation-id": "..."} (delete).
Result<std::string> parseYarnReservationId(const std::string& body);

nlohmann::json yarnDefinitionJson(const v1::ReservationDefinition& d);
nlohmann::json yarnAllocationsJson(
    const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocations);
// {"reservations": [{acceptance-time, user, reservation-id, queue,
//   reservation-definition, resource-allocations, morpheus-status,
//   morpheus-reprovisioning {budget, budget-used, history [{time, policy,
//   granted, extra {memory, vCores}, duration, reason}]}}]}
nlohmann::json yarnListJson(const v1::ListReservationsResponse& list, bool include_allocations);
// YARN's error shape: {"RemoteException": {"exception", "message", "javaClassName"}}.
nlohmann::json yarnErrorJson(const Status& s);

}  // namespace morpheus::rm
