#include "nodemanager/container_service.h"

#include "common/wire.h"

namespace morpheus::nm {

void TokenKey::set(const std::string& secret) {
  MutexLock lk(mu_);
  signer_.emplace(secret);
}

bool TokenKey::known() const {
  MutexLock lk(mu_);
  return signer_.has_value();
}

Result<ContainerTokenInfo> TokenKey::verify(const std::string& token) const {
  MutexLock lk(mu_);
  if (!signer_) return unavailable("node not registered with the RM yet");
  return verifyContainerToken(*signer_, token);
}

void toProto(const ContainerSnapshot& s, v1::ContainerStatus* out) {
  out->set_container_id(s.id.value());
  out->set_state(s.running ? v1::CONTAINER_RUNNING : v1::CONTAINER_COMPLETE);
  out->set_exit_status(s.exit_status);
  out->set_exit_reason(static_cast<v1::ContainerExitReason>(static_cast<int>(s.reason)));
  out->set_diagnostics(s.diagnostics);
  out->set_rss_mib(s.rss_mib);
  out->set_cpu_vcores(s.cpu_vcores);
  out->set_start_ms(toEpochMs(s.start));
  out->set_end_ms(s.running ? 0 : toEpochMs(s.end));
  morpheus::toProto(s.resource, out->mutable_resource());
}

namespace {
void fail(google::protobuf::RepeatedPtrField<v1::ContainerError>* errs, const std::string& id,
          const Status& st) {
  auto* e = errs->Add();
  e->set_container_id(id);
  e->set_code(statusCodeName(st.code()));
  e->set_message(st.message());
}
}  // namespace

grpc::Status ContainerServiceImpl::StartContainers(grpc::ServerContext*,
                                                   const v1::StartContainersRequest* req,
                                                   v1::StartContainersResponse* resp) {
  if (!key_.known())
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node not registered with the RM yet");
  std::string node_id;
  {
    MutexLock lk(mu_);
    node_id = node_id_;
  }
  for (const auto& r : req->requests()) {
    const std::string& id = r.container().container_id();
    if (Status valid = validateContainerId(id); !valid.isOk()) {
      fail(resp->mutable_failed(), id, valid);
      continue;
    }
    auto info = key_.verify(r.container().token());
    if (!info.isOk()) {
      fail(resp->mutable_failed(), id,
           permissionDenied("container token: " + info.status().message()));
      continue;
    }
    if (info->container.value() != id || info->node.value() != node_id) {
      fail(resp->mutable_failed(), id,
           permissionDenied("container token is for " + info->container.value() + " on " +
                            info->node.value()));
      continue;
    }
    if (Status fresh = checkNotExpired(*info, clock_.now()); !fresh.isOk()) {
      fail(resp->mutable_failed(), id, fresh);
      continue;
    }
    LaunchSpec spec;
    spec.id = info->container;
    spec.app = info->app;
    spec.resource = info->resource;  // the token's grant, not the caller's claim
    spec.command = r.launch_context().command();
    spec.args.assign(r.launch_context().args().begin(), r.launch_context().args().end());
    spec.env = {r.launch_context().env().begin(), r.launch_context().env().end()};
    spec.user = info->user;              // the RM's word, signed: never the request's
    spec.token_expires = info->expires;  // the record outlives a replay (LogRetention)
    if (auto t = spec.env.find("MORPHEUS_AM_TOKEN"); t != spec.env.end()) {
      spec.am_token = t->second;  // handed over in a file (LaunchSpec::am_token)
      spec.env.erase(t);
    }
    if (spec.env.count("MORPHEUS_RM_AM_ADDRESS")) spec.tls_ca_pem = am_ca_pem_;
    Status st = runtime_.launch(spec);
    if (st.isOk()) {
      resp->add_started(id);
    } else {
      fail(resp->mutable_failed(), id, st);
    }
  }
  return grpc::Status::OK;
}

grpc::Status ContainerServiceImpl::StopContainers(grpc::ServerContext*,
                                                  const v1::StopContainersRequest* req,
                                                  v1::StopContainersResponse* resp) {
  auto info = verifyForApp(req->token());
  if (!info.isOk()) return toGrpc(info.status());
  for (const auto& id : req->container_ids()) {
    if (Status valid = validateContainerId(id); !valid.isOk()) {
      fail(resp->mutable_failed(), id, valid);
      continue;
    }
    auto snap = runtime_.get(ContainerId(id));
    if (!snap) {
      fail(resp->mutable_failed(), id, notFound("container " + id + " is not on this node"));
      continue;
    }
    if (snap->app != info->app) {
      fail(resp->mutable_failed(), id,
           permissionDenied("container " + id + " belongs to another application"));
      continue;
    }
    Status st =
        runtime_.stop(ContainerId(id), ExitReason::kKilled, "stopped by the application master");
    if (!st.isOk()) {
      fail(resp->mutable_failed(), id, st);
      continue;
    }
    resp->add_stopped(id);
  }
  return grpc::Status::OK;
}

grpc::Status ContainerServiceImpl::GetContainerStatuses(grpc::ServerContext*,
                                                        const v1::GetContainerStatusesRequest* req,
                                                        v1::GetContainerStatusesResponse* resp) {
  for (const auto& id : req->container_ids()) {
    if (Status valid = validateContainerId(id); !valid.isOk()) return toGrpc(valid);
  }
  auto info = verifyForApp(req->token());
  if (!info.isOk()) return toGrpc(info.status());
  if (req->container_ids().empty()) {
    for (const auto& s : runtime_.snapshot()) {
      if (s.app == info->app) toProto(s, resp->add_statuses());
    }
    return grpc::Status::OK;
  }
  for (const auto& id : req->container_ids()) {
    auto s = runtime_.get(ContainerId(id));
    if (s && s->app == info->app) toProto(*s, resp->add_statuses());
  }
  return grpc::Status::OK;
}

Result<ContainerTokenInfo> ContainerServiceImpl::verifyForApp(const std::string& token) const {
  auto info = key_.verify(token);
  if (!info.isOk()) return permissionDenied("token: " + info.status().message());
  ContainerTokenInfo grace = *info;
  grace.expires = info->expires + expired_grace_;
  if (Status st = checkNotExpired(grace, clock_.now()); !st.isOk()) {
    return permissionDenied("token: expired longer than nm.expired-token-grace (" +
                            std::to_string(expired_grace_.count()) + " ms) ago: " + st.message());
  }
  return info;
}

Status ContainerServiceImpl::authorizeForContainer(const std::string& token,
                                                   const ContainerId& id) const {
  MORPHEUS_ASSIGN_OR_RETURN(ContainerTokenInfo info, verifyForApp(token));
  MORPHEUS_ASSIGN_OR_RETURN(AppId app, runtime_.appOf(id));
  if (app != info.app) {
    return permissionDenied("container " + id.value() + " belongs to another application");
  }
  return Status::ok();
}

grpc::Status ContainerServiceImpl::GetContainerLogs(grpc::ServerContext*,
                                                    const v1::GetContainerLogsRequest* req,
                                                    v1::GetContainerLogsResponse* resp) {
  if (Status valid = validateContainerId(req->container_id()); !valid.isOk()) return toGrpc(valid);
  ContainerId id(req->container_id());
  if (Status st = authorizeForContainer(req->token(), id); !st.isOk()) return toGrpc(st);
  auto data = runtime_.logs(id, req->stream().empty() ? "stdout" : req->stream(),
                            static_cast<size_t>(std::max<int64_t>(req->max_bytes(), 0)));
  if (!data.isOk()) return toGrpc(data.status());
  resp->set_data(*data);
  return grpc::Status::OK;
}

}  // namespace morpheus::nm
