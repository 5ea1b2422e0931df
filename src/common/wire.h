// Conversions between protobuf messages and core types, and Status <->
// grpc::Status. Only the API edge (services, clients) includes this.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"
#include "common/tls.h"
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
// `address` may list several peers "h:p,h:p" (see common/address_list.h): the
// channel follows whichever of them accepts connections.
// With `tls` enabled the channel presents tls's certificate (none when it has
// none: a client with the CA only) and accepts only a
// server whose certificate the CA signed and that names the host of
// `address`; otherwise plaintext. There is deliberately no overload without
// `tls`, so no caller can forget the process's TLS setting.
std::shared_ptr<grpc::Channel> makeChannel(const std::string& address, const TlsOptions& tls);
// Server credentials for `tls`: TLS that verifies a client certificate signed
// by tls's CA, required (tls.client-certs: require) or only when presented
// (request); plaintext when TLS is off.
std::shared_ptr<grpc::ServerCredentials> makeServerCredentials(const TlsOptions& tls);
// A client context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> makeContext(Millis timeout);

}  // namespace morpheus
