// SQLite implementation of ProvenanceStore: WAL journal, synchronous=FULL,
// a busy timeout for other processes holding the file, one transaction per
// mutating call; schema versioned in `schema_version` and migrated on open.
#include <algorithm>
#include <mutex>
#include <tuple>

#include "common/mutex.h"
#include "store/provenance/provenance_store.h"
#include "store/provenance/provenance_store_internal.h"
#include "store/sqlite_db.h"

namespace morpheus::store {

namespace {

// Paths bound per eventsOnPaths query (below SQLITE_MAX_VARIABLE_NUMBER).
constexpr size_t kPathsPerQuery = 500;

// Migration N (1-based) brings the schema from version N-1 to N. Append only:
// a released migration never changes.
constexpr const char* kMigrations[] = {
    // 1: the tables.
    "CREATE TABLE runs("
    "  job TEXT NOT NULL, run TEXT NOT NULL, owner TEXT NOT NULL,"
    "  submit_ms INTEGER NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,"
    "  step_ms INTEGER NOT NULL, skyline TEXT NOT NULL, container TEXT NOT NULL,"
    "  PRIMARY KEY(job, run));"
    "CREATE TABLE events("
    "  job TEXT NOT NULL, run TEXT NOT NULL, path TEXT NOT NULL,"
    "  kind TEXT NOT NULL CHECK(kind IN ('read', 'write')), time_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(job, run, path, kind, time_ms));"
    "CREATE TABLE proposals("
    "  id TEXT NOT NULL PRIMARY KEY, job TEXT NOT NULL, owner TEXT NOT NULL,"
    "  state TEXT NOT NULL, reservation_id TEXT NOT NULL, reason TEXT NOT NULL,"
    "  auto_update INTEGER NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    "  payload_json TEXT NOT NULL);"
    "CREATE TABLE reject_fingerprints(job TEXT NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL);",
    // 2: indexes for the read paths.
    "CREATE INDEX events_by_path ON events(path, time_ms);"
    "CREATE INDEX events_by_job ON events(job, time_ms);"
    "CREATE INDEX runs_by_submit ON runs(job, submit_ms, run);"
    "CREATE INDEX proposals_by_state ON proposals(state, created_ms, id);",
    // 3: how each run ended; runs stored before were successful runs.
    "ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'succeeded'"
    "  CHECK(status IN ('succeeded', 'failed', 'killed'));",
    // 4: each job's owner; an existing job's is the user of its earliest run.
    "CREATE TABLE job_owners(job TEXT NOT NULL PRIMARY KEY, owner TEXT NOT NULL);"
    "INSERT INTO job_owners(job, owner) SELECT r.job, r.owner FROM runs r WHERE NOT EXISTS("
    "  SELECT 1 FROM runs e WHERE e.job = r.job AND (e.submit_ms < r.submit_ms OR"
    "  (e.submit_ms = r.submit_ms AND e.run < r.run)));",
};
static_assert(std::size(kMigrations) == kProvenanceSchemaVersion,
              "one SQLite migration per schema version");

using sqlite::Stmt;

class SqliteProvenanceStore final : public ProvenanceStore {
 public:
  static Result<std::unique_ptr<ProvenanceStore>> open(const std::string& path,
                                                       int target_version) {
    MORPHEUS_CHECK(target_version >= 1 && target_version <= kProvenanceSchemaVersion,
                   "target schema version out of range");
    MORPHEUS_ASSIGN_OR_RETURN(
        auto db, sqlite::Db::open(path, "provenance-store.location", "provenance store " + path));
    std::unique_ptr<SqliteProvenanceStore> s(new SqliteProvenanceStore(std::move(db), path));
    MORPHEUS_RETURN_IF_ERROR(s->migrate(target_version));
    return std::unique_ptr<ProvenanceStore>(std::move(s));
  }

  Status ingest(const IngestBatch& batch) override {
    MORPHEUS_RETURN_IF_ERROR(validateIngest(batch));
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_ASSIGN_OR_RETURN(
          auto owners,
          newJobOwners(batch, [&](const JobKey& job) REQUIRES(mu_) { return ownerOf(job); }));
      Stmt own(db_, "INSERT INTO job_owners(job, owner) VALUES(?1, ?2)");
      if (!own.prepared()) return error("prepare job owners");
      for (const auto& [job, owner] : owners) {
        own.text(1, job.value()).text(2, owner);
        if (own.step() != SQLITE_DONE) return error("record the owner of " + job.value());
        own.reset();
      }
      Stmt run(db_,
               "INSERT INTO runs(job, run, owner, submit_ms, start_ms, end_ms, step_ms, skyline, "
               "container, status) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
               "ON CONFLICT(job, run) DO UPDATE SET owner = excluded.owner, "
               "submit_ms = excluded.submit_ms, start_ms = excluded.start_ms, "
               "end_ms = excluded.end_ms, step_ms = excluded.step_ms, "
               "skyline = excluded.skyline, container = excluded.container, "
               "status = excluded.status");
      if (!run.prepared()) return error("prepare runs");
      for (const RunRecord& r : batch.runs) {
        run.text(1, r.job.value())
            .text(2, r.run.value())
            .text(3, r.user)
            .int64(4, toEpochMs(r.submit))
            .int64(5, toEpochMs(r.start))
            .int64(6, toEpochMs(r.end))
            .int64(7, r.step.count())
            .text(8, encodeSkyline(r.skyline))
            .text(9, encodeResource(r.container))
            .text(10, toString(r.status));
        if (run.step() != SQLITE_DONE) return error("ingest run " + r.run.value());
        run.reset();
      }
      Stmt ev(db_,
              "INSERT INTO events(job, run, path, kind, time_ms) VALUES(?1, ?2, ?3, ?4, ?5) "
              "ON CONFLICT DO NOTHING");
      if (!ev.prepared()) return error("prepare events");
      for (const FileEvent& e : batch.events) {
        ev.text(1, e.job.value())
            .text(2, e.run.value())
            .text(3, e.path)
            .text(4, toString(e.kind))
            .int64(5, toEpochMs(e.time));
        if (ev.step() != SQLITE_DONE) return error("ingest event on " + e.path);
        ev.reset();
      }
      return Status::ok();
    });
  }

  Result<std::vector<JobKey>> jobs() override {
    MutexLock lk(mu_);
    Stmt q(db_, "SELECT DISTINCT job FROM runs ORDER BY job");
    if (!q.prepared()) return error("prepare jobs");
    std::vector<JobKey> out;
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) out.emplace_back(q.col(0));
    if (rc != SQLITE_DONE) return error("jobs");
    return out;
  }

  Result<std::optional<std::string>> jobOwner(const JobKey& job) override {
    MutexLock lk(mu_);
    return ownerOf(job);
  }

  Result<std::vector<RunRecord>> runs(const JobKey& job) override {
    MutexLock lk(mu_);
    Stmt q(db_,
           "SELECT job, run, owner, submit_ms, start_ms, end_ms, step_ms, skyline, container, "
           "status FROM runs WHERE job = ?1 ORDER BY submit_ms, run");
    if (!q.prepared()) return error("prepare runs");
    q.text(1, job.value());
    std::vector<RunRecord> out;
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      RunRecord r;
      r.job = JobKey(q.col(0));
      r.run = RunId(q.col(1));
      r.user = q.col(2);
      r.submit = fromEpochMs(q.colInt(3));
      r.start = fromEpochMs(q.colInt(4));
      r.end = fromEpochMs(q.colInt(5));
      r.step = Millis(q.colInt(6));
      MORPHEUS_ASSIGN_OR_RETURN(r.skyline, decodeSkyline(q.col(7)));
      auto c = Resource::parse(q.col(8), "container");
      if (!c.isOk()) return internalError("corrupt container in provenance store " + path_);
      r.container = *c;
      auto status = parseRunStatus(q.col(9));
      if (!status) return internalError("corrupt run status in provenance store " + path_);
      r.status = *status;
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return error("runs");
    return out;
  }

  Result<std::vector<FileEvent>> eventsOfJob(const JobKey& job) override {
    MutexLock lk(mu_);
    Stmt q(db_,
           "SELECT job, run, path, kind, time_ms FROM events WHERE job = ?1 "
           "ORDER BY time_ms, run, path, kind");
    if (!q.prepared()) return error("prepare events");
    q.text(1, job.value());
    std::vector<FileEvent> out;
    MORPHEUS_RETURN_IF_ERROR(readEvents(q, out));
    return out;
  }

  Result<std::vector<FileEvent>> eventsOnPaths(const std::vector<std::string>& paths) override {
    std::vector<std::string> unique = paths;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    std::vector<FileEvent> out;
    MutexLock lk(mu_);
    for (size_t first = 0; first < unique.size(); first += kPathsPerQuery) {
      size_t n = std::min(kPathsPerQuery, unique.size() - first);
      std::string sql = "SELECT job, run, path, kind, time_ms FROM events WHERE path IN (";
      for (size_t i = 0; i < n; ++i) sql += i ? ",?" : "?";
      sql += ")";
      Stmt q(db_, sql.c_str());
      if (!q.prepared()) return error("prepare events");
      for (size_t i = 0; i < n; ++i) q.text(static_cast<int>(i + 1), unique[first + i]);
      MORPHEUS_RETURN_IF_ERROR(readEvents(q, out));
    }
    std::sort(out.begin(), out.end(), [](const FileEvent& a, const FileEvent& b) {
      return std::tie(a.time, a.job, a.run, a.path, a.kind) <
             std::tie(b.time, b.job, b.run, b.path, b.kind);
    });
    return out;
  }

  Status insertProposal(const ProposalRecord& p) override {
    MORPHEUS_RETURN_IF_ERROR(validateProposal(p));
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      Stmt q(db_,
             "INSERT INTO proposals(id, job, owner, state, reservation_id, reason, auto_update, "
             "created_ms, updated_ms, payload_json) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
             "?10) ON CONFLICT(id) DO NOTHING");
      if (!q.prepared()) return error("prepare proposal");
      bindProposal(q, p);
      if (q.step() != SQLITE_DONE) return error("insert proposal " + p.id.value());
      if (sqlite3_changes(db_) == 0) {
        return alreadyExists("proposal " + p.id.value() + " already exists");
      }
      return Status::ok();
    });
  }

  Result<std::optional<ProposalRecord>> getProposal(const ProposalId& id) override {
    MutexLock lk(mu_);
    Stmt q(db_, "SELECT " + std::string(kProposalColumns) + " FROM proposals WHERE id = ?1");
    if (!q.prepared()) return error("prepare proposal");
    q.text(1, id.value());
    std::vector<ProposalRecord> out;
    MORPHEUS_RETURN_IF_ERROR(readProposals(q, out));
    if (out.empty()) return std::optional<ProposalRecord>();
    return std::optional<ProposalRecord>(std::move(out.front()));
  }

  Result<std::vector<ProposalRecord>> listProposals(std::optional<ProposalState> state) override {
    MutexLock lk(mu_);
    std::string sql = "SELECT " + std::string(kProposalColumns) + " FROM proposals";
    if (state) sql += " WHERE state = ?1";
    sql += " ORDER BY created_ms, id";
    Stmt q(db_, sql);
    if (!q.prepared()) return error("prepare proposals");
    if (state) q.text(1, toString(*state));
    std::vector<ProposalRecord> out;
    MORPHEUS_RETURN_IF_ERROR(readProposals(q, out));
    return out;
  }

  Status updateProposal(const ProposalRecord& p, ProposalState expected) override {
    MORPHEUS_RETURN_IF_ERROR(validateProposal(p));
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      Stmt cur(db_, "SELECT state FROM proposals WHERE id = ?1");
      if (!cur.prepared()) return error("prepare proposal");
      cur.text(1, p.id.value());
      int rc = cur.step();
      if (rc == SQLITE_DONE) return notFound("proposal " + p.id.value() + " does not exist");
      if (rc != SQLITE_ROW) return error("read proposal " + p.id.value());
      std::string state = cur.col(0);
      if (state != toString(expected)) {
        return infeasible("proposal " + p.id.value() + " is " + state + ", not " +
                          toString(expected));
      }
      Stmt q(db_,
             "UPDATE proposals SET job = ?2, owner = ?3, state = ?4, reservation_id = ?5, "
             "reason = ?6, auto_update = ?7, created_ms = ?8, updated_ms = ?9, "
             "payload_json = ?10 WHERE id = ?1");
      if (!q.prepared()) return error("prepare proposal");
      bindProposal(q, p);
      if (q.step() != SQLITE_DONE) return error("update proposal " + p.id.value());
      return Status::ok();
    });
  }

  Status setRejectFingerprint(const JobKey& job, const std::string& fingerprint) override {
    if (job.empty()) return invalidArgument("job", "must not be empty");
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      Stmt q(db_,
             "INSERT INTO reject_fingerprints(job, fingerprint) VALUES(?1, ?2) "
             "ON CONFLICT(job) DO UPDATE SET fingerprint = excluded.fingerprint");
      if (!q.prepared()) return error("prepare fingerprint");
      q.text(1, job.value()).text(2, fingerprint);
      if (q.step() != SQLITE_DONE) return error("set reject fingerprint of " + job.value());
      return Status::ok();
    });
  }

  Result<std::optional<std::string>> rejectFingerprint(const JobKey& job) override {
    MutexLock lk(mu_);
    Stmt q(db_, "SELECT fingerprint FROM reject_fingerprints WHERE job = ?1");
    if (!q.prepared()) return error("prepare fingerprint");
    q.text(1, job.value());
    int rc = q.step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(q.col(0));
    if (rc != SQLITE_DONE) return error("reject fingerprint of " + job.value());
    return std::optional<std::string>();
  }

  int schemaVersion() override { return schema_version_; }
  std::string name() const override { return "sqlite:" + path_; }

 private:
  static constexpr const char* kProposalColumns =
      "id, job, owner, state, reservation_id, reason, auto_update, created_ms, updated_ms, "
      "payload_json";

  SqliteProvenanceStore(std::unique_ptr<sqlite::Db> db, std::string path)
      : owner_(std::move(db)), db_(owner_->handle()), path_(std::move(path)) {}

  Status error(const std::string& what) const { return owner_->error(what); }
  Result<std::optional<std::string>> ownerOf(const JobKey& job) REQUIRES(mu_) {
    Stmt q(db_, "SELECT owner FROM job_owners WHERE job = ?1");
    if (!q.prepared()) return error("prepare job owner");
    q.text(1, job.value());
    int rc = q.step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(q.col(0));
    if (rc != SQLITE_DONE) return error("owner of " + job.value());
    return std::optional<std::string>();
  }
  Status exec(const char* sql) { return owner_->exec(sql); }
  template <typename Body>
  Status inTransaction(Body&& body) REQUIRES(mu_) {
    // The Db runs `body` on this thread, inside the caller's hold of mu_;
    // the analysis cannot see through its template.
    return owner_->inTransaction([&]() NO_THREAD_SAFETY_ANALYSIS { return body(); });
  }

  static void bindProposal(Stmt& q, const ProposalRecord& p) {
    q.text(1, p.id.value())
        .text(2, p.job.value())
        .text(3, p.owner)
        .text(4, toString(p.state))
        .text(5, p.reservation_id)
        .text(6, p.reason)
        .int64(7, p.auto_update ? 1 : 0)
        .int64(8, toEpochMs(p.created))
        .int64(9, toEpochMs(p.updated))
        .text(10, p.payload_json);
  }

  Status readProposals(Stmt& q, std::vector<ProposalRecord>& out) {
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      ProposalRecord p;
      p.id = ProposalId(q.col(0));
      p.job = JobKey(q.col(1));
      p.owner = q.col(2);
      auto state = parseProposalState(q.col(3));
      if (!state) return internalError("corrupt proposal state '" + q.col(3) + "' in " + path_);
      p.state = *state;
      p.reservation_id = q.col(4);
      p.reason = q.col(5);
      p.auto_update = q.colInt(6) != 0;
      p.created = fromEpochMs(q.colInt(7));
      p.updated = fromEpochMs(q.colInt(8));
      p.payload_json = q.col(9);
      out.push_back(std::move(p));
    }
    return rc == SQLITE_DONE ? Status::ok() : error("read proposals");
  }

  Status readEvents(Stmt& q, std::vector<FileEvent>& out) {
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      FileEvent e;
      e.job = JobKey(q.col(0));
      e.run = RunId(q.col(1));
      e.path = q.col(2);
      auto kind = parseFileAccess(q.col(3));
      if (!kind) return internalError("corrupt event kind '" + q.col(3) + "' in " + path_);
      e.kind = *kind;
      e.time = fromEpochMs(q.colInt(4));
      out.push_back(std::move(e));
    }
    return rc == SQLITE_DONE ? Status::ok() : error("read events");
  }

  // Applies the migrations after the stored version up to `target`, all in
  // one transaction; refuses a database newer than this code.
  Status migrate(int target) {
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_RETURN_IF_ERROR(
          exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL, "
               "applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"));
      int version = 0;
      {
        Stmt q(db_, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
        if (!q.prepared() || q.step() != SQLITE_ROW) return error("read schema version");
        version = static_cast<int>(q.colInt(0));
      }
      if (version > kProvenanceSchemaVersion) {
        return infeasible("provenance store " + path_ + " has schema version " +
                          std::to_string(version) + ", newer than this code (" +
                          std::to_string(kProvenanceSchemaVersion) + "); upgrade the binary");
      }
      for (int v = version + 1; v <= target; ++v) {
        Status st = exec(kMigrations[v - 1]);
        if (!st.isOk()) return st.withContext("migration to schema version " + std::to_string(v));
        Stmt ins(db_, "INSERT INTO schema_version(version) VALUES(?1)");
        if (!ins.prepared()) return error("prepare schema version");
        ins.int64(1, v);
        if (ins.step() != SQLITE_DONE) return error("record schema version");
      }
      schema_version_ = std::max(version, target);
      return Status::ok();
    });
  }

  // Constant after construction.
  const std::unique_ptr<sqlite::Db> owner_;
  sqlite3* const db_;  // owner_'s handle
  const std::string path_;

  Mutex mu_;
  int schema_version_ = 0;  // written by open() only, before the store is shared
};

}  // namespace

Result<std::unique_ptr<ProvenanceStore>> openSqliteProvenanceStore(const std::string& path,
                                                                   int target_version) {
  return SqliteProvenanceStore::open(path, target_version);
}

}  // namespace morpheus::store
