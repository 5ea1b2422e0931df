#include "store/sqlite_db.h"

namespace morpheus::store::sqlite {

namespace {
constexpr int kBusyTimeoutMs = 5000;
}  // namespace

Result<std::unique_ptr<Db>> Db::open(const std::string& path, const std::string& field,
                                     const std::string& label) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return invalidArgument(field, "cannot open '" + path + "': " + msg);
  }
  std::unique_ptr<Db> out(new Db(db, label));
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  MORPHEUS_RETURN_IF_ERROR(out->exec("PRAGMA journal_mode=WAL"));
  MORPHEUS_RETURN_IF_ERROR(out->exec("PRAGMA synchronous=FULL"));
  return out;
}

Status Db::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown";
    sqlite3_free(err);
    return unavailable(label_ + ": " + msg);
  }
  return Status::ok();
}

Status Db::error(const std::string& what) const {
  return unavailable(label_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

}  // namespace morpheus::store::sqlite
