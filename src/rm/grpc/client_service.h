// The RM's ClientService (proto/morpheus/v1/client.proto), what morpheusctl
// and YARN-style clients call: submit, read and kill applications; read the
// cluster's nodes, metrics, queues and accounting; find an application's
// containers and the means to read their logs. Protobuf <-> core types
// (RmCore, AppManager, RmRuntime) and Status -> grpc::Status, nothing more.
//
// Who may call (rm/core/access.h, docs/operator/security.md): every RPC
// first authenticates its caller from the bearer token (RmAccess::caller:
// UNAUTHENTICATED for a missing or unknown token, PERMISSION_DENIED for a
// node credential); a user named in a request never decides who calls. Then
//  - reading (GetApplication, ListApplications, ListAppTelemetry, ListNodes,
//    GetClusterMetrics, ListQueues): any authenticated user;
//  - SubmitApplication: submit on the queue (QueueAcls); another `user`
//    than the caller needs an admin; running in a reservation needs its
//    owner, an administrator of its queue or an admin;
//  - KillApplication, GetContainerLogAccess, ListContainers: the
//    application's owner, an administrator of its queue or an admin (the
//    container list leads to the logs, so it has the logs' rule);
//  - GetUsage: the caller's own applications; another user's or everyone's
//    needs an admin.
// A refused call answers PERMISSION_DENIED naming the user and the action
// and changes nothing.
//
// Thread-safety: every RPC may run on any gRPC thread, concurrently, on the
// synchronous API. The service keeps no mutable state of its own (call
// setQueueSources before serving); RmCore, AppManager and RmRuntime are
// internally locked, so one reply may join figures read a moment apart. The
// RPCs do not go through the RM's strand: they take the runtime's lock
// directly, as the REST views do.
#pragma once

#include <functional>
#include <string>

#include "morpheus/v1/client.grpc.pb.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

class ClientServiceImpl final : public v1::ClientService::Service {
 public:
  // `apps` null = the application RPCs answer UNIMPLEMENTED. `access` must
  // outlive the service.
  ClientServiceImpl(RmCore& core, const RmAccess& access, AppManager* apps = nullptr,
                    RmRuntime* runtime = nullptr)
      : core_(core), access_(access), apps_(apps), runtime_(runtime) {}
  grpc::Status SubmitApplication(grpc::ServerContext*, const v1::SubmitApplicationRequest*,
                                 v1::SubmitApplicationResponse*) override;
  grpc::Status GetApplication(grpc::ServerContext*, const v1::GetApplicationRequest*,
                              v1::ApplicationReport*) override;
  grpc::Status ListApplications(grpc::ServerContext*, const v1::ListApplicationsRequest*,
                                v1::ListApplicationsResponse*) override;
  grpc::Status KillApplication(grpc::ServerContext*, const v1::KillApplicationRequest*,
                               v1::KillApplicationResponse*) override;
  grpc::Status ListAppTelemetry(grpc::ServerContext*, const v1::ListAppTelemetryRequest*,
                                v1::ListAppTelemetryResponse*) override;
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse*) override;
  grpc::Status GetClusterMetrics(grpc::ServerContext*, const v1::GetClusterMetricsRequest*,
                                 v1::ClusterMetrics*) override;
  grpc::Status GetContainerLogAccess(grpc::ServerContext*, const v1::GetContainerLogAccessRequest*,
                                     v1::GetContainerLogAccessResponse*) override;
  // The app's containers from the runtime's ContainerHistory, plus the app
  // record's AM container when the history lacks it; the access of
  // GetContainerLogAccess. Needs `apps` and `runtime`.
  grpc::Status ListContainers(grpc::ServerContext*, const v1::ListContainersRequest*,
                              v1::ListContainersResponse*) override;
  // Every queue (queueReports): ad-hoc hierarchy, then reservation queues.
  // Needs `apps` and `runtime`; UNIMPLEMENTED without them.
  grpc::Status ListQueues(grpc::ServerContext*, const v1::ListQueuesRequest*,
                          v1::ListQueuesResponse*) override;
  // Accounting per user or queue (aggregateUsage): a user's own apps; an
  // admin's request covers every user, or the one it names. Needs `apps`.
  grpc::Status GetUsage(grpc::ServerContext*, const v1::GetUsageRequest*,
                        v1::GetUsageResponse*) override;

  // Where ListQueues finds reservation queues without bound apps and the
  // time of their current guarantee. Both must outlive the service; unset =
  // only the scheduler's reservation queues, at the system clock.
  void setQueueSources(const ReservationManager* reservations, Clock* clock) {
    reservations_ = reservations;
    clock_ = clock;
  }

 private:
  // The rule of GetContainerLogAccess and ListContainers, who may read an
  // application's containers and logs. In order: the caller (RmAccess::caller),
  // applications enabled (`apps` and `runtime`; UNIMPLEMENTED otherwise),
  // `application_id` given (INVALID_ARGUMENT naming application_id) and known
  // (NOT_FOUND), `validate` on the record (may be empty; its error is the
  // answer), then the owner, an administrator of the app's queue or an admin
  // (PERMISSION_DENIED naming "<action> application <id>"). OK fills *out.
  // `validate` checks the request against the record before the permission:
  // the record's fields are readable by every user (GetApplication).
  grpc::Status readableApp(const grpc::ServerContext& ctx, const std::string& application_id,
                           const std::string& action,
                           const std::function<Status(const AppRecord&)>& validate,
                           AppRecord* out) const;
  // The targets of a log read: the container's known node, else `node_id`,
  // else every node; each with a container token of `app` for that node.
  void logTargets(const AppRecord& app, const ContainerId& container, const std::string& node_id,
                  v1::GetContainerLogAccessResponse* resp) const;
  void addRuntimeView(const AppId& app, v1::ApplicationReport* out) const;
  // The waiting reason and the accounting, running containers included.
  void addLimitsAndUsage(const AppRecord& app, v1::ApplicationReport* out) const;

  RmCore& core_;
  const RmAccess& access_;
  AppManager* apps_;
  RmRuntime* runtime_;
  const ReservationManager* reservations_ = nullptr;
  Clock* clock_ = nullptr;
};

// An application record as the wire's report (without the runtime's view:
// running containers, usage, pending reasons).
v1::ApplicationState toProto(AppState s);
void toProto(const AppRecord& a, v1::ApplicationReport* out);

}  // namespace morpheus::rm
