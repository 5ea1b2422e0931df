#include "rm/grpc/am_service.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "common/token.h"
#include "rm/runtime/dag_report.h"

namespace morpheus::rm {

namespace {

// The AM's stage reports (AllocateRequest.stages, FinishApplicationMaster-
// Request.stages) as Jockey's stages, deps as indices within the app.
// INVALID_ARGUMENT naming the field otherwise.
Result<std::vector<reprovision::StageState>> stagesFromProto(
    const google::protobuf::RepeatedPtrField<v1::StageReport>& reports) {
  std::map<std::string, size_t> index;
  for (int i = 0; i < reports.size(); i++) {
    const auto& r = reports[i];
    std::string f = "stages[" + std::to_string(i) + "]";
    if (r.name().empty()) return invalidArgument(f + ".name", "is required");
    if (!index.emplace(r.name(), static_cast<size_t>(i)).second)
      return invalidArgument(f + ".name", "duplicate stage '" + r.name() + "'");
  }
  std::vector<reprovision::StageState> out;
  out.reserve(static_cast<size_t>(reports.size()));
  for (int i = 0; i < reports.size(); i++) {
    const auto& r = reports[i];
    std::string f = "stages[" + std::to_string(i) + "]";
    if (r.tasks() <= 0) return invalidArgument(f + ".tasks", "must be > 0");
    if (r.completed() < 0 || r.completed() > r.tasks())
      return invalidArgument(f + ".completed", "must be in [0, tasks]");
    if (r.running_elapsed_ms_size() > r.tasks() - r.completed())
      return invalidArgument(f + ".running_elapsed_ms", "more running tasks than unfinished ones");
    if (r.mean_task_ms() < 0) return invalidArgument(f + ".mean_task_ms", "must be >= 0");
    reprovision::StageState st;
    st.name = r.name();
    st.tasks = r.tasks();
    st.completed = r.completed();
    st.task_duration = Millis(r.mean_task_ms());
    for (int64_t e : r.running_elapsed_ms()) {
      if (e < 0) return invalidArgument(f + ".running_elapsed_ms", "must be >= 0");
      st.running.push_back(Millis(e));
    }
    for (const auto& d : r.depends_on()) {
      auto it = index.find(d);
      if (it == index.end() || it->second == static_cast<size_t>(i))
        return invalidArgument(f + ".depends_on", "unknown stage '" + d + "'");
      st.deps.push_back(it->second);
    }
    out.push_back(std::move(st));
  }
  return out;
}

// Unknown enum values (a newer client) compare as kIn.
sched::ConstraintOp constraintOp(v1::PlacementConstraintOp op) {
  switch (op) {
    case v1::CONSTRAINT_OP_AT_LEAST:
      return sched::ConstraintOp::kAtLeast;
    case v1::CONSTRAINT_OP_VERSION_AT_LEAST:
      return sched::ConstraintOp::kVersionAtLeast;
    default:
      return sched::ConstraintOp::kIn;
  }
}

// asks[i] (field `f`) as the core's ask. INVALID_ARGUMENT naming the field
// for a negative count or gang size, or a bad or zero capability where the
// count is > 0.
Result<sched::ResourceRequest> askFromProto(const v1::ResourceRequest& a, const std::string& f) {
  if (a.count() < 0) return invalidArgument(f + ".count", "must be >= 0");
  if (a.gang_size() < 0) return invalidArgument(f + ".gang_size", "must be >= 0");
  sched::ResourceRequest r;
  if (a.count() > 0) {
    MORPHEUS_ASSIGN_OR_RETURN(r.capability, validatedResource(a.capability(), f + ".capability"));
    if (r.capability.isZero()) return invalidArgument(f + ".capability", "must not be zero");
  }
  r.request_id = a.request_id();
  r.priority = a.priority();
  r.count = a.count();
  r.gang_size = a.gang_size();
  // Whole gangs only, as before the core: the AM asks for the rest again with
  // a smaller gang once these are granted.
  if (r.gang_size > 1) r.count -= r.count % r.gang_size;
  for (const auto& c : a.constraints()) {
    r.constraints.push_back({c.key(), {c.values().begin(), c.values().end()}, c.hard()});
    r.constraints.back().op = constraintOp(c.op());
  }
  r.expected_duration = Millis(a.expected_duration_ms());
  return r;
}

// Whether the app ended as its AM says: FINAL_STATUS_* as the app's state.
Result<AppState> finalState(v1::FinalStatus status) {
  switch (status) {
    case v1::FINAL_STATUS_SUCCEEDED:
      return AppState::kFinished;
    case v1::FINAL_STATUS_FAILED:
      return AppState::kFailed;
    case v1::FINAL_STATUS_KILLED:
      return AppState::kKilled;
    default:
      return invalidArgument("final_status", "must be SUCCEEDED, FAILED or KILLED");
  }
}

// A completed container as the reply's status (the resource only when known).
void completedToProto(const CompletedContainer& c, v1::ContainerStatus* out) {
  out->set_container_id(c.id.value());
  out->set_state(v1::CONTAINER_COMPLETE);
  out->set_exit_status(c.exit_status);
  out->set_exit_reason(c.exit_reason);
  out->set_diagnostics(c.diagnostics);
  out->set_rss_mib(c.rss_mib);
  out->set_cpu_vcores(c.cpu_vcores);
  out->set_start_ms(toEpochMs(c.start));
  out->set_end_ms(toEpochMs(c.end));
  if (!c.resource.isZero()) toProto(c.resource, out->mutable_resource());
}

}  // namespace

Result<RegisterAmCall> parseRegisterAm(const v1::RegisterApplicationMasterRequest& req) {
  RegisterAmCall call;
  call.app = AppId(req.application_id());
  if (call.app.empty()) return invalidArgument("application_id", "is required");
  call.am_token = req.am_token();
  return call;
}

Result<AllocateCall> parseAllocate(const v1::AllocateRequest& req) {
  AllocateCall call;
  call.app = AppId(req.application_id());
  if (call.app.empty()) return invalidArgument("application_id", "is required");
  call.am_token = req.am_token();
  call.asks.reserve(static_cast<size_t>(req.asks_size()));
  for (int i = 0; i < req.asks_size(); i++) {
    MORPHEUS_ASSIGN_OR_RETURN(auto ask,
                              askFromProto(req.asks(i), "asks[" + std::to_string(i) + "]"));
    call.asks.push_back(std::move(ask));
  }
  MORPHEUS_ASSIGN_OR_RETURN(call.stages, stagesFromProto(req.stages()));
  MORPHEUS_ASSIGN_OR_RETURN(call.dag, dagFromStageReports(req.stages()));
  call.progress = req.progress();
  call.releases.reserve(static_cast<size_t>(req.releases_size()));
  for (const auto& id : req.releases()) call.releases.emplace_back(id);
  return call;
}

Result<FinishAmCall> parseFinishAm(const v1::FinishApplicationMasterRequest& req) {
  FinishAmCall call;
  call.app = AppId(req.application_id());
  if (call.app.empty()) return invalidArgument("application_id", "is required");
  call.am_token = req.am_token();
  MORPHEUS_ASSIGN_OR_RETURN(call.final_state, finalState(req.final_status()));
  MORPHEUS_ASSIGN_OR_RETURN(call.stages, stagesFromProto(req.stages()));
  call.diagnostics = req.diagnostics();
  for (const auto& f : req.files_read())
    call.files.push_back({f.path(), fromEpochMs(f.time_ms()), false});
  for (const auto& f : req.files_written())
    call.files.push_back({f.path(), fromEpochMs(f.time_ms()), true});
  return call;
}

void registerAmReply(RegisterAmOutcome outcome, v1::RegisterApplicationMasterResponse* resp) {
  resp->set_queue(std::move(outcome.queue));
  resp->set_reservation_id(outcome.reservation.value());
  toProto(outcome.max_container, resp->mutable_max_container());
  for (auto& r : outcome.running) {
    auto* c = resp->add_running_containers();
    c->set_container_id(r.id.value());
    c->set_node_id(r.node.value());
    c->set_node_address(std::move(r.node_address));
    toProto(r.resource, c->mutable_resource());
  }
}

Status serveRegisterAm(RmRuntime& runtime, const v1::RegisterApplicationMasterRequest& req,
                       v1::RegisterApplicationMasterResponse* resp) {
  MORPHEUS_ASSIGN_OR_RETURN(RegisterAmCall call, parseRegisterAm(req));
  MORPHEUS_ASSIGN_OR_RETURN(RegisterAmOutcome outcome, runtime.registerAm(call));
  registerAmReply(std::move(outcome), resp);
  return Status::ok();
}

void allocateReply(const v1::AllocateRequest& req, AllocateOutcome outcome, const RmCore& core,
                   v1::AllocateResponse* resp) {
  if (outcome.unregistered) {
    if (outcome.resync) resp->set_resync(true);
    resp->set_response_id(req.response_id());
    return;
  }
  for (const auto& c : outcome.completed) completedToProto(c, resp->add_completed());
  for (const auto& n : outcome.preemptions) {
    auto* out = resp->add_preemptions();
    out->set_container_id(n.container.value());
    out->set_deadline_ms(toEpochMs(n.deadline));
    out->set_reason(n.reason);
  }
  resp->set_response_id(req.response_id() + 1);
  resp->set_num_cluster_nodes(outcome.num_cluster_nodes);
  toProto(outcome.available, resp->mutable_available());
  // Signing (HMAC per container) needs none of the runtime's state.
  const AppId app(req.application_id());
  for (auto& g : outcome.allocated) {
    auto* c = resp->add_allocated();
    c->set_container_id(g.id.value());
    c->set_node_id(g.node.value());
    c->set_node_address(std::move(g.node_address));
    toProto(g.resource, c->mutable_resource());
    c->set_priority(g.priority);
    c->set_allocation_request_id(std::move(g.request_id));
    c->set_token(
        core.issueContainerToken({g.id, app, g.node, g.resource, {}, outcome.user.value()}));
  }
}

Status serveAllocate(RmRuntime& runtime, RmCore& core, const v1::AllocateRequest& req,
                     v1::AllocateResponse* resp) {
  ScopedTimer timer(core.latency().allocate);
  Result<AllocateCall> call = parseAllocate(req);
  if (!call.isOk()) {
    if (!req.application_id().empty()) {
      MORPHEUS_RETURN_IF_ERROR(
          runtime.authorizeAm(AppId(req.application_id()), req.am_token(), /*running=*/true));
    }
    return call.status();
  }
  MORPHEUS_ASSIGN_OR_RETURN(AllocateOutcome outcome, runtime.allocate(std::move(call).value()));
  allocateReply(req, std::move(outcome), core, resp);
  return Status::ok();
}

Status serveFinishAm(RmRuntime& runtime, const v1::FinishApplicationMasterRequest& req) {
  Result<FinishAmCall> call = parseFinishAm(req);
  if (!call.isOk()) {
    if (!req.application_id().empty()) {
      MORPHEUS_RETURN_IF_ERROR(
          runtime.authorizeAm(AppId(req.application_id()), req.am_token(), /*running=*/false));
    }
    return call.status();
  }
  return runtime.finishAm(std::move(call).value());
}

}  // namespace morpheus::rm
