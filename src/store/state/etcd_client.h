// A small synchronous client of etcd's v3 gRPC API: the subset the
// etcd StateStore and the RM's leader election use — KV Range/Txn, Lease
// Grant/KeepAlive/Revoke. Messages and stubs are generated from etcd's own
// rpc.proto (proto/CMakeLists.txt). Thread-safe (gRPC stubs are).
//
// Contract: every call has a deadline (`timeout`); an unreachable or
// quorum-less cluster is UNAVAILABLE naming the endpoints, never a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace morpheus::store {

class EtcdClient {
 public:
  // `endpoints`: comma-separated host:port (or http://host:port) of the
  // members; the channel uses the first reachable member and moves on when it
  // drops. INVALID_ARGUMENT naming `field` for a malformed list.
  static Result<std::unique_ptr<EtcdClient>> connect(const std::string& endpoints,
                                                     const std::string& field, Millis timeout);

  Result<etcdserverpb::RangeResponse> range(const etcdserverpb::RangeRequest& req);
  Result<etcdserverpb::TxnResponse> txn(const etcdserverpb::TxnRequest& req);
  // A lease of `ttl_seconds`; returns its id.
  Result<int64_t> leaseGrant(int64_t ttl_seconds);
  // One keep-alive round trip; returns the lease's remaining TTL in seconds,
  // NOT_FOUND when the lease has expired (TTL <= 0). The call gives up after
  // `timeout` (default: the client's timeout), and at once with UNAVAILABLE
  // when the member it reaches has no raft leader (etcd's "hasleader"
  // metadata), so a caller can retry within its own bound while etcd elects.
  Result<int64_t> leaseKeepAlive(int64_t lease);
  Result<int64_t> leaseKeepAlive(int64_t lease, Millis timeout);
  Status leaseRevoke(int64_t lease);
  // A Watch stream on `ctx` (no deadline: the caller cancels it).
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
  watch(grpc::ClientContext* ctx);

  const std::string& endpoints() const { return endpoints_; }

 private:
  EtcdClient(std::string endpoints, std::shared_ptr<grpc::Channel> ch, Millis timeout);
  std::unique_ptr<grpc::ClientContext> context() const;
  Status failed(const grpc::Status& s, const std::string& what) const;

  std::string endpoints_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  Millis timeout_;
};

// The range_end that selects every key starting with `prefix` (etcd's
// "prefix + 1" convention).
std::string prefixRangeEnd(const std::string& prefix);

}  // namespace morpheus::store
