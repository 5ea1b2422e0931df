// gRPC edge of the AM protocol (YARN's ApplicationMasterProtocol). Allocate,
// called by every AM about once a second, is on gRPC's callback API (issue
// #15): handled on the gRPC thread that received it (RmRuntime::allocate holds
// the runtime's lock only for its bookkeeping), no thread pool slot per call.
// Register and Finish stay synchronous (once per attempt).
#pragma once

#include "common/wire.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "rm/runtime.h"

namespace morpheus::rm {

class ApplicationMasterServiceImpl final
    : public v1::ApplicationMaster::WithCallbackMethod_Allocate<v1::ApplicationMaster::Service> {
 public:
  explicit ApplicationMasterServiceImpl(RmRuntime& runtime) : runtime_(runtime) {}
  grpc::Status RegisterApplicationMaster(grpc::ServerContext*,
                                         const v1::RegisterApplicationMasterRequest* req,
                                         v1::RegisterApplicationMasterResponse* resp) override {
    return toGrpc(runtime_.registerAm(*req, resp));
  }
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx,
                                     const v1::AllocateRequest* req,
                                     v1::AllocateResponse* resp) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(toGrpc(runtime_.allocate(*req, resp)));
    return reactor;
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
