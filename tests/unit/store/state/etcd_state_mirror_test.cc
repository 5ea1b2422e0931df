// EtcdStateMirror's resync after a compaction, on a real etcd member: the
// mirror's watch falls behind a compacted revision and must reload a full
// snapshot and carry on, nothing lost, nothing stale, nothing duplicated.
//
// The mirror reaches etcd through WatchGate, a gRPC proxy of etcd's
// KV.Range and Watch in this process. The gate stops the mirror's progress
// without the mirror knowing: it holds a watch's create request, or drops
// the upstream watch of an established one and forwards nothing. When it
// goes on, it asks etcd for the events from the first revision it has not
// forwarded; once that revision is compacted etcd answers as it answers any
// watcher that fell behind (canceled, compact_revision set) and the gate
// passes that on. Writes, deletes and the compaction go to etcd directly.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "etcd_cluster.h"
#include "store/state/etcd_client.h"
#include "store/state/etcd_state_mirror.h"

namespace morpheus::store {
namespace {

using namespace std::chrono_literals;
using Records = std::vector<std::pair<std::string, std::string>>;

// Forwards KV.Range to etcd (the mirror's snapshots).
class RangeForward final : public etcdserverpb::KV::Service {
 public:
  explicit RangeForward(std::shared_ptr<grpc::Channel> etcd)
      : kv_(etcdserverpb::KV::NewStub(std::move(etcd))) {}
  grpc::Status Range(grpc::ServerContext*, const etcdserverpb::RangeRequest* req,
                     etcdserverpb::RangeResponse* resp) override {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 5s);
    ranges_++;
    return kv_->Range(&c, *req, resp);
  }
  int ranges() const { return ranges_.load(); }

 private:
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::atomic<int> ranges_{0};
};

// Forwards Watch streams (one watch per stream, as the mirror makes them),
// pausable as the file comment says.
class WatchGate final : public etcdserverpb::Watch::Service {
 public:
  explicit WatchGate(std::shared_ptr<grpc::Channel> etcd)
      : watch_(etcdserverpb::Watch::NewStub(std::move(etcd))) {}

  grpc::Status Watch(grpc::ServerContext* ctx,
                     grpc::ServerReaderWriter<etcdserverpb::WatchResponse,
                                              etcdserverpb::WatchRequest>* stream) override {
    etcdserverpb::WatchRequest req;
    if (!stream->Read(&req) || !req.has_create_request()) return grpc::Status::OK;
    std::unique_lock<std::mutex> lk(mu_);
    start_revisions_.push_back(req.create_request().start_revision());
    cv_.notify_all();
    while (hold_creates_ && !ctx->IsCancelled()) cv_.wait_for(lk, 10ms);
    lk.unlock();
    // The mirror writes nothing after the create: a Read that returns means
    // it cancelled the stream (or the server shuts down).
    bool client_gone = false;                     // GUARDED_BY(mu_)
    grpc::ClientContext* upstream_ctx = nullptr;  // GUARDED_BY(mu_)
    std::thread reader([&] {
      etcdserverpb::WatchRequest ignored;
      while (stream->Read(&ignored)) {
      }
      std::lock_guard<std::mutex> g(mu_);
      client_gone = true;
      if (upstream_ctx) upstream_ctx->TryCancel();
      cv_.notify_all();
    });
    etcdserverpb::WatchCreateRequest create = req.create_request();
    bool forwarded_created = false, ended = false;
    while (!ended) {
      grpc::ClientContext up;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return !paused_ || client_gone; });
        if (client_gone) break;
        upstream_ctx = &up;
        upstreams_.insert(&up);
      }
      auto upstream = watch_->Watch(&up);
      etcdserverpb::WatchRequest c;
      *c.mutable_create_request() = create;
      etcdserverpb::WatchResponse resp;
      if (upstream->Write(c)) {
        while (upstream->Read(&resp)) {
          if (resp.created() && !resp.canceled()) {
            if (forwarded_created) continue;  // the mirror saw its "created" already
            forwarded_created = true;
          }
          if (resp.events_size() > 0) {  // resume after the last event forwarded
            create.set_start_revision(resp.events(resp.events_size() - 1).kv().mod_revision() + 1);
          }
          if (resp.compact_revision() > 0) compacted_++;
          if (!stream->Write(resp) || resp.canceled()) {
            ended = true;
            break;
          }
        }
      }
      {
        std::lock_guard<std::mutex> g(mu_);
        upstream_ctx = nullptr;
        upstreams_.erase(&up);
        // Ended by etcd rather than by pause(): the mirror's stream ends too.
        if (!paused_) ended = true;
      }
      up.TryCancel();
      upstream->Finish();
    }
    reader.join();
    return grpc::Status::OK;
  }

  // Watch creates wait while held.
  void holdCreates(bool hold) {
    std::lock_guard<std::mutex> lk(mu_);
    hold_creates_ = hold;
    cv_.notify_all();
  }
  // Established watches forward nothing more until resume().
  void pause() {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = true;
    for (auto* c : upstreams_) c->TryCancel();
  }
  void resume() {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = false;
    cv_.notify_all();
  }
  // Waits until `n` watch creates arrived; their start revisions.
  std::vector<int64_t> waitCreates(size_t n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, timeout, [&] { return start_revisions_.size() >= n; });
    return start_revisions_;
  }
  // Compaction notices etcd sent through the gate.
  int compacted() const { return compacted_.load(); }

 private:
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_creates_ = false;             // GUARDED_BY(mu_)
  bool paused_ = false;                   // GUARDED_BY(mu_)
  std::vector<int64_t> start_revisions_;  // GUARDED_BY(mu_)
  // The upstream watches in flight (pause cancels them). GUARDED_BY(mu_)
  std::set<grpc::ClientContext*> upstreams_;
  std::atomic<int> compacted_{0};
};

class EtcdStateMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EtcdCluster::available()) GTEST_SKIP() << "etcd is not installed";
    etcd_ = std::make_unique<testing::EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->log();
    auto direct = grpc::CreateChannel(etcd_->endpoint(0), grpc::InsecureChannelCredentials());
    kv_ = etcdserverpb::KV::NewStub(direct);
    range_ = std::make_unique<RangeForward>(direct);
    gate_ = std::make_unique<WatchGate>(direct);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(range_.get());
    b.RegisterService(gate_.get());
    server_ = b.BuildAndStart();
    ASSERT_GT(port, 0);
    auto c = EtcdClient::connect("127.0.0.1:" + std::to_string(port), "endpoints", Millis(5000));
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    through_gate_ = std::move(c).value();
  }
  void TearDown() override {
    mirror_.reset();  // cancels its watch before the gate goes
    if (gate_) gate_->resume();
    if (gate_) gate_->holdCreates(false);
    if (server_) server_->Shutdown();
  }
  void startMirror() {
    mirror_ = std::make_unique<EtcdStateMirror>(through_gate_, "/m/", Millis(100));
  }
  // One Txn on etcd directly: puts, and deletes (nullopt); its revision.
  int64_t write(const std::vector<std::pair<std::string, std::optional<std::string>>>& ops) {
    etcdserverpb::TxnRequest t;
    for (const auto& [key, value] : ops) {
      if (value) {
        auto* put = t.add_success()->mutable_request_put();
        put->set_key(key);
        put->set_value(*value);
      } else {
        t.add_success()->mutable_request_delete_range()->set_key(key);
      }
    }
    etcdserverpb::TxnResponse resp;
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::Status st = kv_->Txn(&c, t, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.header().revision();
  }
  // Compacts etcd's history up to `rev` (physically: done when it returns).
  void compact(int64_t rev) {
    etcdserverpb::CompactionRequest req;
    req.set_revision(rev);
    req.set_physical(true);
    etcdserverpb::CompactionResponse resp;
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 10s);
    grpc::Status st = kv_->Compact(&c, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  // Every record under /m/ in etcd now, sorted, /m/ stripped (as list() gives them).
  Records inEtcd() {
    etcdserverpb::RangeRequest req;
    req.set_key("/m/");
    req.set_range_end(prefixRangeEnd("/m/"));
    etcdserverpb::RangeResponse resp;
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::Status st = kv_->Range(&c, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    Records out;
    for (const auto& kv : resp.kvs()) out.emplace_back(kv.key().substr(3), kv.value());
    return out;
  }
  // A burst written while the mirror makes no progress: an overwrite, deletes,
  // a key that comes and goes, a key written `hot` times, a new key. Returns
  // the last revision.
  int64_t burst(int hot) {
    write({{"/m/a", "2"}});
    write({{"/m/b", std::nullopt}});
    write({{"/m/transient", "1"}});
    write({{"/m/transient", std::nullopt}});
    for (int i = 0; i < hot; i++) write({{"/m/hot", std::to_string(i)}});
    return write({{"/m/c", std::nullopt}, {"/m/f", "1"}});
  }

  std::unique_ptr<testing::EtcdCluster> etcd_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<RangeForward> range_;
  std::unique_ptr<WatchGate> gate_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<EtcdClient> through_gate_;
  std::unique_ptr<EtcdStateMirror> mirror_;
};

// An established watch goes silent (the gate drops it) while keys are
// overwritten, deleted, created and deleted again, and etcd compacts past
// the mirror's revision. When the watch resumes etcd reports the compaction;
// the mirror reloads a snapshot and holds exactly etcd's records, then keeps
// following on a new watch from that snapshot.
TEST_F(EtcdStateMirrorTest, ResyncsAfterItsWatchFellBehindACompaction) {
  write({{"/m/a", "1"}, {"/m/b", "1"}, {"/m/c", "1"}, {"/other/x", "1"}});
  startMirror();
  ASSERT_EQ(gate_->waitCreates(1).size(), 1u);
  const int64_t followed = write({{"/m/d", "1"}});  // reaches the mirror as a watch event
  ASSERT_TRUE(mirror_->caughtUpTo(followed, Millis(10000)));
  EXPECT_EQ(mirror_->list("/m/"), inEtcd());

  gate_->pause();
  const int64_t last = burst(50);
  compact(last);
  EXPECT_EQ(mirror_->revision(), followed) << "the mirror moved while its watch was paused";
  EXPECT_EQ(mirror_->get("/m/b"), "1");  // stale until it resyncs

  gate_->resume();
  ASSERT_TRUE(mirror_->caughtUpTo(last, Millis(10000)))
      << "the mirror is stuck at revision " << mirror_->revision() << " of " << last;
  const Records want = {{"a", "2"}, {"d", "1"}, {"f", "1"}, {"hot", "49"}};
  EXPECT_EQ(inEtcd(), want);
  EXPECT_EQ(mirror_->list("/m/"), want);
  EXPECT_EQ(mirror_->size(), want.size());
  EXPECT_FALSE(mirror_->get("/other/x").has_value());
  EXPECT_EQ(gate_->compacted(), 1) << "etcd never told the mirror it fell behind";
  auto creates = gate_->waitCreates(2);
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[1], last + 1) << "the new watch starts right after the fresh snapshot";
  EXPECT_EQ(range_->ranges(), 2);

  // It carries on from there: new writes arrive as events on the new watch.
  const int64_t after = write({{"/m/g", "1"}, {"/m/d", std::nullopt}});
  ASSERT_TRUE(mirror_->caughtUpTo(after, Millis(10000)));
  EXPECT_EQ(mirror_->list("/m/"), inEtcd());
  EXPECT_EQ(mirror_->list("/m/"), (Records{{"a", "2"}, {"f", "1"}, {"g", "1"}, {"hot", "49"}}));
  EXPECT_EQ(gate_->waitCreates(3, 200ms).size(), 2u) << "another resync without a cause";
}

// The compaction lands between the mirror's snapshot and its watch's
// creation (the watch starts at a revision already compacted): the same
// resync, from a second snapshot.
TEST_F(EtcdStateMirrorTest, ResyncsWhenItsWatchStartsAtACompactedRevision) {
  const int64_t first = write({{"/m/a", "1"}, {"/m/b", "1"}, {"/m/c", "1"}});
  gate_->holdCreates(true);
  startMirror();
  auto creates = gate_->waitCreates(1);
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0], first + 1);
  ASSERT_TRUE(mirror_->caughtUpTo(first, Millis(1000))) << "the first snapshot";

  const int64_t last = burst(20);
  compact(last);
  gate_->holdCreates(false);
  ASSERT_TRUE(mirror_->caughtUpTo(last, Millis(10000)))
      << "the mirror is stuck at revision " << mirror_->revision() << " of " << last;
  const Records want = {{"a", "2"}, {"f", "1"}, {"hot", "19"}};
  EXPECT_EQ(inEtcd(), want);
  EXPECT_EQ(mirror_->list("/m/"), want);
  EXPECT_EQ(gate_->compacted(), 1);
  creates = gate_->waitCreates(2);
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[1], last + 1);

  const int64_t after = write({{"/m/a", std::nullopt}, {"/m/h", "1"}});
  ASSERT_TRUE(mirror_->caughtUpTo(after, Millis(10000)));
  EXPECT_EQ(mirror_->list("/m/"), inEtcd());
}

}  // namespace
}  // namespace morpheus::store
