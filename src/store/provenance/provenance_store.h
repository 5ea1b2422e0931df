// The inference service's provenance store (docs/design/inference.md, Morpheus §4): runs
// of recurring jobs with their skylines, file read/write events, and the SLO
// proposals owners sign off.
//
// Contract (every implementation passes tests/unit/store/provenance/provenance_store_test.cc):
// - Every mutating call is one transaction: all of it or nothing, durable when
//   it returns OK (a crash afterwards loses nothing).
// - ingest() is idempotent: a run with an existing (job, run) pair replaces the
//   stored one; an event identical in (job, run, path, kind, time) is stored once.
// - Every job has at most one owner, recorded durably with the first ingest
//   that names the job and never changed by ingest: the user of its first run
//   (in batch order), or, for a job its events name first, the batch's
//   `claimant` (none when empty). ingest() refuses a run whose user is not
//   its job's owner (PERMISSION_DENIED naming "runs[i].user" and both users)
//   and, with a claimant, an event of a job someone else owns
//   (PERMISSION_DENIED naming "events[i].job"); nothing is stored then.
//   Databases from before owners were recorded take each job's owner from
//   its earliest run (by submit time, then run id).
// - The schema is versioned; opening an older database migrates it forward in
//   one transaction; a database newer than the code is refused (FAILED_PRECONDITION).
// - Thread-safe: calls may come from several gRPC threads.
// - Input is validated before anything is written: INVALID_ARGUMENT naming the
//   field ("runs[2].job", "events[0].path", "proposal.id") and nothing stored.
//   Runs need a job, a run id, submit <= start <= end, step > 0, finite
//   non-negative skyline samples and a non-negative container; events need a
//   job and a path (the run id may be empty for events of runs not stored);
//   proposals an id and a job, created <= updated.
// - Orderings are bytewise on strings (as std::string compares), in every
//   implementation.
//
// Implementations, chosen by name: "sqlite" (default, `location` = database
// file, created if missing) and "postgres" (`location` = libpq conninfo).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::store {

// How a run ended (the application's final status). Only succeeded runs feed
// the skyline fit and the SLO statistics (Morpheus §4/§5 learn from runs that
// did their work); failed and killed runs are kept and shown, not fitted.
// Inline: the pure inference code (import, fit) uses it without linking a store.
enum class RunStatus { kSucceeded, kFailed, kKilled };
inline const char* toString(RunStatus s) {
  switch (s) {
    case RunStatus::kSucceeded:
      return "succeeded";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kKilled:
      return "killed";
  }
  return "unknown";
}
inline std::optional<RunStatus> parseRunStatus(std::string_view s) {
  for (RunStatus st : {RunStatus::kSucceeded, RunStatus::kFailed, RunStatus::kKilled}) {
    if (s == toString(st)) return st;
  }
  return std::nullopt;
}

// One finished run of a recurring job.
struct RunRecord {
  JobKey job;
  RunId run;
  std::string user;  // owner
  TimePoint submit;
  TimePoint start;
  TimePoint end;
  Millis step{60000};           // duration of one skyline sample
  std::vector<double> skyline;  // containers in use per step from `start`
  Resource container;           // size of one container
  RunStatus status = RunStatus::kSucceeded;

  bool operator==(const RunRecord&) const = default;
};

enum class FileAccess { kRead, kWrite };

// A run read or wrote a file at a time (ingress/egress marks for §4).
struct FileEvent {
  JobKey job;
  RunId run;
  std::string path;
  FileAccess kind = FileAccess::kRead;
  TimePoint time;

  bool operator==(const FileEvent&) const = default;
};

enum class ProposalState { kPending, kAccepted, kRejected, kSuperseded };
const char* toString(ProposalState s);

struct ProposalRecord {
  ProposalId id;
  JobKey job;
  std::string owner;
  ProposalState state = ProposalState::kPending;
  std::string reservation_id;  // set when accepted
  std::string reason;          // why rejected / superseded
  bool auto_update = false;    // the owner opted in to automatic updates
  TimePoint created;
  TimePoint updated;
  std::string payload_json;  // the proposal's content; opaque to the store

  bool operator==(const ProposalRecord&) const = default;
};

// A unit of ingest: stored all-or-nothing (one file import, one RPC).
struct IngestBatch {
  std::vector<RunRecord> runs;
  std::vector<FileEvent> events;
  // Who the events speak for ("" = nobody, e.g. an admin's import): jobs the
  // events name that have no owner yet become the claimant's, and events of
  // jobs someone else owns are refused.
  std::string claimant{};
};

class ProvenanceStore {
 public:
  virtual ~ProvenanceStore() = default;

  virtual Status ingest(const IngestBatch& batch) = 0;
  Status ingestRuns(const std::vector<RunRecord>& runs) { return ingest({runs, {}}); }
  Status ingestEvents(const std::vector<FileEvent>& events) { return ingest({{}, events}); }

  // Every job key that has at least one run, sorted.
  virtual Result<std::vector<JobKey>> jobs() = 0;
  // The job's owner (see the contract above); nullopt when it has none.
  virtual Result<std::optional<std::string>> jobOwner(const JobKey& job) = 0;
  // A job's runs, sorted by submit time (then run id).
  virtual Result<std::vector<RunRecord>> runs(const JobKey& job) = 0;
  // Events of one job's runs, sorted by time.
  virtual Result<std::vector<FileEvent>> eventsOfJob(const JobKey& job) = 0;
  // Events (of any job) on the given paths, sorted by time.
  virtual Result<std::vector<FileEvent>> eventsOnPaths(const std::vector<std::string>& paths) = 0;

  // ALREADY_EXISTS if the id is taken.
  virtual Status insertProposal(const ProposalRecord& p) = 0;
  virtual Result<std::optional<ProposalRecord>> getProposal(const ProposalId& id) = 0;
  // All proposals (of one state when given), sorted by created time then id.
  virtual Result<std::vector<ProposalRecord>> listProposals(std::optional<ProposalState> state) = 0;
  // Compare-and-set on the state: replaces the stored record (same id) only
  // if its current state is `expected`; FAILED_PRECONDITION otherwise,
  // NOT_FOUND if the id does not exist.
  virtual Status updateProposal(const ProposalRecord& p, ProposalState expected) = 0;

  // The history fingerprint a job's owner rejected (remembered until the
  // history changes materially); nullopt if none.
  virtual Status setRejectFingerprint(const JobKey& job, const std::string& fingerprint) = 0;
  virtual Result<std::optional<std::string>> rejectFingerprint(const JobKey& job) = 0;

  virtual int schemaVersion() = 0;
  virtual std::string name() const = 0;
};

// INVALID_ARGUMENT naming "provenance-store.kind" for an unknown kind;
// UNAVAILABLE for a server that cannot be reached, with the reason.
Result<std::unique_ptr<ProvenanceStore>> openProvenanceStore(const std::string& kind,
                                                             const std::string& location);

}  // namespace morpheus::store
