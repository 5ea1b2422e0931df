// The SQLite layer shared by the RM's StateStore and the inference service's
// ProvenanceStore: one open database (WAL journal, synchronous=FULL, a busy
// timeout for other processes holding the file), transactions that leave
// nothing behind on failure, and RAII prepared statements. Errors are
// UNAVAILABLE prefixed with the store's label ("state store <path>: ...").
//
// Thread-safety: none; each store serialises its calls with its own mutex.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>

#include "common/ignore.h"
#include "common/status.h"

namespace morpheus::store::sqlite {

// A prepared statement; finalized on destruction. Binds copy their argument.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  Stmt(sqlite3* db, const std::string& sql) : Stmt(db, sql.c_str()) {}
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  Stmt& text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& blob(int i, const std::string& v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& int64(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  int step() { return sqlite3_step(s_); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  // Column i as bytes (TEXT or BLOB); "" for NULL.
  std::string col(int i) const {
    const void* p = sqlite3_column_blob(s_, i);
    int n = sqlite3_column_bytes(s_, i);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }
  int64_t colInt(int i) const { return sqlite3_column_int64(s_, i); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

class Db {
 public:
  // Opens (creating) `path`. A file that cannot be opened is INVALID_ARGUMENT
  // naming `field` (the config key that gave the path); `label` prefixes
  // every later error.
  static Result<std::unique_ptr<Db>> open(const std::string& path, const std::string& field,
                                          const std::string& label);
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* handle() const { return db_; }
  // Runs statements without results.
  Status exec(const char* sql);
  // UNAVAILABLE: "<label>: <what>: <sqlite's last error>".
  Status error(const std::string& what) const;
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back if it or the
  // commit fails, so a failed call leaves nothing.
  template <typename Body>
  Status inTransaction(Body&& body) {
    MORPHEUS_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    Status st = body();
    if (st.isOk()) st = exec("COMMIT");
    // A failed ROLLBACK leaves the transaction to SQLite, which rolls it back
    // when the statement that failed aborted it; the first error is the one
    // the caller needs.
    if (!st.isOk()) ignoreError(exec("ROLLBACK"), "the original failure is returned");
    return st;
  }

 private:
  Db(sqlite3* db, std::string label) : db_(db), label_(std::move(label)) {}
  sqlite3* db_;
  std::string label_;
};

}  // namespace morpheus::store::sqlite
