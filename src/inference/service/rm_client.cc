#include "inference/service/rm_client.h"

#include <ctime>

#include "common/wire.h"
#include "morpheus/v1/reservation.grpc.pb.h"

namespace morpheus::inference {

namespace {

// Validates the SLO against its skyline; the number of steps up to the last
// one with demand (trailing zero steps need no room in the window).
Result<int64_t> validatedSteps(const RecurringRequest& r) {
  if (r.period.count() <= 0) return invalidArgument("slo.period", "must be positive");
  if (r.step.count() <= 0) return invalidArgument("step", "must be positive");
  if (r.start_offset.count() < 0) return invalidArgument("slo.start_offset", "must be >= 0");
  if (r.deadline_offset <= r.start_offset) {
    return invalidArgument("slo.deadline_offset", "must be after the start offset");
  }
  if (r.deadline_offset - r.start_offset > r.period) {
    return invalidArgument("slo.deadline_offset", "window longer than the period");
  }
  if (r.skyline.empty()) return invalidArgument("skyline", "is empty");
  int64_t steps = static_cast<int64_t>(r.skyline.size());
  while (steps > 0 && r.skyline[static_cast<size_t>(steps - 1)] == 0) steps--;
  if (steps == 0) return invalidArgument("skyline", "has no demand");
  if (r.step * steps > r.deadline_offset - r.start_offset) {
    return invalidArgument(
        "slo.deadline_offset",
        "window of " + std::to_string((r.deadline_offset - r.start_offset).count() / 1000) +
            " s cannot hold a skyline of " + std::to_string(r.step.count() * steps / 1000) + " s");
  }
  return steps;
}

// Everything but the window and the period: name, key, flags, stages.
v1::ReservationDefinition definitionBody(const RecurringRequest& r, int64_t steps) {
  v1::ReservationDefinition d;
  d.set_name("slo:" + r.job_key);
  d.set_interpreter(v1::R_ORDER_NO_GAP);
  d.set_recurrence_key(r.job_key);
  d.set_problematic(r.problematic);
  d.set_reprovision_budget_container_ms(r.budget_container_ms);
  for (int64_t k = 0; k < steps; k++) {
    int64_t c = r.skyline[static_cast<size_t>(k)];
    if (c <= 0) continue;  // zero steps carry no demand
    auto* st = d.add_stages();
    toProto(r.container, st->mutable_capability());
    st->set_num_containers(static_cast<int32_t>(c));
    st->set_min_concurrency(r.whole_steps ? static_cast<int32_t>(c) : 1);
    st->set_duration_ms(r.step.count());
  }
  return d;
}

}  // namespace

Result<v1::ReservationDefinition> recurringDefinition(const RecurringRequest& r, TimePoint now) {
  MORPHEUS_ASSIGN_OR_RETURN(int64_t steps, validatedSteps(r));
  int64_t p = r.period.count();
  int64_t period_start = toEpochMs(now) / p * p;
  if (period_start + r.start_offset.count() <= toEpochMs(now)) period_start += p;
  v1::ReservationDefinition d = definitionBody(r, steps);
  d.set_arrival_ms(period_start + r.start_offset.count());
  d.set_deadline_ms(period_start + r.deadline_offset.count());
  d.set_period_ms(p);
  return d;
}

Result<v1::ReservationDefinition> oneOffDefinition(const OneOffRequest& r) {
  MORPHEUS_ASSIGN_OR_RETURN(int64_t steps, validatedSteps(r.slo));
  if (r.reservation_id.empty()) return invalidArgument("reservation_id", "is required");
  const int64_t start = toEpochMs(r.period_start);
  v1::ReservationDefinition d = definitionBody(r.slo, steps);
  d.set_name("slo:" + r.slo.job_key + "@" + std::to_string(start));
  d.set_arrival_ms(start + r.slo.start_offset.count());
  d.set_deadline_ms(start + r.slo.deadline_offset.count());
  d.set_period_ms(0);
  return d;
}

namespace {
std::string summarize(const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocs) {
  if (allocs.empty()) return "no allocation";
  int64_t first = allocs.begin()->start_ms(), last = allocs.rbegin()->end_ms(), peak = 0;
  for (const auto& a : allocs) peak = std::max<int64_t>(peak, a.resource().vcores());
  auto fmt = [](int64_t ms) {
    std::time_t t = ms / 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(buf);
  };
  return "first instance " + fmt(first) + " .. " + fmt(last) + ", " +
         std::to_string(allocs.size()) + " allocation run(s), peak " + std::to_string(peak) +
         " vcores";
}
}  // namespace

void RmReservationClient::authorize(grpc::ClientContext* ctx) const {
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
}

template <class Req, class Resp>
Status RmReservationClient::callRm(
    grpc::Status (v1::ReservationService::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
    const Req& req, Resp* resp, Millis timeout, CallKind kind) {
  if (!rm_.isOk()) return rm_.status();
  grpc::Status st = (*rm_)->unary(method, req, resp, timeout, kind,
                                  [this](grpc::ClientContext* ctx) { authorize(ctx); });
  if (!st.ok()) return fromGrpc(st).withContext("RM at " + (*rm_)->current());
  return Status::ok();
}

Result<SubmittedReservation> RmReservationClient::submit(const RecurringRequest& r, TimePoint now,
                                                         const std::string& existing_id) {
  MORPHEUS_ASSIGN_OR_RETURN(v1::ReservationDefinition def, recurringDefinition(r, now));
  if (!existing_id.empty()) {
    v1::UpdateReservationRequest req;
    req.set_reservation_id(existing_id);
    req.set_user(r.owner);
    *req.mutable_definition() = def;
    v1::UpdateReservationResponse resp;
    MORPHEUS_RETURN_IF_ERROR(callRm(&v1::ReservationService::Stub::UpdateReservation, req, &resp,
                                    Millis(30000), CallKind::kNotIdempotent));
    return SubmittedReservation{existing_id, summarize(resp.allocations())};
  }
  // NewReservation only hands out an id: repeating it is harmless.
  v1::NewReservationResponse nr;
  MORPHEUS_RETURN_IF_ERROR(callRm(&v1::ReservationService::Stub::NewReservation,
                                  v1::NewReservationRequest(), &nr, Millis(10000),
                                  CallKind::kIdempotent));
  v1::SubmitReservationRequest req;
  req.set_reservation_id(nr.reservation_id());
  req.set_queue(r.queue);
  req.set_user(r.owner);
  *req.mutable_definition() = def;
  v1::SubmitReservationResponse resp;
  MORPHEUS_RETURN_IF_ERROR(callRm(&v1::ReservationService::Stub::SubmitReservation, req, &resp,
                                  Millis(30000), CallKind::kNotIdempotent));
  return SubmittedReservation{nr.reservation_id(), summarize(resp.allocations())};
}

Result<SubmittedReservation> RmReservationClient::submitOneOff(const OneOffRequest& r) {
  MORPHEUS_ASSIGN_OR_RETURN(v1::ReservationDefinition def, oneOffDefinition(r));
  v1::SubmitReservationRequest req;
  req.set_reservation_id(r.reservation_id);
  req.set_queue(r.slo.queue);
  req.set_user(r.slo.owner);
  *req.mutable_definition() = def;
  v1::SubmitReservationResponse resp;
  // The caller chose the id: a repeat after an in-flight failure is refused
  // ALREADY_EXISTS, which the caller already treats as submitted.
  MORPHEUS_RETURN_IF_ERROR(callRm(&v1::ReservationService::Stub::SubmitReservation, req, &resp,
                                  Millis(30000), CallKind::kIdempotent));
  return SubmittedReservation{r.reservation_id, summarize(resp.allocations())};
}

Status RmReservationClient::cancel(const std::string& reservation_id) {
  v1::DeleteReservationRequest req;
  req.set_reservation_id(reservation_id);
  v1::DeleteReservationResponse resp;
  // A repeat after an in-flight failure is NOT_FOUND, which callers take as done.
  return callRm(&v1::ReservationService::Stub::DeleteReservation, req, &resp, Millis(30000),
                CallKind::kIdempotent);
}

Status sameOneOff(const v1::ReservationReport& held, const OneOffRequest& r) {
  auto differs = [&](const std::string& field, const std::string& theirs, const std::string& ours) {
    return permissionDenied("reservation " + held.reservation_id() + " is not this instance's: " +
                            field + " is '" + theirs + "', not '" + ours + "'");
  };
  if (held.user() != r.slo.owner) return differs("user", held.user(), r.slo.owner);
  if (held.queue() != r.slo.queue) return differs("queue", held.queue(), r.slo.queue);
  auto want = oneOffDefinition(r);
  if (!want.isOk()) return want.status();
  const v1::ReservationDefinition& d = held.definition();
  auto num = [](int64_t v) { return std::to_string(v); };
  if (d.recurrence_key() != want->recurrence_key())
    return differs("recurrence_key", d.recurrence_key(), want->recurrence_key());
  if (d.arrival_ms() != want->arrival_ms())
    return differs("arrival_ms", num(d.arrival_ms()), num(want->arrival_ms()));
  if (d.deadline_ms() != want->deadline_ms())
    return differs("deadline_ms", num(d.deadline_ms()), num(want->deadline_ms()));
  if (d.period_ms() != want->period_ms())
    return differs("period_ms", num(d.period_ms()), num(want->period_ms()));
  if (d.stages_size() != want->stages_size())
    return differs("stages", num(d.stages_size()) + " stages",
                   num(want->stages_size()) + " stages");
  for (int i = 0; i < d.stages_size(); i++) {
    const auto& a = d.stages(i);
    const auto& b = want->stages(i);
    if (a.num_containers() != b.num_containers() || a.duration_ms() != b.duration_ms() ||
        a.capability().memory_mib() != b.capability().memory_mib() ||
        a.capability().vcores() != b.capability().vcores()) {
      return differs("stages[" + num(i) + "]", a.ShortDebugString(), b.ShortDebugString());
    }
  }
  return Status::ok();
}

Status RmReservationClient::verifyOneOff(const OneOffRequest& r) {
  v1::ListReservationsRequest req;
  req.set_reservation_id(r.reservation_id);
  v1::ListReservationsResponse resp;
  MORPHEUS_RETURN_IF_ERROR(callRm(&v1::ReservationService::Stub::ListReservations, req, &resp,
                                  Millis(10000), CallKind::kIdempotent));
  for (const auto& held : resp.reservations()) {
    if (held.reservation_id() == r.reservation_id) return sameOneOff(held, r);
  }
  return notFound("reservation " + r.reservation_id + " is not in the RM");
}

}  // namespace morpheus::inference
