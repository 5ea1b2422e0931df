// ProvenanceStore conformance tests: one typed suite run over every
// implementation against a real database (a SQLite file; a PostgreSQL server
// started in a temporary directory for the suite).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"
#include "store/provenance/provenance_store.h"
#include "store/provenance/provenance_store_internal.h"

#ifdef MORPHEUS_HAVE_POSTGRES
#include <libpq-fe.h>
#endif

#include <sqlite3.h>

namespace morpheus::store {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Backends: how to get a fresh empty database and reach it with raw SQL (for
// checks and fault injection the interface does not expose).

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct SqliteBackend {
  static constexpr const char* kKind = "sqlite";

  static void startSuite() {
    dir() = (fs::temp_directory_path() / ("morpheus-prov-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir());
  }
  static void stopSuite() {
    std::error_code ec;
    fs::remove_all(dir(), ec);
  }
  // Empty when usable; otherwise why the cases are skipped.
  static std::string skipReason() { return ""; }
  static std::string setupError() { return ""; }

  static std::string freshLocation(const std::string& tag) {
    auto p = fs::path(dir()) / (tag + ".db");
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(p.string() + suffix);
    return p.string();
  }
  static Result<std::unique_ptr<ProvenanceStore>> openAtVersion(const std::string& loc, int v) {
    return openSqliteProvenanceStore(loc, v);
  }

  // Runs `sql` on its own connection; returns the first column of the first
  // row ("" if none). Fails the test on error.
  static std::string query(const std::string& loc, const std::string& sql) {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open(loc.c_str(), &db) != SQLITE_OK) {
      ADD_FAILURE() << "open " << loc << ": " << sqlite3_errmsg(db);
      sqlite3_close(db);
      return out;
    }
    char* err = nullptr;
    auto cb = [](void* o, int n, char** vals, char**) -> int {
      auto* s = static_cast<std::string*>(o);
      if (n > 0 && s->empty() && vals[0]) *s = vals[0];
      return 0;
    };
    if (sqlite3_exec(db, sql.c_str(), cb, &out, &err) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << (err ? err : "?");
      sqlite3_free(err);
    }
    sqlite3_close(db);
    return out;
  }
  static std::string indexCountSql(const std::string& name) {
    return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = '" + name + "'";
  }
  // Makes inserting an event on `path` fail inside the store's transaction.
  static std::string failingTriggerSql(const std::string& path) {
    return "CREATE TRIGGER fail_on_path BEFORE INSERT ON events WHEN NEW.path = '" + path +
           "' BEGIN SELECT RAISE(ABORT, 'simulated failure'); END";
  }

  static std::string& dir() {
    static std::string d;
    return d;
  }
};

#ifdef MORPHEUS_HAVE_POSTGRES

// A throwaway PostgreSQL server: initdb + pg_ctl in a temporary directory,
// listening on 127.0.0.1 at a free port. Run as user postgres when root.
class PgServer {
 public:
  // The newest /usr/lib/postgresql/<major>/bin with initdb and pg_ctl; ""
  // if none. MORPHEUS_TEST_PG_BINDIR overrides the search (to test the skip).
  static std::string findBinDir() {
    if (const char* dir = std::getenv("MORPHEUS_TEST_PG_BINDIR")) {
      return fs::exists(fs::path(dir) / "initdb") && fs::exists(fs::path(dir) / "pg_ctl") ? dir
                                                                                          : "";
    }
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
      fs::path bin = e.path() / "bin";
      if (fs::exists(bin / "initdb") && fs::exists(bin / "pg_ctl")) found.push_back(bin);
    }
    if (found.empty()) return "";
    // Highest major version (numeric, so 15 beats 9).
    std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
      return std::stoi(a.parent_path().filename().string()) <
             std::stoi(b.parent_path().filename().string());
    });
    return found.back().string();
  }

  // Returns "" on success, else what failed (with the tool's log).
  std::string start() {
    bindir_ = findBinDir();
    if (bindir_.empty()) return "";
    char tmpl[] = "/tmp/morpheus-pg-XXXXXX";
    if (!::mkdtemp(tmpl)) return "mkdtemp failed";
    dir_ = tmpl;
    if (::geteuid() == 0) {
      struct passwd* pw = ::getpwnam("postgres");
      if (!pw) return "running as root but there is no 'postgres' user to run the server";
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) return "chown of " + dir_ + " failed";
    }
    std::string data = dir_ + "/data";
    if (run({bindir_ + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
             "--no-locale", "--no-sync"},
            dir_ + "/initdb.log") != 0) {
      return "initdb failed:\n" + slurp(dir_ + "/initdb.log");
    }
    // The port is free when probed (below the ephemeral range, so no outgoing
    // connection takes it); another test could still take it before the
    // server binds, so try a few, each on a new port.
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = morpheus::testing::freeLoopbackPort();
      std::string opts = "-c listen_addresses=127.0.0.1 -c port=" + std::to_string(port_) +
                         " -c unix_socket_directories=" + dir_ + " -c fsync=off";
      if (run({bindir_ + "/pg_ctl", "-D", data, "-l", dir_ + "/server.log", "-w", "-t", "60", "-o",
               opts, "start"},
              dir_ + "/pg_ctl.log") == 0) {
        running_ = true;
        return "";
      }
    }
    return "pg_ctl start failed:\n" + slurp(dir_ + "/pg_ctl.log") + slurp(dir_ + "/server.log");
  }

  void stop() {
    if (running_) {
      run({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"},
          dir_ + "/pg_ctl.log");
      running_ = false;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  bool binariesFound() const { return !bindir_.empty(); }
  std::string conninfo(const std::string& db) const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=" + db +
           " user=postgres connect_timeout=10";
  }

 private:
  // Runs argv (as postgres when root) with output appended to `log`; exit code.
  int run(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<std::string> full;
    if (::geteuid() == 0) full = {"/usr/sbin/runuser", "-u", "postgres", "--"};
    full.insert(full.end(), argv.begin(), argv.end());
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      if (::chdir(dir_.c_str()) != 0) _exit(126);
      std::vector<char*> args;
      for (auto& s : full) args.push_back(s.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string bindir_;
  std::string dir_;
  int port_ = 0;
  bool running_ = false;
};

struct PostgresBackend {
  static constexpr const char* kKind = "postgres";

  static void startSuite() {
    server() = std::make_unique<PgServer>();
    error() = server()->start();
  }
  static void stopSuite() {
    if (server()) server()->stop();
    server().reset();
  }
  static std::string skipReason() {
    return server()->binariesFound()
               ? ""
               : "PostgreSQL server binaries not found (install postgresql); skipping";
  }
  static std::string setupError() { return error(); }

  // A new database per test.
  static std::string freshLocation(const std::string& tag) {
    static int n = 0;
    std::string db = "t" + std::to_string(++n) + "_" + tag;
    std::transform(db.begin(), db.end(), db.begin(), [](unsigned char c) {
      return std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '_';
    });
    query(server()->conninfo("postgres"), "CREATE DATABASE " + db);
    return server()->conninfo(db);
  }
  static Result<std::unique_ptr<ProvenanceStore>> openAtVersion(const std::string& loc, int v) {
    return openPostgresProvenanceStore(loc, v);
  }

  static std::string query(const std::string& loc, const std::string& sql) {
    PGconn* c = PQconnectdb(loc.c_str());
    std::string out;
    if (PQstatus(c) != CONNECTION_OK) {
      ADD_FAILURE() << "connect " << loc << ": " << PQerrorMessage(c);
      PQfinish(c);
      return out;
    }
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
      ADD_FAILURE() << sql << ": " << PQerrorMessage(c);
    } else if (PQntuples(r) > 0 && PQnfields(r) > 0) {
      out = PQgetvalue(r, 0, 0);
    }
    PQclear(r);
    PQfinish(c);
    return out;
  }
  static std::string indexCountSql(const std::string& name) {
    return "SELECT COUNT(*) FROM pg_indexes WHERE indexname = '" + name + "'";
  }
  static std::string failingTriggerSql(const std::string& path) {
    return "CREATE FUNCTION fail_on_path() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.path = '" +
           path +
           "' THEN RAISE EXCEPTION 'simulated failure'; END IF; RETURN NEW; END $$; "
           "CREATE TRIGGER fail_on_path BEFORE INSERT ON events FOR EACH ROW "
           "EXECUTE FUNCTION fail_on_path()";
  }
  // Ends every other session on the store's database (the store's connection).
  static void killOtherConnections(const std::string& loc) {
    query(loc,
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
          "current_database() AND pid <> pg_backend_pid()");
  }

  static std::unique_ptr<PgServer>& server() {
    static std::unique_ptr<PgServer> s;
    return s;
  }
  static std::string& error() {
    static std::string e;
    return e;
  }
};

#else  // !MORPHEUS_HAVE_POSTGRES

struct PostgresBackend : SqliteBackend {
  static constexpr const char* kKind = "postgres";
  static std::string skipReason() { return "built without libpq (install libpq-dev); skipping"; }
};

#endif

// ---------------------------------------------------------------------------
// Sample records.

TimePoint at(int64_t seconds) { return fromEpochMs(1'700'000'000'000 + seconds * 1000); }

RunRecord makeRun(const std::string& job, const std::string& id, int64_t submit_s,
                  std::vector<double> skyline = {1, 2.5, 0.1, 3e-7, 12345.678}) {
  RunRecord r;
  r.job = JobKey(job);
  r.run = RunId(id);
  r.user = "alice";
  r.submit = at(submit_s);
  r.start = at(submit_s + 5);
  r.end = at(submit_s + 5 + 60 * static_cast<int64_t>(skyline.size()));
  r.step = Millis(60000);
  r.skyline = std::move(skyline);
  r.container = Resource(4096, 2);
  r.container.setExtended("gpu", 1);
  return r;
}

FileEvent makeEvent(const std::string& job, const std::string& run, const std::string& path,
                    FileAccess kind, int64_t t) {
  return FileEvent{JobKey(job), RunId(run), path, kind, at(t)};
}

ProposalRecord makeProposal(const std::string& id, const std::string& job, int64_t created_s) {
  ProposalRecord p;
  p.id = ProposalId(id);
  p.job = JobKey(job);
  p.owner = "alice";
  p.created = at(created_s);
  p.updated = at(created_s);
  p.payload_json = R"({"deadline":"09:00","note":"it's \"quoted\" \\ é"})";
  return p;
}

// ---------------------------------------------------------------------------
// The suite.

template <typename B>
class ProvenanceStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { B::startSuite(); }
  static void TearDownTestSuite() { B::stopSuite(); }

  void SetUp() override {
    if (std::string why = B::skipReason(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(B::setupError(), "") << "could not start the " << B::kKind << " backend";
    location_ = B::freshLocation(::testing::UnitTest::GetInstance()->current_test_info()->name());
    reopen();
  }

  void reopen() {
    store_.reset();
    auto s = openProvenanceStore(B::kKind, location_);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(s).value();
  }

  std::string query(const std::string& sql) { return B::query(location_, sql); }

  std::vector<RunRecord> runsOf(const std::string& job) {
    auto r = store_->runs(JobKey(job));
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : std::vector<RunRecord>{};
  }
  std::vector<FileEvent> eventsOf(const std::string& job) {
    auto r = store_->eventsOfJob(JobKey(job));
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : std::vector<FileEvent>{};
  }
  std::vector<JobKey> jobs() {
    auto r = store_->jobs();
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : std::vector<JobKey>{};
  }

  std::string location_;
  std::unique_ptr<ProvenanceStore> store_;
};

struct BackendNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteBackend> ? "Sqlite" : "Postgres";
  }
};

using Backends = ::testing::Types<SqliteBackend, PostgresBackend>;
TYPED_TEST_SUITE(ProvenanceStoreTest, Backends, BackendNames);

// Runs and events round-trip exactly (skyline samples, extended resources).
TYPED_TEST(ProvenanceStoreTest, IngestRoundTripsRecords) {
  RunRecord r = makeRun("etl/daily", "r1", 0);
  r.user = "o'brien";
  FileEvent e = makeEvent("etl/daily", "r1", "/data/in", FileAccess::kRead, 10);
  FileEvent w = makeEvent("etl/daily", "r1", "/data/out", FileAccess::kWrite, 20);
  ASSERT_TRUE(this->store_->ingest({{r}, {w, e}}).isOk());
  EXPECT_EQ(this->runsOf("etl/daily"), std::vector<RunRecord>{r});
  EXPECT_EQ(this->eventsOf("etl/daily"), (std::vector<FileEvent>{e, w}));
  EXPECT_EQ(this->store_->schemaVersion(), kProvenanceSchemaVersion);
  EXPECT_NE(this->store_->name().find(TypeParam::kKind), std::string::npos);
}

// An invalid record anywhere in a batch is refused naming its field, and the
// valid records before it are not stored either.
TYPED_TEST(ProvenanceStoreTest, InvalidRecordRejectsWholeBatch) {
  struct Case {
    IngestBatch batch;
    std::string field;
  };
  std::vector<Case> cases;
  {
    IngestBatch b{{makeRun("j", "r1", 0), makeRun("j", "r2", 100), makeRun("", "r3", 200)}, {}};
    cases.push_back({b, "runs[2].job"});
  }
  {
    IngestBatch b{{makeRun("j", "", 0)}, {}};
    cases.push_back({b, "runs[0].run"});
  }
  {
    RunRecord bad = makeRun("j", "r2", 0);
    bad.end = bad.start - Millis(1);
    cases.push_back({IngestBatch{{makeRun("j", "r1", 0), bad}, {}}, "runs[1].end"});
  }
  {
    RunRecord bad = makeRun("j", "r1", 0);
    bad.start = bad.submit - Millis(1);
    cases.push_back({IngestBatch{{bad}, {}}, "runs[0].start"});
  }
  {
    RunRecord bad = makeRun("j", "r1", 0);
    bad.step = Millis(0);
    cases.push_back({IngestBatch{{bad}, {}}, "runs[0].step"});
  }
  {
    RunRecord bad = makeRun("j", "r1", 0);
    bad.skyline[1] = std::nan("");
    cases.push_back({IngestBatch{{bad}, {}}, "runs[0].skyline[1]"});
  }
  {
    RunRecord bad = makeRun("j", "r1", 0);
    bad.container.setVcores(-1);
    cases.push_back({IngestBatch{{bad}, {}}, "runs[0].container"});
  }
  {
    RunRecord bad = makeRun("j", "r1", 0);
    bad.container.setExtended("a,b", 1);
    cases.push_back({IngestBatch{{bad}, {}}, "runs[0].container"});
  }
  {
    IngestBatch b{{makeRun("j", "r1", 0)},
                  {makeEvent("j", "r1", "/a", FileAccess::kRead, 1),
                   makeEvent("j", "r1", "", FileAccess::kRead, 2)}};
    cases.push_back({b, "events[1].path"});
  }
  {
    IngestBatch b{{}, {makeEvent("", "r1", "/a", FileAccess::kRead, 1)}};
    cases.push_back({b, "events[0].job"});
  }
  for (const auto& c : cases) {
    Status st = this->store_->ingest(c.batch);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.field << ": " << st.toString();
    EXPECT_NE(st.message().find(c.field), std::string::npos) << st.toString();
  }
  EXPECT_TRUE(this->jobs().empty());
  EXPECT_TRUE(this->eventsOf("j").empty());
}

// A failure inside the database mid-batch (a trigger aborting the last
// insert) rolls back the whole batch, including replaced runs.
TYPED_TEST(ProvenanceStoreTest, DatabaseFailureMidBatchLeavesNothing) {
  RunRecord original = makeRun("j", "r1", 0, {1, 1});
  ASSERT_TRUE(this->store_->ingestRuns({original}).isOk());
  this->query(TypeParam::failingTriggerSql("/boom"));

  RunRecord replaced = makeRun("j", "r1", 0, {9, 9, 9});
  IngestBatch batch{{replaced, makeRun("j", "r2", 100), makeRun("k", "r1", 5)},
                    {makeEvent("j", "r1", "/ok", FileAccess::kRead, 1),
                     makeEvent("j", "r2", "/boom", FileAccess::kWrite, 2)}};
  Status st = this->store_->ingest(batch);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.code(), StatusCode::kInvalidArgument) << st.toString();

  EXPECT_EQ(this->runsOf("j"), std::vector<RunRecord>{original});
  EXPECT_EQ(this->jobs(), std::vector<JobKey>{JobKey("j")});
  EXPECT_TRUE(this->eventsOf("j").empty());
  // The store is still usable after the rollback.
  batch.events.pop_back();
  ASSERT_TRUE(this->store_->ingest(batch).isOk());
  EXPECT_EQ(this->runsOf("j").size(), 2u);
}

// Re-ingesting the same batch changes nothing; a run with an existing
// (job, run) replaces it; identical events (also within one batch) are kept once.
TYPED_TEST(ProvenanceStoreTest, IngestIsIdempotent) {
  FileEvent e1 = makeEvent("j", "r1", "/a", FileAccess::kRead, 1);
  FileEvent e2 = makeEvent("j", "r1", "/a", FileAccess::kWrite, 1);  // differs in kind
  IngestBatch batch{{makeRun("j", "r1", 0), makeRun("j", "r2", 100)}, {e1, e2, e1}};
  ASSERT_TRUE(this->store_->ingest(batch).isOk());
  ASSERT_TRUE(this->store_->ingest(batch).isOk());
  EXPECT_EQ(this->runsOf("j"), batch.runs);
  auto events = this->eventsOf("j");
  EXPECT_EQ(events.size(), 2u);
  EXPECT_EQ(std::count(events.begin(), events.end(), e1), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), e2), 1);

  RunRecord updated = makeRun("j", "r1", 0, {7, 8});
  updated.container = Resource(1024, 1);
  ASSERT_TRUE(this->store_->ingestRuns({updated}).isOk());
  EXPECT_EQ(this->runsOf("j"), (std::vector<RunRecord>{updated, batch.runs[1]}));
}

// A job's owner is recorded with its first run (or the claimant of its first
// events) and never changes: another user's run, in a later batch or later in
// the same batch, and a claimant's events of another's job are refused
// naming the field, and nothing of the batch is stored.
TYPED_TEST(ProvenanceStoreTest, JobOwnerIsEstablishedAndKept) {
  ASSERT_TRUE(this->store_->ingestRuns({makeRun("etl", "r1", 0)}).isOk());
  EXPECT_EQ(*this->store_->jobOwner(JobKey("etl")), std::optional<std::string>("alice"));
  EXPECT_EQ(*this->store_->jobOwner(JobKey("nobody")), std::nullopt);

  RunRecord bobs = makeRun("etl", "r2", 100);
  bobs.user = "bob";
  Status st = this->store_->ingestRuns({bobs});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("runs[0].user: job etl belongs to alice, not to bob"),
            std::string::npos)
      << st.toString();
  RunRecord first = makeRun("fresh", "f1", 0);
  RunRecord other = makeRun("fresh", "f2", 100);
  other.user = "bob";
  st = this->store_->ingestRuns({first, other});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << "the batch's first run owns the job";
  EXPECT_EQ(*this->store_->jobOwner(JobKey("fresh")), std::nullopt) << "nothing stored";
  EXPECT_TRUE(this->runsOf("fresh").empty());

  IngestBatch claimed{{}, {makeEvent("report", "", "/out", FileAccess::kRead, 5)}, "bob"};
  ASSERT_TRUE(this->store_->ingest(claimed).isOk());
  EXPECT_EQ(*this->store_->jobOwner(JobKey("report")), std::optional<std::string>("bob"));
  IngestBatch into_hers{{}, {makeEvent("etl", "", "/out", FileAccess::kRead, 6)}, "bob"};
  st = this->store_->ingest(into_hers);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("events[0].job"), std::string::npos) << st.toString();
  EXPECT_TRUE(this->eventsOf("etl").empty());
  // Without a claimant (an admin's import) events claim nothing.
  ASSERT_TRUE(
      this->store_->ingestEvents({makeEvent("adhoc-reader", "", "/x", FileAccess::kRead, 7)})
          .isOk());
  EXPECT_EQ(*this->store_->jobOwner(JobKey("adhoc-reader")), std::nullopt);
}

// jobs() is sorted bytewise; runs() by submit time then run id; only runs of
// that job.
TYPED_TEST(ProvenanceStoreTest, JobsAndRunsAreSorted) {
  ASSERT_TRUE(
      this->store_
          ->ingestRuns({makeRun("b", "r1", 0), makeRun("a/x", "r1", 0), makeRun("A", "r1", 0),
                        makeRun("a", "r9", 300), makeRun("a", "r2", 100), makeRun("a", "r10", 100),
                        makeRun("a", "r1", 200)})
          .isOk());
  EXPECT_EQ(this->jobs(),
            (std::vector<JobKey>{JobKey("A"), JobKey("a"), JobKey("a/x"), JobKey("b")}));
  std::vector<std::string> ids;
  for (const auto& r : this->runsOf("a")) ids.push_back(r.run.value());
  EXPECT_EQ(ids, (std::vector<std::string>{"r10", "r2", "r1", "r9"}));
  EXPECT_TRUE(this->runsOf("nope").empty());
}

// eventsOfJob: one job's events by time. eventsOnPaths: any job's events on
// the given paths by time; an empty list gives nothing.
TYPED_TEST(ProvenanceStoreTest, EventsByJobAndByPath) {
  FileEvent producerWrite = makeEvent("producer", "p1", "/shared/x", FileAccess::kWrite, 50);
  FileEvent producerRead = makeEvent("producer", "p1", "/raw", FileAccess::kRead, 10);
  FileEvent consumerRead = makeEvent("consumer", "c1", "/shared/x", FileAccess::kRead, 70);
  FileEvent consumerEarly = makeEvent("consumer", "c0", "/shared/x", FileAccess::kRead, 5);
  FileEvent other = makeEvent("consumer", "c1", "/shared/y", FileAccess::kRead, 60);
  ASSERT_TRUE(
      this->store_->ingestEvents({consumerRead, producerWrite, other, producerRead, consumerEarly})
          .isOk());
  EXPECT_EQ(this->eventsOf("producer"), (std::vector<FileEvent>{producerRead, producerWrite}));
  EXPECT_EQ(this->eventsOf("consumer"),
            (std::vector<FileEvent>{consumerEarly, other, consumerRead}));

  auto onX = this->store_->eventsOnPaths({"/shared/x", "/missing", "/shared/x"});
  ASSERT_TRUE(onX.isOk()) << onX.status().toString();
  EXPECT_EQ(*onX, (std::vector<FileEvent>{consumerEarly, producerWrite, consumerRead}));
  auto onBoth = this->store_->eventsOnPaths({"/shared/y", "/raw"});
  ASSERT_TRUE(onBoth.isOk());
  EXPECT_EQ(*onBoth, (std::vector<FileEvent>{producerRead, other}));
  auto none = this->store_->eventsOnPaths({});
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
}

// Insert, ALREADY_EXISTS on a taken id, get (and nullopt for an unknown id),
// list sorted by created time then id, filtered by state.
TYPED_TEST(ProvenanceStoreTest, ProposalsInsertGetList) {
  ProposalRecord a = makeProposal("p-b", "j1", 100);
  ProposalRecord b = makeProposal("p-a", "j2", 100);
  ProposalRecord c = makeProposal("p-c", "j1", 50);
  c.state = ProposalState::kAccepted;
  c.reservation_id = "reservation_1_0001";
  c.auto_update = true;
  c.updated = at(80);
  for (const auto& p : {a, b, c}) ASSERT_TRUE(this->store_->insertProposal(p).isOk());

  ProposalRecord dup = makeProposal("p-a", "other", 1);
  EXPECT_EQ(this->store_->insertProposal(dup).code(), StatusCode::kAlreadyExists);
  auto got = this->store_->getProposal(ProposalId("p-a"));
  ASSERT_TRUE(got.isOk());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, b);
  auto missing = this->store_->getProposal(ProposalId("p-zz"));
  ASSERT_TRUE(missing.isOk());
  EXPECT_FALSE(missing->has_value());

  auto all = this->store_->listProposals(std::nullopt);
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(*all, (std::vector<ProposalRecord>{c, b, a}));
  auto pending = this->store_->listProposals(ProposalState::kPending);
  ASSERT_TRUE(pending.isOk());
  EXPECT_EQ(*pending, (std::vector<ProposalRecord>{b, a}));
  auto rejected = this->store_->listProposals(ProposalState::kRejected);
  ASSERT_TRUE(rejected.isOk());
  EXPECT_TRUE(rejected->empty());

  ProposalRecord noId = makeProposal("", "j", 1);
  Status st = this->store_->insertProposal(noId);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("proposal.id"), std::string::npos) << st.toString();
  EXPECT_EQ(this->store_->listProposals(std::nullopt)->size(), 3u);
}

// updateProposal is a compare-and-set on the state: FAILED_PRECONDITION (and
// no change) on a wrong expected state, NOT_FOUND on an unknown id.
TYPED_TEST(ProvenanceStoreTest, UpdateProposalComparesState) {
  ProposalRecord p = makeProposal("p1", "j", 10);
  ASSERT_TRUE(this->store_->insertProposal(p).isOk());

  ProposalRecord accepted = p;
  accepted.state = ProposalState::kAccepted;
  accepted.reservation_id = "reservation_7";
  accepted.updated = at(20);
  accepted.payload_json = "{}";
  Status wrong = this->store_->updateProposal(accepted, ProposalState::kRejected);
  EXPECT_EQ(wrong.code(), StatusCode::kInfeasible) << wrong.toString();
  EXPECT_EQ(**this->store_->getProposal(p.id), p);

  ASSERT_TRUE(this->store_->updateProposal(accepted, ProposalState::kPending).isOk());
  EXPECT_EQ(**this->store_->getProposal(p.id), accepted);
  // A second writer that read the same pending state loses.
  ProposalRecord rejected = p;
  rejected.state = ProposalState::kRejected;
  rejected.reason = "too early";
  EXPECT_EQ(this->store_->updateProposal(rejected, ProposalState::kPending).code(),
            StatusCode::kInfeasible);
  EXPECT_EQ(**this->store_->getProposal(p.id), accepted);

  ProposalRecord ghost = makeProposal("ghost", "j", 10);
  EXPECT_EQ(this->store_->updateProposal(ghost, ProposalState::kPending).code(),
            StatusCode::kNotFound);
  EXPECT_FALSE(this->store_->getProposal(ghost.id)->has_value());
}

// The reject fingerprint is per job, nullopt until set, replaced when set again.
TYPED_TEST(ProvenanceStoreTest, RejectFingerprints) {
  auto none = this->store_->rejectFingerprint(JobKey("j"));
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(this->store_->setRejectFingerprint(JobKey("j"), "fp-1").isOk());
  ASSERT_TRUE(this->store_->setRejectFingerprint(JobKey("k"), "fp-k").isOk());
  ASSERT_TRUE(this->store_->setRejectFingerprint(JobKey("j"), "fp-2").isOk());
  EXPECT_EQ(**this->store_->rejectFingerprint(JobKey("j")), "fp-2");
  EXPECT_EQ(**this->store_->rejectFingerprint(JobKey("k")), "fp-k");
  EXPECT_EQ(this->store_->setRejectFingerprint(JobKey(""), "x").code(),
            StatusCode::kInvalidArgument);
}

// Everything written is there after closing and reopening the store.
TYPED_TEST(ProvenanceStoreTest, PersistsAcrossReopen) {
  IngestBatch batch{{makeRun("j", "r1", 0), makeRun("k", "r1", 10)},
                    {makeEvent("j", "r1", "/a", FileAccess::kWrite, 3)}};
  ProposalRecord p = makeProposal("p1", "j", 10);
  ASSERT_TRUE(this->store_->ingest(batch).isOk());
  ASSERT_TRUE(this->store_->insertProposal(p).isOk());
  ASSERT_TRUE(this->store_->setRejectFingerprint(JobKey("k"), "fp").isOk());
  this->reopen();
  EXPECT_EQ(this->jobs(), (std::vector<JobKey>{JobKey("j"), JobKey("k")}));
  EXPECT_EQ(this->runsOf("j"), std::vector<RunRecord>{batch.runs[0]});
  EXPECT_EQ(this->eventsOf("j"), batch.events);
  EXPECT_EQ(**this->store_->getProposal(p.id), p);
  EXPECT_EQ(**this->store_->rejectFingerprint(JobKey("k")), "fp");
}

// A batch is durable once ingest returns: a process SIGKILLed right after
// loses nothing.
TYPED_TEST(ProvenanceStoreTest, IngestIsDurableAcrossCrash) {
  this->store_.reset();
  pid_t pid = ::fork();
  if (pid == 0) {
    auto s = openProvenanceStore(TypeParam::kKind, this->location_);
    if (!s.isOk() || !(*s)->ingestRuns({makeRun("j", "r1", 0), makeRun("j", "r2", 60)}).isOk()) {
      _exit(1);
    }
    ::kill(::getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child must die by SIGKILL after ingesting";
  this->reopen();
  EXPECT_EQ(this->runsOf("j").size(), 2u);
}

// A database at schema version 1 is migrated to the current version on open,
// keeping its data; a database newer than the code is refused.
TYPED_TEST(ProvenanceStoreTest, MigratesOldSchemaAndRefusesNewer) {
  std::string loc = TypeParam::freshLocation("v1");
  RunRecord r = makeRun("j", "r1", 0);
  FileEvent e = makeEvent("j", "r1", "/a", FileAccess::kRead, 1);
  ProposalRecord p = makeProposal("p1", "j", 1);
  {
    auto old = TypeParam::openAtVersion(loc, 1);
    ASSERT_TRUE(old.isOk()) << old.status().toString();
    EXPECT_EQ((*old)->schemaVersion(), 1);
    // The run and event as code of schema version 1 wrote them (no status column).
    TypeParam::query(loc,
                     "INSERT INTO runs(job, run, owner, submit_ms, start_ms, end_ms, step_ms, "
                     "skyline, container) VALUES('j', 'r1', 'alice', " +
                         std::to_string(toEpochMs(r.submit)) + ", " +
                         std::to_string(toEpochMs(r.start)) + ", " +
                         std::to_string(toEpochMs(r.end)) + ", 60000, '" +
                         encodeSkyline(r.skyline) + "', '" + encodeResource(r.container) + "')");
    TypeParam::query(loc,
                     "INSERT INTO events(job, run, path, kind, time_ms) VALUES('j', 'r1', "
                     "'/a', 'read', " +
                         std::to_string(toEpochMs(e.time)) + ")");
    ASSERT_TRUE((*old)->insertProposal(p).isOk());
  }
  EXPECT_EQ(TypeParam::query(loc, "SELECT MAX(version) FROM schema_version"), "1");
  EXPECT_EQ(TypeParam::query(loc, TypeParam::indexCountSql("events_by_path")), "0");

  auto s = openProvenanceStore(TypeParam::kKind, loc);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ((*s)->schemaVersion(), kProvenanceSchemaVersion);
  EXPECT_EQ(TypeParam::query(loc, "SELECT MAX(version) FROM schema_version"),
            std::to_string(kProvenanceSchemaVersion));
  EXPECT_EQ(TypeParam::query(loc, TypeParam::indexCountSql("events_by_path")), "1");
  EXPECT_EQ(*(*s)->runs(JobKey("j")), std::vector<RunRecord>{r});
  EXPECT_EQ(*(*s)->eventsOnPaths({"/a"}), std::vector<FileEvent>{e});
  EXPECT_EQ(**(*s)->getProposal(p.id), p);
  EXPECT_EQ(*(*s)->jobOwner(JobKey("j")), std::optional<std::string>("alice"))
      << "an existing job's owner is its earliest run's user";
  s = Status(StatusCode::kInternal, "closed");

  TypeParam::query(loc, "INSERT INTO schema_version(version) VALUES(" +
                            std::to_string(kProvenanceSchemaVersion + 1) + ")");
  auto newer = openProvenanceStore(TypeParam::kKind, loc);
  ASSERT_FALSE(newer.isOk());
  EXPECT_EQ(newer.status().code(), StatusCode::kInfeasible) << newer.status().toString();
  EXPECT_NE(newer.status().message().find(std::to_string(kProvenanceSchemaVersion + 1)),
            std::string::npos)
      << newer.status().toString();
}

// A run's final status is stored and read back (failed and killed runs are
// kept, not dropped), and a re-ingested run replaces its status.
TYPED_TEST(ProvenanceStoreTest, RunStatusRoundTrips) {
  RunRecord ok = makeRun("j", "r1", 0);
  RunRecord failed = makeRun("j", "r2", 100);
  failed.status = RunStatus::kFailed;
  RunRecord killed = makeRun("j", "r3", 200);
  killed.status = RunStatus::kKilled;
  ASSERT_TRUE(this->store_->ingestRuns({ok, failed, killed}).isOk());
  EXPECT_EQ(this->runsOf("j"), (std::vector<RunRecord>{ok, failed, killed}));
  failed.status = RunStatus::kSucceeded;
  ASSERT_TRUE(this->store_->ingestRuns({failed}).isOk());
  EXPECT_EQ(this->runsOf("j")[1].status, RunStatus::kSucceeded);
  EXPECT_EQ(this->query("SELECT status FROM runs WHERE run = 'r3'"), "killed");
}

// A database of schema version 2 (before run statuses) still opens; its runs
// read back as succeeded and new runs carry their status.
TYPED_TEST(ProvenanceStoreTest, DatabaseWithoutRunStatusOpensAsSucceeded) {
  std::string loc = TypeParam::freshLocation("v2");
  RunRecord r = makeRun("j", "r1", 0);
  {
    auto old = TypeParam::openAtVersion(loc, 2);
    ASSERT_TRUE(old.isOk()) << old.status().toString();
  }
  TypeParam::query(loc,
                   "INSERT INTO runs(job, run, owner, submit_ms, start_ms, end_ms, step_ms, "
                   "skyline, container) VALUES('j', 'r1', 'alice', " +
                       std::to_string(toEpochMs(r.submit)) + ", " +
                       std::to_string(toEpochMs(r.start)) + ", " +
                       std::to_string(toEpochMs(r.end)) + ", 60000, '" + encodeSkyline(r.skyline) +
                       "', '" + encodeResource(r.container) + "')");
  auto s = openProvenanceStore(TypeParam::kKind, loc);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(*(*s)->runs(JobKey("j")), std::vector<RunRecord>{r});
  RunRecord k = makeRun("j", "r2", 100);
  k.status = RunStatus::kKilled;
  ASSERT_TRUE((*s)->ingestRuns({k}).isOk());
  EXPECT_EQ((*(*s)->runs(JobKey("j")))[1].status, RunStatus::kKilled);
}

// Calls from several threads at once all land (the store is thread-safe).
TYPED_TEST(ProvenanceStoreTest, ConcurrentCallsAllLand) {
  constexpr int kThreads = 4, kPerThread = 15;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string run = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (!this->store_
                 ->ingest(
                     {{makeRun("j", run, i)}, {makeEvent("j", run, "/p", FileAccess::kRead, i)}})
                 .isOk() ||
            !this->store_->insertProposal(makeProposal("p-" + run, "j", i)).isOk() ||
            !this->store_->runs(JobKey("j")).isOk()) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(this->runsOf("j").size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(this->eventsOf("j").size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(this->store_->listProposals(std::nullopt)->size(),
            static_cast<size_t>(kThreads * kPerThread));
}

#ifdef MORPHEUS_HAVE_POSTGRES
// PostgreSQL-only cases, on a server of their own.
class PostgresProvenanceStoreTest : public ProvenanceStoreTest<PostgresBackend> {};

// The store survives its connection being dropped by the server: reads and
// writes reconnect once and succeed.
TEST_F(PostgresProvenanceStoreTest, ReconnectsAfterConnectionLoss) {
  ASSERT_TRUE(store_->ingestRuns({makeRun("j", "r1", 0)}).isOk());
  PostgresBackend::killOtherConnections(location_);
  auto runs = store_->runs(JobKey("j"));
  ASSERT_TRUE(runs.isOk()) << runs.status().toString();
  EXPECT_EQ(runs->size(), 1u);
  PostgresBackend::killOtherConnections(location_);
  ASSERT_TRUE(store_->ingestRuns({makeRun("j", "r2", 60)}).isOk());
  EXPECT_EQ(runsOf("j").size(), 2u);
}
#endif

// ---------------------------------------------------------------------------
// Factory.

// An unknown kind is refused naming the config field.
TEST(ProvenanceStoreFactoryTest, UnknownKindIsInvalidArgument) {
  auto s = openProvenanceStore("mongo", "x");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("provenance-store.kind"), std::string::npos);
  auto empty = openProvenanceStore("sqlite", "");
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

// Proposal states have stable names (logs, CLI) that parse back.
TEST(ProvenanceStoreFactoryTest, ProposalStateNames) {
  EXPECT_STREQ(toString(ProposalState::kPending), "pending");
  EXPECT_STREQ(toString(ProposalState::kAccepted), "accepted");
  EXPECT_STREQ(toString(ProposalState::kRejected), "rejected");
  EXPECT_STREQ(toString(ProposalState::kSuperseded), "superseded");
  for (auto s : {ProposalState::kPending, ProposalState::kAccepted, ProposalState::kRejected,
                 ProposalState::kSuperseded}) {
    EXPECT_EQ(parseProposalState(toString(s)), s);
  }
  EXPECT_EQ(parseProposalState("bogus"), std::nullopt);
}

// Skylines survive the text encoding bit for bit.
TEST(ProvenanceStoreFactoryTest, SkylineEncodingRoundTrips) {
  std::vector<double> sky = {0, 1, 0.1, 1.0 / 3, 1e-300, 1e300, 123456789.125};
  auto back = decodeSkyline(encodeSkyline(sky));
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, sky);
  EXPECT_TRUE(decodeSkyline("")->empty());
  EXPECT_FALSE(decodeSkyline("1,,2").isOk());
  EXPECT_FALSE(decodeSkyline("1,x").isOk());
}

#ifdef MORPHEUS_HAVE_POSTGRES
// A server that cannot be reached is UNAVAILABLE with libpq's reason.
TEST(ProvenanceStoreFactoryTest, UnreachablePostgresIsUnavailable) {
  auto s = openProvenanceStore("postgres", "host=127.0.0.1 port=1 dbname=x connect_timeout=2");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().toString();
  auto bad = openProvenanceStore("postgres", "this is not a conninfo");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().toString();
  EXPECT_NE(bad.status().message().find("provenance-store.location"), std::string::npos);
}
#else
// Without libpq, "postgres" is refused saying so.
TEST(ProvenanceStoreFactoryTest, PostgresWithoutLibpqIsInvalidArgument) {
  auto s = openProvenanceStore("postgres", "host=127.0.0.1");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("libpq"), std::string::npos);
}
#endif

}  // namespace
}  // namespace morpheus::store
