#include "rm/http/rest.h"

#include "common/wire.h"
#include "rm/http/yarn_json.h"

namespace morpheus::rm {

using nlohmann::json;

namespace {

constexpr const char* kBase = "/ws/v1/cluster/reservation";

HttpResponse jsonResponse(int status, const json& j) { return jsonAnswer(status, j); }

HttpResponse errorResponse(const Status& st) { return yarnErrorAnswer(httpStatusFor(st), st); }

HttpResponse fromGrpcStatus(const grpc::Status& st) {
  return errorResponse(withYarnFieldPath(fromGrpc(st)));
}

// The user the request names: the body's "user", else `user.name`, else ""
// (the caller). Both given and different: INVALID_ARGUMENT.
Result<std::string> statedUser(const HttpRequest& req, const std::string& body_user) {
  auto it = req.query.find("user.name");
  std::string query_user = it == req.query.end() ? "" : it->second;
  if (!body_user.empty() && !query_user.empty() && body_user != query_user) {
    return invalidArgument("user",
                           "'" + body_user + "' differs from user.name '" + query_user + "'");
  }
  return body_user.empty() ? query_user : body_user;
}

HttpHandler authenticated(const RmAccess& access, AuthedHandler h) {
  return authenticatedRest(access, std::move(h));
}

}  // namespace

HttpResponse yarnErrorAnswer(int http_status, const Status& error) {
  json err = yarnErrorJson(error);
  if (http_status == 405) {
    // What YARN's web services (Jersey) answer for a method a resource lacks.
    err["RemoteException"]["exception"] = "WebApplicationException";
    err["RemoteException"]["javaClassName"] = "javax.ws.rs.WebApplicationException";
  }
  return jsonAnswer(http_status, err);
}

HttpHandler authenticatedRest(const RmAccess& access, AuthedHandler h) {
  return [&access, h = std::move(h)](const HttpRequest& req) {
    int http_status = 401;
    auto who = access.caller(req, &http_status);
    if (!who.isOk()) {
      json err = yarnErrorJson(who.status());
      if (http_status == 401) {
        err["RemoteException"]["exception"] = "AuthenticationException";
        err["RemoteException"]["javaClassName"] =
            "org.apache.hadoop.security.AuthenticationException";
      }
      return jsonResponse(http_status, err);
    }
    return h(*who, req);
  };
}

namespace {

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

void registerReservationRest(HttpServer& http, ReservationServiceImpl& service,
                             const RmAccess& access) {
  http.setErrorFormat(kYarnRestPrefix, yarnErrorAnswer);
  std::string base = kBase;
  http.route("POST", base + "/new-reservation",
             authenticated(access, [&service](const Principal& who, const HttpRequest&) {
               auto id = service.newIdFor(who);
               if (!id.isOk()) return errorResponse(id.status());
               return jsonResponse(200, {{"reservation-id", *id}});
             }));

  http.route("POST", base + "/submit",
             authenticated(access, [&service](const Principal& who, const HttpRequest& req) {
               auto parsed = parseYarnSubmit(req.body);
               if (!parsed.isOk()) return errorResponse(parsed.status());
               v1::SubmitReservationRequest r = std::move(parsed).value();
               if (r.reservation_id().empty()) {
                 return errorResponse(
                     invalidArgument("reservation-id", "is required (POST new-reservation first)"));
               }
               auto user = statedUser(req, r.user());
               if (!user.isOk()) return errorResponse(user.status());
               r.set_user(*user);
               v1::SubmitReservationResponse resp;
               grpc::Status st = service.submitAs(who, r, &resp);
               if (!st.ok()) return fromGrpcStatus(st);
               return jsonResponse(
                   200, {{"reservation-id", resp.reservation_id()},
                         {"resource-allocations", yarnAllocationsJson(resp.allocations())}});
             }));

  http.route("POST", base + "/update",
             authenticated(access, [&service](const Principal& who, const HttpRequest& req) {
               auto parsed = parseYarnSubmit(req.body);
               if (!parsed.isOk()) return errorResponse(parsed.status());
               if (parsed->reservation_id().empty()) {
                 return errorResponse(invalidArgument("reservation-id", "is required"));
               }
               v1::UpdateReservationRequest r;
               r.set_reservation_id(parsed->reservation_id());
               auto user = statedUser(req, parsed->user());
               if (!user.isOk()) return errorResponse(user.status());
               r.set_user(*user);
               *r.mutable_definition() = parsed->definition();
               v1::UpdateReservationResponse resp;
               grpc::Status st = service.updateAs(who, r, &resp);
               if (!st.ok()) return fromGrpcStatus(st);
               return jsonResponse(
                   200, {{"reservation-id", r.reservation_id()},
                         {"resource-allocations", yarnAllocationsJson(resp.allocations())}});
             }));

  http.route("POST", base + "/delete",
             authenticated(access, [&service](const Principal& who, const HttpRequest& req) {
               auto id = parseYarnReservationId(req.body);
               if (!id.isOk()) return errorResponse(id.status());
               json body = json::parse(req.body, nullptr, false);
               v1::DeleteReservationRequest r;
               r.set_reservation_id(*id);
               std::string body_user;
               if (body.is_object() && body.contains("user") && body["user"].is_string())
                 body_user = body["user"].get<std::string>();
               auto user = statedUser(req, body_user);
               if (!user.isOk()) return errorResponse(user.status());
               r.set_user(*user);
               grpc::Status st = service.deleteAs(who, r);
               if (!st.ok()) return fromGrpcStatus(st);
               return jsonResponse(200, json::object());
             }));

  http.route("GET", base + "/list",
             authenticated(access, [&service](const Principal&, const HttpRequest& req) {
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
               bool include =
                   inc != req.query.end() && (inc->second == "true" || inc->second == "1");
               r.set_include_allocations(include);
               v1::ListReservationsResponse resp;
               grpc::Status st = service.list(r, &resp);
               if (!st.ok()) return fromGrpcStatus(st);
               return jsonResponse(200, yarnListJson(resp, include));
             }));
}

}  // namespace morpheus::rm
