#include "common/wire.h"

#include "common/address_list.h"

namespace morpheus {

Resource fromProto(const v1::Resource& r) {
  Resource out(r.memory_mib(), r.vcores());
  for (const auto& [k, v] : r.extended()) out.setExtended(k, v);
  return out;
}

void toProto(const Resource& r, v1::Resource* out) {
  out->set_memory_mib(r.memoryMib());
  out->set_vcores(r.vcores());
  out->clear_extended();
  for (const auto& [k, v] : r.extended()) (*out->mutable_extended())[k] = v;
}

v1::Resource toProto(const Resource& r) {
  v1::Resource out;
  toProto(r, &out);
  return out;
}

Result<Resource> validatedResource(const v1::Resource& r, const std::string& field) {
  if (r.memory_mib() < 0) return invalidArgument(field + ".memory_mib", "must be >= 0");
  if (r.vcores() < 0) return invalidArgument(field + ".vcores", "must be >= 0");
  for (const auto& [k, v] : r.extended()) {
    if (k.empty()) return invalidArgument(field + ".extended", "empty resource name");
    if (v < 0) return invalidArgument(field + ".extended." + k, "must be >= 0");
  }
  return fromProto(r);
}

grpc::Status toGrpc(const Status& s) {
  grpc::StatusCode c = grpc::StatusCode::OK;
  switch (s.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      c = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kNotFound:
      c = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kInfeasible:
      c = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kAlreadyExists:
      c = grpc::StatusCode::ALREADY_EXISTS;
      break;
    case StatusCode::kPermissionDenied:
      c = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case StatusCode::kUnavailable:
      c = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kInternal:
      c = grpc::StatusCode::INTERNAL;
      break;
  }
  return grpc::Status(c, s.message());
}

Status fromGrpc(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return Status::ok();
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return Status(StatusCode::kInvalidArgument, s.error_message());
    case grpc::StatusCode::NOT_FOUND:
      return Status(StatusCode::kNotFound, s.error_message());
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status(StatusCode::kInfeasible, s.error_message());
    case grpc::StatusCode::ALREADY_EXISTS:
      return Status(StatusCode::kAlreadyExists, s.error_message());
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status(StatusCode::kPermissionDenied, s.error_message());
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status(StatusCode::kUnavailable, s.error_message());
    default:
      return Status(StatusCode::kInternal, s.error_message());
  }
}

std::shared_ptr<grpc::Channel> makeChannel(const std::string& address, const TlsOptions& tls) {
  // A list of peers (etcd members; HA RMs use FailoverChannel, since a standby
  // accepts connections too) becomes one pick_first channel over all of them; a list that does not
  // resolve keeps the text, so the first call fails UNAVAILABLE naming it (options were validated
  // at start).
  std::string target = address;
  if (address.find(',') != std::string::npos) {
    auto t = grpcTargetForList(address, "address");
    if (t.isOk()) target = *t;
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  if (!tls.enabled()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.ca_pem;
  ssl.pem_cert_chain = tls.cert_pem;
  ssl.pem_private_key = tls.key_pem;
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

std::shared_ptr<grpc::ServerCredentials> makeServerCredentials(const TlsOptions& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  // require: mutual TLS. request: a presented certificate must verify, but a
  // client may present none and authenticates by its token (common/tls.h).
  grpc::SslServerCredentialsOptions ssl(
      tls.client_certs == TlsClientCerts::kRequest
          ? GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = tls.ca_pem;
  ssl.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(ssl);
}

std::unique_ptr<grpc::ClientContext> makeContext(Millis timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

}  // namespace morpheus
