#include "cli/cmd_slo.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/config.h"
#include "common/wire.h"
#include "morpheus/v1/inference.grpc.pb.h"

namespace morpheus::cli {

using nlohmann::json;

namespace {

std::unique_ptr<v1::InferenceService::Stub> stub(const CliContext& ctx) {
  return v1::InferenceService::NewStub(inferenceChannel(ctx));
}

std::unique_ptr<grpc::ClientContext> authed(const CliContext& ctx, Millis timeout) {
  auto c = authedContext(ctx, timeout);
  return c;
}

void check(const grpc::Status& st, const CliContext& ctx) {
  if (!st.ok()) failRemote(fromGrpc(st), "inference at " + ctx.inference_address);
}

const char* stateName(v1::ProposalState s) {
  switch (s) {
    case v1::PROPOSAL_PENDING:
      return "pending";
    case v1::PROPOSAL_ACCEPTED:
      return "accepted";
    case v1::PROPOSAL_REJECTED:
      return "rejected";
    case v1::PROPOSAL_SUPERSEDED:
      return "superseded";
    default:
      return "unknown";
  }
}

json proposalJson(const v1::Proposal& p) {
  json sky = json::array();
  for (auto v : p.skyline()) sky.push_back(v);
  json instances = json::array();
  for (const auto& i : p.instances()) {
    json o = {{"reservation_id", i.reservation_id()}, {"state", i.state()}, {"detail", i.detail()}};
    setTime(o, "arrival", i.arrival_ms());
    setTime(o, "deadline", i.deadline_ms());
    if (!i.replaces().empty()) o["replaces"] = i.replaces();
    instances.push_back(std::move(o));
  }
  json warnings = json::array();
  for (const auto& w : p.warnings()) warnings.push_back(w);
  json j = {{"proposal_id", p.proposal_id()},
            {"one_off_instances", p.one_off_instances()},
            {"instances", instances},
            {"warnings", warnings},
            {"runs_failed", p.runs_failed()},
            {"runs_killed", p.runs_killed()},
            {"job_key", p.job_key()},
            {"owner", p.owner()},
            {"state", stateName(p.state())},
            {"period_ms", p.slo().period_ms()},
            {"start_offset_ms", p.slo().start_offset_ms()},
            {"deadline_offset_ms", p.slo().deadline_offset_ms()},
            {"step_ms", p.step_ms()},
            {"skyline", sky},
            {"container",
             {{"memory_mib", p.container().memory_mib()}, {"vcores", p.container().vcores()}}},
            {"reprovision_budget_container_ms", p.reprovision_budget_container_ms()},
            {"over_allocation", p.over_allocation()},
            {"under_allocation", p.under_allocation()},
            {"epsilon", p.epsilon()},
            {"runs_used", p.runs_used()},
            {"problematic", p.problematic()},
            {"is_update", p.is_update()},
            {"reservation_id", p.reservation_id()},
            {"placement", p.placement_summary()}};
  setTime(j, "next_instance_arrival", p.next_instance_arrival_ms());
  return j;
}

std::string dur(int64_t ms) { return humanDuration(ms); }

void printProposal(const v1::Proposal& p) {
  int64_t peak = 0, area = 0;
  for (auto v : p.skyline()) {
    peak = std::max<int64_t>(peak, v);
    area += v;
  }
  std::printf("proposal %s for job %s (owner %s): %s%s\n", p.proposal_id().c_str(),
              p.job_key().c_str(), p.owner().c_str(), stateName(p.state()),
              p.is_update() ? " (update of an accepted SLO)" : "");
  std::printf("  SLO: every %s, start after +%s, deadline +%s (offsets from the period start)\n",
              dur(p.slo().period_ms()).c_str(), dur(p.slo().start_offset_ms()).c_str(),
              dur(p.slo().deadline_offset_ms()).c_str());
  for (const auto& w : p.warnings()) std::printf("  WARNING: %s\n", w.c_str());
  if (p.one_off_instances()) {
    std::printf(
        "  reservations: per-instance one-off reservations (the period does not divide the "
        "plan's LCM), each submitted ahead of its window; next instance %s .. %s\n",
        formatTime(p.next_instance_arrival_ms()).c_str(),
        formatTime(p.next_instance_arrival_ms() - p.slo().start_offset_ms() +
                   p.slo().deadline_offset_ms())
            .c_str());
    for (const auto& i : p.instances()) {
      std::printf("    instance %s .. %s: %s %s%s%s\n", formatTime(i.arrival_ms()).c_str(),
                  formatTime(i.deadline_ms()).c_str(), i.state().c_str(),
                  i.reservation_id().c_str(), i.detail().empty() ? "" : " - ", i.detail().c_str());
      if (!i.replaces().empty()) {
        std::printf("      still reserved by the superseded %s until this one is held\n",
                    i.replaces().c_str());
      }
    }
  }
  std::printf(
      "  skyline: %d steps of %s, peak %lld containers, area %lld container-steps; "
      "container %s\n",
      p.skyline_size(), dur(p.step_ms()).c_str(), static_cast<long long>(peak),
      static_cast<long long>(area),
      formatResource(p.container().memory_mib(), p.container().vcores()).c_str());
  std::printf("  fit over %d runs: over-allocation %.3f, under-allocation %.3f, eps %.4f%s\n",
              p.runs_used(), p.over_allocation(), p.under_allocation(), p.epsilon(),
              p.problematic() ? "; problematic (alignment penalty)" : "");
  if (p.runs_failed() + p.runs_killed() > 0) {
    std::printf(
        "  history: %d failed and %d killed run(s) stored but not fitted "
        "('morpheusctl slo history %s')\n",
        p.runs_failed(), p.runs_killed(), p.job_key().c_str());
  }
  std::printf("  reprovisioning budget: %s of container time\n",
              dur(p.reprovision_budget_container_ms()).c_str());
  if (!p.reservation_id().empty()) std::printf("  reservation: %s\n", p.reservation_id().c_str());
  if (!p.placement_summary().empty())
    std::printf("  placement: %s\n", p.placement_summary().c_str());
}

void respond(const v1::SignOffResponse& r, bool json_out, const char* verb) {
  if (json_out) {
    printJson("proposals", proposalJson(r.proposal()));
  } else {
    std::printf("%s.\n", verb);
    printProposal(r.proposal());
  }
}

// A sign-off (accept, override, reject) of a proposal that is no longer
// pending: the service says only that; say what the proposal is now and what
// leads somewhere from there.
void checkSignOff(const grpc::Status& st, const CliContext& ctx, const std::string& id) {
  if (st.ok()) return;
  Status s = fromGrpc(st);
  if (s.code() != StatusCode::kInfeasible ||
      s.message().find("is not pending") == std::string::npos) {
    check(st, ctx);
  }
  v1::GetProposalRequest req;
  req.set_proposal_id(id);
  v1::Proposal p;
  if (!stub(ctx)->GetProposal(authed(ctx, Millis(10000)).get(), req, &p).ok()) check(st, ctx);
  std::string what;
  switch (p.state()) {
    case v1::PROPOSAL_ACCEPTED:
      what = "it was accepted" +
             (p.reservation_id().empty() ? std::string()
                                         : " and runs as reservation " + p.reservation_id()) +
             ". To change the running SLO, change its reservation ('morpheusctl reservation show " +
             (p.reservation_id().empty() ? "ID" : p.reservation_id()) +
             "', then 'morpheusctl reservation update ID -f FILE'), or delete it and sign off the "
             "proposal the next refit makes ('morpheusctl slo list --job " +
             p.job_key() + "')";
      break;
    case v1::PROPOSAL_SUPERSEDED:
      what = "a newer proposal of job " + p.job_key() +
             " replaced it: sign that one off ('morpheusctl slo list --job " + p.job_key() + "')";
      break;
    case v1::PROPOSAL_REJECTED:
      what =
          "it was rejected; the job stays on fair share until its history changes and a "
          "refit proposes again ('morpheusctl slo list --job " +
          p.job_key() + "')";
      break;
    default:
      check(st, ctx);
  }
  failRemote(Status(s.code(), s.message() + ": " + what), "inference at " + ctx.inference_address);
}

std::vector<int64_t> readSkylineFile(const std::string& path) {
  requireReadable(path, "skyline file", "--skyline-file");
  std::ifstream in(path);
  std::vector<int64_t> out;
  std::string tok;
  int n = 0;
  while (in >> tok) {
    n++;
    if (tok.back() == ',') tok.pop_back();
    try {
      size_t pos = 0;
      int64_t v = std::stoll(tok, &pos);
      if (pos != tok.size() || v < 0) throw std::invalid_argument(tok);
      out.push_back(v);
    } catch (const std::exception&) {
      failWith(invalidArgument("--skyline-file", "value " + std::to_string(n) + " ('" + tok +
                                                     "') is not a non-negative integer"));
    }
  }
  if (out.empty()) failWith(invalidArgument("--skyline-file", "no values"));
  return out;
}

}  // namespace

void addSloCommands(CLI::App& root, CliContext& ctx) {
  auto* slo = root.add_subcommand("slo", "Inferred SLO proposals and their sign-off");
  slo->require_subcommand(1);
  auto id = std::make_shared<std::string>();
  auto state = std::make_shared<std::string>("all");

  auto job_filter = std::make_shared<std::string>();
  auto why = std::make_shared<bool>(false);
  auto* list =
      slo->add_subcommand("list", "Proposals, and how many jobs have none (--why: each and why)");
  list->add_option("--state", *state, "pending|accepted|rejected|superseded|all, any case")
      ->transform(CLI::IsMember({"pending", "accepted", "rejected", "superseded", "all"},
                                CLI::ignore_case));
  list->add_option("--job", *job_filter, "Only this job (recurrence key); unknown jobs are errors");
  list->add_flag("--why", *why, "Also list each job without a proposal and why");
  list->callback([&ctx, state, job_filter, why] {
    v1::ListProposalsRequest req;
    if (*state == "pending") req.set_state(v1::PROPOSAL_PENDING);
    if (*state == "accepted") req.set_state(v1::PROPOSAL_ACCEPTED);
    if (*state == "rejected") req.set_state(v1::PROPOSAL_REJECTED);
    if (*state == "superseded") req.set_state(v1::PROPOSAL_SUPERSEDED);
    v1::ListProposalsResponse resp;
    check(stub(ctx)->ListProposals(authed(ctx, Millis(10000)).get(), req, &resp), ctx);
    std::vector<const v1::Proposal*> proposals;
    std::vector<const v1::NonActionableJob*> none;
    for (const auto& p : resp.proposals()) {
      if (job_filter->empty() || p.job_key() == *job_filter) proposals.push_back(&p);
    }
    for (const auto& n : resp.not_actionable()) {
      if (job_filter->empty() || n.job_key() == *job_filter) none.push_back(&n);
    }
    if (!job_filter->empty() && proposals.empty() && none.empty()) {
      bool known = false;  // a proposal in another state
      if (*state != "all") {
        v1::ListProposalsResponse all;
        check(stub(ctx)->ListProposals(authed(ctx, Millis(10000)).get(), v1::ListProposalsRequest(),
                                       &all),
              ctx);
        for (const auto& p : all.proposals()) known = known || p.job_key() == *job_filter;
      }
      if (!known) {
        failWith(notFound("--job: the inference service knows no job '" + *job_filter +
                          "' (no runs, no proposal); 'morpheusctl slo list --why' lists the jobs "
                          "it knows"));
      }
    }
    if (ctx.json) {
      json arr = json::array(), na = json::array();
      for (const auto* p : proposals) arr.push_back(proposalJson(*p));
      for (const auto* n : none) na.push_back({{"job_key", n->job_key()}, {"reason", n->reason()}});
      printJson("proposals", arr, json{{"not_actionable", na}});
      return;
    }
    Table t({"PROPOSAL", "JOB", "OWNER", "STATE", "PERIOD", "START", "DEADLINE", "PEAK",
             "RESERVATIONS"});
    for (const auto* pp : proposals) {
      const v1::Proposal& p = *pp;
      int64_t peak = 0;
      for (auto v : p.skyline()) peak = std::max<int64_t>(peak, v);
      std::string kind = p.one_off_instances() ? "per-instance one-off reservations, next " +
                                                     formatTime(p.next_instance_arrival_ms())
                                               : "recurring";
      if (p.warnings_size() > 0) kind += " (" + std::to_string(p.warnings_size()) + " warning(s))";
      t.add({p.proposal_id(), p.job_key(), p.owner(), stateName(p.state()),
             "every " + humanDuration(p.slo().period_ms()),
             "+" + humanDuration(p.slo().start_offset_ms()),
             "+" + humanDuration(p.slo().deadline_offset_ms()),
             std::to_string(peak) + " containers", kind});
    }
    if (!proposals.empty() || none.empty()) t.print();
    if (none.empty()) return;
    if (*why || !job_filter->empty()) {
      if (!proposals.empty()) std::printf("\n");
      Table w({"JOB WITHOUT SLO", "WHY"});
      for (const auto* n : none) w.add({n->job_key(), n->reason()});
      w.print();
    } else {
      std::printf(
          "%s%zu job(s) have no SLO proposal yet (too few runs, not periodic, ...): "
          "'morpheusctl slo list --why' says why for each\n",
          proposals.empty() ? "" : "\n", none.size());
    }
  });

  auto* show = slo->add_subcommand("show", "One proposal in full");
  show->add_option("id", *id, "Proposal id")->required();
  show->callback([&ctx, id] {
    v1::GetProposalRequest req;
    req.set_proposal_id(*id);
    v1::Proposal p;
    check(stub(ctx)->GetProposal(authed(ctx, Millis(10000)).get(), req, &p), ctx);
    if (ctx.json) {
      printJson("proposals", proposalJson(p));
    } else {
      printProposal(p);
    }
  });

  auto auto_update = std::make_shared<bool>(false);
  auto* accept = slo->add_subcommand("accept", "Sign off: submit the recurring reservation");
  accept->add_option("id", *id, "Proposal id")->required();
  accept->add_flag("--auto-update", *auto_update, "Apply future refits without asking");
  accept->callback([&ctx, id, auto_update] {
    v1::AcceptProposalRequest req;
    req.set_proposal_id(*id);
    req.set_auto_update(*auto_update);
    v1::SignOffResponse resp;
    checkSignOff(stub(ctx)->AcceptProposal(authed(ctx, Millis(60000)).get(), req, &resp), ctx, *id);
    respond(resp, ctx.json, "Accepted");
  });

  auto deadline = std::make_shared<std::string>();
  auto start = std::make_shared<std::string>();
  auto scale = std::make_shared<double>(0);
  auto sky_file = std::make_shared<std::string>();
  auto budget = std::make_shared<int64_t>(-1);
  auto* ov = slo->add_subcommand("override", "Change any parameter, then submit");
  ov->add_option("id", *id, "Proposal id")->required();
  ov->add_option("--deadline", *deadline,
                 "Deadline offset from the period start (e.g. 3h30m as 210m)");
  ov->add_option("--start", *start, "Earliest start offset from the period start");
  ov->add_option("--scale", *scale, "Multiply the skyline by this factor")
      ->check(CLI::PositiveNumber);
  ov->add_option("--skyline-file", *sky_file,
                 "Explicit skyline: whitespace/comma-separated containers per step");
  ov->add_option("--budget", *budget, "Reprovisioning budget, container-ms")
      ->check(CLI::NonNegativeNumber);
  ov->callback([&ctx, id, deadline, start, scale, sky_file, budget] {
    v1::OverrideProposalRequest req;
    req.set_proposal_id(*id);
    req.set_start_offset_ms(-1);
    if (!deadline->empty()) {
      auto d = parseDuration(*deadline, "--deadline");
      if (!d.isOk()) failWith(d.status());
      req.set_deadline_offset_ms(d->count());
    }
    if (!start->empty()) {
      auto s = parseDuration(*start, "--start");
      if (!s.isOk()) failWith(s.status());
      req.set_start_offset_ms(s->count());
    }
    req.set_skyline_scale(*scale);
    if (!sky_file->empty()) {
      for (auto v : readSkylineFile(*sky_file)) req.add_skyline(v);
    }
    req.set_reprovision_budget_container_ms(*budget);
    v1::SignOffResponse resp;
    checkSignOff(stub(ctx)->OverrideProposal(authed(ctx, Millis(60000)).get(), req, &resp), ctx,
                 *id);
    respond(resp, ctx.json, "Overridden and submitted");
  });

  auto reason = std::make_shared<std::string>();
  auto* rej = slo->add_subcommand("reject", "Keep the job on fair share");
  rej->add_option("id", *id, "Proposal id")->required();
  rej->add_option("--reason", *reason, "Why (recorded)");
  rej->callback([&ctx, id, reason] {
    v1::RejectProposalRequest req;
    req.set_proposal_id(*id);
    req.set_reason(*reason);
    v1::SignOffResponse resp;
    checkSignOff(stub(ctx)->RejectProposal(authed(ctx, Millis(10000)).get(), req, &resp), ctx, *id);
    respond(resp, ctx.json, "Rejected");
  });

  auto job = std::make_shared<std::string>();
  auto* hist = slo->add_subcommand("history", "A job's stored runs and how each ended");
  hist->add_option("job", *job, "Job (recurrence) key")->required();
  hist->callback([&ctx, job] {
    v1::ListRunsRequest req;
    req.set_job_key(*job);
    v1::ListRunsResponse resp;
    check(stub(ctx)->ListRuns(authed(ctx, Millis(10000)).get(), req, &resp), ctx);
    if (resp.runs().empty()) {
      failWith(notFound("the inference service has no runs of job '" + *job +
                        "'; 'morpheusctl slo list --why' lists the jobs it knows"));
    }
    auto status = [](v1::RunStatus s) {
      return s == v1::RUN_STATUS_FAILED   ? "failed"
             : s == v1::RUN_STATUS_KILLED ? "killed"
                                          : "succeeded";
    };
    if (ctx.json) {
      json arr = json::array();
      for (const auto& r : resp.runs()) {
        json j = {{"run_id", r.run_id()}, {"user", r.user()}, {"status", status(r.status())}};
        setTime(j, "submit", r.submit_ms());
        setTime(j, "start", r.start_ms());
        setTime(j, "end", r.end_ms());
        arr.push_back(std::move(j));
      }
      printJson("runs", arr, json{{"job_key", *job}});
      return;
    }
    Table t({"RUN", "USER", "SUBMITTED", "DURATION", "STATUS"});
    for (const auto& r : resp.runs()) {
      t.add({r.run_id(), r.user().empty() ? "-" : r.user(), formatTime(r.submit_ms()),
             humanDuration(r.end_ms() - r.start_ms()),
             std::string(status(r.status())) +
                 (r.status() == v1::RUN_STATUS_FAILED || r.status() == v1::RUN_STATUS_KILLED
                      ? " (not fitted)"
                      : "")});
    }
    t.print();
  });

  auto* refit = slo->add_subcommand("refit", "Re-infer every job's SLO and skyline now (admin)");
  refit->callback([&ctx] {
    v1::RefitResponse resp;
    auto c = authed(ctx, Millis(300000));
    check(withProgress("slo refit",
                       [&] { return stub(ctx)->Refit(c.get(), v1::RefitRequest(), &resp); }),
          ctx);
    if (ctx.json) {
      printJson("refits", json{{"proposals_created", resp.proposals_created()}});
      return;
    }
    std::printf("refit done: %d new proposal(s); see 'morpheusctl slo list'\n",
                resp.proposals_created());
  });
}

}  // namespace morpheus::cli
