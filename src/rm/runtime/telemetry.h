// RM telemetry of finished applications (Morpheus §4 input): each
// app's skyline (containers in use per plan step, from container start/stop
// times), times and recurrence key. Forwarded to morpheus-inference when one
// is configured; forwarding never blocks scheduling.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/resource.h"
#include "common/tls.h"

namespace morpheus::v1 {
class IngestRunsRequest;
}

namespace morpheus::rm {

struct ContainerInterval {
  TimePoint start;
  TimePoint end;  // for still-running containers: the time of the computation
  Resource resource;
  bool am = false;  // the app's AM container
};

struct FileAccessRecord {
  std::string path;
  TimePoint time;
  bool write = false;
};

// How the application ended (its AM's final status). The inference service
// fits skylines and SLO statistics from succeeded runs only (Morpheus §4/§5).
enum class AppOutcome { kSucceeded, kFailed, kKilled };

struct AppTelemetryRecord {
  AppId app;
  JobKey recurrence_key;
  UserId user;
  TimePoint submit, start, finish;
  Millis step{60000};
  // Containers in use per step from `start`, AM included, in units of
  // `container` (computeSkyline): the count DRA compares with the plan.
  std::vector<double> skyline;
  Resource container;  // typical (most common) task container size (typicalContainer)
  std::vector<FileAccessRecord> files;
  AppOutcome outcome = AppOutcome::kSucceeded;
};

// The IngestRunsRequest that delivers one record: the run (with its final
// status) and its file events, stored by inference in one transaction. Pure.
void toIngestRequest(const AppTelemetryRecord& rec, v1::IngestRunsRequest* out);

// The skyline of a run: for each step [start + k*step, start + (k+1)*step),
// k = 0 .. ceil((end - start)/step) - 1, the time average over the step of
// the containers in use, counted as DRA counts them
// (ReservationDemand::used): the sum of the resources of the intervals live
// at an instant, covered by copies of `unit` (Resource::countCovering).
// Every interval counts (AM containers included: a job using
// exactly its skyline is at its plan, not above it). Intervals are clipped to
// [start, end); the last, partial step averages over its own length. All
// zeros when `unit` is zero. Pure; O(n log n + steps) for n intervals.
std::vector<double> computeSkyline(const std::vector<ContainerInterval>& intervals, TimePoint start,
                                   TimePoint end, Millis step, const Resource& unit);

// The most common resource among the task (non-AM) intervals (the first seen
// on a tie); among the AM's when there are none; zero when empty. Pure.
Resource typicalContainer(const std::vector<ContainerInterval>& intervals);

// Sends records to the inference service's IngestRuns on its own thread.
// enqueue() never blocks: the queue is bounded (oldest dropped, counted in
// morpheus_rm_telemetry_dropped_total); failed sends are retried with
// exponential backoff (200 ms .. 30 s) until they succeed or stop() is called.
// A record the service refuses for good (PERMISSION_DENIED: e.g. a run of
// another user's job; INVALID_ARGUMENT) is logged and dropped, counted in
// morpheus_rm_telemetry_refused_total, so it never holds up the records
// behind it.
// The forwarder's counters, declared once (present from start at 0):
//   morpheus_rm_telemetry_forwarded_total, _dropped_total, _refused_total.
struct TelemetryMetrics {
  explicit TelemetryMetrics(MetricsRegistry& metrics);
  Counter& forwarded;
  Counter& dropped;
  Counter& refused;
};

class TelemetryForwarder {
 public:
  // `address` empty = forwarding disabled (records are still kept by the RM).
  // `tls`: the RM's mutual-TLS setting for the channel (plaintext when off).
  // `token` non-empty: sent as "authorization: Bearer TOKEN" (inference
  // refuses unauthenticated ingestion; rm.inference-token-file).
  TelemetryForwarder(std::string address, TlsOptions tls, MetricsRegistry& metrics,
                     size_t max_queue = 10000, std::string token = "");
  ~TelemetryForwarder();
  void start();
  void stop();
  void enqueue(AppTelemetryRecord rec);
  size_t queued() const;

 private:
  enum class SendOutcome { kDelivered, kRetry, kRefused };
  void run();
  SendOutcome send(const AppTelemetryRecord& rec);

  const std::string address_;
  const TlsOptions tls_;
  const std::string token_;
  TelemetryMetrics metrics_;
  const size_t max_queue_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<AppTelemetryRecord> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace morpheus::rm
