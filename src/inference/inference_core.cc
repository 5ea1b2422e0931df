#include "inference/inference_core.h"

#include "common/auth.h"
#include "inference/run_import.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace morpheus::inference {

using nlohmann::json;

std::string encodePayload(const ProposalPayload& p) {
  return json({{"period_ms", p.period.count()},
               {"start_offset_ms", p.start_offset.count()},
               {"deadline_offset_ms", p.deadline_offset.count()},
               {"step_ms", p.step.count()},
               {"skyline", p.skyline},
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

InferenceCore::InferenceCore(InferenceCoreOptions opts, store::ProvenanceStore& store,
                             RmReservationClient& rm, Clock& clock, MetricsRegistry& metrics)
    : opts_(std::move(opts)), store_(store), rm_(rm), clock_(clock), metrics_(metrics) {}

Status InferenceCore::ingest(const store::IngestBatch& batch) {
  for (size_t i = 0; i < batch.runs.size(); i++) {
    MORPHEUS_RETURN_IF_ERROR(validateRun(batch.runs[i], "runs[" + std::to_string(i) + "]"));
  }
  for (size_t i = 0; i < batch.events.size(); i++) {
    MORPHEUS_RETURN_IF_ERROR(validateEvent(batch.events[i], "events[" + std::to_string(i) + "]"));
  }
  MORPHEUS_RETURN_IF_ERROR(store_.ingest(batch));
  metrics_.counter("morpheus_inference_runs_ingested_total", "Runs ingested")
      .inc(static_cast<double>(batch.runs.size()));
  metrics_.counter("morpheus_inference_events_ingested_total", "Provenance events ingested")
      .inc(static_cast<double>(batch.events.size()));
  return Status::ok();
}

Status InferenceCore::mayAddToJob(const Principal& who, const JobKey& job,
                                  const std::string& what) {
  if (who.admin) return Status::ok();
  MORPHEUS_ASSIGN_OR_RETURN(auto runs, store_.runs(job));
  for (const auto& r : runs) {
    if (r.user != who.user) {
      return permissionDenied(what + ": " + who.user + " may not add to job " + job.value() +
                              ", whose run " + r.run.value() + " belongs to " + r.user +
                              " (only an admin may change a job's owner)");
    }
  }
  return Status::ok();
}

Status InferenceCore::ingestAs(const Principal& who, const store::IngestBatch& batch) {
  std::lock_guard<std::mutex> lk(ingest_mu_);
  std::set<JobKey> checked;
  for (size_t i = 0; i < batch.runs.size(); i++) {
    const auto& r = batch.runs[i];
    std::string f = "runs[" + std::to_string(i) + "]";
    if (!who.admin && r.user != who.user) {
      return permissionDenied(f + ".user: " + who.user + " may not import runs as " + r.user);
    }
    if (checked.insert(r.job).second) MORPHEUS_RETURN_IF_ERROR(mayAddToJob(who, r.job, f));
  }
  for (size_t i = 0; i < batch.events.size(); i++) {
    const auto& e = batch.events[i];
    if (checked.insert(e.job).second) {
      MORPHEUS_RETURN_IF_ERROR(mayAddToJob(who, e.job, "events[" + std::to_string(i) + "]"));
    }
  }
  return ingest(batch);
}

ProposalId InferenceCore::newProposalId() {
  char buf[64];
  std::snprintf(buf, sizeof buf, "p_%lld_%llu", static_cast<long long>(toEpochMs(clock_.now())),
                static_cast<unsigned long long>(next_seq_++));
  return ProposalId(buf);
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
  std::lock_guard<std::mutex> lk(mu_);
  return not_actionable_;
}

Result<Proposal> InferenceCore::proposal(const ProposalId& id) { return load(id); }

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
  RecurringRequest req;
  req.job_key = p.record.job.value();
  req.owner = p.record.owner;
  req.queue = opts_.queue;
  req.period = p.payload.period;
  req.start_offset = p.payload.start_offset;
  req.deadline_offset = p.payload.deadline_offset;
  req.step = p.payload.step;
  req.skyline = p.payload.skyline;
  req.container = p.payload.container;
  req.budget_container_ms = p.payload.budget_container_ms;
  req.problematic = p.payload.problematic;
  auto sub = rm_.submit(req, clock_.now(), existing);
  if (!sub.isOk()) {
    metrics_
        .counter("morpheus_inference_signoff_total", "Sign-off outcomes",
                 {{"outcome", "rm-refused"}})
        .inc();
    spdlog::warn("proposal {} of {}: RM refused the reservation: {}", p.record.id.value(),
                 p.record.job.value(), sub.status().message());
    return sub.status().withContext("proposal " + p.record.id.value() + " stays pending");
  }
  p.payload.placement = sub->placement_summary;
  store::ProposalRecord rec = p.record;
  store::ProposalState expected = rec.state;
  rec.state = store::ProposalState::kAccepted;
  rec.reservation_id = sub->reservation_id;
  rec.updated = clock_.now();
  rec.payload_json = encodePayload(p.payload);
  MORPHEUS_RETURN_IF_ERROR(store_.updateProposal(rec, expected));
  if (previous) {
    store::ProposalRecord old = *previous;
    old.state = store::ProposalState::kSuperseded;
    old.updated = clock_.now();
    (void)store_.updateProposal(old, store::ProposalState::kAccepted);
  }
  spdlog::info("proposal {} of job {} accepted by {}: reservation {} ({})", rec.id.value(),
               rec.job.value(), who.user, rec.reservation_id, sub->placement_summary);
  metrics_
      .counter("morpheus_inference_signoff_total", "Sign-off outcomes", {{"outcome", "accepted"}})
      .inc();
  return Proposal{rec, p.payload};
}

Status InferenceCore::supersede(const store::ProposalRecord& rec, const std::string& reason) {
  store::ProposalRecord r = rec;
  store::ProposalState expected = r.state;
  r.state = store::ProposalState::kSuperseded;
  r.reason = reason;
  r.updated = clock_.now();
  return store_.updateProposal(r, expected);
}

// Morpheus §4/§5 refit: re-infers every job's SLO from its history and fits
// its skyline from the most recent runs, then compares with what the owner
// has already seen (pending, accepted or rejected proposals).
Result<int> InferenceCore::refit() {
  std::lock_guard<std::mutex> lk(mu_);
  auto started = std::chrono::steady_clock::now();
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<JobKey> jobs, store_.jobs());
  std::vector<JobHistory> histories;
  std::set<std::string> paths;
  for (const auto& job : jobs) {
    JobHistory h;
    h.job = job;
    MORPHEUS_ASSIGN_OR_RETURN(h.runs, store_.runs(job));
    MORPHEUS_ASSIGN_OR_RETURN(h.events, store_.eventsOfJob(job));
    for (const auto& e : h.events) paths.insert(e.path);
    histories.push_back(std::move(h));
  }
  MORPHEUS_ASSIGN_OR_RETURN(
      std::vector<store::FileEvent> path_events,
      store_.eventsOnPaths(std::vector<std::string>(paths.begin(), paths.end())));
  SloParams slo_params = opts_.slo;
  slo_params.min_runs = opts_.min_runs;
  std::vector<SloVerdict> verdicts = inferSlos(histories, path_events, slo_params);
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<store::ProposalRecord> all,
                            store_.listProposals(std::nullopt));

  std::vector<NotActionable> not_actionable;
  int created = 0;
  for (size_t j = 0; j < verdicts.size(); j++) {
    const SloVerdict& v = verdicts[j];
    const JobHistory& h = histories[j];
    if (!v.slo) {
      not_actionable.push_back({v.job, v.reason});
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
    auto fit = fitRuns(recent, fp);
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
    // The window must hold the skyline: widen it towards the period start if needed.
    Millis need = opts_.step * static_cast<int64_t>(pay.skyline.size());
    if (pay.deadline_offset - pay.start_offset < need) {
      if (pay.deadline_offset < need) {
        not_actionable.push_back({v.job, "deadline d leaves less room than the skyline needs (" +
                                             std::to_string(need.count() / 1000) + " s)"});
        continue;
      }
      pay.start_offset = pay.deadline_offset - need;
    }
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
    Proposal p;
    p.record.id = newProposalId();
    p.record.job = v.job;
    p.record.owner = h.runs.back().user.empty() ? "unknown" : h.runs.back().user;
    p.record.state = store::ProposalState::kPending;
    p.record.created = clock_.now();
    p.record.updated = p.record.created;
    p.record.payload_json = encodePayload(pay);
    p.payload = pay;
    if (pending)
      MORPHEUS_RETURN_IF_ERROR(supersede(*pending, "replaced by " + p.record.id.value()));
    MORPHEUS_RETURN_IF_ERROR(store_.insertProposal(p.record));
    created++;
    spdlog::info(
        "proposal {} for job {} (owner {}): period {} ms, window [{}, {}] ms, {} steps, peak {}{}",
        p.record.id.value(), v.job.value(), p.record.owner, pay.period.count(),
        pay.start_offset.count(), pay.deadline_offset.count(), pay.skyline.size(), fpr.peak,
        pay.is_update ? " (update of an accepted SLO)" : "");
    metrics_
        .counter("morpheus_inference_proposals_total", "Proposals created",
                 {{"kind", pay.is_update ? "update" : "new"}})
        .inc();
    if (accepted && accepted->auto_update) {
      p.record.auto_update = true;
      auto r = submitAndAccept(p, Principal{"morpheus-inference", true});
      if (!r.isOk()) {
        spdlog::warn("automatic update of job {} failed, proposal {} stays pending: {}",
                     v.job.value(), p.record.id.value(), r.status().message());
      }
    }
  }
  not_actionable_ = std::move(not_actionable);
  metrics_
      .gauge("morpheus_inference_jobs_not_actionable",
             "Jobs without a proposal after the last refit")
      .set(static_cast<double>(not_actionable_.size()));
  spdlog::info("refit: {} job(s), {} new proposal(s), {} not actionable, {:.0f} ms", jobs.size(),
               created, not_actionable_.size(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                   .count());
  return created;
}

Result<Proposal> InferenceCore::accept(const ProposalId& id, const Principal& who,
                                       bool auto_update) {
  std::lock_guard<std::mutex> lk(mu_);
  MORPHEUS_ASSIGN_OR_RETURN(Proposal p, load(id));
  MORPHEUS_RETURN_IF_ERROR(
      Authenticator::mayActFor(who, p.record.owner, "accept proposal " + id.value()));
  if (p.record.state != store::ProposalState::kPending) {
    return infeasible("proposal " + id.value() + " is not pending");
  }
  p.record.auto_update = auto_update;
  return submitAndAccept(std::move(p), who);
}

Result<Proposal> InferenceCore::override(const ProposalId& id, const Principal& who,
                                         const OverrideParams& o) {
  std::lock_guard<std::mutex> lk(mu_);
  MORPHEUS_ASSIGN_OR_RETURN(Proposal p, load(id));
  MORPHEUS_RETURN_IF_ERROR(
      Authenticator::mayActFor(who, p.record.owner, "override proposal " + id.value()));
  if (p.record.state != store::ProposalState::kPending) {
    return infeasible("proposal " + id.value() + " is not pending");
  }
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
  return submitAndAccept(std::move(p), who);
}

Result<Proposal> InferenceCore::reject(const ProposalId& id, const Principal& who,
                                       const std::string& reason) {
  std::lock_guard<std::mutex> lk(mu_);
  MORPHEUS_ASSIGN_OR_RETURN(Proposal p, load(id));
  MORPHEUS_RETURN_IF_ERROR(
      Authenticator::mayActFor(who, p.record.owner, "reject proposal " + id.value()));
  if (p.record.state != store::ProposalState::kPending) {
    return infeasible("proposal " + id.value() + " is not pending");
  }
  store::ProposalRecord rec = p.record;
  rec.state = store::ProposalState::kRejected;
  rec.reason = reason.empty() ? "rejected by " + who.user : reason;
  rec.updated = clock_.now();
  MORPHEUS_RETURN_IF_ERROR(store_.updateProposal(rec, store::ProposalState::kPending));
  // Remembered until the job's history changes materially (refit compares fingerprints).
  MORPHEUS_RETURN_IF_ERROR(store_.setRejectFingerprint(rec.job, p.payload.fingerprint));
  spdlog::info("proposal {} of job {} rejected by {}: {}", id.value(), rec.job.value(), who.user,
               rec.reason);
  metrics_
      .counter("morpheus_inference_signoff_total", "Sign-off outcomes", {{"outcome", "rejected"}})
      .inc();
  return Proposal{rec, p.payload};
}

}  // namespace morpheus::inference
