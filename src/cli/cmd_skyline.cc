#include "cli/cmd_skyline.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/wire.h"
#include "inference/model/run_import.h"
#include "inference/model/skyline_fit.h"
#include "morpheus/v1/inference.grpc.pb.h"

namespace morpheus::cli {

using nlohmann::json;

namespace {

// `option` gave the path ("" for a positional argument).
store::IngestBatch readHistory(const std::string& path, const std::string& option,
                               const std::string& format, const std::string& owner) {
  requireReadable(path, "run-history file", option);
  inference::ImportOptions o;
  o.format = format;
  o.default_user = owner;
  auto b = inference::parseRunHistoryFile(path, o);
  if (!b.isOk()) failWith(b.status());
  return std::move(b).value();
}

void addFit(CLI::App& root, CliContext& ctx) {
  auto* sky = root.add_subcommand("skyline", "Skyline inference (Morpheus §5) without a server");
  sky->require_subcommand(1);
  struct Args {
    std::string input, format = "native", beta_mode = "relative", sample = "average", job;
    double alpha = inference::kDefaultSkylineAlpha, beta = 0.1, step_s = 60;
    int64_t min_runs = 3;
  };
  auto a = std::make_shared<Args>();
  auto* fit = sky->add_subcommand("fit", "Fit the skyline LP to the runs in a file and print it");
  fit->add_option("--input", a->input, "Run-history file")->required();
  fit->add_option("--format", a->format, "native (Hadoop resource estimator) | jsonl")
      ->check(CLI::IsMember({"native", "jsonl"}));
  fit->add_option("--alpha", a->alpha,
                  "Weight of over-allocation vs under-allocation, 0..1 (default 0.01, Morpheus §9)")
      ->check(CLI::Range(0.0, 1.0));
  fit->add_option("--beta", a->beta, "Regularisation weight (see --beta-mode)")
      ->check(CLI::NonNegativeNumber);
  fit->add_option("--beta-mode", a->beta_mode,
                  "relative: beta x V (two solves) | absolute: beta as given")
      ->check(CLI::IsMember({"relative", "absolute"}));
  fit->add_option("--step", a->step_s, "Fit step, seconds")->check(CLI::PositiveNumber);
  fit->add_option("--sample", a->sample, "A step's sample: average | max containers in use")
      ->check(CLI::IsMember({"average", "max"}));
  fit->add_option("--min-runs", a->min_runs, "Fewest runs a job needs")->check(CLI::PositiveNumber);
  fit->add_option("--job", a->job, "Fit only this job (default: every job in the file)");
  fit->callback([a, &ctx] {
    store::IngestBatch batch = readHistory(a->input, "--input", a->format, "unknown");
    std::map<std::string, std::vector<store::RunRecord>> by_job;
    for (auto& r : batch.runs) {
      // Only succeeded runs are fitted, as in the service (jsonl "status").
      if (r.status != store::RunStatus::kSucceeded) continue;
      if (a->job.empty() || r.job.value() == a->job) by_job[r.job.value()].push_back(r);
    }
    if (by_job.empty()) {
      failWith(
          invalidArgument(a->job.empty() ? "--input" : "--job",
                          a->job.empty() ? "the file holds no runs" : "no runs of job " + a->job));
    }
    inference::FitParams p;
    p.step = Millis(static_cast<int64_t>(a->step_s * 1000));
    p.alpha = a->alpha;
    p.beta = a->beta;
    p.beta_relative = a->beta_mode == "relative";
    p.min_runs = a->min_runs;
    p.sample = a->sample == "max" ? inference::SampleMode::kMax : inference::SampleMode::kAverage;
    json out = json::array();
    int exit_code = 0;
    for (auto& [job, runs] : by_job) {
      std::sort(runs.begin(), runs.end(),
                [](const auto& x, const auto& y) { return x.submit < y.submit; });
      auto started = std::chrono::steady_clock::now();
      auto r = inference::fitRuns(runs, p);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
              .count();
      if (!r.isOk()) {
        exit_code = std::max(exit_code, r.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
        std::cerr << "morpheusctl: job " << job << ": " << r.status().message() << "\n";
        continue;
      }
      int64_t peak = 0, area = 0;
      for (auto v : r->skyline) {
        peak = std::max(peak, v);
        area += v;
      }
      if (ctx.json) {
        out.push_back({{"job", job},
                       {"runs", r->runs_used},
                       {"step_ms", p.step.count()},
                       {"skyline", r->skyline},
                       {"over_allocation", r->over_allocation},
                       {"under_allocation", r->under_allocation},
                       {"epsilon", r->epsilon},
                       {"objective", r->objective},
                       {"fit_ms", ms}});
        continue;
      }
      std::printf(
          "job %s: %d runs, %zu steps of %.0f s, peak %lld containers, area %lld container-steps\n",
          job.c_str(), r->runs_used, r->skyline.size(), a->step_s, static_cast<long long>(peak),
          static_cast<long long>(area));
      std::printf(
          "  A_o %.4f  A_u %.4f  eps %.6f  objective %.6f  (alpha %.2f, beta %g %s; %.1f ms)\n",
          r->over_allocation, r->under_allocation, r->epsilon, r->objective, p.alpha, p.beta,
          a->beta_mode.c_str(), ms);
      std::printf("  skyline:");
      for (auto v : r->skyline) std::printf(" %lld", static_cast<long long>(v));
      std::printf("\n");
    }
    if (ctx.json) printJson("skylines", out);
    if (exit_code != 0) throw CliExit{exit_code};
  });
}

// The wire form of a validated history file, split into requests of at most
// about `max_bytes` each (a single record larger than that goes alone), runs
// first, then events, in file order. Ingestion is an upsert keyed by (job,
// run) and (job, run, path, kind, time), so a re-sent request changes nothing.
std::vector<v1::IngestRunsRequest> importRequests(const store::IngestBatch& batch,
                                                  const std::string& owner, int64_t max_bytes) {
  std::vector<v1::IngestRunsRequest> out(1);
  auto room = [&](size_t bytes) {
    size_t used = out.back().ByteSizeLong();
    if (used > 0 && used + bytes > static_cast<size_t>(max_bytes)) out.emplace_back();
  };
  for (const auto& r : batch.runs) {
    v1::Run w;
    w.set_job_key(r.job.value());
    w.set_run_id(r.run.value());
    w.set_user(r.user.empty() ? owner : r.user);
    w.set_submit_ms(toEpochMs(r.submit));
    w.set_start_ms(toEpochMs(r.start));
    w.set_end_ms(toEpochMs(r.end));
    w.set_step_ms(r.step.count());
    for (double v : r.skyline) w.add_skyline(v);
    toProto(r.container, w.mutable_container());
    w.set_status(r.status == store::RunStatus::kFailed   ? v1::RUN_STATUS_FAILED
                 : r.status == store::RunStatus::kKilled ? v1::RUN_STATUS_KILLED
                                                         : v1::RUN_STATUS_SUCCEEDED);
    room(w.ByteSizeLong() + 8);
    *out.back().add_runs() = std::move(w);
  }
  for (const auto& e : batch.events) {
    v1::ProvenanceEvent w;
    w.set_job_key(e.job.value());
    w.set_run_id(e.run.value());
    w.set_path(e.path);
    w.set_time_ms(toEpochMs(e.time));
    w.set_kind(e.kind == store::FileAccess::kRead ? v1::ProvenanceEvent::KIND_READ
                                                  : v1::ProvenanceEvent::KIND_WRITE);
    room(w.ByteSizeLong() + 8);
    *out.back().add_events() = std::move(w);
  }
  return out;
}

void addImport(CLI::App& root, CliContext& ctx) {
  auto* hist =
      root.add_subcommand("history", "Run history in the inference service's provenance store");
  hist->require_subcommand(1);
  struct Args {
    std::string file, format = "jsonl", owner;
    int64_t batch_bytes = int64_t{4} << 20;
  };
  auto a = std::make_shared<Args>();
  auto* imp = hist->add_subcommand("import", "Import a run-history file: all of it, or nothing");
  imp->add_option("file", a->file, "File to import")->required();
  imp->add_option("--format", a->format, "native (Hadoop resource estimator) | jsonl")
      ->check(CLI::IsMember({"native", "jsonl"}));
  imp->add_option("--owner", a->owner,
                  "Owner of runs that name none (default: --user, else the token's user)");
  imp->add_option("--batch-bytes", a->batch_bytes,
                  "Largest request sent at once, bytes (default 4 MiB); a larger file goes in "
                  "several requests with progress on stderr")
      ->check(CLI::Range(int64_t{1024}, int64_t{32} << 20));
  imp->callback([a, &ctx] {
    store::IngestBatch batch =
        readHistory(a->file, "", a->format, a->owner.empty() ? ctx.user : a->owner);
    std::string owner = a->owner.empty() ? ctx.user : a->owner;
    std::vector<v1::IngestRunsRequest> requests = importRequests(batch, owner, a->batch_bytes);
    auto stub = v1::InferenceService::NewStub(inferenceChannel(ctx));
    size_t runs = 0, events = 0;
    for (size_t i = 0; i < requests.size(); i++) {
      auto c = authedContext(ctx, Millis(120000));
      v1::IngestResponse resp;
      grpc::Status st = stub->IngestRuns(c.get(), requests[i], &resp);
      if (!st.ok()) {
        Status err = fromGrpc(st);
        std::string where = "inference at " + ctx.inference_address;
        if (i > 0) {
          where += ": batch " + std::to_string(i + 1) + " of " + std::to_string(requests.size()) +
                   " (the " + std::to_string(i) +
                   " before it were imported; importing the file again is safe)";
        }
        failRemote(err, where);
      }
      runs += static_cast<size_t>(requests[i].runs_size());
      events += static_cast<size_t>(requests[i].events_size());
      if (requests.size() > 1) {
        std::fprintf(stderr, "history import: batch %zu/%zu, %zu/%zu run(s), %zu/%zu event(s)\n",
                     i + 1, requests.size(), runs, batch.runs.size(), events, batch.events.size());
      }
    }
    if (ctx.json) {
      printJson("imports", json{{"file", a->file},
                                {"runs", batch.runs.size()},
                                {"file_events", batch.events.size()},
                                {"requests", requests.size()}});
      return;
    }
    std::printf("imported %zu run(s) and %zu file event(s) from %s\n", batch.runs.size(),
                batch.events.size(), a->file.c_str());
  });
}

}  // namespace

void addSkylineCommands(CLI::App& root, CliContext& ctx) {
  addFit(root, ctx);
  addImport(root, ctx);
}

}  // namespace morpheus::cli
