#include "store/state/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include "common/address_list.h"

namespace morpheus::store {

Result<std::unique_ptr<EtcdClient>> EtcdClient::connect(const std::string& endpoints,
                                                        const std::string& field, Millis timeout) {
  MORPHEUS_ASSIGN_OR_RETURN(std::string target, grpcTargetForList(endpoints, field));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  auto ch = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  return std::unique_ptr<EtcdClient>(new EtcdClient(endpoints, std::move(ch), timeout));
}

EtcdClient::EtcdClient(std::string endpoints, std::shared_ptr<grpc::Channel> ch, Millis timeout)
    : endpoints_(std::move(endpoints)),
      channel_(std::move(ch)),
      kv_(etcdserverpb::KV::NewStub(channel_)),
      lease_(etcdserverpb::Lease::NewStub(channel_)),
      watch_(etcdserverpb::Watch::NewStub(channel_)),
      timeout_(timeout) {}

std::unique_ptr<grpc::ClientContext> EtcdClient::context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout_);
  return ctx;
}

Status EtcdClient::failed(const grpc::Status& s, const std::string& what) const {
  std::string msg = "etcd " + what + " at " + endpoints_ + ": " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return internalError(msg);  // our request was malformed: a bug
    case grpc::StatusCode::NOT_FOUND:
      return notFound(msg);
    default:
      return unavailable(msg);
  }
}

Result<etcdserverpb::RangeResponse> EtcdClient::range(const etcdserverpb::RangeRequest& req) {
  etcdserverpb::RangeResponse resp;
  auto ctx = context();
  grpc::Status s = kv_->Range(ctx.get(), req, &resp);
  if (!s.ok()) return failed(s, "range");
  return resp;
}

Result<etcdserverpb::TxnResponse> EtcdClient::txn(const etcdserverpb::TxnRequest& req) {
  etcdserverpb::TxnResponse resp;
  auto ctx = context();
  grpc::Status s = kv_->Txn(ctx.get(), req, &resp);
  if (!s.ok()) return failed(s, "txn");
  return resp;
}

Result<int64_t> EtcdClient::leaseGrant(int64_t ttl_seconds) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse resp;
  auto ctx = context();
  grpc::Status s = lease_->LeaseGrant(ctx.get(), req, &resp);
  if (!s.ok()) return failed(s, "lease grant");
  if (!resp.error().empty()) return unavailable("etcd lease grant: " + resp.error());
  return static_cast<int64_t>(resp.id());
}

Result<int64_t> EtcdClient::leaseKeepAlive(int64_t lease) {
  return leaseKeepAlive(lease, timeout_);
}

Result<int64_t> EtcdClient::leaseKeepAlive(int64_t lease, Millis timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  // etcd's rpctypes.MetadataRequireLeaderKey: a member without a leader
  // refuses the stream ("no leader") instead of holding it until our deadline.
  ctx->AddMetadata("hasleader", "true");
  auto stream = lease_->LeaseKeepAlive(ctx.get());
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse resp;
  bool ok = stream->Write(req) && stream->Read(&resp);
  stream->WritesDone();
  ctx->TryCancel();
  grpc::Status s = stream->Finish();
  if (!ok)
    return failed(s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed") : s,
                  "lease keep-alive");
  if (resp.ttl() <= 0) return notFound("etcd lease " + std::to_string(lease) + " has expired");
  return static_cast<int64_t>(resp.ttl());
}

Status EtcdClient::leaseRevoke(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(lease);
  etcdserverpb::LeaseRevokeResponse resp;
  auto ctx = context();
  grpc::Status s = lease_->LeaseRevoke(ctx.get(), req, &resp);
  if (!s.ok()) return failed(s, "lease revoke");
  return Status::ok();
}

std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
EtcdClient::watch(grpc::ClientContext* ctx) {
  return watch_->Watch(ctx);
}

std::string prefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

}  // namespace morpheus::store
