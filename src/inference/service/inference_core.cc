#include "inference/service/inference_core.h"

#include "common/auth.h"
#include "inference/model/run_import.h"
#include "inference/model/skyline_reshape.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace morpheus::inference {

using nlohmann::json;

std::string encodePayload(const ProposalPayload& p) {
  json instances = json::array();
  for (const auto& i : p.instances) {
    json o = {{"period_start_ms", toEpochMs(i.period_start)},
              {"reservation_id", i.reservation_id},
              {"state", i.state},
              {"detail", i.detail}};
    if (!i.replaces.empty()) o["replaces"] = i.replaces;
    instances.push_back(std::move(o));
  }
  json retiring = json::array();
  for (const auto& r : p.retiring) {
    retiring.push_back({{"reservation_id", r.reservation_id}, {"after_ms", toEpochMs(r.after)}});
  }
  return json({{"period_ms", p.period.count()},
               {"retiring", retiring},
               {"one_off_instances", p.one_off_instances},
               {"warnings", p.warnings},
               {"runs_failed", p.runs_failed},
               {"runs_killed", p.runs_killed},
               {"instances", instances},
               {"start_offset_ms", p.start_offset.count()},
               {"deadline_offset_ms", p.deadline_offset.count()},
               {"step_ms", p.step.count()},
               {"skyline", p.skyline},
               {"in_order_skyline", p.in_order_skyline},
               {"container",
                {{"memory_mib", p.container.memoryMib()}, {"vcores", p.container.vcores()}}},
               {"budget_container_ms", p.budget_container_ms},
               {"over_allocation", p.over_allocation},
               {"under_allocation", p.under_allocation},
               {"epsilon", p.epsilon},
               {"runs_used", p.runs_used},
               {"problematic", p.problematic},
               {"is_update", p.is_update},
               {"fingerprint", p.fingerprint},
               {"placement", p.placement}})
      .dump();
}

Result<ProposalPayload> decodePayload(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return internalError("corrupt proposal payload");
  try {
    ProposalPayload p;
    p.period = Millis(j.at("period_ms").get<int64_t>());
    p.start_offset = Millis(j.at("start_offset_ms").get<int64_t>());
    p.deadline_offset = Millis(j.at("deadline_offset_ms").get<int64_t>());
    p.step = Millis(j.at("step_ms").get<int64_t>());
    p.skyline = j.at("skyline").get<std::vector<int64_t>>();
    p.container = Resource(j.at("container").at("memory_mib").get<int64_t>(),
                           j.at("container").at("vcores").get<int64_t>());
    p.budget_container_ms = j.at("budget_container_ms").get<int64_t>();
    p.over_allocation = j.at("over_allocation").get<double>();
    p.under_allocation = j.at("under_allocation").get<double>();
    p.epsilon = j.at("epsilon").get<double>();
    p.runs_used = j.at("runs_used").get<int>();
    p.problematic = j.at("problematic").get<bool>();
    p.is_update = j.at("is_update").get<bool>();
    p.fingerprint = j.at("fingerprint").get<std::string>();
    p.placement = j.at("placement").get<std::string>();
    // Absent from payloads written before per-instance reservations and warnings.
    p.one_off_instances = j.value("one_off_instances", false);
    p.warnings = j.value("warnings", std::vector<std::string>{});
    p.runs_failed = j.value("runs_failed", 0);
    p.runs_killed = j.value("runs_killed", 0);
    p.in_order_skyline = j.value("in_order_skyline", std::vector<int64_t>{});
    for (const auto& i : j.value("instances", json::array())) {
      p.instances.push_back({fromEpochMs(i.at("period_start_ms").get<int64_t>()),
                             i.at("reservation_id").get<std::string>(),
                             i.at("state").get<std::string>(), i.at("detail").get<std::string>(),
                             i.value("replaces", std::string())});
    }
    for (const auto& r : j.value("retiring", json::array())) {
      p.retiring.push_back({r.at("reservation_id").get<std::string>(),
                            fromEpochMs(r.at("after_ms").get<int64_t>())});
    }
    return p;
  } catch (const json::exception& e) {
    return internalError(std::string("corrupt proposal payload: ") + e.what());
  }
}

std::string encodeFingerprint(const ProposalFingerprint& f) {
  return json({{"period_ms", f.period.count()},
               {"start_offset_ms", f.start_offset.count()},
               {"deadline_offset_ms", f.deadline_offset.count()},
               {"area", f.area},
               {"peak", f.peak}})
      .dump();
}

std::optional<ProposalFingerprint> decodeFingerprint(const std::string& s) {
  json j = json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    ProposalFingerprint f;
    f.period = Millis(j.at("period_ms").get<int64_t>());
    f.start_offset = Millis(j.at("start_offset_ms").get<int64_t>());
    f.deadline_offset = Millis(j.at("deadline_offset_ms").get<int64_t>());
    f.area = j.at("area").get<double>();
    f.peak = j.at("peak").get<double>();
    return f;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool materiallyDifferent(const ProposalFingerprint& a, const ProposalFingerprint& b,
                         double threshold) {
  if (a.period != b.period) return true;
  auto rel = [](double x, double y) {
    double m = std::max(std::fabs(x), std::fabs(y));
    return m == 0 ? 0.0 : std::fabs(x - y) / m;
  };
  double window =
      static_cast<double>(std::max((a.deadline_offset - a.start_offset).count(), int64_t{1}));
  if (std::fabs(static_cast<double>((a.start_offset - b.start_offset).count())) >
      threshold * window)
    return true;
  if (std::fabs(static_cast<double>((a.deadline_offset - b.deadline_offset).count())) >
      threshold * window) {
    return true;
  }
  return rel(a.area, b.area) > threshold || rel(a.peak, b.peak) > threshold;
}

TimePoint nextInstanceStart(const ProposalPayload& p, TimePoint now) {
  const int64_t period = std::max<int64_t>(p.period.count(), 1);
  const int64_t a = p.start_offset.count();
  // Smallest k*P with k*P + a > now.
  int64_t k = (toEpochMs(now) - a) / period;
  while (k * period + a <= toEpochMs(now)) k++;
  while (k > 0 && (k - 1) * period + a > toEpochMs(now)) k--;
  return fromEpochMs(k * period);
}

namespace {

// FNV-1a, 64 bit, over bytes and little-endian integers (host-independent).
struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void byte(uint64_t b) { h = (h ^ (b & 0xff)) * 1099511628211ull; }
  void num(int64_t v) {
    for (int k = 0; k < 8; k++) byte(static_cast<uint64_t>(v) >> (8 * k));
  }
  void str(const std::string& v) {
    num(static_cast<int64_t>(v.size()));
    for (unsigned char c : v) byte(c);
  }
};

}  // namespace

std::string instanceReservationId(const JobKey& job, TimePoint period_start, uint64_t definition) {
  // RM ids are 1-128 of [A-Za-z0-9_.-]: the key's other bytes become '_', and
  // an FNV-1a hash of the whole key keeps distinct keys distinct.
  std::string safe;
  Fnv1a key;
  for (unsigned char c : job.value()) {
    key.byte(c);
    if (safe.size() < 64) safe.push_back(std::isalnum(c) || c == '.' || c == '-' ? c : '_');
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%016llx-%08llx-%lld", static_cast<unsigned long long>(key.h),
                static_cast<unsigned long long>(definition & 0xffffffffull),
                static_cast<long long>(toEpochMs(period_start)));
  return "slo-" + safe + buf;
}

uint64_t definitionFingerprint(const RecurringRequest& r) {
  Fnv1a f;
  f.str(r.owner);
  f.str(r.queue);
  for (Millis m : {r.period, r.start_offset, r.deadline_offset, r.step}) f.num(m.count());
  f.num(static_cast<int64_t>(r.skyline.size()));
  for (int64_t v : r.skyline) f.num(v);
  f.num(r.container.memoryMib());
  f.num(r.container.vcores());
  for (const auto& [name, v] : r.container.extended()) {
    f.str(name);
    f.num(v);
  }
  f.num(r.budget_container_ms);
  f.num((r.problematic ? 1 : 0) + (r.whole_steps ? 2 : 0));
  return f.h;
}

namespace {
ProposalFingerprint fingerprintOf(const ProposalPayload& p) {
  ProposalFingerprint f;
  f.period = p.period;
  f.start_offset = p.start_offset;
  f.deadline_offset = p.deadline_offset;
  for (auto v : p.skyline) {
    f.area += static_cast<double>(v);
    f.peak = std::max(f.peak, static_cast<double>(v));
  }
  return f;
}
}  // namespace

namespace {
Counter& labelled(MetricsRegistry& m, const char* name, const char* help, const char* label,
                  const char* value) {
  return m.counter(name, help, {{label, value}});
}
constexpr const char* kInstances = "morpheus_inference_instance_reservations_total";
constexpr const char* kInstancesHelp =
    "One-off reservations of instances of off-kilter jobs, by outcome of the submission";
constexpr const char* kRetired = "morpheus_inference_retired_reservations_total";
constexpr const char* kRetiredHelp = "Reservations of superseded proposals cancelled in the RM";
constexpr const char* kSignoff = "morpheus_inference_signoff_total";
constexpr const char* kSignoffHelp = "Sign-off outcomes";
constexpr const char* kProposals = "morpheus_inference_proposals_total";
constexpr const char* kProposalsHelp = "Proposals created";
}  // namespace

InferenceMetrics::InferenceMetrics(MetricsRegistry& m)
    : runs_ingested(m.counter("morpheus_inference_runs_ingested_total", "Runs ingested")),
      events_ingested(
          m.counter("morpheus_inference_events_ingested_total", "Provenance events ingested")),
      instances_submitted(labelled(m, kInstances, kInstancesHelp, "outcome", "submitted")),
      instances_refused(labelled(m, kInstances, kInstancesHelp, "outcome", "refused")),
      retired_cancelled(labelled(m, kRetired, kRetiredHelp, "outcome", "cancelled")),
      retired_gone(labelled(m, kRetired, kRetiredHelp, "outcome", "gone")),
      retired_refused(labelled(m, kRetired, kRetiredHelp, "outcome", "refused")),
      signoff_accepted(labelled(m, kSignoff, kSignoffHelp, "outcome", "accepted")),
      signoff_rejected(labelled(m, kSignoff, kSignoffHelp, "outcome", "rejected")),
      signoff_rm_refused(labelled(m, kSignoff, kSignoffHelp, "outcome", "rm-refused")),
      fits_running(m.gauge("morpheus_inference_fits_running", "FitSkyline fits in progress")),
      fits_stopped(m.counter("morpheus_inference_fits_stopped_total",
                             "FitSkyline fits that failed or were stopped (caller gone, service "
                             "stopping, skyline.max-fit-time)")),
      proposals_new(labelled(m, kProposals, kProposalsHelp, "kind", "new")),
      proposals_update(labelled(m, kProposals, kProposalsHelp, "kind", "update")),
      jobs_not_actionable(m.gauge("morpheus_inference_jobs_not_actionable",
                                  "Jobs without a proposal after the last refit")) {}

InferenceCore::InferenceCore(InferenceCoreOptions opts, store::ProvenanceStore& store,
                             ReservationClient& rm, Clock& clock, MetricsRegistry& metrics)
    : opts_(std::move(opts)), store_(store), rm_(rm), clock_(clock), metrics_(metrics) {}

Status InferenceCore::ingest(const store::IngestBatch& batch) {
  for (size_t i = 0; i < batch.runs.size(); i++) {
    MORPHEUS_RETURN_IF_ERROR(validateRun(batch.runs[i], "runs[" + std::to_string(i) + "]"));
  }
  for (size_t i = 0; i < batch.events.size(); i++) {
    MORPHEUS_RETURN_IF_ERROR(validateEvent(batch.events[i], "events[" + std::to_string(i) + "]"));
  }
  MORPHEUS_RETURN_IF_ERROR(store_.ingest(batch));
  metrics_.runs_ingested.inc(static_cast<double>(batch.runs.size()));
  metrics_.events_ingested.inc(static_cast<double>(batch.events.size()));
  return Status::ok();
}

Status InferenceCore::ingestAs(const Principal& who, const store::IngestBatch& batch) {
  MutexLock lk(ingest_mu_);
  for (size_t i = 0; i < batch.runs.size(); i++) {
    const auto& r = batch.runs[i];
    if (!who.admin && r.user != who.user) {
      return permissionDenied("runs[" + std::to_string(i) + "].user: " + who.user +
                              " may not import runs as " + r.user);
    }
  }
  // The store keeps each job's owner: runs of another user are refused (an
  // admin's, the RM's feed, included), and a user's events claim the jobs they
  // name, so nobody adds to or takes over another owner's job.
  store::IngestBatch owned = batch;
  owned.claimant = who.admin ? "" : who.user;
  return ingest(owned);
}

ProposalId InferenceCore::newProposalId() {
  uint64_t seq = 0;
  {
    MutexLock lk(mu_);
    seq = next_seq_++;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "p_%lld_%llu", static_cast<long long>(toEpochMs(clock_.now())),
                static_cast<unsigned long long>(seq));
  return ProposalId(buf);
}

InferenceCore::JobClaim::~JobClaim() {
  if (core_ == nullptr) return;
  {
    MutexLock lk(core_->mu_);
    core_->claimed_.erase(job_);
  }
  core_->claims_cv_.notify_all();
}

InferenceCore::JobClaim InferenceCore::claimJob(const JobKey& job) {
  MutexLock lk(mu_);
  claims_cv_.wait(mu_, [&]() REQUIRES(mu_) { return claimed_.count(job) == 0; });
  claimed_.insert(job);
  return JobClaim(this, job);
}

std::optional<InferenceCore::JobClaim> InferenceCore::claimJobIfUnchanged(const JobKey& job,
                                                                          uint64_t generation) {
  MutexLock lk(mu_);
  claims_cv_.wait(mu_, [&]() REQUIRES(mu_) { return claimed_.count(job) == 0; });
  auto g = generation_.find(job);
  if ((g == generation_.end() ? 0 : g->second) != generation) return std::nullopt;
  claimed_.insert(job);
  return JobClaim(this, job);
}

void InferenceCore::bumpGeneration(const JobKey& job) {
  MutexLock lk(mu_);
  generation_[job]++;
}

void InferenceCore::setRefitHookForTest(std::function<void()> hook) {
  MutexLock lk(mu_);
  refit_hook_ = std::move(hook);
}

Result<std::pair<Proposal, InferenceCore::JobClaim>> InferenceCore::loadPendingForSignOff(
    const ProposalId& id, const Principal& who, const std::string& action) {
  auto check = [&](const Proposal& p) -> Status {
    MORPHEUS_RETURN_IF_ERROR(
        Authenticator::mayActFor(who, p.record.owner, action + " proposal " + id.value()));
    if (p.record.state != store::ProposalState::kPending) {
      return infeasible("proposal " + id.value() + " is not pending");
    }
    return Status::ok();
  };
  // Checked before the claim, so a refused caller never waits for one, and
  // again under it: another sign-off of the job may have finished meanwhile.
  MORPHEUS_ASSIGN_OR_RETURN(Proposal first, load(id));
  MORPHEUS_RETURN_IF_ERROR(check(first));
  JobClaim claim = claimJob(first.record.job);
  MORPHEUS_ASSIGN_OR_RETURN(Proposal p, load(id));
  MORPHEUS_RETURN_IF_ERROR(check(p));
  return std::pair<Proposal, JobClaim>(std::move(p), std::move(claim));
}

Result<Proposal> InferenceCore::load(const ProposalId& id) {
  MORPHEUS_ASSIGN_OR_RETURN(auto rec, store_.getProposal(id));
  if (!rec) return notFound("proposal " + id.value() + " does not exist");
  MORPHEUS_ASSIGN_OR_RETURN(ProposalPayload payload, decodePayload(rec->payload_json));
  return Proposal{*rec, payload};
}

Result<std::vector<Proposal>> InferenceCore::proposals(std::optional<store::ProposalState> state) {
  MORPHEUS_ASSIGN_OR_RETURN(auto recs, store_.listProposals(state));
  std::vector<Proposal> out;
  for (auto& r : recs) {
    MORPHEUS_ASSIGN_OR_RETURN(ProposalPayload p, decodePayload(r.payload_json));
    out.push_back({std::move(r), std::move(p)});
  }
  return out;
}

std::vector<NotActionable> InferenceCore::notActionable() const {
  MutexLock lk(mu_);
  return not_actionable_;
}

Result<Proposal> InferenceCore::proposal(const ProposalId& id) { return load(id); }

namespace {

RecurringRequest requestOf(const Proposal& p, const InferenceCoreOptions& o) {
  RecurringRequest req;
  req.job_key = p.record.job.value();
  req.owner = p.record.owner;
  req.queue = o.queue;
  req.whole_steps = o.whole_skyline_steps;
  req.period = p.payload.period;
  req.start_offset = p.payload.start_offset;
  req.deadline_offset = p.payload.deadline_offset;
  req.step = p.payload.step;
  req.skyline = p.payload.skyline;
  req.container = p.payload.container;
  req.budget_container_ms = p.payload.budget_container_ms;
  req.problematic = p.payload.problematic;
  return req;
}

// Instance records kept on a proposal beyond those whose window has not
// closed (which are always kept: their one-offs are in the RM, and the record
// is what keeps them from being submitted again and lets a successor retire
// them), so the payload stays small.
constexpr size_t kKeptInstances = 32;

}  // namespace

Status InferenceCore::submitInstancesOf(Proposal& p, bool* changed, int* submitted) {
  const TimePoint now = clock_.now();
  const Millis period = p.payload.period;
  const RecurringRequest slo = requestOf(p, opts_);
  const uint64_t definition = definitionFingerprint(slo);
  Status first_refusal = Status::ok();
  for (TimePoint start = nextInstanceStart(p.payload, now);
       start + p.payload.start_offset <= now + opts_.one_off_lead; start += period) {
    auto rec = std::find_if(p.payload.instances.begin(), p.payload.instances.end(),
                            [&](const InstanceReservation& i) { return i.period_start == start; });
    if (rec != p.payload.instances.end() && rec->state == "submitted") continue;
    OneOffRequest req{slo, start, instanceReservationId(p.record.job, start, definition)};
    auto sub = rm_.submitOneOff(req);
    InstanceReservation inst{start, req.reservation_id, "submitted", "",
                             rec != p.payload.instances.end() ? rec->replaces : ""};
    if (sub.isOk()) {
      inst.detail = sub->placement_summary;
      ++*submitted;
      spdlog::info("job {}: one-off reservation {} for the instance of {} submitted ({})",
                   p.record.job.value(), req.reservation_id, toEpochMs(start), inst.detail);
    } else if (sub.status().code() == StatusCode::kAlreadyExists && rm_.verifyOneOff(req).isOk()) {
      inst.detail = "submitted earlier";  // e.g. before a restart lost the record
    } else {
      // Another owner's or another definition's reservation under the id is
      // not this instance's: it stays refused (and is retried).
      Status why = sub.status().code() == StatusCode::kAlreadyExists
                       ? rm_.verifyOneOff(req).withContext("reservation id " + req.reservation_id +
                                                           " is taken in the RM")
                       : sub.status();
      inst.state = "refused";
      inst.detail = why.message();
      if (first_refusal.isOk()) first_refusal = why;
      spdlog::warn("job {}: one-off reservation for the instance of {} refused: {}",
                   p.record.job.value(), toEpochMs(start), inst.detail);
    }
    (inst.state == "submitted" ? metrics_.instances_submitted : metrics_.instances_refused).inc();
    if (inst.state == "submitted" && !inst.replaces.empty()) {  // the old one is redundant now
      p.payload.retiring.push_back({inst.replaces, now});
      inst.replaces.clear();
    }
    if (rec != p.payload.instances.end()) {
      if (*rec == inst) continue;
      *rec = inst;
    } else {
      p.payload.instances.push_back(inst);
    }
    *changed = true;
  }
  std::sort(p.payload.instances.begin(), p.payload.instances.end(),
            [](const auto& a, const auto& b) { return a.period_start < b.period_start; });
  auto& kept = p.payload.instances;
  const auto open = std::find_if(kept.begin(), kept.end(), [&](const InstanceReservation& i) {
    return i.period_start + p.payload.deadline_offset > now;
  });
  const size_t excess = kept.size() > kKeptInstances ? kept.size() - kKeptInstances : 0;
  const auto closed = static_cast<size_t>(open - kept.begin());
  kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(std::min(excess, closed)));
  return first_refusal;
}

// Morpheus §6: a job whose period does not divide the LCM is accepted
// without a recurring reservation; the instances due now are submitted as
// one-off reservations (an RM refusal keeps the proposal pending), later
// ones by submitDueInstances().
Result<store::ProposalRecord> InferenceCore::recordAccepted(const Proposal& p,
                                                            const std::string& reservation_id) {
  store::ProposalRecord rec = p.record;
  rec.state = store::ProposalState::kAccepted;
  rec.reservation_id = reservation_id;
  rec.updated = clock_.now();
  rec.payload_json = encodePayload(p.payload);
  Status st = store_.updateProposal(rec, p.record.state);
  bumpGeneration(rec.job);
  MORPHEUS_RETURN_IF_ERROR(st);
  return rec;
}

Status InferenceCore::markSuperseded(const store::ProposalRecord& previous) {
  store::ProposalRecord old = previous;
  old.state = store::ProposalState::kSuperseded;
  old.updated = clock_.now();
  Status st = store_.updateProposal(old, store::ProposalState::kAccepted);
  bumpGeneration(old.job);
  return st;
}

namespace {

// The end of the latest window of `p`'s schedule open at `now`, else `now`:
// when a reservation serving that schedule no longer serves any instance.
TimePoint openWindowEnd(const ProposalPayload& p, TimePoint now) {
  const int64_t period = std::max<int64_t>(p.period.count(), 1);
  const int64_t t = toEpochMs(now);
  int64_t k = (t - p.start_offset.count()) / period;
  if (k * period + p.start_offset.count() > t) k--;  // negative remainders round up
  const int64_t end = k * period + p.deadline_offset.count();
  return end > t ? fromEpochMs(end) : now;
}

}  // namespace

void InferenceCore::retirePrevious(const store::ProposalRecord& previous, ProposalPayload& next,
                                   const std::string& next_reservation_id) const {
  auto old = decodePayload(previous.payload_json);
  if (!old.isOk()) {
    spdlog::warn("proposal {}: its reservations stay in the RM: {}", previous.id.value(),
                 old.status().message());
    return;
  }
  const TimePoint now = clock_.now();
  std::vector<RetiringReservation> add = old->retiring;
  if (!previous.reservation_id.empty() && previous.reservation_id != next_reservation_id) {
    add.push_back({previous.reservation_id, openWindowEnd(*old, now)});
  }
  int kept = 0;
  for (const auto& i : old->instances) {
    // Windows open now or past end by themselves (an instance may be running).
    if (i.period_start + old->start_offset <= now) continue;
    // The one-off of this instance in the RM: its own, or the one it replaces.
    const std::string& live = i.state == "submitted" ? i.reservation_id : i.replaces;
    if (live.empty()) continue;
    auto n = std::find_if(next.instances.begin(), next.instances.end(),
                          [&i](const auto& x) { return x.period_start == i.period_start; });
    if (n != next.instances.end()) {
      if ((n->reservation_id == live && n->state == "submitted") || n->replaces == live) continue;
      if (n->state == "refused" && n->replaces.empty()) {  // kept until its successor is held
        n->replaces = live;
        kept++;
        continue;
      }
    }
    add.push_back({live, now});
  }
  if (kept > 0) {
    next.warnings.push_back(std::to_string(kept) +
                            " instance(s) keep the superseded proposal's one-off reservation "
                            "while the RM refuses their new one; it is cancelled once the new "
                            "one is held");
  }
  if (add.empty()) return;
  std::string ids;
  for (const auto& r : add) {
    ids += (ids.empty() ? "" : ", ") + r.reservation_id;
    if (std::find(next.retiring.begin(), next.retiring.end(), r) == next.retiring.end())
      next.retiring.push_back(r);
  }
  next.warnings.push_back("replaces " + std::to_string(add.size()) +
                          " reservation(s) of the superseded proposal " + previous.id.value() +
                          " (" + ids +
                          "), cancelled in the RM once no window they may serve is open");
}

void InferenceCore::retireDue(Proposal& p, bool* changed) {
  const TimePoint now = clock_.now();
  std::vector<RetiringReservation> left;
  for (const auto& r : p.payload.retiring) {
    if (r.after > now) {
      left.push_back(r);
      continue;
    }
    const Status st = rm_.cancel(r.reservation_id);
    const bool gone = st.code() == StatusCode::kNotFound;
    (st.isOk() ? metrics_.retired_cancelled
     : gone    ? metrics_.retired_gone
               : metrics_.retired_refused)
        .inc();
    if (st.isOk() || gone) {
      spdlog::info("job {}: reservation {} of a superseded proposal cancelled{}",
                   p.record.job.value(), r.reservation_id, gone ? " (the RM had it no more)" : "");
      *changed = true;
      continue;
    }
    spdlog::warn("job {}: cancelling reservation {} of a superseded proposal failed, retried: {}",
                 p.record.job.value(), r.reservation_id, st.message());
    left.push_back(r);
  }
  p.payload.retiring = std::move(left);
}

Status InferenceCore::storeAccepted(Proposal& p) {
  p.record.payload_json = encodePayload(p.payload);
  p.record.updated = std::max(p.record.updated, clock_.now());
  return store_.updateProposal(p.record, store::ProposalState::kAccepted);
}

void InferenceCore::retireDueAndStore(Proposal& p) {
  bool changed = false;
  retireDue(p, &changed);
  if (!changed) return;
  if (Status st = storeAccepted(p); !st.isOk()) {
    // The stored list still names them: the next check finds them NOT_FOUND.
    spdlog::warn("proposal {}: retired reservations recorded at the next check: {}",
                 p.record.id.value(), st.message());
  }
}

Result<Proposal> InferenceCore::acceptOneOff(Proposal p,
                                             std::optional<store::ProposalRecord> previous,
                                             const Principal& who, const std::string& placement) {
  if (previous) {
    // Instances the update reserves exactly as before (same id: same window
    // and skyline) carry over, not submitted twice; the others get new
    // one-offs and retirePrevious cancels the old ones.
    auto old = decodePayload(previous->payload_json);
    const uint64_t def = definitionFingerprint(requestOf(p, opts_));
    if (old.isOk() && old->one_off_instances) {
      for (const auto& i : old->instances) {
        if (i.reservation_id == instanceReservationId(p.record.job, i.period_start, def))
          p.payload.instances.push_back(i);
      }
    }
  }
  bool changed = false;
  int submitted = 0;
  Status st = submitInstancesOf(p, &changed, &submitted);
  if (!st.isOk() && submitted == 0) {
    metrics_.signoff_rm_refused.inc();
    return st.withContext("proposal " + p.record.id.value() + " stays pending");
  }
  if (!st.isOk()) {
    const auto refused = std::count_if(p.payload.instances.begin(), p.payload.instances.end(),
                                       [](const auto& i) { return i.state == "refused"; });
    p.payload.warnings.push_back(
        "the RM refused " + std::to_string(refused) + " of the instances due now (first: " +
        st.message() + "); they are listed with the instances and retried at every check");
  }
  p.payload.placement = placement;
  if (previous) retirePrevious(*previous, p.payload, "");
  MORPHEUS_ASSIGN_OR_RETURN(store::ProposalRecord rec, recordAccepted(p, ""));
  if (previous) {
    MORPHEUS_RETURN_IF_ERROR(markSuperseded(*previous));
  }
  Proposal out{rec, p.payload};
  retireDueAndStore(out);
  spdlog::info(
      "proposal {} of job {} accepted by {}: per-instance one-off reservations, {} "
      "submitted now",
      rec.id.value(), rec.job.value(), who.user, submitted);
  metrics_.signoff_accepted.inc();
  return out;
}

Result<Proposal> InferenceCore::acceptPerInstance(Proposal p,
                                                  std::optional<store::ProposalRecord> previous,
                                                  const Principal& who, const Status& refusal) {
  const std::string id = p.record.id.value(), job = p.record.job.value();
  p.payload.one_off_instances = true;
  p.payload.warnings.push_back("the RM refused the recurring reservation (" + refusal.message() +
                               "); each instance gets a one-off reservation where the plan "
                               "has room");
  auto accepted = acceptOneOff(std::move(p), std::move(previous), who,
                               "per-instance one-off reservations (the RM has no room for the "
                               "recurring one at every instance)");
  if (accepted.isOk()) return accepted;
  spdlog::warn("proposal {} of {}: the RM refused the recurring reservation and every instance: {}",
               id, job, accepted.status().message());
  return refusal.withContext("proposal " + id +
                             " stays pending (no instance fits a one-off reservation either)");
}

Result<int> InferenceCore::submitDueInstances() {
  MORPHEUS_ASSIGN_OR_RETURN(auto accepted, store_.listProposals(store::ProposalState::kAccepted));
  int submitted = 0, refusals = 0;
  for (auto& listed : accepted) {
    MORPHEUS_ASSIGN_OR_RETURN(ProposalPayload listed_payload, decodePayload(listed.payload_json));
    if (!listed_payload.one_off_instances && listed_payload.retiring.empty()) continue;
    // Under the job's claim, as it is now: a sign-off may have superseded it
    // or recorded instances since the listing.
    JobClaim claim = claimJob(listed.job);
    MORPHEUS_ASSIGN_OR_RETURN(auto rec, store_.getProposal(listed.id));
    if (!rec || rec->state != store::ProposalState::kAccepted) continue;
    MORPHEUS_ASSIGN_OR_RETURN(ProposalPayload payload, decodePayload(rec->payload_json));
    if (!payload.one_off_instances && payload.retiring.empty()) continue;
    Proposal p{*rec, std::move(payload)};
    bool changed = false;
    if (p.payload.one_off_instances && !submitInstancesOf(p, &changed, &submitted).isOk()) {
      refusals++;  // recorded on the proposal, retried on the next call
    }
    retireDue(p, &changed);
    if (!changed) continue;
    MORPHEUS_RETURN_IF_ERROR(storeAccepted(p));
  }
  if (refusals > 0) {
    spdlog::warn("{} job(s) have instance reservations the RM refused; retried on the next check",
                 refusals);
  }
  return submitted;
}

Result<std::vector<store::RunRecord>> InferenceCore::runsOf(const JobKey& job) {
  return store_.runs(job);
}

Result<SubmittedReservation> InferenceCore::submitRecurring(Proposal& p,
                                                            const std::string& existing) {
  RecurringRequest req = requestOf(p, opts_);
  auto sub = rm_.submit(req, clock_.now(), existing);
  if (sub.isOk() || sub.status().code() != StatusCode::kInfeasible ||
      p.payload.in_order_skyline.empty()) {
    return sub;
  }
  req.skyline = p.payload.in_order_skyline;
  auto in_order = rm_.submit(req, clock_.now(), existing);
  if (!in_order.isOk()) return sub;  // the front-loaded skyline's refusal says more
  p.payload.warnings.push_back(
      "the RM had no room for the front-loaded skyline; the steps in the order the runs showed "
      "are reserved");
  p.payload.skyline = std::move(p.payload.in_order_skyline);
  p.payload.in_order_skyline.clear();
  return in_order;
}

Result<Proposal> InferenceCore::submitAndAccept(Proposal p, const Principal& who) {
  // An update proposal replaces the reservation of the job's accepted proposal.
  std::string existing;
  std::optional<store::ProposalRecord> previous;
  if (p.payload.is_update) {
    MORPHEUS_ASSIGN_OR_RETURN(auto accepted, store_.listProposals(store::ProposalState::kAccepted));
    for (const auto& a : accepted) {
      if (a.job == p.record.job) {
        existing = a.reservation_id;
        previous = a;
      }
    }
  }
  if (p.payload.one_off_instances) {
    return acceptOneOff(std::move(p), previous, who,
                        "per-instance one-off reservations (period does not divide the LCM)");
  }
  if (previous) {
    auto old = decodePayload(previous->payload_json);
    if (old.isOk() && old->one_off_instances) existing.clear();  // no recurring one to update
  }
  auto sub = submitRecurring(p, existing);
  if (!sub.isOk() && sub.status().code() == StatusCode::kInfeasible && existing.empty()) {
    return acceptPerInstance(std::move(p), previous, who, sub.status());
  }
  if (!sub.isOk()) {
    metrics_.signoff_rm_refused.inc();
    spdlog::warn("proposal {} of {}: RM refused the reservation: {}", p.record.id.value(),
                 p.record.job.value(), sub.status().message());
    return sub.status().withContext("proposal " + p.record.id.value() + " stays pending");
  }
  p.payload.placement = sub->placement_summary;
  if (previous) retirePrevious(*previous, p.payload, sub->reservation_id);
  MORPHEUS_ASSIGN_OR_RETURN(store::ProposalRecord rec, recordAccepted(p, sub->reservation_id));
  if (previous) {
    // The reservation is in the RM already: the new proposal stays accepted.
    if (Status st = markSuperseded(*previous); !st.isOk()) {
      spdlog::warn("proposal {} stays accepted next to its successor {}: {}", previous->id.value(),
                   rec.id.value(), st.message());
    }
  }
  Proposal out{rec, p.payload};
  retireDueAndStore(out);
  spdlog::info("proposal {} of job {} accepted by {}: reservation {} ({})", rec.id.value(),
               rec.job.value(), who.user, rec.reservation_id, sub->placement_summary);
  metrics_.signoff_accepted.inc();
  return out;
}

Status InferenceCore::supersede(const store::ProposalRecord& rec, const std::string& reason) {
  store::ProposalRecord r = rec;
  store::ProposalState expected = r.state;
  r.state = store::ProposalState::kSuperseded;
  r.reason = reason;
  r.updated = clock_.now();
  Status st = store_.updateProposal(r, expected);
  bumpGeneration(r.job);
  return st;
}

// Morpheus §4/§5 refit: re-infers every job's SLO from its history and fits
// its skyline from the most recent runs, then compares with what the owner
// has already seen (pending, accepted or rejected proposals).
namespace {

// The runs SLO statistics and fits use: succeeded ones submitted within
// `window` before now, at least the `min_runs` most recent succeeded ones
// (a monthly job still has history). Counts failed and killed runs.
std::vector<store::RunRecord> usableRuns(const std::vector<store::RunRecord>& runs, TimePoint now,
                                         Millis window, int64_t min_runs, int* failed,
                                         int* killed) {
  std::vector<store::RunRecord> ok;
  for (const auto& r : runs) {
    if (r.status == store::RunStatus::kFailed) ++*failed;
    if (r.status == store::RunStatus::kKilled) ++*killed;
    if (r.status == store::RunStatus::kSucceeded) ok.push_back(r);
  }
  // Runs are sorted by submit: keep the window, but never fewer than min_runs.
  size_t first = ok.size();
  while (first > 0 && ok[first - 1].submit >= now - window) first--;
  const size_t floor_runs = static_cast<size_t>(std::max<int64_t>(min_runs, 0));
  if (ok.size() - first < floor_runs) first = ok.size() > floor_runs ? ok.size() - floor_runs : 0;
  return std::vector<store::RunRecord>(ok.begin() + static_cast<std::ptrdiff_t>(first), ok.end());
}

// The widest any of `runs` ran: the most containers in use at one sample.
int64_t widestRun(const std::vector<store::RunRecord>& runs) {
  double most = 0;
  for (const auto& r : runs) {
    for (double c : r.skyline) most = std::max(most, c);
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(most)));
}

// a and d stay as inferred (a is when the input is available): they are never
// widened. A skyline longer than the window d - a is reshaped to it (Morpheus
// §5/§6, inference/model/skyline_reshape.h: same area, higher, shorter and
// front-loaded), up to the widest any fitted run ran, with a warning saying
// so; the compression in order is kept for the RM to get when it has no room
// for the front-loaded one (submitRecurring). When even that width cannot
// hold its area the skyline stays as fitted, with a warning that the RM
// cannot place it, for the owner to override.
void fitToWindow(ProposalPayload& pay, const std::vector<store::RunRecord>& runs, Millis step) {
  const Millis window = pay.deadline_offset - pay.start_offset;
  const Millis need = step * static_cast<int64_t>(pay.skyline.size());
  if (window >= need) return;
  const int64_t widest = widestRun(runs);
  const int64_t window_steps = window.count() / step.count();
  auto in_order = compressSkylineToWindow(pay.skyline, window_steps, widest);
  if (in_order.isOk()) {
    pay.warnings.push_back(
        "skyline (" + std::to_string(need.count() / 1000) + " s) reshaped to the window d - a (" +
        std::to_string(window.count() / 1000) + " s): same area, at most " +
        std::to_string(widest) +
        " containers (the widest run), front-loaded; if the RM has no room for it, the same "
        "steps in the order the runs showed are reserved instead");
    pay.skyline = frontLoaded(*in_order);
    if (*in_order != pay.skyline) pay.in_order_skyline = std::move(*in_order);
    return;
  }
  pay.warnings.push_back(
      "window d - a (" + std::to_string(window.count() / 1000) +
      " s) is shorter than the skyline (" + std::to_string(need.count() / 1000) + " s) even at " +
      std::to_string(widest) +
      " containers (the widest run): the RM cannot place it as proposed; override the start, "
      "deadline or skyline");
}

}  // namespace

Status InferenceCore::stopCheck() const {
  if (stopping_.load()) return unavailable("the inference service is stopping");
  return Status::ok();
}

Result<FitResult> InferenceCore::fit(const std::vector<store::RunRecord>& runs, FitParams params) {
  params.max_samples = opts_.max_fit_samples;
  FitStop caller = std::move(params.stop);
  params.stop = [this, caller]() -> Status {
    MORPHEUS_RETURN_IF_ERROR(stopCheck());
    return caller ? caller() : Status::ok();
  };
  Gauge& running = metrics_.fits_running;
  running.add(1);
  auto out = fitRuns(runs, params);
  running.add(-1);
  if (!out.isOk() && out.status().code() != StatusCode::kInvalidArgument) {
    metrics_.fits_stopped.inc();
  }
  return out;
}

namespace {

// A new proposal refit's compute phase decided on, for its apply phase.
struct PlannedProposal {
  JobKey job;
  std::string owner;  // the job's established owner, "unknown" without one
  ProposalPayload payload;
  double peak = 0;                               // for the log
  std::optional<store::ProposalRecord> pending;  // the one it supersedes
  bool auto_accept = false;                      // the accepted one it updates opted in
};

}  // namespace

Result<int> InferenceCore::refit() {
  // Phase 1, snapshot (under mu_): wait out a running refit, then the
  // generations the results will be checked against. Taken before anything
  // is read from the store, so every change the reads may miss bumps a
  // generation after it.
  std::map<JobKey, uint64_t> generations;
  std::function<void()> hook;
  {
    MutexLock lk(mu_);
    claims_cv_.wait(mu_, [this]() REQUIRES(mu_) { return !refit_running_; });
    refit_running_ = true;
    generations = generation_;
    hook = refit_hook_;
  }
  struct RunningRefit {
    InferenceCore* core;
    ~RunningRefit() {
      {
        MutexLock lk(core->mu_);
        core->refit_running_ = false;
      }
      core->claims_cv_.notify_all();
    }
  } running{this};
  auto started = std::chrono::steady_clock::now();

  // Phase 2, compute (no lock held): read the store, infer, fit, decide.
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<JobKey> jobs, store_.jobs());
  std::vector<JobHistory> histories;
  std::vector<std::pair<int, int>> excluded;  // failed, killed runs per job
  std::set<std::string> paths;
  for (const auto& job : jobs) {
    JobHistory h;
    h.job = job;
    MORPHEUS_ASSIGN_OR_RETURN(auto all_runs, store_.runs(job));
    auto& [failed, killed] = excluded.emplace_back(0, 0);
    // Morpheus §4/§5 learn from runs that did their work, recent ones.
    h.runs =
        usableRuns(all_runs, clock_.now(), opts_.history_window, opts_.min_runs, &failed, &killed);
    MORPHEUS_ASSIGN_OR_RETURN(h.events, store_.eventsOfJob(job));
    for (const auto& e : h.events) paths.insert(e.path);
    histories.push_back(std::move(h));
  }
  MORPHEUS_ASSIGN_OR_RETURN(
      std::vector<store::FileEvent> path_events,
      store_.eventsOnPaths(std::vector<std::string>(paths.begin(), paths.end())));
  // Owners decide whose provenance speaks for a job and who signs off.
  JobOwners owners;
  std::set<JobKey> named(jobs.begin(), jobs.end());
  for (const auto& e : path_events) named.insert(e.job);
  for (const auto& job : named) {
    MORPHEUS_ASSIGN_OR_RETURN(auto owner, store_.jobOwner(job));
    if (owner) owners[job] = *owner;
  }
  SloParams slo_params = opts_.slo;
  slo_params.min_runs = opts_.min_runs;
  slo_params.step = opts_.step;
  std::vector<SloVerdict> verdicts = inferSlos(histories, path_events, slo_params, {}, &owners);
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<store::ProposalRecord> all,
                            store_.listProposals(std::nullopt));

  std::vector<NotActionable> not_actionable;
  std::vector<PlannedProposal> planned;
  for (size_t j = 0; j < verdicts.size(); j++) {
    const SloVerdict& v = verdicts[j];
    const JobHistory& h = histories[j];
    const auto [failed, killed] = excluded[j];
    if (!v.slo) {
      std::string why = v.reason;
      if (failed + killed > 0) {
        why += " (succeeded runs only; " + std::to_string(failed) + " failed and " +
               std::to_string(killed) + " killed run(s) not used)";
      }
      not_actionable.push_back({v.job, why});
      continue;
    }
    size_t first = h.runs.size() > static_cast<size_t>(opts_.history_runs)
                       ? h.runs.size() - static_cast<size_t>(opts_.history_runs)
                       : 0;
    std::vector<store::RunRecord> recent(h.runs.begin() + static_cast<std::ptrdiff_t>(first),
                                         h.runs.end());
    FitParams fp;
    fp.step = opts_.step;
    fp.alpha = opts_.alpha;
    fp.beta = opts_.beta;
    fp.beta_relative = opts_.beta_relative;
    fp.min_runs = opts_.min_runs;
    fp.sample = opts_.sample;
    fp.max_samples = opts_.max_fit_samples;
    fp.stop = [this] { return stopCheck(); };
    auto fit = fitRuns(recent, fp);
    if (Status st = stopCheck(); !st.isOk()) return st;
    if (!fit.isOk()) {
      not_actionable.push_back({v.job, "skyline fit failed: " + fit.status().message()});
      continue;
    }
    ProposalPayload pay;
    pay.period = v.slo->period;
    pay.start_offset = v.slo->start_offset;
    pay.deadline_offset = v.slo->deadline_offset;
    pay.step = opts_.step;
    pay.skyline = fit->skyline;
    while (!pay.skyline.empty() && pay.skyline.back() == 0) pay.skyline.pop_back();
    if (pay.skyline.empty()) {
      not_actionable.push_back({v.job, "its runs use no containers"});
      continue;
    }
    fitToWindow(pay, recent, opts_.step);
    pay.one_off_instances = v.slo->one_off_instances;
    pay.runs_failed = failed;
    pay.runs_killed = killed;
    pay.container = recent.back().container;
    int64_t area = 0;
    for (auto c : pay.skyline) area += c;
    pay.budget_container_ms =
        static_cast<int64_t>(std::llround(opts_.budget_fraction * static_cast<double>(area) *
                                          static_cast<double>(opts_.step.count())));
    pay.over_allocation = fit->over_allocation;
    pay.under_allocation = fit->under_allocation;
    pay.epsilon = fit->epsilon;
    pay.runs_used = fit->runs_used;
    pay.problematic = v.slo->problematic;
    ProposalFingerprint fpr = fingerprintOf(pay);
    pay.fingerprint = encodeFingerprint(fpr);

    const store::ProposalRecord* accepted = nullptr;
    const store::ProposalRecord* pending = nullptr;
    for (const auto& r : all) {
      if (r.job != v.job) continue;
      if (r.state == store::ProposalState::kAccepted) accepted = &r;
      if (r.state == store::ProposalState::kPending) pending = &r;
    }
    auto differs = [&](const store::ProposalRecord& r) {
      auto old = decodePayload(r.payload_json);
      return !old.isOk() || materiallyDifferent(fingerprintOf(*old), fpr, opts_.drift_threshold);
    };
    if (accepted && !differs(*accepted)) continue;
    if (pending && !differs(*pending)) continue;
    if (!accepted) {
      MORPHEUS_ASSIGN_OR_RETURN(auto rejected_fp, store_.rejectFingerprint(v.job));
      if (rejected_fp) {
        auto old = decodeFingerprint(*rejected_fp);
        if (old && !materiallyDifferent(*old, fpr, opts_.drift_threshold)) {
          not_actionable.push_back({v.job, "owner rejected the proposal; history unchanged since"});
          continue;
        }
      }
    }
    pay.is_update = accepted != nullptr;
    PlannedProposal plan;
    plan.job = v.job;
    // The job's established owner (the store's), never the latest run's user.
    auto owner = owners.find(v.job);
    plan.owner = owner == owners.end() || owner->second.empty() ? "unknown" : owner->second;
    plan.payload = std::move(pay);
    plan.peak = fpr.peak;
    if (pending) plan.pending = *pending;
    plan.auto_accept = accepted && accepted->auto_update;
    planned.push_back(std::move(plan));
  }
  if (hook) hook();

  // Phase 3, apply: each job's new proposal under its claim, only while its
  // generation is the snapshot's (compare-and-apply; see the header).
  int created = 0, stale = 0;
  for (auto& plan : planned) {
    auto gen = generations.find(plan.job);
    std::optional<JobClaim> claim =
        claimJobIfUnchanged(plan.job, gen == generations.end() ? 0 : gen->second);
    if (!claim) {
      stale++;
      spdlog::info(
          "refit: job {} changed while its proposal was computed; the next refit "
          "decides it again",
          plan.job.value());
      continue;
    }
    const ProposalPayload& pay = plan.payload;
    Proposal p;
    p.record.id = newProposalId();
    p.record.job = plan.job;
    p.record.owner = plan.owner;
    p.record.state = store::ProposalState::kPending;
    p.record.created = clock_.now();
    p.record.updated = p.record.created;
    p.record.payload_json = encodePayload(pay);
    p.payload = pay;
    if (plan.pending)
      MORPHEUS_RETURN_IF_ERROR(supersede(*plan.pending, "replaced by " + p.record.id.value()));
    Status inserted = store_.insertProposal(p.record);
    bumpGeneration(plan.job);
    MORPHEUS_RETURN_IF_ERROR(inserted);
    created++;
    spdlog::info(
        "proposal {} for job {} (owner {}): period {} ms, window [{}, {}] ms, {} steps, peak {}{}",
        p.record.id.value(), plan.job.value(), p.record.owner, pay.period.count(),
        pay.start_offset.count(), pay.deadline_offset.count(), pay.skyline.size(), plan.peak,
        pay.is_update ? " (update of an accepted SLO)" : "");
    (pay.is_update ? metrics_.proposals_update : metrics_.proposals_new).inc();
    if (plan.auto_accept) {
      p.record.auto_update = true;
      auto r = submitAndAccept(p, Principal{"morpheus-inference", true});
      if (!r.isOk()) {
        spdlog::warn("automatic update of job {} failed, proposal {} stays pending: {}",
                     plan.job.value(), p.record.id.value(), r.status().message());
      }
    }
  }
  size_t not_actionable_count = not_actionable.size();
  {
    MutexLock lk(mu_);
    not_actionable_ = std::move(not_actionable);
  }
  metrics_.jobs_not_actionable.set(static_cast<double>(not_actionable_count));
  spdlog::info("refit: {} job(s), {} new proposal(s), {} stale, {} not actionable, {:.0f} ms",
               jobs.size(), created, stale, not_actionable_count,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                   .count());
  return created;
}

Result<Proposal> InferenceCore::accept(const ProposalId& id, const Principal& who,
                                       bool auto_update) {
  MORPHEUS_ASSIGN_OR_RETURN(auto claimed, loadPendingForSignOff(id, who, "accept"));
  Proposal& p = claimed.first;
  p.record.auto_update = auto_update;
  return submitAndAccept(std::move(p), who);
}

Result<Proposal> InferenceCore::override(const ProposalId& id, const Principal& who,
                                         const OverrideParams& o) {
  MORPHEUS_ASSIGN_OR_RETURN(auto claimed, loadPendingForSignOff(id, who, "override"));
  Proposal& p = claimed.first;
  if (o.deadline_offset) {
    if (o.deadline_offset->count() <= 0 || *o.deadline_offset > p.payload.period) {
      return invalidArgument("deadline_offset_ms", "must be in (0, period]");
    }
    p.payload.deadline_offset = *o.deadline_offset;
  }
  if (o.start_offset) {
    if (o.start_offset->count() < 0) return invalidArgument("start_offset_ms", "must be >= 0");
    p.payload.start_offset = *o.start_offset;
  }
  if (p.payload.start_offset >= p.payload.deadline_offset) {
    return invalidArgument("start_offset_ms", "must be before the deadline offset");
  }
  if (o.skyline) {
    for (size_t i = 0; i < o.skyline->size(); i++) {
      if ((*o.skyline)[i] < 0)
        return invalidArgument("skyline[" + std::to_string(i) + "]", "must be >= 0");
    }
    if (o.skyline->empty()) return invalidArgument("skyline", "must not be empty");
    p.payload.skyline = *o.skyline;
  }
  if (o.skyline_scale) {
    if (!(*o.skyline_scale > 0)) return invalidArgument("skyline_scale", "must be > 0");
    for (auto& v : p.payload.skyline)
      v = static_cast<int64_t>(std::ceil(static_cast<double>(v) * *o.skyline_scale));
  }
  if (o.budget_container_ms) {
    if (*o.budget_container_ms < 0)
      return invalidArgument("reprovision_budget_container_ms", "must be >= 0");
    p.payload.budget_container_ms = *o.budget_container_ms;
  }
  // The owner's skyline or window is the one to reserve, or none.
  if (o.skyline || o.skyline_scale || o.deadline_offset || o.start_offset) {
    p.payload.in_order_skyline.clear();
  }
  return submitAndAccept(std::move(p), who);
}

Result<Proposal> InferenceCore::reject(const ProposalId& id, const Principal& who,
                                       const std::string& reason) {
  MORPHEUS_ASSIGN_OR_RETURN(auto claimed, loadPendingForSignOff(id, who, "reject"));
  const Proposal& p = claimed.first;
  store::ProposalRecord rec = p.record;
  rec.state = store::ProposalState::kRejected;
  rec.reason = reason.empty() ? "rejected by " + who.user : reason;
  rec.updated = clock_.now();
  Status st = store_.updateProposal(rec, store::ProposalState::kPending);
  bumpGeneration(rec.job);
  MORPHEUS_RETURN_IF_ERROR(st);
  // Remembered until the job's history changes materially (refit compares fingerprints).
  st = store_.setRejectFingerprint(rec.job, p.payload.fingerprint);
  bumpGeneration(rec.job);
  MORPHEUS_RETURN_IF_ERROR(st);
  spdlog::info("proposal {} of job {} rejected by {}: {}", id.value(), rec.job.value(), who.user,
               rec.reason);
  metrics_.signoff_rejected.inc();
  return Proposal{rec, p.payload};
}

}  // namespace morpheus::inference
