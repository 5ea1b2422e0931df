#include "rm/runtime/telemetry.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/wire.h"
#include "morpheus/v1/inference.grpc.pb.h"

namespace morpheus::rm {

std::vector<double> computeSkyline(const std::vector<ContainerInterval>& intervals, TimePoint start,
                                   TimePoint end, Millis step, const Resource& unit) {
  if (end <= start || step.count() <= 0) return {};
  const int64_t total = (end - start).count();
  const int64_t len = step.count();
  const size_t n = static_cast<size_t>((total + len - 1) / len);
  std::vector<double> busy_ms(n, 0.0);
  if (unit.isZero() || unit.anyNegative()) return busy_ms;
  // Sweep over the start/end events: between two events the set of live
  // containers, hence their count in units, is constant.
  struct Event {
    int64_t at;
    bool begin;
    const Resource* r;
  };
  std::vector<Event> ev;
  ev.reserve(intervals.size() * 2);
  for (const auto& iv : intervals) {
    TimePoint s = std::max(iv.start, start), e = std::min(iv.end, end);
    if (e <= s) continue;
    ev.push_back({(s - start).count(), true, &iv.resource});
    ev.push_back({(e - start).count(), false, &iv.resource});
  }
  std::sort(ev.begin(), ev.end(), [](const Event& x, const Event& y) { return x.at < y.at; });
  Resource live;
  int64_t at = 0;
  for (const auto& e : ev) {
    if (e.at > at) {
      const auto count = static_cast<double>(live.countCovering(unit));
      for (int64_t k = at / len; count > 0 && k * len < e.at; k++) {
        int64_t lo = std::max(at, k * len), hi = std::min(e.at, (k + 1) * len);
        busy_ms[static_cast<size_t>(k)] += count * static_cast<double>(hi - lo);
      }
      at = e.at;
    }
    if (e.begin) {
      live += *e.r;
    } else {
      live -= *e.r;
    }
  }
  for (size_t k = 0; k < n; k++) {
    // The last step may be shorter than a full step; average over its real length.
    int64_t real = std::min<int64_t>(len, total - static_cast<int64_t>(k) * len);
    busy_ms[k] /= static_cast<double>(real);
  }
  return busy_ms;
}

Resource typicalContainer(const std::vector<ContainerInterval>& intervals) {
  for (bool am : {false, true}) {
    std::vector<std::pair<Resource, int>> seen;  // first-seen order
    for (const auto& iv : intervals) {
      if (iv.am != am || iv.resource.isZero()) continue;
      auto it = std::find_if(seen.begin(), seen.end(),
                             [&](const auto& p) { return p.first == iv.resource; });
      if (it == seen.end()) {
        seen.push_back({iv.resource, 1});
      } else {
        it->second++;
      }
    }
    const std::pair<Resource, int>* best = nullptr;
    for (const auto& p : seen) {
      if (!best || p.second > best->second) best = &p;
    }
    if (best) return best->first;
  }
  return Resource();
}

TelemetryMetrics::TelemetryMetrics(MetricsRegistry& m)
    : forwarded(m.counter("morpheus_rm_telemetry_forwarded_total",
                          "Telemetry records delivered to inference")),
      dropped(m.counter("morpheus_rm_telemetry_dropped_total",
                        "Telemetry records dropped because the inference service lagged")),
      refused(m.counter("morpheus_rm_telemetry_refused_total",
                        "Telemetry records the inference service refused for good (dropped)")) {}

TelemetryForwarder::TelemetryForwarder(std::string address, TlsOptions tls,
                                       MetricsRegistry& metrics, size_t max_queue,
                                       std::string token)
    : address_(std::move(address)),
      tls_(std::move(tls)),
      token_(std::move(token)),
      metrics_(metrics),
      max_queue_(max_queue) {}

TelemetryForwarder::~TelemetryForwarder() { stop(); }

void TelemetryForwarder::start() {
  if (address_.empty()) return;
  thread_ = std::thread([this] { run(); });
}

void TelemetryForwarder::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t TelemetryForwarder::queued() const {
  MutexLock lk(mu_);
  return queue_.size();
}

void TelemetryForwarder::enqueue(AppTelemetryRecord rec) {
  if (address_.empty()) return;
  {
    MutexLock lk(mu_);
    if (queue_.size() >= max_queue_) {
      queue_.pop_front();
      metrics_.dropped.inc();
    }
    queue_.push_back(std::move(rec));
  }
  cv_.notify_all();
}

void toIngestRequest(const AppTelemetryRecord& rec, v1::IngestRunsRequest* out) {
  v1::IngestRunsRequest& req = *out;
  auto* run = req.add_runs();
  run->set_job_key(rec.recurrence_key.empty() ? rec.app.value() : rec.recurrence_key.value());
  run->set_run_id(rec.app.value());
  run->set_user(rec.user.value());
  run->set_submit_ms(toEpochMs(rec.submit));
  run->set_start_ms(toEpochMs(rec.start));
  run->set_end_ms(toEpochMs(rec.finish));
  run->set_step_ms(rec.step.count());
  for (double v : rec.skyline) run->add_skyline(v);
  toProto(rec.container, run->mutable_container());
  switch (rec.outcome) {
    case AppOutcome::kSucceeded:
      run->set_status(v1::RUN_STATUS_SUCCEEDED);
      break;
    case AppOutcome::kFailed:
      run->set_status(v1::RUN_STATUS_FAILED);
      break;
    case AppOutcome::kKilled:
      run->set_status(v1::RUN_STATUS_KILLED);
      break;
  }
  // The run and its file events in one request: stored in one transaction.
  for (const auto& f : rec.files) {
    auto* e = req.add_events();
    e->set_job_key(run->job_key());
    e->set_run_id(rec.app.value());
    e->set_path(f.path);
    e->set_time_ms(toEpochMs(f.time));
    e->set_kind(f.write ? v1::ProvenanceEvent::KIND_WRITE : v1::ProvenanceEvent::KIND_READ);
  }
}

TelemetryForwarder::SendOutcome TelemetryForwarder::send(const AppTelemetryRecord& rec) {
  auto stub = v1::InferenceService::NewStub(makeChannel(address_, tls_));
  v1::IngestRunsRequest req;
  toIngestRequest(rec, &req);
  v1::IngestResponse resp;
  auto ctx = makeContext(Millis(10000));
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  grpc::Status st = stub->IngestRuns(ctx.get(), req, &resp);
  if (st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
      st.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    spdlog::warn("telemetry of {} (user {}, job {}) refused by inference at {}, dropped: {}",
                 rec.app.value(), rec.user.value(), req.runs(0).job_key(), address_,
                 st.error_message());
    metrics_.refused.inc();
    return SendOutcome::kRefused;
  }
  if (!st.ok()) {
    spdlog::warn("telemetry of {} not delivered to inference at {}: {}", rec.app.value(), address_,
                 st.error_message());
    return SendOutcome::kRetry;
  }
  metrics_.forwarded.inc();
  return SendOutcome::kDelivered;
}

void TelemetryForwarder::run() {
  Millis backoff(200);
  for (;;) {
    AppTelemetryRecord rec;
    {
      MutexLock lk(mu_);
      cv_.wait(mu_, [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      rec = queue_.front();
    }
    if (send(rec) != SendOutcome::kRetry) {
      backoff = Millis(200);
      MutexLock lk(mu_);
      // Only pop if the record was not dropped for overflow meanwhile.
      if (!queue_.empty() && queue_.front().app == rec.app) queue_.pop_front();
      continue;
    }
    MutexLock lk(mu_);
    if (cv_.waitFor(mu_, backoff, [this]() REQUIRES(mu_) { return stopping_; })) return;
    backoff = std::min(backoff * 2, Millis(30000));
  }
}

}  // namespace morpheus::rm
