// SQLite implementation of StateStore: WAL journal, synchronous=FULL, one
// transaction per batch; schema versioned in `schema_version`.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/mutex.h"
#include "store/sqlite_db.h"
#include "store/state/etcd_state_store.h"
#include "store/state/state_store.h"

namespace morpheus::store {

namespace {

constexpr int kSchemaVersion = 1;

// An exclusive flock(2) on the database file itself (created if missing),
// held until the store is destroyed or the process dies. It locks the inode,
// so every path that reaches the file (other data dirs, symlinks, "..")
// meets it; SQLite's own fcntl locks are independent of it.
class DbLock {
 public:
  static Result<std::unique_ptr<DbLock>> acquire(const std::string& db_path) {
    int fd = ::open(db_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      return invalidArgument("state-store.location",
                             "cannot open '" + db_path + "': " + std::strerror(errno));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return invalidArgument("state-store.location",
                               "'" + db_path + "' is locked: another RM uses this database");
      }
      return invalidArgument("state-store.location",
                             "cannot lock '" + db_path + "': " + std::strerror(err));
    }
    return std::unique_ptr<DbLock>(new DbLock(fd));
  }
  ~DbLock() { ::close(fd_); }
  DbLock(const DbLock&) = delete;
  DbLock& operator=(const DbLock&) = delete;

 private:
  explicit DbLock(int fd) : fd_(fd) {}
  int fd_;
};

bool isEmptyFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

// A database file that existed but was empty lost its contents (or was never
// written): refused unless the operator asks to initialise it.
Status emptyDatabase(const std::string& path) {
  return invalidArgument("state-store.location",
                         "'" + path +
                             "' is an empty (0-byte) file: the RM's state is missing. Restore it, "
                             "or start with --set state-store.init=true to begin with no state");
}

// The database file is gone but the data dir shows an RM ran there before.
Status missingDatabase(const std::string& path) {
  return invalidArgument(
      "state-store.location",
      "'" + path +
          "' does not exist, but the data dir holds this RM's token-secret: the RM ran here "
          "before and its state is missing. Restore it, or start with --set "
          "state-store.init=true to begin with no state");
}

class SqliteStateStore final : public StateStore {
 public:
  static Result<std::unique_ptr<StateStore>> open(const std::string& path,
                                                  const StateStoreOptions& opts) {
    const bool init = opts.init;
    // ":memory:" is SQLite's private in-memory database (tests): no file to
    // lock or to find empty.
    const bool in_memory = path == ":memory:";
    // Both checks before the lock creates the file.
    struct stat st {};
    if (!in_memory && opts.must_exist && !init && ::stat(path.c_str(), &st) != 0 &&
        errno == ENOENT) {
      return missingDatabase(path);
    }
    const bool was_empty = !in_memory && isEmptyFile(path);
    std::unique_ptr<DbLock> lock;
    if (!in_memory) {
      MORPHEUS_ASSIGN_OR_RETURN(lock, DbLock::acquire(path));
    }
    if (was_empty && !init) return emptyDatabase(path);
    MORPHEUS_ASSIGN_OR_RETURN(
        auto db, sqlite::Db::open(path, "state-store.location", "state store " + path));
    std::unique_ptr<SqliteStateStore> s(new SqliteStateStore(std::move(lock), std::move(db), path));
    MORPHEUS_RETURN_IF_ERROR(s->migrate());
    return std::unique_ptr<StateStore>(std::move(s));
  }

  Status commit(const std::vector<StateWrite>& batch) override {
    MutexLock lk(mu_);
    return db_->inTransaction([&]() -> Status {
      for (const auto& w : batch) {
        sqlite::Stmt q(db_->handle(),
                       w.value ? "INSERT INTO records(ns, key, value) VALUES(?1, ?2, ?3) "
                                 "ON CONFLICT(ns, key) DO UPDATE SET value = excluded.value"
                               : "DELETE FROM records WHERE ns = ?1 AND key = ?2");
        if (!q.prepared()) return db_->error("prepare");
        q.text(1, w.ns).text(2, w.key);
        if (w.value) q.blob(3, *w.value);
        if (q.step() != SQLITE_DONE) return db_->error("write");
      }
      return Status::ok();
    });
  }

  Result<std::optional<std::string>> get(const std::string& ns, const std::string& key) override {
    MutexLock lk(mu_);
    sqlite::Stmt q(db_->handle(), "SELECT value FROM records WHERE ns = ?1 AND key = ?2");
    if (!q.prepared()) return db_->error("prepare");
    q.text(1, ns).text(2, key);
    int rc = q.step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(q.col(0));
    if (rc != SQLITE_DONE) return db_->error("get");
    return std::optional<std::string>();
  }

  Result<std::vector<std::pair<std::string, std::string>>> list(const std::string& ns) override {
    MutexLock lk(mu_);
    sqlite::Stmt q(db_->handle(), "SELECT key, value FROM records WHERE ns = ?1 ORDER BY key");
    if (!q.prepared()) return db_->error("prepare");
    q.text(1, ns);
    std::vector<std::pair<std::string, std::string>> out;
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) out.emplace_back(q.col(0), q.col(1));
    if (rc != SQLITE_DONE) return db_->error("list");
    return out;
  }

  std::string name() const override { return "sqlite:" + path_; }

 private:
  SqliteStateStore(std::unique_ptr<DbLock> lock, std::unique_ptr<sqlite::Db> db, std::string path)
      : lock_(std::move(lock)), db_(std::move(db)), path_(std::move(path)) {}

  // Schema migrations, applied in order inside one transaction each.
  Status migrate() {
    MORPHEUS_RETURN_IF_ERROR(
        db_->exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)"));
    int version = 0;
    {
      sqlite::Stmt q(db_->handle(), "SELECT MAX(version) FROM schema_version");
      if (!q.prepared()) return db_->error("schema");
      if (q.step() == SQLITE_ROW) version = static_cast<int>(q.colInt(0));
    }
    if (version > kSchemaVersion) {
      return invalidArgument("state-store.location",
                             "'" + path_ + "' has schema version " + std::to_string(version) +
                                 ", newer than this RM (" + std::to_string(kSchemaVersion) + ")");
    }
    if (version < 1) {
      MORPHEUS_RETURN_IF_ERROR(db_->inTransaction([&] {
        return db_->exec(
            "CREATE TABLE records(ns TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
            "PRIMARY KEY(ns, key)); INSERT INTO schema_version(version) VALUES(1)");
      }));
    }
    return Status::ok();
  }

  std::unique_ptr<DbLock> lock_;  // released after db_ is closed (declared first)
  std::unique_ptr<sqlite::Db> db_;
  std::string path_;
  Mutex mu_;
};

// An etcd store without a leader fence (one writer by construction, e.g.
// tests); the RM's HA path fences its store (rm/ha/leader_election.h). The
// cluster is asked once so a wrong endpoint list fails at start.
Result<std::unique_ptr<StateStore>> openUnfencedEtcdStore(const std::string& endpoints) {
  if (endpoints.empty()) {
    return invalidArgument("state-store.location", "is required for etcd (endpoint list)");
  }
  MORPHEUS_ASSIGN_OR_RETURN(auto client,
                            EtcdClient::connect(endpoints, "state-store.location", Millis(5000)));
  etcdserverpb::RangeRequest probe;
  probe.set_key(kEtcdStatePrefix);
  probe.set_count_only(true);
  auto r = client->range(probe);
  if (!r.isOk()) return invalidArgument("state-store.location", r.status().message());
  return makeEtcdStateStore(std::move(client), kEtcdStatePrefix, std::nullopt);
}

}  // namespace

Result<std::unique_ptr<StateStore>> openStateStore(const std::string& kind,
                                                   const std::string& location,
                                                   const StateStoreOptions& opts) {
  if (kind == "sqlite") {
    if (location.empty()) return invalidArgument("state-store.location", "is required for sqlite");
    return SqliteStateStore::open(location, opts);
  }
  if (kind == "etcd") return openUnfencedEtcdStore(location);
  return invalidArgument("state-store.kind", "'" + kind + "' is not one of sqlite, etcd");
}

}  // namespace morpheus::store
