// gRPC edge of the AM protocol (YARN's ApplicationMasterProtocol). Allocate,
// called by every AM about once a second, is on gRPC's callback API
// (asynchronous scheduling), no thread pool slot per call. With a strand it runs there, in order
// with the node heartbeats (so gRPC threads never wait for the runtime's lock
// the strand holds); a full strand answers UNAVAILABLE and the AM retries at
// its next allocate. Without one (tests, fuzzing) it runs on the gRPC thread.
// Register and Finish stay synchronous (once per attempt).
//
// The edge translates: RegisterApplicationMaster, Allocate and
// FinishApplicationMaster requests are parsed into the runtime's typed calls
// (rm/runtime/am_calls.h; INVALID_ARGUMENT naming the field as the request
// wrote it), the outcome becomes the reply, and the granted containers'
// tokens are signed here with the RmCore's per-node keys (the key stays in
// RmCore; the runtime never signs for a reply: it signs only the AM
// container's token, which goes to the NM in its launch request).
#pragma once

#include "common/status.h"
#include "common/wire.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "rm/core/rm_core.h"
#include "rm/grpc/arena_messages.h"
#include "rm/runtime/am_calls.h"
#include "rm/runtime/runtime.h"
#include "rm/runtime/strand.h"

namespace morpheus::rm {

// The request as the runtime's call. INVALID_ARGUMENT naming the field
// ("application_id", "asks[2].capability.vcores", "stages[0].depends_on")
// at the first that is malformed, in field order. Pure.
Result<RegisterAmCall> parseRegisterAm(const v1::RegisterApplicationMasterRequest& req);
Result<AllocateCall> parseAllocate(const v1::AllocateRequest& req);
Result<FinishAmCall> parseFinishAm(const v1::FinishApplicationMasterRequest& req);

// The outcome as the registration's reply (no tokens: the running
// containers' were handed out with their grants). Pure.
void registerAmReply(RegisterAmOutcome outcome, v1::RegisterApplicationMasterResponse* resp);
// The outcome as the reply to `req`: the response id echoed (resync) or
// advanced, and each granted container with a container token signed by
// `core` for the app's user. Thread-safe (RmCore::issueContainerToken is).
void allocateReply(const v1::AllocateRequest& req, AllocateOutcome outcome, const RmCore& core,
                   v1::AllocateResponse* resp);

// One RegisterApplicationMaster as the handler runs it: parse,
// RmRuntime::registerAm, reply. On an error `resp` is untouched.
Status serveRegisterAm(RmRuntime& runtime, const v1::RegisterApplicationMasterRequest& req,
                       v1::RegisterApplicationMasterResponse* resp);
// One Allocate, all of it, as the handler runs it: parse, RmRuntime::allocate,
// reply, timed in morpheus_rm_allocate_duration_seconds. A request that does
// not parse is refused after the runtime's checks of its AM token (and that
// the app runs), so errors come in the order the caller proves who it is,
// then what it asked. On an error `resp` is untouched.
Status serveAllocate(RmRuntime& runtime, RmCore& core, const v1::AllocateRequest& req,
                     v1::AllocateResponse* resp);
// One FinishApplicationMaster, likewise (the token checked before a parse
// error is reported).
Status serveFinishAm(RmRuntime& runtime, const v1::FinishApplicationMasterRequest& req);

class ApplicationMasterServiceImpl final
    : public v1::ApplicationMaster::WithCallbackMethod_Allocate<v1::ApplicationMaster::Service> {
 public:
  // `core` signs the container tokens and times the allocates.
  ApplicationMasterServiceImpl(RmRuntime& runtime, RmCore& core, Strand* strand = nullptr)
      : runtime_(runtime), core_(core), strand_(strand) {
    SetMessageAllocatorFor_Allocate(&messages_);
  }
  grpc::Status RegisterApplicationMaster(grpc::ServerContext*,
                                         const v1::RegisterApplicationMasterRequest* req,
                                         v1::RegisterApplicationMasterResponse* resp) override {
    return toGrpc(serveRegisterAm(runtime_, *req, resp));
  }
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx,
                                     const v1::AllocateRequest* req,
                                     v1::AllocateResponse* resp) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (strand_ == nullptr) {
      reactor->Finish(toGrpc(serveAllocate(runtime_, core_, *req, resp)));
      return reactor;
    }
    // The request and response live until Finish.
    bool posted = strand_->post([this, req, resp, reactor] {
      reactor->Finish(toGrpc(serveAllocate(runtime_, core_, *req, resp)));
    });
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
    return toGrpc(serveFinishAm(runtime_, *req));
  }

 private:
  RmRuntime& runtime_;
  RmCore& core_;
  Strand* strand_;  // nullable
  // Each Allocate's request and response on a pooled arena
  // (arena_messages.h): 16 KiB holds a reply of about fifty containers; one
  // AM calls about once a second, so 256 pooled holders (4 MiB) cover
  // hundreds of AMs.
  ArenaMessageAllocator<v1::AllocateRequest, v1::AllocateResponse> messages_{16 * 1024, 256};
};

}  // namespace morpheus::rm
