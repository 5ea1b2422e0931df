// PostgreSQL implementation of ProvenanceStore via libpq: one connection
// guarded by a mutex, parameterised statements only (PQexecParams), one
// BEGIN ... COMMIT per mutating call, and one reconnect when the connection
// turns out to be broken. Schema versioned in `schema_version`, migrated on
// open under an advisory lock so concurrent openers do not race.
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <mutex>

#include "common/ignore.h"
#include "common/mutex.h"
#include "store/provenance/provenance_store.h"
#include "store/provenance/provenance_store_internal.h"

namespace morpheus::store {

namespace {

// pg_advisory_xact_lock key serialising migrations of one database ("MPROV").
constexpr int64_t kMigrationLockKey = 0x4d50524f56;

// Migration N (1-based) brings the schema from version N-1 to N; same logical
// schema as the SQLite migrations. Text keys use the "C" collation so ORDER BY
// is bytewise, as in SQLite and std::string. Append only.
constexpr const char* kMigrations[] = {
    // 1: the tables.
    "CREATE TABLE runs("
    "  job TEXT COLLATE \"C\" NOT NULL, run TEXT COLLATE \"C\" NOT NULL, owner TEXT NOT NULL,"
    "  submit_ms BIGINT NOT NULL, start_ms BIGINT NOT NULL, end_ms BIGINT NOT NULL,"
    "  step_ms BIGINT NOT NULL, skyline TEXT NOT NULL, container TEXT NOT NULL,"
    "  PRIMARY KEY(job, run));"
    "CREATE TABLE events("
    "  job TEXT COLLATE \"C\" NOT NULL, run TEXT COLLATE \"C\" NOT NULL,"
    "  path TEXT COLLATE \"C\" NOT NULL,"
    "  kind TEXT COLLATE \"C\" NOT NULL CHECK(kind IN ('read', 'write')),"
    "  time_ms BIGINT NOT NULL,"
    "  PRIMARY KEY(job, run, path, kind, time_ms));"
    "CREATE TABLE proposals("
    "  id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, job TEXT COLLATE \"C\" NOT NULL,"
    "  owner TEXT NOT NULL, state TEXT NOT NULL, reservation_id TEXT NOT NULL,"
    "  reason TEXT NOT NULL, auto_update BOOLEAN NOT NULL, created_ms BIGINT NOT NULL,"
    "  updated_ms BIGINT NOT NULL, payload_json TEXT NOT NULL);"
    "CREATE TABLE reject_fingerprints("
    "  job TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL);",
    // 2: indexes for the read paths.
    "CREATE INDEX events_by_path ON events(path, time_ms);"
    "CREATE INDEX events_by_job ON events(job, time_ms);"
    "CREATE INDEX runs_by_submit ON runs(job, submit_ms, run);"
    "CREATE INDEX proposals_by_state ON proposals(state, created_ms, id);",
    // 3: how each run ended; runs stored before were successful runs.
    "ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'succeeded'"
    "  CHECK(status IN ('succeeded', 'failed', 'killed'));",
    // 4: each job's owner; an existing job's is the user of its earliest run.
    "CREATE TABLE job_owners(job TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, owner TEXT NOT NULL);"
    "INSERT INTO job_owners(job, owner) SELECT DISTINCT ON (job) job, owner FROM runs"
    "  ORDER BY job, submit_ms, run;",
};
static_assert(std::size(kMigrations) == kProvenanceSchemaVersion,
              "one PostgreSQL migration per schema version");

constexpr const char* kProposalColumns =
    "id, job, owner, state, reservation_id, reason, auto_update, created_ms, updated_ms, "
    "payload_json";

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

std::string trimmed(const char* msg) {
  std::string s = msg ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A Postgres text[] literal: {"a","b\"c"}.
std::string textArray(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

class PostgresProvenanceStore final : public ProvenanceStore {
 public:
  static Result<std::unique_ptr<ProvenanceStore>> open(const std::string& conninfo,
                                                       int target_version) {
    MORPHEUS_CHECK(target_version >= 1 && target_version <= kProvenanceSchemaVersion,
                   "target schema version out of range");
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (!opts) {
      std::string msg = err ? trimmed(err) : "out of memory";
      PQfreemem(err);
      return invalidArgument("provenance-store.location", "not a libpq conninfo: " + msg);
    }
    PQconninfoFree(opts);

    PGconn* conn = PQconnectdb(conninfo.c_str());
    if (!conn) return unavailable("postgres provenance store: out of memory");
    if (PQstatus(conn) != CONNECTION_OK) {
      std::string msg = trimmed(PQerrorMessage(conn));
      PQfinish(conn);
      return unavailable("postgres provenance store: cannot connect: " + msg);
    }
    PQsetNoticeProcessor(
        conn, [](void*, const char*) {}, nullptr);
    std::string name =
        std::string("postgres://") + PQhost(conn) + ":" + PQport(conn) + "/" + PQdb(conn);
    std::unique_ptr<PostgresProvenanceStore> s(new PostgresProvenanceStore(conn, name));
    MORPHEUS_RETURN_IF_ERROR(s->migrate(target_version));
    return std::unique_ptr<ProvenanceStore>(std::move(s));
  }

  ~PostgresProvenanceStore() override { PQfinish(conn_); }

  Status ingest(const IngestBatch& batch) override {
    MORPHEUS_RETURN_IF_ERROR(validateIngest(batch));
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_ASSIGN_OR_RETURN(
          auto owners,
          newJobOwners(batch, [&](const JobKey& job) REQUIRES(mu_) { return ownerOf(job); }));
      for (const auto& [job, owner] : owners) {
        auto res = exec("INSERT INTO job_owners(job, owner) VALUES($1, $2)", {job.value(), owner},
                        "record the owner of " + job.value());
        if (!res.isOk()) return res.status();
      }
      for (const RunRecord& r : batch.runs) {
        auto res = exec(
            "INSERT INTO runs(job, run, owner, submit_ms, start_ms, end_ms, step_ms, skyline, "
            "container, status) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
            "ON CONFLICT(job, run) DO UPDATE SET owner = excluded.owner, "
            "submit_ms = excluded.submit_ms, start_ms = excluded.start_ms, "
            "end_ms = excluded.end_ms, step_ms = excluded.step_ms, "
            "skyline = excluded.skyline, container = excluded.container, "
            "status = excluded.status",
            {r.job.value(), r.run.value(), r.user, std::to_string(toEpochMs(r.submit)),
             std::to_string(toEpochMs(r.start)), std::to_string(toEpochMs(r.end)),
             std::to_string(r.step.count()), encodeSkyline(r.skyline), encodeResource(r.container),
             toString(r.status)},
            "ingest run " + r.run.value());
        if (!res.isOk()) return res.status();
      }
      for (const FileEvent& e : batch.events) {
        auto res = exec(
            "INSERT INTO events(job, run, path, kind, time_ms) VALUES($1, $2, $3, $4, $5) "
            "ON CONFLICT DO NOTHING",
            {e.job.value(), e.run.value(), e.path, toString(e.kind),
             std::to_string(toEpochMs(e.time))},
            "ingest event on " + e.path);
        if (!res.isOk()) return res.status();
      }
      return Status::ok();
    });
  }

  Result<std::vector<JobKey>> jobs() override {
    MutexLock lk(mu_);
    std::vector<JobKey> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.clear();
      MORPHEUS_ASSIGN_OR_RETURN(PgResult r,
                                exec("SELECT DISTINCT job FROM runs ORDER BY job", {}, "jobs"));
      for (int i = 0; i < PQntuples(r.get()); ++i) out.emplace_back(PQgetvalue(r.get(), i, 0));
      return Status::ok();
    }));
    return out;
  }

  Result<std::optional<std::string>> jobOwner(const JobKey& job) override {
    MutexLock lk(mu_);
    std::optional<std::string> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_ASSIGN_OR_RETURN(out, ownerOf(job));
      return Status::ok();
    }));
    return out;
  }

  Result<std::vector<RunRecord>> runs(const JobKey& job) override {
    MutexLock lk(mu_);
    std::vector<RunRecord> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.clear();
      MORPHEUS_ASSIGN_OR_RETURN(
          PgResult r,
          exec("SELECT job, run, owner, submit_ms, start_ms, end_ms, step_ms, skyline, container, "
               "status FROM runs WHERE job = $1 ORDER BY submit_ms, run",
               {job.value()}, "runs"));
      for (int i = 0; i < PQntuples(r.get()); ++i) {
        RunRecord rec;
        rec.job = JobKey(PQgetvalue(r.get(), i, 0));
        rec.run = RunId(PQgetvalue(r.get(), i, 1));
        rec.user = PQgetvalue(r.get(), i, 2);
        MORPHEUS_ASSIGN_OR_RETURN(int64_t submit, int64At(r.get(), i, 3));
        MORPHEUS_ASSIGN_OR_RETURN(int64_t start, int64At(r.get(), i, 4));
        MORPHEUS_ASSIGN_OR_RETURN(int64_t end, int64At(r.get(), i, 5));
        MORPHEUS_ASSIGN_OR_RETURN(int64_t step, int64At(r.get(), i, 6));
        rec.submit = fromEpochMs(submit);
        rec.start = fromEpochMs(start);
        rec.end = fromEpochMs(end);
        rec.step = Millis(step);
        MORPHEUS_ASSIGN_OR_RETURN(rec.skyline, decodeSkyline(PQgetvalue(r.get(), i, 7)));
        auto c = Resource::parse(PQgetvalue(r.get(), i, 8), "container");
        if (!c.isOk()) return internalError("corrupt container in provenance store " + name_);
        rec.container = *c;
        auto status = parseRunStatus(PQgetvalue(r.get(), i, 9));
        if (!status) return internalError("corrupt run status in provenance store " + name_);
        rec.status = *status;
        out.push_back(std::move(rec));
      }
      return Status::ok();
    }));
    return out;
  }

  Result<std::vector<FileEvent>> eventsOfJob(const JobKey& job) override {
    MutexLock lk(mu_);
    std::vector<FileEvent> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.clear();
      MORPHEUS_ASSIGN_OR_RETURN(PgResult r, exec("SELECT job, run, path, kind, time_ms FROM events "
                                                 "WHERE job = $1 ORDER BY time_ms, run, path, kind",
                                                 {job.value()}, "events of job"));
      return readEvents(r.get(), out);
    }));
    return out;
  }

  Result<std::vector<FileEvent>> eventsOnPaths(const std::vector<std::string>& paths) override {
    std::vector<FileEvent> out;
    if (paths.empty()) return out;
    MutexLock lk(mu_);
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.clear();
      MORPHEUS_ASSIGN_OR_RETURN(
          PgResult r, exec("SELECT job, run, path, kind, time_ms FROM events "
                           "WHERE path = ANY($1::text[]) ORDER BY time_ms, job, run, path, kind",
                           {textArray(paths)}, "events on paths"));
      return readEvents(r.get(), out);
    }));
    return out;
  }

  Status insertProposal(const ProposalRecord& p) override {
    MORPHEUS_RETURN_IF_ERROR(validateProposal(p));
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_ASSIGN_OR_RETURN(PgResult r,
                                exec("INSERT INTO proposals(" + std::string(kProposalColumns) +
                                         ") VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                                         "ON CONFLICT(id) DO NOTHING",
                                     proposalParams(p), "insert proposal " + p.id.value()));
      if (std::string(PQcmdTuples(r.get())) == "0") {
        return alreadyExists("proposal " + p.id.value() + " already exists");
      }
      return Status::ok();
    });
  }

  Result<std::optional<ProposalRecord>> getProposal(const ProposalId& id) override {
    MutexLock lk(mu_);
    std::vector<ProposalRecord> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.clear();
      MORPHEUS_ASSIGN_OR_RETURN(PgResult r, exec("SELECT " + std::string(kProposalColumns) +
                                                     " FROM proposals WHERE id = $1",
                                                 {id.value()}, "get proposal " + id.value()));
      return readProposals(r.get(), out);
    }));
    if (out.empty()) return std::optional<ProposalRecord>();
    return std::optional<ProposalRecord>(std::move(out.front()));
  }

  Result<std::vector<ProposalRecord>> listProposals(std::optional<ProposalState> state) override {
    MutexLock lk(mu_);
    std::vector<ProposalRecord> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.clear();
      std::string sql = "SELECT " + std::string(kProposalColumns) + " FROM proposals";
      std::vector<std::string> params;
      if (state) {
        sql += " WHERE state = $1";
        params.push_back(toString(*state));
      }
      sql += " ORDER BY created_ms, id";
      MORPHEUS_ASSIGN_OR_RETURN(PgResult r, exec(sql, params, "list proposals"));
      return readProposals(r.get(), out);
    }));
    return out;
  }

  Status updateProposal(const ProposalRecord& p, ProposalState expected) override {
    MORPHEUS_RETURN_IF_ERROR(validateProposal(p));
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_ASSIGN_OR_RETURN(
          PgResult cur, exec("SELECT state FROM proposals WHERE id = $1 FOR UPDATE", {p.id.value()},
                             "read proposal " + p.id.value()));
      if (PQntuples(cur.get()) == 0) {
        return notFound("proposal " + p.id.value() + " does not exist");
      }
      std::string state = PQgetvalue(cur.get(), 0, 0);
      if (state != toString(expected)) {
        return infeasible("proposal " + p.id.value() + " is " + state + ", not " +
                          toString(expected));
      }
      auto r = exec(
          "UPDATE proposals SET job = $2, owner = $3, state = $4, reservation_id = $5, "
          "reason = $6, auto_update = $7, created_ms = $8, updated_ms = $9, payload_json = $10 "
          "WHERE id = $1",
          proposalParams(p), "update proposal " + p.id.value());
      return r.status();
    });
  }

  Status setRejectFingerprint(const JobKey& job, const std::string& fingerprint) override {
    if (job.empty()) return invalidArgument("job", "must not be empty");
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      return exec(
                 "INSERT INTO reject_fingerprints(job, fingerprint) VALUES($1, $2) "
                 "ON CONFLICT(job) DO UPDATE SET fingerprint = excluded.fingerprint",
                 {job.value(), fingerprint}, "set reject fingerprint of " + job.value())
          .status();
    });
  }

  Result<std::optional<std::string>> rejectFingerprint(const JobKey& job) override {
    MutexLock lk(mu_);
    std::optional<std::string> out;
    MORPHEUS_RETURN_IF_ERROR(withConnection([&]() REQUIRES(mu_) -> Status {
      out.reset();
      MORPHEUS_ASSIGN_OR_RETURN(PgResult r,
                                exec("SELECT fingerprint FROM reject_fingerprints WHERE job = $1",
                                     {job.value()}, "reject fingerprint of " + job.value()));
      if (PQntuples(r.get()) > 0) out = PQgetvalue(r.get(), 0, 0);
      return Status::ok();
    }));
    return out;
  }

  int schemaVersion() override { return schema_version_; }
  std::string name() const override { return name_; }

 private:
  PostgresProvenanceStore(PGconn* conn, std::string name) : name_(std::move(name)), conn_(conn) {}

  // The stored owner of `job`, on an open connection.
  Result<std::optional<std::string>> ownerOf(const JobKey& job) REQUIRES(mu_) {
    MORPHEUS_ASSIGN_OR_RETURN(PgResult r, exec("SELECT owner FROM job_owners WHERE job = $1",
                                               {job.value()}, "owner of " + job.value()));
    if (PQntuples(r.get()) == 0) return std::optional<std::string>();
    return std::optional<std::string>(PQgetvalue(r.get(), 0, 0));
  }

  // One statement with text parameters.
  Result<PgResult> exec(const std::string& sql, const std::vector<std::string>& params,
                        const std::string& what) REQUIRES(mu_) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.c_str());
    PgResult r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                            values.data(), nullptr, nullptr, 0));
    ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    return unavailable("provenance store " + name_ + ": " + what + ": " +
                       trimmed(PQerrorMessage(conn_)));
  }

  // A fixed, parameterless command (BEGIN, COMMIT, a migration).
  Status command(const char* sql, const std::string& what) REQUIRES(mu_) {
    PgResult r(PQexec(conn_, sql));
    if (r && PQresultStatus(r.get()) == PGRES_COMMAND_OK) return Status::ok();
    return unavailable("provenance store " + name_ + ": " + what + ": " +
                       trimmed(PQerrorMessage(conn_)));
  }

  // Reconnects if the connection is known to be broken.
  Status ensureConnected() REQUIRES(mu_) {
    if (PQstatus(conn_) == CONNECTION_OK) return Status::ok();
    spdlog::warn("provenance store {}: connection lost; reconnecting", name_);
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) {
      return unavailable("provenance store " + name_ +
                         ": cannot reconnect: " + trimmed(PQerrorMessage(conn_)));
    }
    return Status::ok();
  }

  // Runs `fn` (statements on conn_); if it fails because the connection
  // broke, reconnects and runs it once more.
  template <typename Fn>
  Status withConnection(Fn&& fn) REQUIRES(mu_) {
    Status st;
    for (int attempt = 0; attempt < 2; ++attempt) {
      MORPHEUS_RETURN_IF_ERROR(ensureConnected());
      st = fn();
      if (st.isOk() || PQstatus(conn_) != CONNECTION_BAD) return st;
    }
    return st;
  }

  // Runs `body` inside BEGIN ... COMMIT, rolling back on failure. A
  // connection lost before COMMIT was sent means the server rolled back, so
  // the whole transaction is retried once on a new connection; a connection
  // lost during COMMIT leaves the outcome unknown and is reported, not
  // retried.
  template <typename Body>
  Status inTransaction(Body&& body) REQUIRES(mu_) {
    bool commit_sent = false;
    Status st = withConnection([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_RETURN_IF_ERROR(command("BEGIN", "begin"));
      Status inner = body();
      if (!inner.isOk()) {
        if (PQstatus(conn_) == CONNECTION_OK) {
          ignoreError(command("ROLLBACK", "rollback"), "the original failure is returned");
        }
        return inner;
      }
      commit_sent = true;
      return command("COMMIT", "commit");
    });
    if (!st.isOk() && commit_sent && PQstatus(conn_) == CONNECTION_BAD) {
      return st.withContext("connection lost during COMMIT; the outcome is unknown");
    }
    return st;
  }

  Result<int64_t> int64At(PGresult* r, int row, int col) const {
    const char* s = PQgetvalue(r, row, col);
    int len = PQgetlength(r, row, col);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s, s + len, v);
    if (ec != std::errc() || end != s + len) {
      return internalError("provenance store " + name_ + ": '" + std::string(s, len) +
                           "' is not an integer");
    }
    return v;
  }

  static std::vector<std::string> proposalParams(const ProposalRecord& p) {
    return {p.id.value(),
            p.job.value(),
            p.owner,
            toString(p.state),
            p.reservation_id,
            p.reason,
            p.auto_update ? "true" : "false",
            std::to_string(toEpochMs(p.created)),
            std::to_string(toEpochMs(p.updated)),
            p.payload_json};
  }

  Status readProposals(PGresult* r, std::vector<ProposalRecord>& out) const {
    for (int i = 0; i < PQntuples(r); ++i) {
      ProposalRecord p;
      p.id = ProposalId(PQgetvalue(r, i, 0));
      p.job = JobKey(PQgetvalue(r, i, 1));
      p.owner = PQgetvalue(r, i, 2);
      auto state = parseProposalState(PQgetvalue(r, i, 3));
      if (!state) {
        return internalError("corrupt proposal state '" + std::string(PQgetvalue(r, i, 3)) +
                             "' in " + name_);
      }
      p.state = *state;
      p.reservation_id = PQgetvalue(r, i, 4);
      p.reason = PQgetvalue(r, i, 5);
      p.auto_update = std::string(PQgetvalue(r, i, 6)) == "t";
      MORPHEUS_ASSIGN_OR_RETURN(int64_t created, int64At(r, i, 7));
      MORPHEUS_ASSIGN_OR_RETURN(int64_t updated, int64At(r, i, 8));
      p.created = fromEpochMs(created);
      p.updated = fromEpochMs(updated);
      p.payload_json = PQgetvalue(r, i, 9);
      out.push_back(std::move(p));
    }
    return Status::ok();
  }

  Status readEvents(PGresult* r, std::vector<FileEvent>& out) const {
    for (int i = 0; i < PQntuples(r); ++i) {
      FileEvent e;
      e.job = JobKey(PQgetvalue(r, i, 0));
      e.run = RunId(PQgetvalue(r, i, 1));
      e.path = PQgetvalue(r, i, 2);
      auto kind = parseFileAccess(PQgetvalue(r, i, 3));
      if (!kind) {
        return internalError("corrupt event kind '" + std::string(PQgetvalue(r, i, 3)) + "' in " +
                             name_);
      }
      e.kind = *kind;
      MORPHEUS_ASSIGN_OR_RETURN(int64_t t, int64At(r, i, 4));
      e.time = fromEpochMs(t);
      out.push_back(std::move(e));
    }
    return Status::ok();
  }

  // Applies the migrations after the stored version up to `target`, all in
  // one transaction; refuses a database newer than this code.
  Status migrate(int target) {
    MutexLock lk(mu_);
    return inTransaction([&]() REQUIRES(mu_) -> Status {
      MORPHEUS_RETURN_IF_ERROR(exec("SELECT pg_advisory_xact_lock($1)",
                                    {std::to_string(kMigrationLockKey)}, "migration lock")
                                   .status());
      MORPHEUS_RETURN_IF_ERROR(
          command("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL, "
                  "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                  "create schema_version"));
      MORPHEUS_ASSIGN_OR_RETURN(
          PgResult r,
          exec("SELECT COALESCE(MAX(version), 0) FROM schema_version", {}, "schema version"));
      MORPHEUS_ASSIGN_OR_RETURN(int64_t version, int64At(r.get(), 0, 0));
      if (version > kProvenanceSchemaVersion) {
        return infeasible("provenance store " + name_ + " has schema version " +
                          std::to_string(version) + ", newer than this code (" +
                          std::to_string(kProvenanceSchemaVersion) + "); upgrade the binary");
      }
      for (int v = static_cast<int>(version) + 1; v <= target; ++v) {
        Status st = command(kMigrations[v - 1], "migration");
        if (!st.isOk()) return st.withContext("migration to schema version " + std::to_string(v));
        MORPHEUS_RETURN_IF_ERROR(exec("INSERT INTO schema_version(version) VALUES($1)",
                                      {std::to_string(v)}, "record schema version")
                                     .status());
      }
      schema_version_ = std::max(static_cast<int>(version), target);
      return Status::ok();
    });
  }

  // Constant after construction.
  const std::string name_;  // postgres://host:port/db (no credentials)

  Mutex mu_;
  PGconn* const conn_ GUARDED_BY(mu_);
  int schema_version_ = 0;  // written by open() only, before the store is shared
};

}  // namespace

Result<std::unique_ptr<ProvenanceStore>> openPostgresProvenanceStore(const std::string& conninfo,
                                                                     int target_version) {
  return PostgresProvenanceStore::open(conninfo, target_version);
}

}  // namespace morpheus::store
