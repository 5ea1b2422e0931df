#include "store/state/etcd_state_store.h"
#include "common/mutex.h"

#include <map>
#include <mutex>

namespace morpheus::store {

namespace {

Status checkNs(const std::string& ns) {
  if (ns.empty() || ns.find('/') != std::string::npos) {
    return invalidArgument("ns", "'" + ns + "' must be non-empty and contain no '/'");
  }
  return Status::ok();
}

class EtcdStateStore final : public StateStore {
 public:
  EtcdStateStore(std::shared_ptr<EtcdClient> client, std::string prefix,
                 std::optional<EtcdFence> fence, std::shared_ptr<EtcdStateMirror> mirror,
                 size_t max_txn_ops)
      : max_records_(max_txn_ops - (fence ? 1 : 0)),
        client_(std::move(client)),
        prefix_(std::move(prefix)),
        fence_(std::move(fence)),
        mirror_(std::move(mirror)),
        barrier_(fence_ ? fence_->create_revision : 0) {}

  Status commit(const std::vector<StateWrite>& batch) override {
    // etcd refuses a key twice in one Txn; the last write of a key wins, as in SQLite.
    std::map<std::string, const StateWrite*> last;
    for (const auto& w : batch) {
      MORPHEUS_RETURN_IF_ERROR(checkNs(w.ns));
      last[path(w.ns, w.key)] = &w;
    }
    if (last.size() > max_records_) {
      return invalidArgument(
          "batch", std::to_string(last.size()) + " records exceed " + std::to_string(max_records_) +
                       " in one commit (etcd transaction limit: state-store.etcd.max-txn-ops, "
                       "which must match etcd's --max-txn-ops)");
    }
    if (last.empty()) return Status::ok();
    etcdserverpb::TxnRequest req;
    addFence(&req);
    for (const auto& [key, w] : last) addWrite(key, *w, req.add_success());
    MORPHEUS_ASSIGN_OR_RETURN(auto resp, client_->txn(req));
    if (resp.succeeded()) {
      MutexLock lk(mu_);
      barrier_ = std::max(barrier_, resp.header().revision());
    } else {
      return infeasible("state store fenced: leader key " + fence_->key +
                        " is no longer this RM's (another RM is active); write refused");
    }
    return Status::ok();
  }

  Result<std::optional<std::string>> get(const std::string& ns, const std::string& key) override {
    MORPHEUS_RETURN_IF_ERROR(checkNs(ns));
    if (mirrorCurrent()) return mirror_->get(path(ns, key));
    etcdserverpb::RangeRequest req;
    req.set_key(path(ns, key));
    MORPHEUS_ASSIGN_OR_RETURN(auto resp, client_->range(req));
    if (resp.kvs_size() == 0) return std::optional<std::string>();
    return std::optional<std::string>(resp.kvs(0).value());
  }

  Result<std::vector<std::pair<std::string, std::string>>> list(const std::string& ns) override {
    MORPHEUS_RETURN_IF_ERROR(checkNs(ns));
    const std::string dir = prefix_ + ns + "/";
    if (mirrorCurrent()) return mirror_->list(dir);
    etcdserverpb::RangeRequest req;
    req.set_key(dir);
    req.set_range_end(prefixRangeEnd(dir));
    req.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
    req.set_sort_target(etcdserverpb::RangeRequest::KEY);
    MORPHEUS_ASSIGN_OR_RETURN(auto resp, client_->range(req));
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(resp.kvs_size());
    for (const auto& kv : resp.kvs()) out.emplace_back(kv.key().substr(dir.size()), kv.value());
    return out;
  }

  std::string name() const override { return "etcd:" + client_->endpoints() + prefix_; }

 private:
  // Whether the warm copy holds every write this store must see.
  bool mirrorCurrent() {
    if (!mirror_) return false;
    int64_t barrier;
    {
      MutexLock lk(mu_);
      barrier = barrier_;
    }
    return mirror_->caughtUpTo(barrier, Millis(500));
  }

  std::string path(const std::string& ns, const std::string& key) const {
    return prefix_ + ns + "/" + key;
  }

  void addFence(etcdserverpb::TxnRequest* req) const {
    if (!fence_) return;
    auto* c = req->add_compare();
    c->set_key(fence_->key);
    c->set_target(etcdserverpb::Compare::CREATE);
    c->set_result(etcdserverpb::Compare::EQUAL);
    c->set_create_revision(fence_->create_revision);
  }

  static void addWrite(const std::string& key, const StateWrite& w, etcdserverpb::RequestOp* op) {
    if (w.value) {
      auto* put = op->mutable_request_put();
      put->set_key(key);
      put->set_value(*w.value);
    } else {
      op->mutable_request_delete_range()->set_key(key);
    }
  }

  const size_t max_records_;  // records per commit: max-txn-ops less the fence
  std::shared_ptr<EtcdClient> client_;
  std::string prefix_;
  std::optional<EtcdFence> fence_;
  std::shared_ptr<EtcdStateMirror> mirror_;
  Mutex mu_;
  int64_t barrier_ GUARDED_BY(mu_);  // the revision reads must reflect
};

}  // namespace

std::unique_ptr<StateStore> makeEtcdStateStore(std::shared_ptr<EtcdClient> client,
                                               std::string prefix, std::optional<EtcdFence> fence,
                                               std::shared_ptr<EtcdStateMirror> mirror,
                                               size_t max_txn_ops) {
  return std::make_unique<EtcdStateStore>(std::move(client), std::move(prefix), std::move(fence),
                                          std::move(mirror), max_txn_ops);
}

}  // namespace morpheus::store
