// The inference service's core (Morpheus §4, §5): ingests runs and file
// events into the provenance store, infers each periodic job's SLO (period,
// earliest start a, deadline d) and skyline, keeps proposals for owner
// sign-off, and submits accepted ones to the RM as recurring reservations.
//
// Thread-safety: internally locked (gRPC threads and the refit timer).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/token.h"
#include "inference/rm_client.h"
#include "inference/skyline_fit.h"
#include "inference/slo_inference.h"
#include "store/provenance_store.h"

namespace morpheus::inference {

// What a proposal says, stored as JSON in ProposalRecord::payload_json.
struct ProposalPayload {
  Millis period{0};
  Millis start_offset{0};     // a
  Millis deadline_offset{0};  // d
  Millis step{60000};
  std::vector<int64_t> skyline;
  Resource container;
  int64_t budget_container_ms = 0;
  double over_allocation = 0;
  double under_allocation = 0;
  double epsilon = 0;
  int runs_used = 0;
  bool problematic = false;
  bool is_update = false;
  std::string fingerprint;  // history the proposal was computed from
  std::string placement;    // the RM's placement or explanation
};

struct Proposal {
  store::ProposalRecord record;
  ProposalPayload payload;
};

struct NotActionable {
  JobKey job;
  std::string reason;
};

struct OverrideParams {
  std::optional<Millis> deadline_offset;
  std::optional<Millis> start_offset;
  std::optional<double> skyline_scale;
  std::optional<std::vector<int64_t>> skyline;
  std::optional<int64_t> budget_container_ms;
};

struct InferenceCoreOptions {
  Millis step{60000};
  double alpha = 0.5;
  double beta = 0.1;
  bool beta_relative = true;
  int64_t min_runs = 3;
  double budget_fraction = 0.2;
  double drift_threshold = 0.2;
  std::string queue = "default";
  int64_t history_runs = 30;  // most recent runs a skyline is fitted from
  SampleMode sample = SampleMode::kAverage;
  SloParams slo;
};

// What a proposal was computed from, compared across refits: a new proposal
// is made (and a rejection forgotten) only when it differs materially.
struct ProposalFingerprint {
  Millis period{0};
  Millis start_offset{0};
  Millis deadline_offset{0};
  double area = 0;  // container-steps of the skyline
  double peak = 0;
};
std::string encodeFingerprint(const ProposalFingerprint& f);
std::optional<ProposalFingerprint> decodeFingerprint(const std::string& s);
// Period changed, a or d moved by more than threshold x window, or skyline
// area or peak changed by more than threshold (relative).
bool materiallyDifferent(const ProposalFingerprint& a, const ProposalFingerprint& b,
                         double threshold);

class InferenceCore {
 public:
  // Collaborators must outlive the core.
  InferenceCore(InferenceCoreOptions opts, store::ProvenanceStore& store, RmReservationClient& rm,
                Clock& clock, MetricsRegistry& metrics);

  // All-or-nothing; INVALID_ARGUMENT naming "runs[i].field" / "events[i].field".
  Status ingest(const store::IngestBatch& batch);
  Status ingestRuns(const std::vector<store::RunRecord>& runs) { return ingest({runs, {}}); }
  Status ingestEvents(const std::vector<store::FileEvent>& events) { return ingest({{}, events}); }
  // An import by `who` (issue #11 finding 7): every run must name its owner
  // (the caller unless the caller is an admin), and a non-admin may only add
  // to jobs that have no runs yet or whose stored runs are all the caller's,
  // so nobody overwrites another owner's runs or becomes a job's owner
  // (the owner of its latest run) without an admin. PERMISSION_DENIED naming
  // the run or event and both users; nothing is stored then.
  Status ingestAs(const Principal& who, const store::IngestBatch& batch);

  // Re-infers every job; creates proposals for new actionable jobs and update
  // proposals for accepted jobs whose skyline drifted. Returns how many.
  Result<int> refit();

  Result<std::vector<Proposal>> proposals(std::optional<store::ProposalState> state);
  std::vector<NotActionable> notActionable() const;
  Result<Proposal> proposal(const ProposalId& id);

  // Sign-off (owner or admin). Accept/override submit to the RM; on an RM
  // refusal the proposal stays pending and the RM's explanation is returned.
  Result<Proposal> accept(const ProposalId& id, const Principal& who, bool auto_update);
  Result<Proposal> override(const ProposalId& id, const Principal& who, const OverrideParams& p);
  Result<Proposal> reject(const ProposalId& id, const Principal& who, const std::string& reason);

 private:
  Result<Proposal> load(const ProposalId& id);
  Result<Proposal> submitAndAccept(Proposal p, const Principal& who);
  Status supersede(const store::ProposalRecord& rec, const std::string& reason);
  ProposalId newProposalId();

  const InferenceCoreOptions opts_;
  store::ProvenanceStore& store_;
  RmReservationClient& rm_;
  Clock& clock_;
  MetricsRegistry& metrics_;

  // Job owners named by the store; REQUIRES(ingest_mu_).
  Status mayAddToJob(const Principal& who, const JobKey& job, const std::string& what);

  std::mutex ingest_mu_;                       // serialises ingestAs' check and store
  mutable std::mutex mu_;                      // serialises sign-off and refit
  std::vector<NotActionable> not_actionable_;  // GUARDED_BY(mu_), from the last refit
  uint64_t next_seq_ = 1;                      // GUARDED_BY(mu_)
};

std::string encodePayload(const ProposalPayload& p);
Result<ProposalPayload> decodePayload(const std::string& json);

}  // namespace morpheus::inference
