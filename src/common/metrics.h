// One metrics registry per process, rendered in Prometheus text format at
// /metrics. Each component declares its metrics in one place with stable
// hierarchical names (morpheus_rm_reservations_active, ...).
//
// Thread-safety: registration takes a lock; updating a Counter/Gauge/Histogram
// is lock-free (atomics) except Histogram::observe, which is wait-free per bucket.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace morpheus {

using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  void inc(double v = 1.0);
  // Raises the value to `total` (never lowers it): for counters read from
  // elsewhere as a running total (process_cpu_seconds_total from /proc).
  void advanceTo(double total);
  double value() const { return v_.load(); }

 private:
  std::atomic<double> v_{0.0};
};

class Gauge {
 public:
  void set(double v) { v_.store(v); }
  void add(double v);
  double value() const { return v_.load(); }

 private:
  std::atomic<double> v_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts per bound, then +Inf; sum; count.
  std::vector<uint64_t> cumulative() const;
  double sum() const { return sum_.load(); }
  uint64_t count() const { return count_.load(); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

// Bucket bounds, in seconds, for the latency histograms of request handling
// (heartbeat, allocate, admission, DRA decision): 100 us to 10 s, roughly
// 1-2.5-5 per decade.
std::vector<double> latencyBucketsSeconds();

// Observes into `h` the seconds from construction to destruction, on the
// steady clock: the wall time a handler took. (The daemon's Clock is the
// wrong source here: a virtual clock does not advance while code runs.)
// Use as one line at the top of a handler:
//   ScopedTimer t(metrics.histogram("..._duration_seconds", ..., latencyBucketsSeconds()));
class ScopedTimer {
 public:
  explicit ScopedTimer(Histogram& h) : h_(h), start_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    h_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Histogram& h_;
  std::chrono::steady_clock::time_point start_;
};

class MetricsRegistry {
 public:
  // Returns the metric with that name and labels, creating it on first use.
  // Names must match [a-zA-Z_:][a-zA-Z0-9_:]*; re-registering a name with a
  // different type aborts (a programming error). References stay valid for
  // the registry's lifetime.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                       const Labels& labels = {});

  // Prometheus text exposition format 0.0.4.
  std::string render() const;
  // Value of a counter or gauge, or -1 when absent (for tests and the CLI).
  double valueOf(const std::string& name, const Labels& labels = {}) const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, Type type, const std::string& help);
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // GUARDED_BY(mu_)
};

// "{a=\"x\",b=\"y\"}" (empty string for no labels).
std::string formatLabels(const Labels& labels);

// Sets the standard process metrics of Prometheus client libraries in
// `metrics` from /proc/self (Linux), in base units:
//   process_cpu_seconds_total       counter, user + system CPU seconds
//   process_resident_memory_bytes   gauge
//   process_virtual_memory_bytes    gauge
//   process_open_fds                gauge, descriptors open now
//   process_max_fds                 gauge, soft RLIMIT_NOFILE
//   process_start_time_seconds      gauge, start time since the Unix epoch
// Call before each render() of /metrics. Cost: a few small /proc reads and
// one directory listing. UNAVAILABLE naming the /proc file that could not be
// read; the metrics read so far are still set.
Status updateProcessMetrics(MetricsRegistry& metrics);

}  // namespace morpheus
