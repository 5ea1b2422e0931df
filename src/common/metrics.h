// One metrics registry per process, rendered in Prometheus text format at
// /metrics. Each component declares its metrics once, in a struct of
// Counter&/Gauge&/Histogram& members built in the component's constructor
// (RmLatencyMetrics, HttpServerMetrics, ...), so that:
//  - no metric name literal is repeated across files;
//  - a hot path increments through a reference, never a registry lookup;
//  - every counter exists, at 0, from the moment its component exists
//    (a rate() alert has a series to watch before the first event);
//  - `--print-metrics` on each daemon lists every metric it serves (describe()),
//    which docs/tools/gen_reference.py turns into docs/reference/metrics.md.
// Names follow the Prometheus conventions: base units (`_bytes`, `_seconds`),
// `_total` on counters, `_info` on a gauge of constant 1 carrying labels.
//
// Thread-safety: registration takes a lock; updating a Counter/Gauge/Histogram
// is lock-free (atomics) except Histogram::observe, which is wait-free per bucket.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace morpheus {

using Labels = std::map<std::string, std::string>;

// Memory is accounted in MiB (Resource) and exposed in bytes.
inline constexpr double kBytesPerMib = 1024.0 * 1024.0;

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
//   ScopedTimer t(latency_.allocate);  // a Histogram& of the component's metrics struct
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

class MetricsRegistry;

// A metric family whose label values are known only at run time (a queue, a
// reservation, a status code): with() finds or creates the child, taking the
// registry's lock, so call it on rare events or from a collector, never per
// increment on a hot path. Label keys must be exactly those declared.
// Copyable; valid for the registry's lifetime.
class CounterFamily {
 public:
  Counter& with(const Labels& labels) const;

 private:
  friend class MetricsRegistry;
  CounterFamily(MetricsRegistry* r, std::string name) : r_(r), name_(std::move(name)) {}
  MetricsRegistry* r_;
  std::string name_;
};

class GaugeFamily {
 public:
  Gauge& with(const Labels& labels) const;
  // Replaces every child by `values` at once (a collector's snapshot: queues
  // and reservations that are gone disappear from /metrics). Only for
  // families whose children nobody holds a reference to.
  void replaceAll(const std::vector<std::pair<Labels, double>>& values) const;

 private:
  friend class MetricsRegistry;
  GaugeFamily(MetricsRegistry* r, std::string name) : r_(r), name_(std::move(name)) {}
  MetricsRegistry* r_;
  std::string name_;
};

// A family as declared, for `--print-metrics` and the reference docs.
struct MetricDescription {
  std::string name;
  std::string type;  // "counter", "gauge" or "histogram"
  std::string help;
  // Each label key with the values its children have now, in key order.
  std::vector<std::pair<std::string, std::vector<std::string>>> labels;
  bool open_labels = false;  // declared as a family: more values come at run time
};

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Returns the metric with that name and labels, creating it on first use.
  // Names must match [a-zA-Z_:][a-zA-Z0-9_:]*; re-registering a name with a
  // different type or other label keys aborts (a programming error).
  // References stay valid for the registry's lifetime.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                       const Labels& labels = {});
  // Declares a family with `label_keys` whose children come later (with()).
  // The family is listed (HELP and TYPE) even while it has no child.
  CounterFamily counterFamily(const std::string& name, const std::string& help,
                              std::vector<std::string> label_keys);
  GaugeFamily gaugeFamily(const std::string& name, const std::string& help,
                          std::vector<std::string> label_keys);

  // A function render() calls first, to set gauges read from elsewhere at
  // scrape time (per-queue usage). Collectors run one at a time, outside the
  // registry's lock, in the order added. The returned handle removes the
  // collector when destroyed (waiting for a running one), so a component
  // keeps it as a member and its collector never outlives it.
  class Collector {
   public:
    ~Collector();
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

   private:
    friend class MetricsRegistry;
    Collector(MetricsRegistry* r, uint64_t id) : r_(r), id_(id) {}
    MetricsRegistry* r_;
    uint64_t id_;
  };
  [[nodiscard]] std::unique_ptr<Collector> addCollector(std::function<void()> collect);

  // Prometheus text exposition format 0.0.4, after running the collectors.
  std::string render() const;
  // Value of a counter or gauge, or -1 when absent (for tests and the CLI).
  double valueOf(const std::string& name, const Labels& labels = {}) const;
  // Every family, by name.
  std::vector<MetricDescription> describe() const;

 private:
  friend class CounterFamily;
  friend class GaugeFamily;
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::vector<std::string> label_keys;
    bool open_labels = false;
    std::map<std::string, Labels> label_sets;  // formatLabels(labels) -> labels
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  // `label_keys` null: take them from the first child.
  Family& family(const std::string& name, Type type, const std::string& help,
                 const std::vector<std::string>* label_keys) REQUIRES(mu_);
  // Checks the keys and records the label set; its key.
  std::string child(Family& f, const std::string& name, const Labels& labels) REQUIRES(mu_);
  Counter& counterLocked(const std::string& name, const std::string& help, const Labels& labels)
      REQUIRES(mu_);
  Gauge& gaugeLocked(const std::string& name, const std::string& help, const Labels& labels)
      REQUIRES(mu_);

  // Lock order: collect_mu_ before mu_ (render() runs the collectors, which
  // register and set metrics, then reads the families).
  mutable Mutex collect_mu_;  // held while collectors run and render() reads
  std::map<uint64_t, std::function<void()>> collectors_ GUARDED_BY(collect_mu_);
  uint64_t next_collector_ GUARDED_BY(collect_mu_) = 0;
  mutable Mutex mu_ ACQUIRED_AFTER(collect_mu_);
  std::map<std::string, Family> families_ GUARDED_BY(mu_);
};

// The standard process metrics of Prometheus client libraries, declared in
// one place (updateProcessMetrics sets them).
struct ProcessMetrics {
  explicit ProcessMetrics(MetricsRegistry& metrics);
  Counter& cpu_seconds;
  Gauge& virtual_memory_bytes;
  Gauge& resident_memory_bytes;
  Gauge& open_fds;
  Gauge& max_fds;
  Gauge& start_time_seconds;
};

// One line per family, for `--print-metrics`:
//   NAME<TAB>TYPE<TAB>LABELS<TAB>HELP
// LABELS is "key=v1,v2;key2=" ("..." ends the values of a family whose values
// come at run time), "-" without labels.
std::string formatDescriptions(const std::vector<MetricDescription>& families);

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
