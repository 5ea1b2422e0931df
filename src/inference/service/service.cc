#include "inference/service/service.h"

#include "common/wire.h"
#include "inference/model/skyline_fit.h"

#include <cmath>

namespace morpheus::inference {

namespace {

v1::ProposalState toProtoState(store::ProposalState s) {
  switch (s) {
    case store::ProposalState::kPending:
      return v1::PROPOSAL_PENDING;
    case store::ProposalState::kAccepted:
      return v1::PROPOSAL_ACCEPTED;
    case store::ProposalState::kRejected:
      return v1::PROPOSAL_REJECTED;
    case store::ProposalState::kSuperseded:
      return v1::PROPOSAL_SUPERSEDED;
  }
  return v1::PROPOSAL_STATE_UNSPECIFIED;
}

}  // namespace

Result<std::vector<store::RunRecord>> runsFromProto(
    const google::protobuf::RepeatedPtrField<v1::Run>& runs, const std::string& field) {
  std::vector<store::RunRecord> out;
  for (int i = 0; i < runs.size(); i++) {
    const auto& r = runs.Get(i);
    std::string f = field + "[" + std::to_string(i) + "]";
    if (r.job_key().empty()) return invalidArgument(f + ".job_key", "is required");
    if (r.run_id().empty()) return invalidArgument(f + ".run_id", "is required");
    if (r.submit_ms() < 0) return invalidArgument(f + ".submit_ms", "must be >= 0");
    if (r.start_ms() < r.submit_ms())
      return invalidArgument(f + ".start_ms", "is before submit_ms");
    if (r.end_ms() < r.start_ms()) return invalidArgument(f + ".end_ms", "is before start_ms");
    if (r.step_ms() <= 0 && r.skyline_size() > 0)
      return invalidArgument(f + ".step_ms", "must be > 0");
    for (int k = 0; k < r.skyline_size(); k++) {
      if (!(r.skyline(k) >= 0) || !std::isfinite(r.skyline(k)))
        return invalidArgument(f + ".skyline[" + std::to_string(k) + "]", "must be >= 0");
    }
    MORPHEUS_ASSIGN_OR_RETURN(Resource c, validatedResource(r.container(), f + ".container"));
    store::RunRecord rec;
    rec.job = JobKey(r.job_key());
    rec.run = RunId(r.run_id());
    rec.user = r.user();
    rec.submit = fromEpochMs(r.submit_ms());
    rec.start = fromEpochMs(r.start_ms());
    rec.end = fromEpochMs(r.end_ms());
    rec.step = Millis(r.step_ms() > 0 ? r.step_ms() : 60000);
    rec.skyline.assign(r.skyline().begin(), r.skyline().end());
    rec.container = c.isZero() ? Resource(1024, 1) : c;
    switch (r.status()) {
      case v1::RUN_STATUS_UNSPECIFIED:
      case v1::RUN_STATUS_SUCCEEDED:
        rec.status = store::RunStatus::kSucceeded;
        break;
      case v1::RUN_STATUS_FAILED:
        rec.status = store::RunStatus::kFailed;
        break;
      case v1::RUN_STATUS_KILLED:
        rec.status = store::RunStatus::kKilled;
        break;
      default:
        return invalidArgument(f + ".status", "must be SUCCEEDED, FAILED or KILLED");
    }
    out.push_back(std::move(rec));
  }
  return out;
}

void toProto(const Proposal& p, TimePoint now, v1::Proposal* out) {
  out->set_proposal_id(p.record.id.value());
  out->set_job_key(p.record.job.value());
  out->set_owner(p.record.owner);
  out->set_state(toProtoState(p.record.state));
  out->mutable_slo()->set_period_ms(p.payload.period.count());
  out->mutable_slo()->set_start_offset_ms(p.payload.start_offset.count());
  out->mutable_slo()->set_deadline_offset_ms(p.payload.deadline_offset.count());
  out->set_step_ms(p.payload.step.count());
  for (auto v : p.payload.skyline) out->add_skyline(v);
  morpheus::toProto(p.payload.container, out->mutable_container());
  out->set_reprovision_budget_container_ms(p.payload.budget_container_ms);
  out->set_over_allocation(p.payload.over_allocation);
  out->set_under_allocation(p.payload.under_allocation);
  out->set_epsilon(p.payload.epsilon);
  out->set_runs_used(p.payload.runs_used);
  out->set_reservation_id(p.record.reservation_id);
  out->set_placement_summary(p.payload.placement);
  out->set_problematic(p.payload.problematic);
  out->set_created_ms(toEpochMs(p.record.created));
  out->set_is_update(p.payload.is_update);
  out->set_one_off_instances(p.payload.one_off_instances);
  if (p.payload.one_off_instances && p.payload.period.count() > 0) {
    out->set_next_instance_arrival_ms(
        toEpochMs(nextInstanceStart(p.payload, now) + p.payload.start_offset));
  }
  for (const auto& i : p.payload.instances) {
    auto* o = out->add_instances();
    o->set_arrival_ms(toEpochMs(i.period_start + p.payload.start_offset));
    o->set_deadline_ms(toEpochMs(i.period_start + p.payload.deadline_offset));
    o->set_reservation_id(i.reservation_id);
    o->set_state(i.state);
    o->set_detail(i.detail);
    o->set_replaces(i.replaces);
  }
  for (const auto& w : p.payload.warnings) out->add_warnings(w);
  out->set_runs_failed(p.payload.runs_failed);
  out->set_runs_killed(p.payload.runs_killed);
}

Result<std::vector<store::FileEvent>> eventsFromProto(
    const google::protobuf::RepeatedPtrField<v1::ProvenanceEvent>& events,
    const std::string& field) {
  std::vector<store::FileEvent> out;
  for (int i = 0; i < events.size(); i++) {
    const auto& e = events.Get(i);
    std::string f = field + "[" + std::to_string(i) + "]";
    if (e.job_key().empty()) return invalidArgument(f + ".job_key", "is required");
    if (e.path().empty()) return invalidArgument(f + ".path", "is required");
    if (e.time_ms() < 0) return invalidArgument(f + ".time_ms", "must be >= 0");
    if (e.kind() != v1::ProvenanceEvent::KIND_READ && e.kind() != v1::ProvenanceEvent::KIND_WRITE) {
      return invalidArgument(f + ".kind", "must be KIND_READ or KIND_WRITE");
    }
    out.push_back({JobKey(e.job_key()), RunId(e.run_id()), e.path(),
                   e.kind() == v1::ProvenanceEvent::KIND_READ ? store::FileAccess::kRead
                                                              : store::FileAccess::kWrite,
                   fromEpochMs(e.time_ms())});
  }
  return out;
}

grpc::Status InferenceServiceImpl::IngestRuns(grpc::ServerContext* ctx,
                                              const v1::IngestRunsRequest* req,
                                              v1::IngestResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  store::IngestBatch batch;
  auto runs = runsFromProto(req->runs(), "runs");
  if (!runs.isOk()) return toGrpc(runs.status());
  for (auto& r : *runs) {
    if (r.user.empty()) r.user = who->user;  // the caller owns what it imports
  }
  auto events = eventsFromProto(req->events(), "events");
  if (!events.isOk()) return toGrpc(events.status());
  batch.runs = std::move(runs).value();
  batch.events = std::move(events).value();
  if (Status st = core_.ingestAs(*who, batch); !st.isOk()) return toGrpc(st);
  resp->set_accepted(req->runs_size() + req->events_size());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::IngestProvenance(grpc::ServerContext* ctx,
                                                    const v1::IngestProvenanceRequest* req,
                                                    v1::IngestResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  auto events = eventsFromProto(req->events(), "events");
  if (!events.isOk()) return toGrpc(events.status());
  if (Status st = core_.ingestAs(*who, {{}, std::move(events).value()}); !st.isOk())
    return toGrpc(st);
  resp->set_accepted(req->events_size());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ListProposals(grpc::ServerContext* ctx,
                                                 const v1::ListProposalsRequest* req,
                                                 v1::ListProposalsResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  std::optional<store::ProposalState> state;
  switch (req->state()) {
    case v1::PROPOSAL_STATE_UNSPECIFIED:
      break;
    case v1::PROPOSAL_PENDING:
      state = store::ProposalState::kPending;
      break;
    case v1::PROPOSAL_ACCEPTED:
      state = store::ProposalState::kAccepted;
      break;
    case v1::PROPOSAL_REJECTED:
      state = store::ProposalState::kRejected;
      break;
    case v1::PROPOSAL_SUPERSEDED:
      state = store::ProposalState::kSuperseded;
      break;
    default:
      return toGrpc(invalidArgument("state", "unknown value"));
  }
  auto list = core_.proposals(state);
  if (!list.isOk()) return toGrpc(list.status());
  for (const auto& p : *list) toProto(p, core_.now(), resp->add_proposals());
  for (const auto& n : core_.notActionable()) {
    auto* na = resp->add_not_actionable();
    na->set_job_key(n.job.value());
    na->set_reason(n.reason);
  }
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::GetProposal(grpc::ServerContext* ctx,
                                               const v1::GetProposalRequest* req,
                                               v1::Proposal* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (req->proposal_id().empty()) return toGrpc(invalidArgument("proposal_id", "is required"));
  auto p = core_.proposal(ProposalId(req->proposal_id()));
  if (!p.isOk()) return toGrpc(p.status());
  toProto(*p, core_.now(), resp);
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::AcceptProposal(grpc::ServerContext* ctx,
                                                  const v1::AcceptProposalRequest* req,
                                                  v1::SignOffResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (req->proposal_id().empty()) return toGrpc(invalidArgument("proposal_id", "is required"));
  auto p = core_.accept(ProposalId(req->proposal_id()), *who, req->auto_update());
  if (!p.isOk()) return toGrpc(p.status());
  toProto(*p, core_.now(), resp->mutable_proposal());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::OverrideProposal(grpc::ServerContext* ctx,
                                                    const v1::OverrideProposalRequest* req,
                                                    v1::SignOffResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (req->proposal_id().empty()) return toGrpc(invalidArgument("proposal_id", "is required"));
  OverrideParams o;
  if (req->deadline_offset_ms() != 0) o.deadline_offset = Millis(req->deadline_offset_ms());
  if (req->start_offset_ms() != -1) {
    if (req->start_offset_ms() < -1)
      return toGrpc(invalidArgument("start_offset_ms", "must be >= 0 (-1 = keep)"));
    o.start_offset = Millis(req->start_offset_ms());
  }
  if (req->skyline_scale() != 0) o.skyline_scale = req->skyline_scale();
  if (req->skyline_size() > 0)
    o.skyline = std::vector<int64_t>(req->skyline().begin(), req->skyline().end());
  if (req->reprovision_budget_container_ms() != -1)
    o.budget_container_ms = req->reprovision_budget_container_ms();
  auto p = core_.override(ProposalId(req->proposal_id()), *who, o);
  if (!p.isOk()) return toGrpc(p.status());
  toProto(*p, core_.now(), resp->mutable_proposal());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::RejectProposal(grpc::ServerContext* ctx,
                                                  const v1::RejectProposalRequest* req,
                                                  v1::SignOffResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (req->proposal_id().empty()) return toGrpc(invalidArgument("proposal_id", "is required"));
  auto p = core_.reject(ProposalId(req->proposal_id()), *who, req->reason());
  if (!p.isOk()) return toGrpc(p.status());
  toProto(*p, core_.now(), resp->mutable_proposal());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::FitSkyline(grpc::ServerContext* ctx,
                                              const v1::FitSkylineRequest* req,
                                              v1::FitSkylineResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (req->step_ms() < 0) return toGrpc(invalidArgument("step_ms", "must be >= 0 (0 = default)"));
  if (req->step_ms() > 0 && req->step_ms() < fit_defaults_.min_fit_step.count()) {
    return toGrpc(invalidArgument(
        "step_ms", std::to_string(req->step_ms()) + " is below the shortest fit step, " +
                       std::to_string(fit_defaults_.min_fit_step.count()) +
                       " ms (skyline.min-fit-step)"));
  }
  auto runs = runsFromProto(req->runs(), "runs");
  if (!runs.isOk()) return toGrpc(runs.status());
  FitParams params;
  params.step = req->step_ms() > 0 ? Millis(req->step_ms()) : fit_defaults_.step;
  params.alpha = req->has_alpha() ? req->alpha() : fit_defaults_.alpha;
  if (params.alpha < 0 || params.alpha > 1)
    return toGrpc(invalidArgument("alpha", "must be in [0, 1]"));
  params.beta = req->has_beta() ? req->beta() : fit_defaults_.beta;
  if (params.beta < 0) return toGrpc(invalidArgument("beta", "must be >= 0"));
  if (!req->beta_mode().empty() && req->beta_mode() != "relative" &&
      req->beta_mode() != "absolute") {
    return toGrpc(invalidArgument("beta_mode", "must be relative or absolute"));
  }
  params.beta_relative =
      req->beta_mode().empty() ? fit_defaults_.beta_relative : req->beta_mode() == "relative";
  params.sample = fit_defaults_.sample;
  params.min_runs = fit_defaults_.min_runs;
  // Only succeeded runs are fitted (Morpheus §5 learns from runs that did their work).
  std::vector<store::RunRecord> ok;
  for (auto& r : *runs) {
    if (r.status == store::RunStatus::kSucceeded) ok.push_back(std::move(r));
  }
  // The fit stops when the caller goes away, the daemon stops, or it has run
  // skyline.max-fit-time.
  const TimePoint deadline = core_.now() + fit_defaults_.max_fit_time;
  const int64_t limit_ms = fit_defaults_.max_fit_time.count();
  params.step_field = "step_ms";
  params.stop = [this, ctx, deadline, limit_ms]() -> Status {
    if (ctx->IsCancelled()) return unavailable("the caller cancelled the fit");
    if (core_.now() > deadline) {
      return infeasible("the fit ran longer than skyline.max-fit-time (" +
                        std::to_string(limit_ms) + " ms); use a longer step_ms or fewer runs");
    }
    return Status::ok();
  };
  auto fit = core_.fit(ok, std::move(params));
  if (!fit.isOk()) return toGrpc(fit.status());
  for (auto v : fit->skyline) resp->add_skyline(v);
  resp->set_over_allocation(fit->over_allocation);
  resp->set_under_allocation(fit->under_allocation);
  resp->set_epsilon(fit->epsilon);
  resp->set_objective(fit->objective);
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::Refit(grpc::ServerContext* ctx, const v1::RefitRequest*,
                                         v1::RefitResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (!who->admin) return toGrpc(permissionDenied("only an admin may trigger a refit"));
  auto n = core_.refit();
  if (!n.isOk()) return toGrpc(n.status());
  resp->set_proposals_created(*n);
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ListRuns(grpc::ServerContext* ctx,
                                            const v1::ListRunsRequest* req,
                                            v1::ListRunsResponse* resp) {
  auto who = auth_.identify(*ctx);
  if (!who.isOk()) return toGrpc(who.status());
  if (req->job_key().empty()) return toGrpc(invalidArgument("job_key", "is required"));
  auto runs = core_.runsOf(JobKey(req->job_key()));
  if (!runs.isOk()) return toGrpc(runs.status());
  for (const auto& r : *runs) {
    auto* o = resp->add_runs();
    o->set_job_key(r.job.value());
    o->set_run_id(r.run.value());
    o->set_user(r.user);
    o->set_submit_ms(toEpochMs(r.submit));
    o->set_start_ms(toEpochMs(r.start));
    o->set_end_ms(toEpochMs(r.end));
    o->set_step_ms(r.step.count());
    morpheus::toProto(r.container, o->mutable_container());
    switch (r.status) {
      case store::RunStatus::kSucceeded:
        o->set_status(v1::RUN_STATUS_SUCCEEDED);
        break;
      case store::RunStatus::kFailed:
        o->set_status(v1::RUN_STATUS_FAILED);
        break;
      case store::RunStatus::kKilled:
        o->set_status(v1::RUN_STATUS_KILLED);
        break;
    }
  }
  return grpc::Status::OK;
}

}  // namespace morpheus::inference
