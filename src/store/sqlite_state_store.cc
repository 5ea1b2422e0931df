// SQLite implementation of StateStore: WAL journal, synchronous=FULL, one
// transaction per batch; schema versioned in `schema_version`.
#include <sqlite3.h>

#include <mutex>

#include "store/state_store.h"

namespace morpheus::store {

namespace {

constexpr int kSchemaVersion = 1;

class SqliteStateStore final : public StateStore {
 public:
  static Result<std::unique_ptr<StateStore>> open(const std::string& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close(db);
      return invalidArgument("state-store.location", "cannot open '" + path + "': " + msg);
    }
    std::unique_ptr<SqliteStateStore> s(new SqliteStateStore(db, path));
    MORPHEUS_RETURN_IF_ERROR(s->migrate());
    return std::unique_ptr<StateStore>(std::move(s));
  }

  ~SqliteStateStore() override { sqlite3_close(db_); }

  Status commit(const std::vector<StateWrite>& batch) override {
    std::lock_guard<std::mutex> lk(mu_);
    MORPHEUS_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    for (const auto& w : batch) {
      Status st = w.value
                      ? run("INSERT INTO records(ns, key, value) VALUES(?1, ?2, ?3) "
                            "ON CONFLICT(ns, key) DO UPDATE SET value = excluded.value",
                            w.ns, w.key, &*w.value)
                      : run("DELETE FROM records WHERE ns = ?1 AND key = ?2", w.ns, w.key, nullptr);
      if (!st.isOk()) {
        (void)exec("ROLLBACK");
        return st;
      }
    }
    Status st = exec("COMMIT");
    if (!st.isOk()) (void)exec("ROLLBACK");
    return st;
  }

  Result<std::optional<std::string>> get(const std::string& ns, const std::string& key) override {
    std::lock_guard<std::mutex> lk(mu_);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT value FROM records WHERE ns = ?1 AND key = ?2", -1, &stmt,
                           nullptr) != SQLITE_OK) {
      return error("prepare");
    }
    sqlite3_bind_text(stmt, 1, ns.data(), static_cast<int>(ns.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    std::optional<std::string> out;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) out = column(stmt, 0);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("get");
    return out;
  }

  Result<std::vector<std::pair<std::string, std::string>>> list(const std::string& ns) override {
    std::lock_guard<std::mutex> lk(mu_);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT key, value FROM records WHERE ns = ?1 ORDER BY key", -1,
                           &stmt, nullptr) != SQLITE_OK) {
      return error("prepare");
    }
    sqlite3_bind_text(stmt, 1, ns.data(), static_cast<int>(ns.size()), SQLITE_TRANSIENT);
    std::vector<std::pair<std::string, std::string>> out;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
      out.emplace_back(column(stmt, 0), column(stmt, 1));
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return error("list");
    return out;
  }

  std::string name() const override { return "sqlite:" + path_; }

 private:
  SqliteStateStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  static std::string column(sqlite3_stmt* stmt, int i) {
    const void* p = sqlite3_column_blob(stmt, i);
    int n = sqlite3_column_bytes(stmt, i);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }

  Status error(const std::string& what) const {
    return unavailable("state store " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }

  Status exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown";
      sqlite3_free(err);
      return unavailable("state store " + path_ + ": " + msg);
    }
    return Status::ok();
  }

  Status run(const char* sql, const std::string& a, const std::string& b, const std::string* blob) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return error("prepare");
    sqlite3_bind_text(stmt, 1, a.data(), static_cast<int>(a.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, b.data(), static_cast<int>(b.size()), SQLITE_TRANSIENT);
    if (blob)
      sqlite3_bind_blob(stmt, 3, blob->data(), static_cast<int>(blob->size()), SQLITE_TRANSIENT);
    int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? Status::ok() : error("write");
  }

  // Schema migrations, applied in order inside one transaction each.
  Status migrate() {
    MORPHEUS_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
    MORPHEUS_RETURN_IF_ERROR(exec("PRAGMA synchronous=FULL"));
    MORPHEUS_RETURN_IF_ERROR(
        exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)"));
    int version = 0;
    {
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(db_, "SELECT MAX(version) FROM schema_version", -1, &stmt, nullptr) !=
          SQLITE_OK) {
        return error("schema");
      }
      if (sqlite3_step(stmt) == SQLITE_ROW) version = sqlite3_column_int(stmt, 0);
      sqlite3_finalize(stmt);
    }
    if (version > kSchemaVersion) {
      return invalidArgument("state-store.location",
                             "'" + path_ + "' has schema version " + std::to_string(version) +
                                 ", newer than this RM (" + std::to_string(kSchemaVersion) + ")");
    }
    if (version < 1) {
      MORPHEUS_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
      Status st = exec(
          "CREATE TABLE records(ns TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
          "PRIMARY KEY(ns, key)); INSERT INTO schema_version(version) VALUES(1)");
      if (!st.isOk()) {
        (void)exec("ROLLBACK");
        return st;
      }
      MORPHEUS_RETURN_IF_ERROR(exec("COMMIT"));
    }
    return Status::ok();
  }

  sqlite3* db_;
  std::string path_;
  std::mutex mu_;
};

}  // namespace

Result<std::unique_ptr<StateStore>> openStateStore(const std::string& kind,
                                                   const std::string& location) {
  if (kind == "sqlite") {
    if (location.empty()) return invalidArgument("state-store.location", "is required for sqlite");
    return SqliteStateStore::open(location);
  }
  return invalidArgument("state-store.kind",
                         "'" + kind + "' is not available in this build (sqlite)");
}

}  // namespace morpheus::store
