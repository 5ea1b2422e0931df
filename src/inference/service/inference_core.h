// The inference service's core (Morpheus §4, §5): ingests runs and file
// events into the provenance store, infers each periodic job's SLO (period,
// earliest start a, deadline d) and skyline, keeps proposals for owner
// sign-off, and submits accepted ones to the RM as recurring reservations
// or, for jobs whose period does not divide the plan's LCM, as one one-off
// reservation per instance ahead of its window (§6).
//
// Inputs: only succeeded runs, submitted within history_window (at least the
// min_runs most recent), feed the SLO statistics and the fit. A proposal keeps
// the inferred a and d; a window shorter than the skyline is a warning on it.
//
// Thread-safety: internally locked; every method may be called from any
// thread (gRPC threads, the refit and instance timers). No lock is held
// across store or RM I/O or a skyline fit (docs/design/inference.md,
// "Refit phases"):
// - mu_ guards the core's in-memory bookkeeping only (the not-actionable
//   list, the proposal id sequence, per-job generations and claims, the
//   refit-in-progress flag) and is held for a few instructions at a time.
// - A job claim (JobClaim) makes what changes one job's proposals happen one
//   at a time: a sign-off of it, a refit's apply of its new proposal, an
//   instance check of it. It is a flag under mu_, not a mutex: held across
//   that job's store and RM I/O, never across a fit, and a thread holds at
//   most one claim at a time, so claims cannot deadlock.
// - ingest_mu_ serialises imports (ingestAs) and nests with nothing else.
#pragma once

#include <atomic>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/token.h"
#include "inference/model/skyline_fit.h"
#include "inference/model/slo_inference.h"
#include "inference/service/rm_client.h"
#include "store/provenance/provenance_store.h"

namespace morpheus::inference {

// One instance's one-off reservation of an off-kilter job (Morpheus §6).
struct InstanceReservation {
  TimePoint period_start;      // the instance's period start (a multiple of the period)
  std::string reservation_id;  // deterministic: instanceReservationId(job, start, definition)
  std::string state;           // "submitted" | "refused" (retried until the window opens)
  std::string detail;          // the RM's placement or refusal
  // While this one is refused: the superseded proposal's one-off of the same
  // instance, kept in the RM so the instance stays reserved in its old shape
  // (its room may be what the RM lacked), and cancelled once this one is held.
  std::string replaces;

  bool operator==(const InstanceReservation&) const = default;
};

// A reservation of a superseded proposal that its successor replaces (a
// recurring one by one-offs, one-offs by a recurring one or by one-offs on
// another schedule): cancelled in the RM once `after` has passed, i.e. once
// no window it may be serving is open (submitDueInstances retries until the
// RM confirms), so the plan does not hold the job's instances twice.
struct RetiringReservation {
  std::string reservation_id;
  TimePoint after;

  bool operator==(const RetiringReservation&) const = default;
};

// What a proposal says, stored as JSON in ProposalRecord::payload_json.
struct ProposalPayload {
  Millis period{0};
  // The period does not divide the plan's LCM (off-kilter, weekly, monthly):
  // no recurring reservation; each instance gets a one-off reservation,
  // submitted one-off-lead-time ahead of its window (Morpheus §6).
  bool one_off_instances = false;
  Millis start_offset{0};     // a
  Millis deadline_offset{0};  // d
  Millis step{60000};
  std::vector<int64_t> skyline;
  // When the skyline was reshaped to the window (front-loaded,
  // inference/model/skyline_reshape.h): the same compression in the order the runs
  // showed, submitted instead when the RM has no room for `skyline`. Empty
  // otherwise, and dropped when the owner overrides the skyline or window.
  std::vector<int64_t> in_order_skyline;
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
  // What the owner must know before signing off, e.g. a window d - a shorter
  // than the skyline (the proposal keeps the inferred a and d).
  std::vector<std::string> warnings;
  int runs_failed = 0;  // in the job's history, stored but not fitted
  int runs_killed = 0;
  std::vector<InstanceReservation> instances;  // one_off_instances: newest last
  std::vector<RetiringReservation> retiring;   // of superseded proposals, not yet cancelled
};

// The first instance whose window [start + a, start + d] has not opened at
// `now`: its period start (a multiple of the period since the epoch).
TimePoint nextInstanceStart(const ProposalPayload& p, TimePoint now);
// A valid RM reservation id naming the job, the instance and the definition
// it reserves (`definition`: definitionFingerprint of the request): the same
// for every submission of that instance under one signed-off SLO, so a
// repeat is seen as ALREADY_EXISTS, and a different one for an update that
// changes the window or the skyline, so the update's one-off is submitted
// beside the old one, which is then retired (or, while the new one is
// refused, kept: InstanceReservation::replaces).
std::string instanceReservationId(const JobKey& job, TimePoint period_start, uint64_t definition);
// FNV-1a over everything a one-off reservation of `r` reserves (owner,
// queue, schedule, step, skyline, container, budget, flags); not job_key.
uint64_t definitionFingerprint(const RecurringRequest& r);

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
  double alpha = kDefaultSkylineAlpha;
  double beta = 0.1;
  bool beta_relative = true;
  int64_t min_runs = 3;
  double budget_fraction = 0.5;
  double drift_threshold = 0.2;
  bool whole_skyline_steps = true;  // RecurringRequest::whole_steps (proposal.skyline-steps)
  std::string queue = "default";
  int64_t history_runs = 30;  // most recent runs a skyline is fitted from
  SampleMode sample = SampleMode::kAverage;
  SloParams slo;
  // SLO statistics and fits use succeeded runs submitted within this window
  // before now (at least the min_runs most recent ones), so drift shows.
  Millis history_window{int64_t{30} * 86400000};
  // How far ahead of an instance's window its one-off reservation is submitted.
  Millis one_off_lead{86400000};
  // Bounds of one skyline fit (refit and FitSkyline): the most samples
  // (runs x steps) it may hold (0 = unbounded), the shortest step a
  // FitSkyline caller may ask for, and how long a FitSkyline fit may run.
  int64_t max_fit_samples = 0;
  Millis min_fit_step{1000};
  Millis max_fit_time{60000};
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

// The inference service's metrics, declared once (common/metrics.h says
// why); every counter, and each outcome/kind of the labelled ones, exists at
// 0 from the start. Thread-safety: updates are lock-free.
struct InferenceMetrics {
  explicit InferenceMetrics(MetricsRegistry& metrics);
  Counter& runs_ingested;
  Counter& events_ingested;
  Counter& instances_submitted;  // instance_reservations_total{outcome}
  Counter& instances_refused;
  Counter& retired_cancelled;  // retired_reservations_total{outcome}
  Counter& retired_gone;
  Counter& retired_refused;
  Counter& signoff_accepted;  // signoff_total{outcome}
  Counter& signoff_rejected;
  Counter& signoff_rm_refused;
  Gauge& fits_running;
  Counter& fits_stopped;
  Counter& proposals_new;  // proposals_total{kind}
  Counter& proposals_update;
  Gauge& jobs_not_actionable;
};

class InferenceCore {
 public:
  // Collaborators must outlive the core.
  InferenceCore(InferenceCoreOptions opts, store::ProvenanceStore& store, ReservationClient& rm,
                Clock& clock, MetricsRegistry& metrics);

  // All-or-nothing; INVALID_ARGUMENT naming "runs[i].field" / "events[i].field".
  Status ingest(const store::IngestBatch& batch);
  Status ingestRuns(const std::vector<store::RunRecord>& runs) { return ingest({runs, {}}); }
  Status ingestEvents(const std::vector<store::FileEvent>& events) { return ingest({{}, events}); }
  // An import by `who`: every run must name its owner (the caller unless the
  // caller is an admin) and that user must own the run's job (the store
  // records a job's owner with its first run and never changes it: a run of
  // another user is refused whoever sends it, the RM's feed included). A
  // non-admin's events claim the jobs they name that have no owner yet and
  // are refused for jobs someone else owns. PERMISSION_DENIED naming the run
  // or event and both users; nothing is stored then.
  Status ingestAs(const Principal& who, const store::IngestBatch& batch);

  // Re-infers every job; creates proposals for new actionable jobs and update
  // proposals for accepted jobs whose skyline drifted. Returns how many it
  // stored.
  //
  // Three phases, so sign-offs and listings never wait for a refit's store
  // reads or fits: (1) snapshot, under mu_: every job's generation, a count
  // of the changes to its proposals (created, accepted, overridden,
  // rejected, superseded); (2) compute, no lock held: read the store (runs,
  // events, owners, proposals, rejections), infer the SLOs, fit the
  // skylines, decide per job; (3) apply, one job at a time under its claim:
  // a job's new proposal is stored (superseding its pending one, and
  // accepted at once for an auto-update owner) only when the job's
  // generation is still the snapshot's. A result computed from a state that
  // a sign-off (or anything else) changed meanwhile is stale: it is dropped
  // and logged, never merged, and the next refit decides that job again
  // from the state the sign-off left. The not-actionable list is replaced
  // at the end of a refit that succeeds.
  //
  // Refits do not overlap: a refit called while another runs waits for it
  // to finish and then runs its own from a fresh snapshot (it does not join
  // the running one, whose snapshot may predate what the caller ingested).
  Result<int> refit();

  // Test hook: called by refit() with no lock held, between its compute and
  // apply phases, so a test can sign off or list while a refit is in
  // flight. nullptr (the default) removes it. Tests only.
  void setRefitHookForTest(std::function<void()> hook);

  // Submits the one-off reservation of every instance of an accepted
  // off-kilter job whose window opens within one_off_lead of now and that
  // was not submitted before (recorded in the proposal, so not twice across
  // restarts), and cancels the accepted proposals' retiring reservations
  // that are due. Returns how many were submitted; refusals are recorded on
  // the proposal and retried on the next call. Call it more often than the
  // lead.
  Result<int> submitDueInstances();

  TimePoint now() const { return clock_.now(); }

  // The daemon is stopping: running fits (refit's and callers') end with
  // UNAVAILABLE at their next stop check, and a refit returns. Thread-safe.
  void stop() { stopping_.store(true); }
  // OK, or UNAVAILABLE once stop() was called (a FitStop). Thread-safe.
  Status stopCheck() const;
  // fitRuns for a caller (FitSkyline), bounded by max_fit_samples and
  // stopped by stop() as well as by params.stop; counted in
  // morpheus_inference_fits_running. Thread-safe (does not take mu_).
  Result<FitResult> fit(const std::vector<store::RunRecord>& runs, FitParams params);

  // A job's stored runs (every status), sorted by submit time.
  Result<std::vector<store::RunRecord>> runsOf(const JobKey& job);

  Result<std::vector<Proposal>> proposals(std::optional<store::ProposalState> state);
  std::vector<NotActionable> notActionable() const;
  Result<Proposal> proposal(const ProposalId& id);

  // Sign-off (owner or admin). Accept/override submit to the RM. When the RM
  // has no room for a new recurring reservation, the instances are reserved
  // one by one where they fit (acceptPerInstance); on any other refusal, or
  // when no instance fits either, the proposal stays pending and the RM's
  // explanation is returned. Per-instance sign-off is accepted when some
  // instance due now is reserved; refused ones are listed and retried.
  Result<Proposal> accept(const ProposalId& id, const Principal& who, bool auto_update);
  Result<Proposal> override(const ProposalId& id, const Principal& who, const OverrideParams& p);
  Result<Proposal> reject(const ProposalId& id, const Principal& who, const std::string& reason);

 private:
  Result<Proposal> load(const ProposalId& id);
  Result<Proposal> submitAndAccept(Proposal p, const Principal& who);
  // Submits p's recurring reservation; when the RM has no room for a
  // reshaped skyline (INFEASIBLE), its in-order compression instead, which
  // then becomes p's skyline (with a warning). The first refusal otherwise.
  Result<SubmittedReservation> submitRecurring(Proposal& p, const std::string& existing);
  // Stores `p` as accepted (with the RM's reservation id, "" for per-instance
  // one-offs), expecting its stored state unchanged; returns the record.
  Result<store::ProposalRecord> recordAccepted(const Proposal& p,
                                               const std::string& reservation_id);
  // The accepted proposal `previous` is superseded by a newer accepted one.
  Status markSuperseded(const store::ProposalRecord& previous);
  // Accepts p with a one-off reservation per due instance (recorded as
  // `placement`): when some due instance is reserved, or none is due.
  Result<Proposal> acceptOneOff(Proposal p, std::optional<store::ProposalRecord> previous,
                                const Principal& who, const std::string& placement);
  // The RM refused p's recurring reservation as INFEASIBLE (some instance of
  // the day has no room): rather than leave the job without any reservation,
  // each instance gets a one-off reservation as an off-kilter job's do
  // (acceptOneOff), so the plan holds the instances it has room for instead
  // of none. Stays pending with `refusal` when no due instance fits either.
  Result<Proposal> acceptPerInstance(Proposal p, std::optional<store::ProposalRecord> previous,
                                     const Principal& who, const Status& refusal);
  // Submits p's due instances; false in *changed when nothing was recorded.
  // Returns the first refusal of an instance whose window opens before the
  // next call could retry it (for sign-off to report). REQUIRES the job's
  // claim.
  Status submitInstancesOf(Proposal& p, bool* changed, int* submitted);
  Status supersede(const store::ProposalRecord& rec, const std::string& reason);
  // Adds to `next` (about to be accepted in place of `previous`, holding
  // `next_reservation_id`, "" for one-offs) the reservations of `previous`
  // it replaces: its recurring one unless `next` updated it in place (after
  // the window it may serve now), and its
  // one-offs of windows not yet open that `next` does not hold itself —
  // except where `next`'s one-off of the same instance was refused: that
  // record `replaces` the old one, kept until submitInstancesOf holds the
  // new one (an acknowledged instance is never left unreserved by an
  // update); and what `previous` was still retiring. A warning tells the
  // owner. `next`'s instances must be submitted first.
  void retirePrevious(const store::ProposalRecord& previous, ProposalPayload& next,
                      const std::string& next_reservation_id) const;
  // Cancels `p`'s retiring reservations that are due; a cancellation the RM
  // refuses (other than NOT_FOUND: already gone) stays for the next call.
  // False in *changed when nothing was cancelled. REQUIRES the job's claim.
  void retireDue(Proposal& p, bool* changed);
  // Stores accepted `p`'s payload (expecting it still accepted).
  Status storeAccepted(Proposal& p);
  // retireDue on a proposal just recorded as accepted, stored when it
  // changed; a failed store is logged (the next check retries: NOT_FOUND).
  void retireDueAndStore(Proposal& p);
  ProposalId newProposalId();

  // A job's claim (see Thread-safety above): released, and its waiters
  // woken, when destroyed. Movable, not copyable.
  class JobClaim {
   public:
    JobClaim(InferenceCore* core, JobKey job) : core_(core), job_(std::move(job)) {}
    JobClaim(JobClaim&& o) noexcept : core_(o.core_), job_(std::move(o.job_)) { o.core_ = nullptr; }
    JobClaim(const JobClaim&) = delete;
    JobClaim& operator=(const JobClaim&) = delete;
    JobClaim& operator=(JobClaim&&) = delete;
    ~JobClaim();

   private:
    InferenceCore* core_;
    JobKey job_;
  };
  // Waits until nobody holds `job`'s claim, then takes it. The caller must
  // hold no other claim and not mu_.
  JobClaim claimJob(const JobKey& job);
  // As claimJob, but nullopt (and no claim) when `job`'s generation is no
  // longer `generation`: refit's compare-and-apply.
  std::optional<JobClaim> claimJobIfUnchanged(const JobKey& job, uint64_t generation);
  // A proposal of `job` was created or changed state: refit results computed
  // before are stale for it. Called after each such store write (also a
  // failed one: it may have been applied).
  void bumpGeneration(const JobKey& job);
  // The proposal `id`, authorised for `who` to `action` and pending, under
  // its job's claim (taken after a first check, then read again, so a
  // sign-off that finished meanwhile is seen).
  Result<std::pair<Proposal, JobClaim>> loadPendingForSignOff(const ProposalId& id,
                                                              const Principal& who,
                                                              const std::string& action);

  const InferenceCoreOptions opts_;
  store::ProvenanceStore& store_;
  ReservationClient& rm_;
  Clock& clock_;
  InferenceMetrics metrics_;

  std::atomic<bool> stopping_{false};
  // Serialises ingestAs (held across the store's ingest only); a leaf: never
  // held with mu_.
  Mutex ingest_mu_;
  // Guards the members below; never held across I/O or a fit.
  mutable Mutex mu_;
  CondVar claims_cv_;  // a claim was released or a refit ended
  std::vector<NotActionable> not_actionable_ GUARDED_BY(mu_);  // from the last refit
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  std::map<JobKey, uint64_t> generation_ GUARDED_BY(mu_);  // absent = 0
  std::set<JobKey> claimed_ GUARDED_BY(mu_);               // jobs whose claim is held
  bool refit_running_ GUARDED_BY(mu_) = false;
  std::function<void()> refit_hook_ GUARDED_BY(mu_);
};

std::string encodePayload(const ProposalPayload& p);
Result<ProposalPayload> decodePayload(const std::string& json);

}  // namespace morpheus::inference
