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
    json o = {{"arrival_ms", i.arrival_ms()},
              {"deadline_ms", i.deadline_ms()},
              {"reservation_id", i.reservation_id()},
              {"state", i.state()},
              {"detail", i.detail()}};
    if (!i.replaces().empty()) o["replaces"] = i.replaces();
    instances.push_back(std::move(o));
  }
  json warnings = json::array();
  for (const auto& w : p.warnings()) warnings.push_back(w);
  return {{"proposal_id", p.proposal_id()},
          {"one_off_instances", p.one_off_instances()},
          {"next_instance_arrival_ms", p.next_instance_arrival_ms()},
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
}

std::string dur(int64_t ms) { return formatDuration(Millis(ms)); }

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
      "container %lld MiB / %lld vcores\n",
      p.skyline_size(), dur(p.step_ms()).c_str(), static_cast<long long>(peak),
      static_cast<long long>(area), static_cast<long long>(p.container().memory_mib()),
      static_cast<long long>(p.container().vcores()));
  std::printf("  fit over %d runs: over-allocation %.3f, under-allocation %.3f, eps %.4f%s\n",
              p.runs_used(), p.over_allocation(), p.under_allocation(), p.epsilon(),
              p.problematic() ? "; problematic (alignment penalty)" : "");
  if (p.runs_failed() + p.runs_killed() > 0) {
    std::printf(
        "  history: %d failed and %d killed run(s) stored but not fitted "
        "('morpheusctl slo history %s')\n",
        p.runs_failed(), p.runs_killed(), p.job_key().c_str());
  }
  std::printf("  reprovisioning budget: %lld container-ms\n",
              static_cast<long long>(p.reprovision_budget_container_ms()));
  if (!p.reservation_id().empty()) std::printf("  reservation: %s\n", p.reservation_id().c_str());
  if (!p.placement_summary().empty())
    std::printf("  placement: %s\n", p.placement_summary().c_str());
}

void respond(const v1::SignOffResponse& r, bool json_out, const char* verb) {
  if (json_out) {
    std::cout << proposalJson(r.proposal()).dump(2) << "\n";
  } else {
    std::printf("%s.\n", verb);
    printProposal(r.proposal());
  }
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

  auto* list = slo->add_subcommand("list", "Proposals, and jobs without an actionable SLO");
  list->add_option("--state", *state, "pending|accepted|rejected|superseded|all")
      ->check(CLI::IsMember({"pending", "accepted", "rejected", "superseded", "all"}));
  list->callback([&ctx, state] {
    v1::ListProposalsRequest req;
    if (*state == "pending") req.set_state(v1::PROPOSAL_PENDING);
    if (*state == "accepted") req.set_state(v1::PROPOSAL_ACCEPTED);
    if (*state == "rejected") req.set_state(v1::PROPOSAL_REJECTED);
    if (*state == "superseded") req.set_state(v1::PROPOSAL_SUPERSEDED);
    v1::ListProposalsResponse resp;
    check(stub(ctx)->ListProposals(authed(ctx, Millis(10000)).get(), req, &resp), ctx);
    if (ctx.json) {
      json arr = json::array(), na = json::array();
      for (const auto& p : resp.proposals()) arr.push_back(proposalJson(p));
      for (const auto& n : resp.not_actionable())
        na.push_back({{"job_key", n.job_key()}, {"reason", n.reason()}});
      std::cout << json({{"proposals", arr}, {"not_actionable", na}}).dump(2) << "\n";
      return;
    }
    std::printf("%-14s %-24s %-10s %-11s %-8s %-10s %-10s %-6s %s\n", "PROPOSAL", "JOB", "OWNER",
                "STATE", "PERIOD", "START", "DEADLINE", "PEAK", "RESERVATIONS");
    for (const auto& p : resp.proposals()) {
      int64_t peak = 0;
      for (auto v : p.skyline()) peak = std::max<int64_t>(peak, v);
      std::string kind = p.one_off_instances() ? "per-instance one-off reservations, next " +
                                                     formatTime(p.next_instance_arrival_ms())
                                               : "recurring";
      if (p.warnings_size() > 0) kind += " (" + std::to_string(p.warnings_size()) + " warning(s))";
      std::printf("%-14s %-24s %-10s %-11s %-8s %-10s %-10s %-6lld %s\n", p.proposal_id().c_str(),
                  p.job_key().c_str(), p.owner().c_str(), stateName(p.state()),
                  dur(p.slo().period_ms()).c_str(), ("+" + dur(p.slo().start_offset_ms())).c_str(),
                  ("+" + dur(p.slo().deadline_offset_ms())).c_str(), static_cast<long long>(peak),
                  kind.c_str());
    }
    for (const auto& n : resp.not_actionable()) {
      std::printf("no SLO for %s: %s\n", n.job_key().c_str(), n.reason().c_str());
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
      std::cout << proposalJson(p).dump(2) << "\n";
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
    check(stub(ctx)->AcceptProposal(authed(ctx, Millis(60000)).get(), req, &resp), ctx);
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
    check(stub(ctx)->OverrideProposal(authed(ctx, Millis(60000)).get(), req, &resp), ctx);
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
    check(stub(ctx)->RejectProposal(authed(ctx, Millis(10000)).get(), req, &resp), ctx);
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
    auto status = [](v1::RunStatus s) {
      return s == v1::RUN_STATUS_FAILED   ? "failed"
             : s == v1::RUN_STATUS_KILLED ? "killed"
                                          : "succeeded";
    };
    if (ctx.json) {
      json arr = json::array();
      for (const auto& r : resp.runs()) {
        arr.push_back({{"run_id", r.run_id()},
                       {"user", r.user()},
                       {"submit_ms", r.submit_ms()},
                       {"start_ms", r.start_ms()},
                       {"end_ms", r.end_ms()},
                       {"status", status(r.status())}});
      }
      std::cout << json({{"job_key", *job}, {"runs", arr}}).dump(2) << "\n";
      return;
    }
    std::printf("%-28s %-10s %-21s %-10s %s\n", "RUN", "USER", "SUBMITTED", "DURATION", "STATUS");
    for (const auto& r : resp.runs()) {
      std::printf("%-28s %-10s %-21s %-10s %s%s\n", r.run_id().c_str(), r.user().c_str(),
                  formatTime(r.submit_ms()).c_str(), dur(r.end_ms() - r.start_ms()).c_str(),
                  status(r.status()),
                  r.status() == v1::RUN_STATUS_FAILED || r.status() == v1::RUN_STATUS_KILLED
                      ? " (not fitted)"
                      : "");
    }
  });

  auto* refit = slo->add_subcommand("refit", "Re-infer every job's SLO and skyline now (admin)");
  refit->callback([&ctx] {
    v1::RefitResponse resp;
    auto c = authed(ctx, Millis(300000));
    check(withProgress("slo refit",
                       [&] { return stub(ctx)->Refit(c.get(), v1::RefitRequest(), &resp); }),
          ctx);
    std::printf("refit done: %d new proposal(s); see 'morpheusctl slo list'\n",
                resp.proposals_created());
  });
}

}  // namespace morpheus::cli
