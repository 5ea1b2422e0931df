// gRPC edge of the AM protocol (YARN's ApplicationMasterProtocol).
#pragma once

#include "common/wire.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "rm/runtime.h"

namespace morpheus::rm {

class ApplicationMasterServiceImpl final : public v1::ApplicationMaster::Service {
 public:
  explicit ApplicationMasterServiceImpl(RmRuntime& runtime) : runtime_(runtime) {}
  grpc::Status RegisterApplicationMaster(grpc::ServerContext*,
                                         const v1::RegisterApplicationMasterRequest* req,
                                         v1::RegisterApplicationMasterResponse* resp) override {
    return toGrpc(runtime_.registerAm(*req, resp));
  }
  grpc::Status Allocate(grpc::ServerContext*, const v1::AllocateRequest* req,
                        v1::AllocateResponse* resp) override {
    return toGrpc(runtime_.allocate(*req, resp));
  }
  grpc::Status FinishApplicationMaster(grpc::ServerContext*,
                                       const v1::FinishApplicationMasterRequest* req,
                                       v1::FinishApplicationMasterResponse*) override {
    return toGrpc(runtime_.finishAm(*req));
  }

 private:
  RmRuntime& runtime_;
};

}  // namespace morpheus::rm
