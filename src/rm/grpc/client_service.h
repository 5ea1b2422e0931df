// gRPC edge of the RM for clients: ClientService, protobuf <-> core types.
#pragma once

#include "morpheus/v1/client.grpc.pb.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// Every RPC authenticates its caller (RmAccess): any user may read; submit
// needs submit on the queue; kill and log access need the owner, a queue
// administrator or an admin.
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

v1::ApplicationState toProto(AppState s);
void toProto(const AppRecord& a, v1::ApplicationReport* out);

}  // namespace morpheus::rm
