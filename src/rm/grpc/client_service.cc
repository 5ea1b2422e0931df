#include "rm/grpc/client_service.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/wire.h"
#include "rm/grpc/node_report.h"
#include "rm/grpc/queue_report.h"

namespace morpheus::rm {

namespace {

// The classes of the RM's last clustering, for cluster status.
void addHarvestClasses(const RmRuntime& runtime, v1::ListNodesResponse* resp) {
  for (const auto& v : runtime.harvestClasses()) {
    auto* c = resp->add_harvest_classes();
    c->set_id(v.cls.id);
    c->set_pattern(patternName(v.cls.pattern));
    c->set_average(v.cls.average);
    c->set_peak(v.cls.peak);
    for (const auto& t : v.cls.tenants) c->add_tenants(t);
    for (const auto& n : v.nodes) c->add_node_ids(n.value());
  }
}

}  // namespace

grpc::Status ClientServiceImpl::ListNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest* req,
                                          v1::ListNodesResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  for (const auto& n : core_.nodes(req->include_lost())) {
    auto* r = resp->add_nodes();
    nodeReport(n, r);
    if (runtime_) r->set_harvest_class(runtime_->harvestClassOf(n.id));
  }
  if (runtime_) addHarvestClasses(*runtime_, resp);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetClusterMetrics(grpc::ServerContext* ctx,
                                                  const v1::GetClusterMetricsRequest*,
                                                  v1::ClusterMetrics* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  ClusterSummary s = core_.summary();
  resp->set_live_nodes(s.live_nodes);
  resp->set_lost_nodes(s.lost_nodes);
  toProto(s.total, resp->mutable_total());
  toProto(s.used, resp->mutable_used());
  return grpc::Status::OK;
}

v1::ApplicationState toProto(AppState s) {
  switch (s) {
    case AppState::kSubmitted:
      return v1::APP_STATE_SUBMITTED;
    case AppState::kRunning:
      return v1::APP_STATE_RUNNING;
    case AppState::kFinished:
      return v1::APP_STATE_FINISHED;
    case AppState::kFailed:
      return v1::APP_STATE_FAILED;
    case AppState::kKilled:
      return v1::APP_STATE_KILLED;
  }
  return v1::APP_STATE_UNSPECIFIED;
}

void toProto(const AppRecord& a, v1::ApplicationReport* out) {
  out->set_application_id(a.id.value());
  out->set_name(a.spec.name);
  out->set_user(a.spec.user.value());
  out->set_queue(a.queue);
  out->set_reservation_id(a.reservation.value());
  out->set_recurrence_key(a.spec.recurrence_key.value());
  out->set_state(toProto(a.state));
  out->set_progress(a.progress);
  out->set_submit_ms(toEpochMs(a.submit));
  out->set_start_ms(toEpochMs(a.start));
  out->set_finish_ms(toEpochMs(a.finish));
  out->set_am_attempt(a.attempt);
  out->set_diagnostics(a.diagnostics);
  out->set_am_node_id(a.am_node.value());
  out->set_am_container_id(a.am_container.value());
  out->set_memory_seconds(a.memory_mib_ms / 1000);
  out->set_vcore_seconds(a.vcore_ms / 1000);
}

grpc::Status ClientServiceImpl::SubmitApplication(grpc::ServerContext* ctx,
                                                  const v1::SubmitApplicationRequest* req,
                                                  v1::SubmitApplicationResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  std::string action = "submit application " + req->name();
  auto user = RmAccess::actingUser(who, req->user(), action);
  if (!user.isOk()) return toGrpc(user.status());
  std::string queue = req->queue().empty() ? apps_->defaultQueue() : req->queue();
  if (Status st = access_.maySubmit(who, queue, action); !st.isOk()) return toGrpc(st);
  AppSpec s;
  s.name = req->name();
  s.user = UserId(*user);
  s.queue = req->queue();
  s.reservation = ReservationId(req->reservation_id());
  s.recurrence_key = JobKey(req->recurrence_key());
  auto res = validatedResource(req->am_resource(), "am_resource");
  if (!res.isOk()) return toGrpc(res.status());
  s.am_resource = *res;
  if (!req->has_am_launch_context() || req->am_launch_context().command().empty()) {
    return toGrpc(invalidArgument("am_launch_context.command", "is required"));
  }
  s.am_launch_context = req->am_launch_context().SerializeAsString();
  s.max_attempts = req->max_am_attempts();
  s.priority = req->priority();
  s.tags = {req->tags().begin(), req->tags().end()};
  // Running in a reservation spends its owner's guarantee and feeds its
  // job's history: the owner, an administrator of its queue or an admin.
  auto may_bind = [this, &who, &s](const BindTarget& t) {
    return access_.mayAdminister(who, t.owner.value(), t.queue,
                                 "run application " + s.name + " in reservation " + t.id.value());
  };
  auto rec = apps_->submit(s, may_bind);
  if (!rec.isOk()) return toGrpc(rec.status());
  resp->set_application_id(rec->id.value());
  return grpc::Status::OK;
}

// What the scheduler holds of `app` now: its containers and usage, pending
// reasons (Phoenix admission control) and altruism (Carbyne).
void ClientServiceImpl::addRuntimeView(const AppId& app, v1::ApplicationReport* out) const {
  if (!runtime_) return;
  int32_t n = 0;
  Resource used;
  runtime_->usage(app, &n, &used);
  out->set_running_containers(n);
  toProto(used, out->mutable_used());
  for (auto& reason : runtime_->pendingReasons(app)) out->add_pending_reasons(reason);
  const sched::AppHint hint = runtime_->appHint(app);
  if (!hint.valid || !hint.from_dag) return;
  toProto(hint.need, out->mutable_altruism()->mutable_need());
  out->mutable_altruism()->set_estimated_remaining_ms(hint.remaining.count());
}

void ClientServiceImpl::addLimitsAndUsage(const AppRecord& app, v1::ApplicationReport* out) const {
  if (apps_ == nullptr) return;
  std::string waiting = apps_->waitingReason(app.id);
  out->set_waiting_reason(waiting);
  auto [mem, vc] = runtime_ ? runtime_->runningUsage(app.id) : std::pair<int64_t, int64_t>{0, 0};
  out->set_memory_seconds((app.memory_mib_ms + mem) / 1000);
  out->set_vcore_seconds((app.vcore_ms + vc) / 1000);
}

grpc::Status ClientServiceImpl::GetApplication(grpc::ServerContext* ctx,
                                               const v1::GetApplicationRequest* req,
                                               v1::ApplicationReport* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  if (req->application_id().empty())
    return toGrpc(invalidArgument("application_id", "is required"));
  auto rec = apps_->get(AppId(req->application_id()));
  if (!rec.isOk()) return toGrpc(rec.status());
  toProto(*rec, resp);
  addRuntimeView(rec->id, resp);
  addLimitsAndUsage(*rec, resp);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListApplications(grpc::ServerContext* ctx,
                                                 const v1::ListApplicationsRequest* req,
                                                 v1::ListApplicationsResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  std::set<AppState> states;
  for (int s : req->states()) {
    switch (s) {
      case v1::APP_STATE_SUBMITTED:
        states.insert(AppState::kSubmitted);
        break;
      case v1::APP_STATE_RUNNING:
        states.insert(AppState::kRunning);
        break;
      case v1::APP_STATE_FINISHED:
        states.insert(AppState::kFinished);
        break;
      case v1::APP_STATE_FAILED:
        states.insert(AppState::kFailed);
        break;
      case v1::APP_STATE_KILLED:
        states.insert(AppState::kKilled);
        break;
      default:
        return toGrpc(invalidArgument("states", "unknown state " + std::to_string(s)));
    }
  }
  for (const auto& a : apps_->list(states, req->queue())) {
    auto* r = resp->add_applications();
    toProto(a, r);
    addRuntimeView(a.id, r);
    addLimitsAndUsage(a, r);
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::KillApplication(grpc::ServerContext* ctx,
                                                const v1::KillApplicationRequest* req,
                                                v1::KillApplicationResponse*) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  if (req->application_id().empty())
    return toGrpc(invalidArgument("application_id", "is required"));
  std::string action = "kill application " + req->application_id();
  if (auto user = RmAccess::actingUser(who, req->user(), action); !user.isOk())
    return toGrpc(user.status());
  auto rec = apps_->get(AppId(req->application_id()));
  if (!rec.isOk()) return toGrpc(rec.status());
  if (Status may = access_.mayAdminister(who, rec->spec.user.value(), rec->queue, action);
      !may.isOk()) {
    return toGrpc(may);
  }
  // Owner, queue administrator or admin: checked above (owner and queue never change).
  Status st = apps_->kill(rec->id, UserId(who.user), /*admin=*/true, req->reason());
  if (st.isOk() && runtime_) runtime_->onAppKilled(AppId(req->application_id()));
  return toGrpc(st);
}

grpc::Status ClientServiceImpl::ListAppTelemetry(grpc::ServerContext* ctx,
                                                 const v1::ListAppTelemetryRequest* req,
                                                 v1::ListAppTelemetryResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!runtime_)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  for (const auto& t : runtime_->telemetry(req->recurrence_key())) {
    auto* a = resp->add_apps();
    a->set_application_id(t.app.value());
    a->set_recurrence_key(t.recurrence_key.value());
    a->set_user(t.user.value());
    a->set_submit_ms(toEpochMs(t.submit));
    a->set_start_ms(toEpochMs(t.start));
    a->set_finish_ms(toEpochMs(t.finish));
    a->set_step_ms(t.step.count());
    for (double v : t.skyline) a->add_skyline(v);
    toProto(t.container, a->mutable_container());
    for (const auto& f : t.files) {
      auto* e = a->add_files();
      e->set_path(f.path);
      e->set_time_ms(toEpochMs(f.time));
      e->set_write(f.write);
    }
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::readableApp(const grpc::ServerContext& ctx,
                                            const std::string& application_id,
                                            const std::string& action,
                                            const std::function<Status(const AppRecord&)>& validate,
                                            AppRecord* out) const {
  Principal who;
  if (grpc::Status st = access_.caller(ctx, &who); !st.ok()) return st;
  if (!apps_ || !runtime_)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  if (application_id.empty()) return toGrpc(invalidArgument("application_id", "is required"));
  auto app = apps_->get(AppId(application_id));
  if (!app.isOk()) return toGrpc(app.status());
  if (validate) {
    if (Status st = validate(*app); !st.isOk()) return toGrpc(st);
  }
  if (Status may = access_.mayAdminister(who, app->spec.user.value(), app->queue,
                                         action + " application " + app->id.value());
      !may.isOk()) {
    return toGrpc(may);
  }
  *out = std::move(app).value();
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetContainerLogAccess(grpc::ServerContext* ctx,
                                                      const v1::GetContainerLogAccessRequest* req,
                                                      v1::GetContainerLogAccessResponse* resp) {
  AppRecord app;
  ContainerId container;
  // The container is checked before the permission (readableApp): a wrong
  // one fails alike for every caller and reveals only what GetApplication
  // shows any user.
  auto named_container = [req, &container](const AppRecord& a) {
    container =
        ContainerId(req->container_id().empty() ? a.am_container.value() : req->container_id());
    if (container.empty()) {
      return notFound("application " + a.id.value() + " has no AM container yet");
    }
    if (RmRuntime::appOf(container.value()) != a.id) {
      return invalidArgument(
          "container_id",
          "'" + container.value() + "' is not a container of application " + a.id.value());
    }
    return Status::ok();
  };
  if (grpc::Status st =
          readableApp(*ctx, req->application_id(), "read the logs of", named_container, &app);
      !st.ok()) {
    return st;
  }
  logTargets(app, container, req->node_id(), resp);
  if (resp->targets_size() == 0) {
    return toGrpc(notFound(req->node_id().empty() ? "no nodes in the cluster"
                                                  : "node " + req->node_id() + " not found"));
  }
  return grpc::Status::OK;
}

void ClientServiceImpl::logTargets(const AppRecord& app, const ContainerId& container,
                                   const std::string& node_id,
                                   v1::GetContainerLogAccessResponse* resp) const {
  std::string node = node_id;
  if (node.empty()) {
    if (auto known = runtime_->nodeOf(container)) {
      node = known->value();
    } else if (container == app.am_container) {
      node = app.am_node.value();
    }
  }
  resp->set_container_id(container.value());
  for (const auto& n : core_.nodes(/*include_lost=*/true)) {
    if (!node.empty() && n.id.value() != node) continue;
    auto* t = resp->add_targets();
    t->set_node_id(n.id.value());
    t->set_container_manager_address(n.container_manager_address);
    // Signed with that node's key, valid for rm.container-token-expiry: the NM
    // serves logs only for a token of the container's app.
    t->set_token(core_.issueContainerToken(
        {container, app.id, n.id, Resource(), {}, app.spec.user.value()}));
  }
}

grpc::Status ClientServiceImpl::ListContainers(grpc::ServerContext* ctx,
                                               const v1::ListContainersRequest* req,
                                               v1::ListContainersResponse* resp) {
  // The same check as GetContainerLogAccess: the list leads to the logs.
  AppRecord app;
  if (grpc::Status st =
          readableApp(*ctx, req->application_id(), "list the containers of", nullptr, &app);
      !st.ok()) {
    return st;
  }
  std::map<NodeId, std::string> addresses;
  for (const auto& n : core_.nodes(/*include_lost=*/true))
    addresses[n.id] = n.container_manager_address;
  auto address = [&addresses](const NodeId& n) {
    auto it = addresses.find(n);
    return it == addresses.end() ? std::string() : it->second;
  };
  const ContainerHistory::AppView view = runtime_->containerHistory(app.id);
  bool has_am = false;
  for (const auto& e : view.containers) {
    auto* c = resp->add_containers();
    c->set_container_id(e.id.value());
    c->set_node_id(e.node.value());
    c->set_container_manager_address(address(e.node));
    switch (e.state) {
      case ContainerHistoryEntry::State::kAllocated:
        c->set_state(v1::CONTAINER_NEW);
        break;
      case ContainerHistoryEntry::State::kRunning:
        c->set_state(v1::CONTAINER_RUNNING);
        break;
      case ContainerHistoryEntry::State::kComplete:
        c->set_state(v1::CONTAINER_COMPLETE);
        c->set_exit_status(e.exit_status);
        c->set_exit_reason(static_cast<v1::ContainerExitReason>(e.exit_reason));
        c->set_diagnostics(e.diagnostics);
        c->set_end_ms(toEpochMs(e.end));
        break;
    }
    toProto(e.resource, c->mutable_resource());
    c->set_am(e.am);
    c->set_start_ms(toEpochMs(e.start));
    has_am = has_am || e.id == app.am_container;
  }
  // Not in the history (it ended before this RM started, or the history of
  // the app was dropped): the record still names the current AM container.
  if (!has_am && !app.am_container.empty()) {
    auto* c = resp->add_containers();
    c->set_container_id(app.am_container.value());
    c->set_node_id(app.am_node.value());
    c->set_container_manager_address(address(app.am_node));
    // A SUBMITTED app with an AM container waits for its next attempt.
    const bool ended = app.state != AppState::kRunning;
    c->set_state(ended ? v1::CONTAINER_COMPLETE : v1::CONTAINER_RUNNING);
    c->set_diagnostics("from the application record: this RM did not watch the container");
    toProto(app.spec.am_resource, c->mutable_resource());
    c->set_am(true);
    c->set_start_ms(toEpochMs(app.start));
    if (isFinal(app.state)) c->set_end_ms(toEpochMs(app.finish));
    has_am = true;
  }
  resp->set_omitted(static_cast<int32_t>(view.omitted));
  resp->set_partial(app.submit < runtime_->startedAt() ||
                    (!view.known && !app.am_container.empty()));
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListQueues(grpc::ServerContext* ctx, const v1::ListQueuesRequest*,
                                           v1::ListQueuesResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!apps_ || !runtime_)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  TimePoint now = clock_ ? clock_->now()
                         : std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  for (auto& q : queueReports(*runtime_, *apps_, reservations_, now)) {
    *resp->add_queues() = std::move(q);
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetUsage(grpc::ServerContext* ctx, const v1::GetUsageRequest* req,
                                         v1::GetUsageResponse* resp) {
  Principal who;
  if (grpc::Status st = access_.caller(*ctx, &who); !st.ok()) return st;
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  UsageGroup by;
  if (req->group_by() == "user") {
    by = UsageGroup::kUser;
  } else if (req->group_by() == "queue") {
    by = UsageGroup::kQueue;
  } else {
    return toGrpc(invalidArgument("group_by", "'" + req->group_by() + "' is not user or queue"));
  }
  if (req->since_ms() < 0) return toGrpc(invalidArgument("since_ms", "must be >= 0"));
  // A user reads their own usage; an admin everyone's unless one is named.
  auto user = RmAccess::actingUser(who, req->user(), "read the usage of " + req->user());
  if (!user.isOk()) return toGrpc(user.status());
  const std::string only = who.admin && req->user().empty() ? "" : *user;
  std::vector<AppRecord> apps;
  for (auto& a : apps_->list({}, "")) {
    if (only.empty() || a.spec.user.value() == only) apps.push_back(std::move(a));
  }
  auto running = [this](const AppRecord& a) {
    return runtime_ && !isFinal(a.state) ? runtime_->runningUsage(a.id)
                                         : std::pair<int64_t, int64_t>{0, 0};
  };
  for (const auto& row : aggregateUsage(apps, by, fromEpochMs(req->since_ms()), running)) {
    auto* r = resp->add_rows();
    r->set_key(row.key);
    r->set_memory_seconds(row.memory_mib_ms / 1000);
    r->set_vcore_seconds(row.vcore_ms / 1000);
    r->set_apps(row.apps);
    r->set_running_apps(row.running_apps);
  }
  resp->set_user(only);
  resp->set_now_ms(
      clock_ ? toEpochMs(clock_->now())
             : toEpochMs(std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now())));
  return grpc::Status::OK;
}

}  // namespace morpheus::rm
