#include "rm/grpc/reservation_service.h"

#include <map>

#include "common/wire.h"

namespace morpheus::rm {

namespace {

// Latest time a plan query may name: 9999-12-31T23:59:59.999Z. Keeps the
// query's defaults (start + 1 day) and the plan's step walk far from int64
// overflow (found through the rm_grpc fuzz target: UBSan on start_ms near
// 2^63, in the default end and in the step walk).
constexpr int64_t kMaxPlanQueryMs = 253402300799999;

void toProto(const planner::InfeasibilityExplanation& e, v1::Explanation* out) {
  out->set_summary(e.toString());
  out->set_failed_stage(e.stage);
  for (const auto& [s, t] : e.saturated) {
    auto* r = out->add_saturated();
    r->set_start_ms(toEpochMs(s));
    r->set_end_ms(toEpochMs(t));
  }
  if (e.earliest_feasible_deadline) {
    out->set_earliest_feasible_deadline_ms(toEpochMs(*e.earliest_feasible_deadline));
  }
  out->set_containers_fitting_by_deadline(static_cast<int32_t>(e.containers_fitting_by_deadline));
}

void allocationsToProto(const planner::Placement& p,
                        google::protobuf::RepeatedPtrField<v1::ResourceAllocation>* out) {
  for (const auto& a : p.allocations) {
    auto* r = out->Add();
    morpheus::toProto(a.resource, r->mutable_resource());
    r->set_start_ms(toEpochMs(a.start));
    r->set_end_ms(toEpochMs(a.end));
  }
}

// The wire-API path of a planner/manager field ("stages[0].duration" ->
// "definition.stages[0].duration_ms"), so errors name what the caller sent.
std::string wireFieldPath(const std::string& f) {
  static const std::map<std::string, std::string> kTop = {
      {"arrival", "definition.arrival_ms"},
      {"deadline", "definition.deadline_ms"},
      {"period", "definition.period_ms"},
      {"priority", "definition.priority"},
      {"name", "definition.name"},
      {"recurrence_key", "definition.recurrence_key"},
      {"stages", "definition.stages"},
      {"interpreter", "definition.interpreter"},
      {"reprovision_budget_container_ms", "definition.reprovision_budget_container_ms"},
      {"id", "reservation_id"},
  };
  if (auto it = kTop.find(f); it != kTop.end()) return it->second;
  if (f.rfind("stages[", 0) == 0) {
    size_t close = f.find(']');
    if (close == std::string::npos) return f;
    std::string rest = f.substr(close + 1);
    if (rest == ".duration") rest = ".duration_ms";
    return "definition." + f.substr(0, close + 1) + rest;
  }
  return f;
}

Status withWireFieldPath(const Status& s) {
  if (s.code() != StatusCode::kInvalidArgument) return s;
  const std::string& msg = s.message();
  size_t colon = msg.find(": ");
  if (colon == std::string::npos) return s;
  std::string field = msg.substr(0, colon);
  std::string renamed = wireFieldPath(field);
  if (renamed == field) return s;
  return Status(s.code(), renamed + msg.substr(colon));
}

}  // namespace

Result<planner::ReservationDefinition> fromProto(const v1::ReservationDefinition& d,
                                                 const std::string& user,
                                                 const std::string& queue) {
  planner::ReservationDefinition out;
  out.user = UserId(user);
  out.queue = queue;
  out.name = d.name();
  out.recurrence_key = JobKey(d.recurrence_key());
  out.priority = d.priority();
  if (d.arrival_ms() < 0) return invalidArgument("definition.arrival_ms", "must be >= 0");
  if (d.deadline_ms() < 0) return invalidArgument("definition.deadline_ms", "must be >= 0");
  out.arrival = fromEpochMs(d.arrival_ms());
  out.deadline = fromEpochMs(d.deadline_ms());
  out.period = Millis(d.period_ms());
  out.problematic = d.problematic();
  switch (d.interpreter()) {
    case v1::R_ANY:
      out.interpreter = planner::Interpreter::kAny;
      break;
    case v1::INTERPRETER_UNSPECIFIED:
    case v1::R_ALL:
      out.interpreter = planner::Interpreter::kAll;
      break;
    case v1::R_ORDER:
      out.interpreter = planner::Interpreter::kOrder;
      break;
    case v1::R_ORDER_NO_GAP:
      out.interpreter = planner::Interpreter::kOrderNoGap;
      break;
    default:
      return invalidArgument("definition.interpreter", "unknown value");
  }
  for (int i = 0; i < d.stages_size(); i++) {
    const auto& s = d.stages(i);
    std::string f = "definition.stages[" + std::to_string(i) + "]";
    MORPHEUS_ASSIGN_OR_RETURN(Resource cap, validatedResource(s.capability(), f + ".capability"));
    out.stages.push_back({cap, s.num_containers(),
                          s.min_concurrency() == 0 ? 1 : s.min_concurrency(),
                          Millis(s.duration_ms())});
  }
  return out;
}

void toProto(const ReservationRecord& r, bool include_allocations, v1::ReservationReport* out) {
  out->set_reservation_id(r.id.value());
  out->set_queue(r.def.queue);
  out->set_user(r.def.user.value());
  out->set_acceptance_ms(toEpochMs(r.accepted));
  auto* d = out->mutable_definition();
  d->set_arrival_ms(toEpochMs(r.def.arrival));
  d->set_deadline_ms(toEpochMs(r.def.deadline));
  d->set_name(r.def.name);
  d->set_priority(r.def.priority);
  d->set_period_ms(r.def.period.count());
  switch (r.def.interpreter) {
    case planner::Interpreter::kAny:
      d->set_interpreter(v1::R_ANY);
      break;
    case planner::Interpreter::kAll:
      d->set_interpreter(v1::R_ALL);
      break;
    case planner::Interpreter::kOrder:
      d->set_interpreter(v1::R_ORDER);
      break;
    case planner::Interpreter::kOrderNoGap:
      d->set_interpreter(v1::R_ORDER_NO_GAP);
      break;
  }
  for (const auto& s : r.def.stages) {
    auto* st = d->add_stages();
    morpheus::toProto(s.capability, st->mutable_capability());
    st->set_num_containers(static_cast<int32_t>(s.num_containers));
    st->set_min_concurrency(static_cast<int32_t>(s.min_concurrency));
    st->set_duration_ms(s.duration.count());
  }
  d->set_recurrence_key(r.def.recurrence_key.value());
  d->set_problematic(r.def.problematic);
  d->set_reprovision_budget_container_ms(r.budget_container_ms);
  if (include_allocations) allocationsToProto(r.placement, out->mutable_allocations());
  out->set_status(r.status);
  out->set_status_reason(r.status_reason);
  out->set_reprovision_budget_used_container_ms(r.budget_used_container_ms);
  for (const auto& h : r.history) {
    auto* e = out->add_reprovision_history();
    e->set_time_ms(toEpochMs(h.time));
    e->set_policy(h.policy);
    e->set_granted(h.granted);
    morpheus::toProto(h.extra, e->mutable_extra());
    e->set_duration_ms(h.duration.count());
    e->set_reason(h.reason);
  }
}

grpc::Status ReservationServiceImpl::NewReservation(grpc::ServerContext* ctx,
                                                    const v1::NewReservationRequest*,
                                                    v1::NewReservationResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  auto id = newIdFor(who);
  if (!id.isOk()) return toGrpc(id.status());
  resp->set_reservation_id(*id);
  return grpc::Status::OK;
}

Result<std::string> ReservationServiceImpl::newIdFor(const Principal& who) {
  MORPHEUS_ASSIGN_OR_RETURN(ReservationId id, manager_.issueId(UserId(who.user)));
  return id.value();
}

grpc::Status ReservationServiceImpl::SubmitReservation(grpc::ServerContext* ctx,
                                                       const v1::SubmitReservationRequest* req,
                                                       v1::SubmitReservationResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  return submitAs(who, *req, resp);
}

grpc::Status ReservationServiceImpl::submitAs(const Principal& who,
                                              const v1::SubmitReservationRequest& req,
                                              v1::SubmitReservationResponse* resp) {
  if (req.reservation_id().empty()) {
    return toGrpc(invalidArgument("reservation_id", "is required (call NewReservation first)"));
  }
  std::string queue = req.queue().empty() ? "default" : req.queue();
  std::string action = "submit reservation " + req.reservation_id();
  auto user = RmAccess::actingUser(who, req.user(), action);
  if (!user.isOk()) return toGrpc(user.status());
  if (Status st = access_.maySubmit(who, queue, action); !st.isOk()) return toGrpc(st);
  auto def = fromProto(req.definition(), *user, queue);
  if (!def.isOk()) return toGrpc(def.status());
  planner::InfeasibilityExplanation why;
  auto rec = manager_.submit(ReservationId(req.reservation_id()),
                             ReservationManager::Submitter{UserId(who.user), who.admin}, *def,
                             req.definition().reprovision_budget_container_ms(), &why);
  resp->set_reservation_id(req.reservation_id());
  if (!rec.isOk()) {
    if (rec.status().code() == StatusCode::kInfeasible) toProto(why, resp->mutable_explanation());
    return toGrpc(withWireFieldPath(rec.status()));
  }
  allocationsToProto(rec->placement, resp->mutable_allocations());
  return grpc::Status::OK;
}

grpc::Status ReservationServiceImpl::UpdateReservation(grpc::ServerContext* ctx,
                                                       const v1::UpdateReservationRequest* req,
                                                       v1::UpdateReservationResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  return updateAs(who, *req, resp);
}

grpc::Status ReservationServiceImpl::updateAs(const Principal& who,
                                              const v1::UpdateReservationRequest& req,
                                              v1::UpdateReservationResponse* resp) {
  if (req.reservation_id().empty()) return toGrpc(invalidArgument("reservation_id", "is required"));
  std::string action = "change reservation " + req.reservation_id();
  if (auto user = RmAccess::actingUser(who, req.user(), action); !user.isOk())
    return toGrpc(user.status());
  auto existing = manager_.get(ReservationId(req.reservation_id()));
  if (!existing) return toGrpc(notFound("reservation " + req.reservation_id() + " does not exist"));
  auto def = fromProto(req.definition(), existing->def.user.value(), existing->def.queue);
  if (!def.isOk()) return toGrpc(def.status());
  auto may = [this, &who, &action](const ReservationRecord& r) {
    return access_.mayAdminister(who, r.def.user.value(), r.def.queue, action);
  };
  planner::InfeasibilityExplanation why;
  auto rec = manager_.update(ReservationId(req.reservation_id()), UserId(who.user), may, *def,
                             req.definition().reprovision_budget_container_ms(), &why);
  if (!rec.isOk()) {
    if (rec.status().code() == StatusCode::kInfeasible) toProto(why, resp->mutable_explanation());
    return toGrpc(withWireFieldPath(rec.status()));
  }
  allocationsToProto(rec->placement, resp->mutable_allocations());
  return grpc::Status::OK;
}

grpc::Status ReservationServiceImpl::DeleteReservation(grpc::ServerContext* ctx,
                                                       const v1::DeleteReservationRequest* req,
                                                       v1::DeleteReservationResponse*) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  return deleteAs(who, *req);
}

grpc::Status ReservationServiceImpl::deleteAs(const Principal& who,
                                              const v1::DeleteReservationRequest& req) {
  if (req.reservation_id().empty()) return toGrpc(invalidArgument("reservation_id", "is required"));
  std::string action = "delete reservation " + req.reservation_id();
  if (auto user = RmAccess::actingUser(who, req.user(), action); !user.isOk())
    return toGrpc(user.status());
  auto may = [this, &who, &action](const ReservationRecord& r) {
    return access_.mayAdminister(who, r.def.user.value(), r.def.queue, action);
  };
  return toGrpc(manager_.remove(ReservationId(req.reservation_id()), UserId(who.user), may));
}

grpc::Status ReservationServiceImpl::ListReservations(grpc::ServerContext* ctx,
                                                      const v1::ListReservationsRequest* req,
                                                      v1::ListReservationsResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  return list(*req, resp);
}

grpc::Status ReservationServiceImpl::list(const v1::ListReservationsRequest& req,
                                          v1::ListReservationsResponse* resp) {
  if (req.start_ms() < 0) return toGrpc(invalidArgument("start_ms", "must be >= 0"));
  if (req.end_ms() != 0 && req.end_ms() < req.start_ms()) {
    return toGrpc(invalidArgument("end_ms", "must not be before start_ms"));
  }
  for (const auto& r : manager_.list(req.queue(), req.reservation_id(), fromEpochMs(req.start_ms()),
                                     fromEpochMs(req.end_ms()))) {
    toProto(r, req.include_allocations(), resp->add_reservations());
  }
  return grpc::Status::OK;
}

grpc::Status ReservationServiceImpl::GetPlan(grpc::ServerContext* ctx,
                                             const v1::GetPlanRequest* req,
                                             v1::GetPlanResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  int64_t now =
      std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  if (req->start_ms() > kMaxPlanQueryMs || req->end_ms() > kMaxPlanQueryMs) {
    return toGrpc(invalidArgument(req->start_ms() > kMaxPlanQueryMs ? "start_ms" : "end_ms",
                                  "must not be after year 9999"));
  }
  int64_t start = req->start_ms() == 0 ? now : req->start_ms();
  int64_t end = req->end_ms() == 0 ? start + 86400000 : req->end_ms();
  if (start < 0) return toGrpc(invalidArgument("start_ms", "must be >= 0"));
  if (end <= start) return toGrpc(invalidArgument("end_ms", "must be after start_ms"));
  auto snap = manager_.plan(fromEpochMs(start), fromEpochMs(end));
  resp->set_step_ms(snap.step.count());
  morpheus::toProto(snap.capacity, resp->mutable_capacity());
  resp->set_reservations(snap.reservations);
  for (const auto& s : snap.steps) {
    auto* p = resp->add_steps();
    p->set_start_ms(toEpochMs(s.start));
    morpheus::toProto(s.periodic, p->mutable_periodic());
    morpheus::toProto(s.one_off, p->mutable_one_off());
  }
  return grpc::Status::OK;
}

}  // namespace morpheus::rm
