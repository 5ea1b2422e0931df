#include "rm/rest.h"

#include "common/wire.h"
#include "rm/yarn_json.h"

namespace morpheus::rm {

using nlohmann::json;

namespace {

constexpr const char* kBase = "/ws/v1/cluster/reservation";

HttpResponse jsonResponse(int status, const json& j) {
  return HttpResponse{status, "application/json", j.dump()};
}

HttpResponse errorResponse(const Status& st) {
  return jsonResponse(httpStatusFor(st), yarnErrorJson(st));
}

HttpResponse fromGrpcStatus(const grpc::Status& st) {
  return errorResponse(withYarnFieldPath(fromGrpc(st)));
}

std::string actingUser(const HttpRequest& req, const std::string& body_user) {
  if (!body_user.empty()) return body_user;
  auto it = req.query.find("user.name");
  if (it != req.query.end() && !it->second.empty()) return it->second;
  return "anonymous";
}

Result<int64_t> queryInt(const HttpRequest& req, const std::string& name, int64_t def) {
  auto it = req.query.find(name);
  if (it == req.query.end() || it->second.empty()) return def;
  try {
    size_t pos = 0;
    int64_t v = std::stoll(it->second, &pos);
    if (pos == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  return invalidArgument(name, "'" + it->second + "' is not an integer");
}

}  // namespace

void registerReservationRest(HttpServer& http, v1::ReservationService::Service& service) {
  std::string base = kBase;
  http.route("POST", base + "/new-reservation", [&service](const HttpRequest&) {
    grpc::ServerContext ctx;
    v1::NewReservationResponse resp;
    v1::NewReservationRequest none;
    grpc::Status st = service.NewReservation(&ctx, &none, &resp);
    if (!st.ok()) return fromGrpcStatus(st);
    return jsonResponse(200, {{"reservation-id", resp.reservation_id()}});
  });

  http.route("POST", base + "/submit", [&service](const HttpRequest& req) {
    auto parsed = parseYarnSubmit(req.body);
    if (!parsed.isOk()) return errorResponse(parsed.status());
    v1::SubmitReservationRequest r = std::move(parsed).value();
    if (r.reservation_id().empty()) {
      return errorResponse(
          invalidArgument("reservation-id", "is required (POST new-reservation first)"));
    }
    r.set_user(actingUser(req, r.user()));
    grpc::ServerContext ctx;
    v1::SubmitReservationResponse resp;
    grpc::Status st = service.SubmitReservation(&ctx, &r, &resp);
    if (!st.ok()) return fromGrpcStatus(st);
    return jsonResponse(200, {{"reservation-id", resp.reservation_id()},
                              {"resource-allocations", yarnAllocationsJson(resp.allocations())}});
  });

  http.route("POST", base + "/update", [&service](const HttpRequest& req) {
    auto parsed = parseYarnSubmit(req.body);
    if (!parsed.isOk()) return errorResponse(parsed.status());
    if (parsed->reservation_id().empty()) {
      return errorResponse(invalidArgument("reservation-id", "is required"));
    }
    v1::UpdateReservationRequest r;
    r.set_reservation_id(parsed->reservation_id());
    r.set_user(actingUser(req, parsed->user()));
    *r.mutable_definition() = parsed->definition();
    grpc::ServerContext ctx;
    v1::UpdateReservationResponse resp;
    grpc::Status st = service.UpdateReservation(&ctx, &r, &resp);
    if (!st.ok()) return fromGrpcStatus(st);
    return jsonResponse(200, {{"reservation-id", r.reservation_id()},
                              {"resource-allocations", yarnAllocationsJson(resp.allocations())}});
  });

  http.route("POST", base + "/delete", [&service](const HttpRequest& req) {
    auto id = parseYarnReservationId(req.body);
    if (!id.isOk()) return errorResponse(id.status());
    json body = json::parse(req.body, nullptr, false);
    v1::DeleteReservationRequest r;
    r.set_reservation_id(*id);
    r.set_user(actingUser(req, body.is_object() ? body.value("user", "") : ""));
    grpc::ServerContext ctx;
    v1::DeleteReservationResponse resp;
    grpc::Status st = service.DeleteReservation(&ctx, &r, &resp);
    if (!st.ok()) return fromGrpcStatus(st);
    return jsonResponse(200, json::object());
  });

  http.route("GET", base + "/list", [&service](const HttpRequest& req) {
    v1::ListReservationsRequest r;
    auto q = req.query.find("queue");
    if (q != req.query.end()) r.set_queue(q->second);
    auto id = req.query.find("reservation-id");
    if (id != req.query.end()) r.set_reservation_id(id->second);
    auto start = queryInt(req, "start-time", 0);
    if (!start.isOk()) return errorResponse(start.status());
    auto end = queryInt(req, "end-time", 0);
    if (!end.isOk()) return errorResponse(end.status());
    if (*start < 0) return errorResponse(invalidArgument("start-time", "must be >= 0"));
    if (*end != 0 && *end < *start) {
      return errorResponse(invalidArgument("end-time", "must not be before start-time"));
    }
    r.set_start_ms(*start);
    r.set_end_ms(*end);
    auto inc = req.query.find("include-resource-allocations");
    bool include = inc != req.query.end() && (inc->second == "true" || inc->second == "1");
    r.set_include_allocations(include);
    grpc::ServerContext ctx;
    v1::ListReservationsResponse resp;
    grpc::Status st = service.ListReservations(&ctx, &r, &resp);
    if (!st.ok()) return fromGrpcStatus(st);
    return jsonResponse(200, yarnListJson(resp, include));
  });
}

}  // namespace morpheus::rm
