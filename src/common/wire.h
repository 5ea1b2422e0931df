// Conversions between protobuf messages and core types, and Status <->
// grpc::Status. Only the API edge (services, clients) includes this.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"
#include "morpheus/v1/common.pb.h"

namespace morpheus {

Resource fromProto(const v1::Resource& r);
void toProto(const Resource& r, v1::Resource* out);
v1::Resource toProto(const Resource& r);
// INVALID_ARGUMENT naming `field` when any dimension is negative.
Result<Resource> validatedResource(const v1::Resource& r, const std::string& field);

grpc::Status toGrpc(const Status& s);
Status fromGrpc(const grpc::Status& s);

// Client channel to host:port with sane defaults (no proxy, bounded backoff).
std::shared_ptr<grpc::Channel> makeChannel(const std::string& address);
// A client context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> makeContext(Millis timeout);

}  // namespace morpheus
