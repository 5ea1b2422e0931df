// gRPC edge of the AM protocol (YARN's ApplicationMasterProtocol). Allocate,
// called by every AM about once a second, is on gRPC's callback API
// (asynchronous scheduling), no thread pool slot per call. With a strand it runs there, in order
// with the node heartbeats (so gRPC threads never wait for the runtime's lock
// the strand holds); a full strand answers UNAVAILABLE and the AM retries at
// its next allocate. Without one (tests, fuzzing) it runs on the gRPC thread.
// Register and Finish stay synchronous (once per attempt).
#pragma once

#include "common/wire.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "rm/grpc/arena_messages.h"
#include "rm/runtime/runtime.h"
#include "rm/runtime/strand.h"

namespace morpheus::rm {

class ApplicationMasterServiceImpl final
    : public v1::ApplicationMaster::WithCallbackMethod_Allocate<v1::ApplicationMaster::Service> {
 public:
  explicit ApplicationMasterServiceImpl(RmRuntime& runtime, Strand* strand = nullptr)
      : runtime_(runtime), strand_(strand) {
    SetMessageAllocatorFor_Allocate(&messages_);
  }
  grpc::Status RegisterApplicationMaster(grpc::ServerContext*,
                                         const v1::RegisterApplicationMasterRequest* req,
                                         v1::RegisterApplicationMasterResponse* resp) override {
    return toGrpc(runtime_.registerAm(*req, resp));
  }
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx,
                                     const v1::AllocateRequest* req,
                                     v1::AllocateResponse* resp) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (strand_ == nullptr) {
      reactor->Finish(toGrpc(runtime_.allocate(*req, resp)));
      return reactor;
    }
    // The request and response live until Finish.
    bool posted = strand_->post(
        [this, req, resp, reactor] { reactor->Finish(toGrpc(runtime_.allocate(*req, resp))); });
    if (!posted) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::UNAVAILABLE,
                       "the RM's scheduling queue is full: retry at the next allocate"));
    }
    return reactor;
  }
  grpc::Status FinishApplicationMaster(grpc::ServerContext*,
                                       const v1::FinishApplicationMasterRequest* req,
                                       v1::FinishApplicationMasterResponse*) override {
    return toGrpc(runtime_.finishAm(*req));
  }

 private:
  RmRuntime& runtime_;
  Strand* strand_;  // nullable
  // Each Allocate's request and response on a pooled arena
  // (arena_messages.h): 16 KiB holds a reply of about fifty containers; one
  // AM calls about once a second, so 256 pooled holders (4 MiB) cover
  // hundreds of AMs.
  ArenaMessageAllocator<v1::AllocateRequest, v1::AllocateResponse> messages_{16 * 1024, 256};
};

}  // namespace morpheus::rm
