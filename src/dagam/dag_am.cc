#include "dagam/dag_am.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "common/rm_failover.h"
#include "common/wire.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"

namespace morpheus::dagam {

namespace {

ExitKind exitKindFromProto(v1::ContainerExitReason r) {
  switch (r) {
    case v1::EXIT_REASON_SUCCESS:
      return ExitKind::kSuccess;
    case v1::EXIT_REASON_FAILURE:
      return ExitKind::kFailure;
    case v1::EXIT_REASON_KILLED:
      return ExitKind::kKilled;
    case v1::EXIT_REASON_PREEMPTED:
      return ExitKind::kPreempted;
    case v1::EXIT_REASON_MEMORY_EXCEEDED:
      return ExitKind::kMemoryExceeded;
    case v1::EXIT_REASON_NODE_LOST:
      return ExitKind::kNodeLost;
    case v1::EXIT_REASON_LAUNCH_FAILED:
      return ExitKind::kLaunchFailed;
    default:
      return ExitKind::kUnknown;
  }
}

// The job's stage reports (Jockey's input at the RM) into `out`.
void addStageReports(const DagJob& job, google::protobuf::RepeatedPtrField<v1::StageReport>* out) {
  for (const auto& r : job.stageReports()) {
    auto* st = out->Add();
    st->set_name(r.name);
    for (const auto& d : r.depends_on) st->add_depends_on(d);
    st->set_tasks(r.tasks);
    st->set_completed(r.completed);
    for (Millis e : r.running_elapsed) st->add_running_elapsed_ms(e.count());
    st->set_mean_task_ms(r.mean_task.count());
    // Carbyne: what one task takes, so the RM can plan the DAG.
    toProto(r.task_resource, st->mutable_task_resource());
    st->set_estimated_task_ms(r.estimated_task.count());
  }
}

bool transient(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace

struct DagAmDriver::Impl {
  AmOptions opt;
  DagJob& job;
  const std::atomic<bool>& stop;
  // The RM, or the RMs of an HA pair: calls follow the active one.
  std::shared_ptr<FailoverChannel> rm;
  std::map<std::string, std::unique_ptr<v1::ContainerManager::Stub>> nms;  // by address
  std::map<std::string, v1::Container> containers;  // granted, by id (carry the token)
  int64_t response_id = 0;

  Impl(AmOptions o, DagJob& j, const std::atomic<bool>& s)
      : opt(std::move(o)),
        job(j),
        stop(s),
        rm(FailoverChannel::create(opt.rm_am_address, opt.tls, "rm address").value()) {}

  // One AM call to the active RM. Every AM call is idempotent (rm_failover.h):
  // registration is a resync and Allocate's response_id detects a duplicate.
  template <class Req, class Resp>
  grpc::Status callRm(grpc::Status (v1::ApplicationMaster::Stub::*method)(grpc::ClientContext*,
                                                                          const Req&, Resp*),
                      const Req& req, Resp* resp) {
    return rm->unary(method, req, resp, opt.rpc_timeout, CallKind::kIdempotent,
                     [this](grpc::ClientContext* ctx) {
                       if (!opt.am_token.empty()) {
                         ctx->AddMetadata("authorization", "Bearer " + opt.am_token);
                       }
                     });
  }

  // Sleeps `d` in small slices so a stop request is honoured quickly.
  void pause(Millis d) const {
    auto until = std::chrono::steady_clock::now() + d;
    while (!stop.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          Millis(50), until - std::chrono::steady_clock::now()));
    }
  }

  // Calls `fn` until it succeeds, fails permanently, or the RM has been
  // unreachable for longer than the retry window.
  template <typename Fn>
  grpc::Status withRetry(const char* what, Fn fn) {
    auto first_failure = std::chrono::steady_clock::now();
    Millis backoff(250);
    bool warned = false;
    while (true) {
      grpc::Status st = fn();
      if (st.ok() || !transient(st) || stop.load()) {
        if (st.ok() && warned)
          spdlog::info("{}: RM at {} reachable again", what, opt.rm_am_address);
        return st;
      }
      auto waited = std::chrono::steady_clock::now() - first_failure;
      if (waited >= opt.rm_retry_window) {
        spdlog::error("{}: RM at {} unreachable for {} ms, giving up: {}", what, opt.rm_am_address,
                      std::chrono::duration_cast<Millis>(waited).count(), st.error_message());
        return st;
      }
      if (!warned) {
        spdlog::warn("{}: RM at {} unavailable ({}); retrying for up to {} ms", what,
                     opt.rm_am_address, st.error_message(), opt.rm_retry_window.count());
        warned = true;
      }
      pause(backoff);
      backoff = std::min(backoff * 2, Millis(2000));
    }
  }

  grpc::Status registerAm(bool resync) {
    v1::RegisterApplicationMasterRequest req;
    req.set_application_id(opt.app_id);
    req.set_am_token(opt.am_token);
    req.set_tracking_url(opt.tracking_url);
    v1::RegisterApplicationMasterResponse resp;
    grpc::Status st = withRetry("RegisterApplicationMaster", [&] {
      return callRm(&v1::ApplicationMaster::Stub::RegisterApplicationMaster, req, &resp);
    });
    if (!st.ok()) return st;
    response_id = 0;
    job.setMaxContainer(fromProto(resp.max_container()));
    std::set<std::string> running;
    for (const auto& c : resp.running_containers()) {
      running.insert(c.container_id());
      containers[c.container_id()] = c;
    }
    spdlog::info(
        "{} app {} as AM: queue '{}', reservation '{}', max container {}, {} running "
        "container(s)",
        resync ? "re-registered" : "registered", opt.app_id, resp.queue(),
        resp.reservation_id().empty() ? "-" : resp.reservation_id(),
        fromProto(resp.max_container()).toString(), resp.running_containers_size());
    if (resync || !running.empty()) job.onResync(running);
    return st;
  }

  void logEvents() {
    for (const auto& e : job.takeEvents()) spdlog::info("app {}: {}", opt.app_id, e);
  }

  v1::ContainerManager::Stub* nm(const std::string& address) {
    auto& stub = nms[address];
    if (!stub) stub = v1::ContainerManager::NewStub(makeChannel(address, opt.tls));
    return stub.get();
  }

  void launch(const std::vector<Launch>& launches) {
    std::map<std::string, std::vector<const Launch*>> by_node;
    for (const auto& l : launches) by_node[l.node_address].push_back(&l);
    for (const auto& [address, ls] : by_node) {
      v1::StartContainersRequest req;
      for (const Launch* l : ls) {
        auto* r = req.add_requests();
        *r->mutable_container() = containers[l->container_id];
        auto* lc = r->mutable_launch_context();
        lc->set_command("/bin/sh");
        lc->add_args("-c");
        lc->add_args(l->command);
        for (const auto& [k, v] : l->env) (*lc->mutable_env())[k] = v;
      }
      v1::StartContainersResponse resp;
      auto ctx = makeContext(opt.rpc_timeout);
      grpc::Status st = nm(address)->StartContainers(ctx.get(), req, &resp);
      if (!st.ok()) {
        spdlog::warn("app {}: StartContainers at NM {} failed: {}", opt.app_id, address,
                     st.error_message());
        for (const Launch* l : ls) {
          job.onLaunchFailed(l->container_id, !transient(st),
                             "NM " + address + ": " + st.error_message());
        }
        continue;
      }
      for (const auto& id : resp.started()) job.onLaunchSucceeded(id);
      for (const auto& f : resp.failed()) {
        job.onLaunchFailed(f.container_id(), f.code() != "UNAVAILABLE",
                           f.code() + ": " + f.message());
      }
    }
  }

  int finish() {
    v1::FinishApplicationMasterRequest req;
    req.set_application_id(opt.app_id);
    req.set_am_token(opt.am_token);
    bool ok = job.succeeded();
    req.set_final_status(ok ? v1::FINAL_STATUS_SUCCEEDED : v1::FINAL_STATUS_FAILED);
    req.set_diagnostics(ok ? "all " + std::to_string(job.tasks().size()) + " task(s) of job '" +
                                 job.spec().name + "' succeeded"
                           : job.diagnostics());
    for (const auto& f : job.filesRead()) {
      auto* a = req.add_files_read();
      a->set_path(f.path);
      a->set_time_ms(toEpochMs(f.time));
    }
    for (const auto& f : job.filesWritten()) {
      auto* a = req.add_files_written();
      a->set_path(f.path);
      a->set_time_ms(toEpochMs(f.time));
    }
    addStageReports(job, req.mutable_stages());
    v1::FinishApplicationMasterResponse resp;
    grpc::Status st = withRetry("FinishApplicationMaster", [&] {
      return callRm(&v1::ApplicationMaster::Stub::FinishApplicationMaster, req, &resp);
    });
    if (!st.ok()) {
      spdlog::error("app {}: FinishApplicationMaster failed: {}", opt.app_id, st.error_message());
    }
    spdlog::info("app {}: job '{}' {}: {}", opt.app_id, job.spec().name,
                 ok ? "SUCCEEDED" : "FAILED", req.diagnostics());
    return ok && st.ok() ? 0 : 1;
  }

  int run() {
    spdlog::info("app {}: running job '{}' ({} stage(s), {} task(s)) against RM {}", opt.app_id,
                 job.spec().name, job.spec().stages.size(), job.tasks().size(), opt.rm_am_address);
    grpc::Status st = registerAm(false);
    if (!st.ok()) {
      spdlog::error("app {}: cannot register with the RM at {}: {}", opt.app_id, opt.rm_am_address,
                    st.error_message());
      return 1;
    }
    logEvents();
    std::string last_summary;
    auto last_log = std::chrono::steady_clock::now();
    while (!job.finished()) {
      if (stop.load()) {
        spdlog::warn("app {}: stopped before the job finished ({})", opt.app_id, job.summary());
        return 1;
      }
      v1::AllocateRequest req;
      req.set_application_id(opt.app_id);
      req.set_am_token(opt.am_token);
      for (const auto& a : job.asks()) {
        auto* r = req.add_asks();
        r->set_request_id(a.request_id);
        r->set_priority(a.priority);
        toProto(a.capability, r->mutable_capability());
        r->set_count(a.count);
        r->set_gang_size(a.gang_size);
        for (const auto& c : a.constraints) {
          auto* pc = r->add_constraints();
          pc->set_key(c.key);
          for (const auto& v : c.values) pc->add_values(v);
          pc->set_hard(c.hard);
          if (c.op == "at_least") pc->set_op(v1::CONSTRAINT_OP_AT_LEAST);
          if (c.op == "version_at_least") pc->set_op(v1::CONSTRAINT_OP_VERSION_AT_LEAST);
        }
        r->set_expected_duration_ms(a.expected_ms);
      }
      std::vector<std::string> releases = job.takeReleases();
      for (const auto& id : releases) req.add_releases(id);
      req.set_progress(static_cast<float>(job.progress()));
      for (const auto& [name, p] : job.stageProgress()) {
        (*req.mutable_stage_progress())[name] = static_cast<float>(p);
      }
      addStageReports(job, req.mutable_stages());
      req.set_response_id(response_id);
      v1::AllocateResponse resp;
      st = withRetry("Allocate",
                     [&] { return callRm(&v1::ApplicationMaster::Stub::Allocate, req, &resp); });
      if (!st.ok()) {
        if (stop.load()) continue;
        if (st.error_code() == grpc::StatusCode::NOT_FOUND) {
          // The RM no longer knows this attempt (e.g. it restarted without
          // flagging resync): register again, then carry on.
          spdlog::warn("app {}: Allocate: {}; registering again", opt.app_id, st.error_message());
          // Releases in this Allocate are not lost: containers still running
          // and unknown to the job are released by the resync.
          if (registerAm(true).ok()) continue;
        }
        spdlog::error("app {}: Allocate failed: {}", opt.app_id, st.error_message());
        return 1;
      }
      if (resp.resync()) {
        spdlog::warn("app {}: RM asked for resync (RM restart); registering again", opt.app_id);
        if (!registerAm(true).ok()) {
          spdlog::error("app {}: re-registration failed", opt.app_id);
          return 1;
        }
        logEvents();
        continue;
      }
      response_id = resp.response_id();
      for (const auto& p : resp.preemptions()) {
        job.onPreemptionNotice(p.container_id(), p.reason());
      }
      std::vector<Completion> done;
      for (const auto& c : resp.completed()) {
        done.push_back({c.container_id(), exitKindFromProto(c.exit_reason()), c.exit_status(),
                        c.diagnostics()});
        containers.erase(c.container_id());
      }
      job.onCompleted(done);
      std::vector<Grant> grants;
      for (const auto& c : resp.allocated()) {
        containers[c.container_id()] = c;
        grants.push_back({c.container_id(), c.node_id(), c.node_address(),
                          c.allocation_request_id(), c.priority(), fromProto(c.resource())});
      }
      std::vector<Launch> launches = job.onAllocated(grants);
      logEvents();
      if (!launches.empty()) launch(launches);
      logEvents();
      std::string summary = job.summary();
      auto now = std::chrono::steady_clock::now();
      if (summary != last_summary || now - last_log >= opt.progress_log_interval) {
        spdlog::info("app {}: progress {:.0f}%: {}", opt.app_id, 100.0 * job.progress(), summary);
        last_summary = summary;
        last_log = now;
      }
      if (!job.finished()) pause(opt.heartbeat);
    }
    // Containers queued for release when the job failed would be reclaimed by
    // the RM at finish anyway; hand them back now (best effort, no retry).
    std::vector<std::string> releases = job.takeReleases();
    if (!releases.empty()) {
      v1::AllocateRequest req;
      req.set_application_id(opt.app_id);
      req.set_am_token(opt.am_token);
      for (const auto& id : releases) req.add_releases(id);
      req.set_progress(static_cast<float>(job.progress()));
      req.set_response_id(response_id);
      v1::AllocateResponse resp;
      // Best effort: the RM frees an unreleased container when the app finishes.
      if (grpc::Status st = callRm(&v1::ApplicationMaster::Stub::Allocate, req, &resp); !st.ok()) {
        spdlog::warn("releasing {} containers before finishing: {}", releases.size(),
                     st.error_message());
      }
    }
    logEvents();
    return finish();
  }
};

DagAmDriver::DagAmDriver(AmOptions options, DagJob& job, const std::atomic<bool>& stop)
    : impl_(std::make_unique<Impl>(std::move(options), job, stop)) {}
DagAmDriver::~DagAmDriver() = default;

int DagAmDriver::run() { return impl_->run(); }

}  // namespace morpheus::dagam
