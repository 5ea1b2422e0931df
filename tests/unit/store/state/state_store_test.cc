// StateStore conformance tests (SQLite and etcd): atomic batches, durability, ordering.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "etcd_cluster.h"
#include "store/state/etcd_state_store.h"
#include "store/state/state_store.h"

namespace morpheus::store {
namespace {

std::string tempDbPath(const std::string& tag) {
  auto dir =
      std::filesystem::temp_directory_path() / ("morpheus-store-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / (tag + ".db")).string();
}

// A fresh (removed) database path for `tag`.
std::string tempDb(const std::string& tag) {
  std::string p = tempDbPath(tag);
  std::filesystem::remove(p);
  return p;
}

// The StateStore contract, run against every implementation (typed suite):
// SQLite on a temp file, and etcd v3 on a real single-member etcd started on
// loopback for this test binary (each test gets its own key prefix).
struct SqliteBackend {
  static constexpr const char* kName = "sqlite";
  static bool available() { return true; }
  // A store on the database `tag`; the same tag reopens the same database.
  static Result<std::unique_ptr<StateStore>> open(const std::string& tag) {
    static std::set<std::string> fresh;  // tempDb() empties a database on its first use only
    std::string key =
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" + tag;
    std::string path = fresh.insert(key).second ? tempDb(key) : tempDbPath(key);
    return openStateStore("sqlite", path);
  }
};

struct EtcdBackend {
  static constexpr const char* kName = "etcd";
  static bool available() { return testing::EtcdCluster::available(); }
  static testing::EtcdCluster& cluster() {
    static testing::EtcdCluster c(1);  // killed at exit (and with the process: pdeathsig)
    return c;
  }
  static Result<std::unique_ptr<StateStore>> open(const std::string& tag) {
    if (!cluster().ok()) return unavailable("etcd did not start: " + cluster().log());
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    MORPHEUS_ASSIGN_OR_RETURN(
        auto client, EtcdClient::connect(cluster().endpoints(), "endpoints", Millis(5000)));
    return makeEtcdStateStore(std::move(client),
                              std::string("/test/") + info->name() + "/" + tag + "/", std::nullopt);
  }
};

// etcd with a warm copy (the active RM's store after a takeover): reads come
// from a watched in-memory mirror once it has caught up with the store's writes.
struct EtcdMirrorBackend {
  static constexpr const char* kName = "etcd_mirror";
  static bool available() { return EtcdBackend::available(); }
  static Result<std::unique_ptr<StateStore>> open(const std::string& tag) {
    auto& cluster = EtcdBackend::cluster();
    if (!cluster.ok()) return unavailable("etcd did not start: " + cluster.log());
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    MORPHEUS_ASSIGN_OR_RETURN(std::shared_ptr<EtcdClient> client,
                              EtcdClient::connect(cluster.endpoints(), "endpoints", Millis(5000)));
    std::string prefix = std::string("/test-mirror/") + info->name() + "/" + tag + "/";
    auto mirror = std::make_shared<EtcdStateMirror>(client, prefix, Millis(100));
    return makeEtcdStateStore(client, prefix, std::nullopt, mirror);
  }
};

template <typename B>
class StateStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!B::available()) GTEST_SKIP() << B::kName << " is not installed on this machine";
  }
  std::unique_ptr<StateStore> open(const std::string& tag) {
    auto s = B::open(tag);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }
};
using Backends = ::testing::Types<SqliteBackend, EtcdBackend, EtcdMirrorBackend>;
struct BackendName {
  template <typename B>
  static std::string GetName(int) {
    return B::kName;
  }
};
TYPED_TEST_SUITE(StateStoreContractTest, Backends, BackendName);

// Writes, overwrites, deletes and lists sorted by key.
TYPED_TEST(StateStoreContractTest, CommitGetListDelete) {
  auto s = this->open("basic");
  ASSERT_TRUE(s);
  auto& st = *s;
  ASSERT_TRUE(st.commit({{"r", "b", "2"}, {"r", "a", "1"}, {"x", "a", "other"}}).isOk());
  ASSERT_TRUE(st.commit({{"r", "b", "22"}}).isOk());
  auto l = st.list("r");
  ASSERT_TRUE(l.isOk());
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ((*l)[1].second, "22");
  ASSERT_TRUE(st.commit({{"r", "a", std::nullopt}}).isOk());
  EXPECT_FALSE(st.get("r", "a")->has_value());
  EXPECT_EQ(**st.get("x", "a"), "other");
}

// Binary values survive unchanged.
TYPED_TEST(StateStoreContractTest, ValuesAreOpaqueBytes) {
  auto s = this->open("bin");
  ASSERT_TRUE(s);
  std::string v("a\0b\xff", 4);
  ASSERT_TRUE(s->commit({{"n", "k", v}}).isOk());
  EXPECT_EQ(**s->get("n", "k"), v);
}

// A key written twice in one batch ends with the batch's last value.
TYPED_TEST(StateStoreContractTest, LastWriteOfAKeyInABatchWins) {
  auto s = this->open("dup");
  ASSERT_TRUE(s);
  ASSERT_TRUE(
      s->commit({{"n", "k", "1"}, {"n", "k", "2"}, {"n", "j", "x"}, {"n", "j", {}}}).isOk());
  EXPECT_EQ(**s->get("n", "k"), "2");
  EXPECT_FALSE(s->get("n", "j")->has_value());
}

// A namespace lists only its own records, not those of a namespace it prefixes.
TYPED_TEST(StateStoreContractTest, ListKeepsNamespacesApart) {
  auto s = this->open("ns");
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->commit({{"app", "1", "a"}, {"apps", "1", "b"}, {"ap", "1", "c"}}).isOk());
  auto l = s->list("app");
  ASSERT_TRUE(l.isOk());
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].second, "a");
  EXPECT_TRUE(s->list("empty")->empty());
}

// What one store committed, a second store on the same data reads (a restarted
// RM, or the standby that takes over).
TYPED_TEST(StateStoreContractTest, ASecondStoreSeesCommittedRecords) {
  {
    auto a = this->open("shared");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->commit({{"n", "k1", "v1"}, {"n", "k2", "v2"}}).isOk());
  }
  auto b = this->open("shared");
  ASSERT_TRUE(b);
  auto l = b->list("n");
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->size(), 2u);
}

// A committed batch survives the process being SIGKILLed right after commit returns.
TEST(StateStoreTest, CommitIsDurableAcrossCrash) {
  std::string path = tempDb("crash");
  pid_t pid = ::fork();
  if (pid == 0) {
    auto s = openStateStore("sqlite", path);
    if (!s.isOk() || !(*s)->commit({{"n", "k1", "v1"}, {"n", "k2", "v2"}}).isOk()) _exit(1);
    ::kill(::getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child must die by SIGKILL after committing";
  auto s = openStateStore("sqlite", path);
  ASSERT_TRUE(s.isOk());
  auto l = (*s)->list("n");
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->size(), 2u);
}

// Unknown kinds and unusable locations are INVALID_ARGUMENT naming the key.
TEST(StateStoreTest, BadConfigNamesTheKey) {
  auto k = openStateStore("zookeeper", "x");
  ASSERT_FALSE(k.isOk());
  EXPECT_NE(k.status().message().find("state-store.kind"), std::string::npos);
  auto l = openStateStore("sqlite", "/nonexistent-dir/x/y.db");
  ASSERT_FALSE(l.isOk());
  EXPECT_NE(l.status().message().find("state-store.location"), std::string::npos);
}

// etcd: an empty or unreachable endpoint list is INVALID_ARGUMENT naming state-store.location.
TEST(EtcdStateStoreTest, BadEndpointsNameTheLocation) {
  auto empty = openStateStore("etcd", "");
  ASSERT_FALSE(empty.isOk());
  EXPECT_NE(empty.status().message().find("state-store.location"), std::string::npos);
  testing::ClosedLoopbackPort closed;  // refused for as long as the test holds it
  auto dead = openStateStore("etcd", closed.address());
  ASSERT_FALSE(dead.isOk());
  EXPECT_EQ(dead.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dead.status().message().find("state-store.location"), std::string::npos)
      << dead.status().message();
}

// etcd: openStateStore("etcd", endpoints) reaches the cluster and round-trips a record.
TEST(EtcdStateStoreTest, OpensByKindWithEndpointList) {
  if (!EtcdBackend::available()) GTEST_SKIP() << "etcd is not installed on this machine";
  ASSERT_TRUE(EtcdBackend::cluster().ok()) << EtcdBackend::cluster().log();
  auto s = openStateStore("etcd", "http://" + EtcdBackend::cluster().endpoints());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_TRUE((*s)->commit({{"kind-test", "k", "v"}}).isOk());
  EXPECT_EQ(**(*s)->get("kind-test", "k"), "v");
  auto bad_ns = (*s)->commit({{"a/b", "k", "v"}});
  EXPECT_EQ(bad_ns.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_ns.message().find("ns"), std::string::npos);
}

// etcd fencing: once the leader key is re-created by another RM, the deposed
// store's commits fail (kInfeasible) and none of their records is written.
TEST(EtcdStateStoreTest, FencedStoreCannotWriteAfterLeaderKeyChanges) {
  if (!EtcdBackend::available()) GTEST_SKIP() << "etcd is not installed on this machine";
  ASSERT_TRUE(EtcdBackend::cluster().ok()) << EtcdBackend::cluster().log();
  auto client = EtcdClient::connect(EtcdBackend::cluster().endpoints(), "e", Millis(5000));
  ASSERT_TRUE(client.isOk());
  std::shared_ptr<EtcdClient> c = std::move(client).value();
  auto putLeader = [&](const std::string& who) -> int64_t {
    etcdserverpb::TxnRequest del;
    del.add_success()->mutable_request_delete_range()->set_key("/fence-test/leader");
    EXPECT_TRUE(c->txn(del).isOk());
    etcdserverpb::TxnRequest t;
    auto* put = t.add_success()->mutable_request_put();
    put->set_key("/fence-test/leader");
    put->set_value(who);
    auto r = c->txn(t);
    EXPECT_TRUE(r.isOk());
    return r->header().revision();
  };
  int64_t rev = putLeader("rm-a");
  auto a = makeEtcdStateStore(c, "/fence-test/state/", EtcdFence{"/fence-test/leader", rev});
  ASSERT_TRUE(a->commit({{"n", "k", "from-a"}}).isOk());
  putLeader("rm-b");
  Status st = a->commit({{"n", "k", "late-a"}, {"n", "k2", "late-a"}});
  EXPECT_EQ(st.code(), StatusCode::kInfeasible) << st.toString();
  EXPECT_NE(st.message().find("fenced"), std::string::npos);
  EXPECT_EQ(**a->get("n", "k"), "from-a");
  EXPECT_FALSE(a->get("n", "k2")->has_value());
}

// etcd: a standby's warm copy follows the active's commits and deletions (watch).
TEST(EtcdStateStoreTest, MirrorFollowsAnotherWritersCommits) {
  if (!EtcdBackend::available()) GTEST_SKIP() << "etcd is not installed on this machine";
  ASSERT_TRUE(EtcdBackend::cluster().ok()) << EtcdBackend::cluster().log();
  auto client = EtcdClient::connect(EtcdBackend::cluster().endpoints(), "e", Millis(5000));
  ASSERT_TRUE(client.isOk());
  std::shared_ptr<EtcdClient> c = std::move(client).value();
  auto active = makeEtcdStateStore(c, "/mirror-test/", std::nullopt);
  ASSERT_TRUE(active->commit({{"n", "old", "1"}}).isOk());
  EtcdStateMirror warm(c, "/mirror-test/", Millis(100));
  etcdserverpb::TxnRequest t;  // the active's next commit, by hand to learn its revision
  auto* put = t.add_success()->mutable_request_put();
  put->set_key("/mirror-test/n/a");
  put->set_value("x");
  t.add_success()->mutable_request_delete_range()->set_key("/mirror-test/n/old");
  auto rev = c->txn(t);
  ASSERT_TRUE(rev.isOk());
  ASSERT_TRUE(warm.caughtUpTo(rev->header().revision(), Millis(2000)));
  EXPECT_EQ(warm.list("/mirror-test/n/"),
            (std::vector<std::pair<std::string, std::string>>{{"a", "x"}}));
  EXPECT_FALSE(warm.get("/mirror-test/n/old").has_value());
}

// etcd: a batch over the configured transaction size is refused whole,
// before sending, naming the batch and the option.
TEST(EtcdStateStoreTest, OversizedBatchIsRefusedWhole) {
  if (!EtcdBackend::available()) GTEST_SKIP() << "etcd is not installed on this machine";
  auto s = EtcdBackend::open("big");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  std::vector<StateWrite> batch;
  for (size_t i = 0; i <= kDefaultEtcdMaxTxnOps; ++i)
    batch.push_back({"n", std::to_string(i), "v"});
  Status st = (*s)->commit(batch);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("batch"), std::string::npos);
  EXPECT_NE(st.message().find("state-store.etcd.max-txn-ops"), std::string::npos) << st.message();
  EXPECT_TRUE((*s)->list("n")->empty());
}

// etcd started with --max-txn-ops 400: a fenced store with max_txn_ops raised
// to match commits a batch of 300 records in one Txn; with the default limit
// the same batch is refused before sending and nothing is written.
TEST(EtcdStateStoreTest, RaisedMaxTxnOpsAcceptsABatchOf300) {
  if (!EtcdBackend::available()) GTEST_SKIP() << "etcd is not installed on this machine";
  testing::EtcdCluster big(1, 50, 500, {"--max-txn-ops", "400"});
  ASSERT_TRUE(big.ok()) << big.log();
  auto client = EtcdClient::connect(big.endpoints(), "e", Millis(5000));
  ASSERT_TRUE(client.isOk()) << client.status().toString();
  std::shared_ptr<EtcdClient> c = std::move(client).value();
  etcdserverpb::TxnRequest lead;  // a leader key to fence on (the fence costs one op)
  auto* put = lead.add_success()->mutable_request_put();
  put->set_key("/txn-test/leader");
  put->set_value("rm-a");
  auto rev = c->txn(lead);
  ASSERT_TRUE(rev.isOk());
  EtcdFence fence{"/txn-test/leader", rev->header().revision()};
  std::vector<StateWrite> batch;
  for (int i = 0; i < 300; ++i) batch.push_back({"n", std::to_string(i), "v"});

  auto small = makeEtcdStateStore(c, "/txn-test/state/", fence);
  Status refused = small->commit(batch);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.toString();
  EXPECT_TRUE(small->list("n")->empty());

  auto raised = makeEtcdStateStore(c, "/txn-test/state/", fence, nullptr, 400);
  Status st = raised->commit(batch);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(raised->list("n")->size(), 300u);
}

// An existing 0-byte database is refused (naming the file and the way out)
// unless init is asked for; a missing file is a fresh start.
TEST(StateStoreTest, EmptyDatabaseFileIsRefusedUnlessInit) {
  std::string path = tempDb("empty");
  { std::ofstream(path).flush(); }
  ASSERT_EQ(std::filesystem::file_size(path), 0u);
  auto s = openStateStore("sqlite", path);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("state-store.init"), std::string::npos);
  auto init = openStateStore("sqlite", path, {true});
  ASSERT_TRUE(init.isOk()) << init.status().toString();
  EXPECT_TRUE((*init)->commit({{"n", "k", "v"}}).isOk());
  EXPECT_TRUE(openStateStore("sqlite", tempDb("fresh")).isOk()) << "a missing file is fresh";
}

// A missing database is a fresh start only where no RM ran before: with
// must_exist (the data dir holds a token-secret) it is refused naming the file
// and state-store.init, and no file is created; init accepts it.
TEST(StateStoreTest, MissingDatabaseIsRefusedWhenItMustExist) {
  std::string path = tempDb("deleted");
  StateStoreOptions must;
  must.must_exist = true;
  auto s = openStateStore("sqlite", path, must);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("state-store.init"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
  must.init = true;
  EXPECT_TRUE(openStateStore("sqlite", path, must).isOk());
}

// ":memory:" is SQLite's private in-memory database, not a file: any number of
// stores open at once, and no file named ":memory:" is created or locked.
TEST(StateStoreTest, InMemoryStoresNeedNoFile) {
  auto a = openStateStore("sqlite", ":memory:");
  auto b = openStateStore("sqlite", ":memory:");
  ASSERT_TRUE(a.isOk()) << a.status().message();
  ASSERT_TRUE(b.isOk()) << b.status().message();
  EXPECT_FALSE(std::filesystem::exists(":memory:"));
}

// Two stores on one database file are refused, whichever path reaches it, and the
// lock goes with the store (and with a killed process).
TEST(StateStoreTest, SecondStoreOnTheSameFileIsRefused) {
  std::string path = tempDb("locked");
  auto first = openStateStore("sqlite", path);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  auto link = std::filesystem::path(path).parent_path() / "locked-link.db";
  std::filesystem::remove(link);
  std::filesystem::create_symlink(path, link);
  for (const std::string& other :
       {path, link.string(),
        (std::filesystem::path(path).parent_path() / "." / std::filesystem::path(path).filename())
            .string()}) {
    auto second = openStateStore("sqlite", other);
    ASSERT_FALSE(second.isOk()) << other;
    EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(second.status().message().find("locked"), std::string::npos)
        << second.status().message();
  }
  first->reset();
  EXPECT_TRUE(openStateStore("sqlite", link.string()).isOk()) << "released with the store";
  pid_t pid = ::fork();
  if (pid == 0) {
    auto s = openStateStore("sqlite", path);
    if (!s.isOk()) _exit(1);
    ::kill(::getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(openStateStore("sqlite", path).isOk()) << "a killed holder releases the lock";
}

}  // namespace
}  // namespace morpheus::store
