#include "common/metrics.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/status.h"

namespace morpheus {

namespace {
void atomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load();
  while (!a.compare_exchange_weak(cur, cur + v)) {
  }
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

bool validName(const std::string& n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); i++) {
    char c = n[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
              (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

// HELP text escapes only backslash and newline (exposition format 0.0.4).
std::string escapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}
}  // namespace

void Counter::inc(double v) { atomicAdd(v_, v); }

void Counter::advanceTo(double total) {
  double cur = v_.load();
  while (cur < total && !v_.compare_exchange_weak(cur, total)) {
  }
}

std::vector<double> latencyBucketsSeconds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}
void Gauge::add(double v) { atomicAdd(v_, v); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); i++) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) i++;
  buckets_[i].fetch_add(1);
  atomicAdd(sum_, v);
  count_.fetch_add(1);
}

std::vector<uint64_t> Histogram::cumulative() const {
  std::vector<uint64_t> out;
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_.size(); i++) {
    acc += buckets_[i].load();
    out.push_back(acc);
  }
  return out;
}

std::string formatLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ",";
    first = false;
    s += k + "=\"" + escape(v) + "\"";
  }
  return s + "}";
}

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, Type type,
                                                 const std::string& help,
                                                 const std::vector<std::string>* label_keys) {
  MORPHEUS_CHECK(validName(name), "invalid metric name " + name);
  auto it = families_.find(name);
  if (it == families_.end()) {
    Family f{type, help, {}, false, {}, {}, {}, {}};
    if (label_keys != nullptr) {
      f.label_keys = *label_keys;
      std::sort(f.label_keys.begin(), f.label_keys.end());
      f.open_labels = true;
    }
    it = families_.emplace(name, std::move(f)).first;
  }
  MORPHEUS_CHECK(it->second.type == type, "metric " + name + " re-registered with another type");
  if (label_keys != nullptr) {
    std::vector<std::string> keys = *label_keys;
    std::sort(keys.begin(), keys.end());
    if (!it->second.open_labels && it->second.label_sets.empty()) it->second.label_keys = keys;
    MORPHEUS_CHECK(it->second.label_keys == keys,
                   "metric " + name + " re-registered with other label keys");
    it->second.open_labels = true;
  }
  return it->second;
}

std::string MetricsRegistry::child(Family& f, const std::string& name, const Labels& labels) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : labels) {
    MORPHEUS_CHECK(validName(k) && k.rfind("__", 0) != 0,
                   "metric " + name + ": invalid label name " + k);
    keys.push_back(k);
  }
  if (f.label_sets.empty() && !f.open_labels) f.label_keys = keys;
  MORPHEUS_CHECK(f.label_keys == keys, "metric " + name + " used with other label keys");
  std::string key = formatLabels(labels);
  f.label_sets.emplace(key, labels);
  return key;
}

Counter& MetricsRegistry::counterLocked(const std::string& name, const std::string& help,
                                        const Labels& labels) {
  auto& f = family(name, Type::kCounter, help, nullptr);
  auto& p = f.counters[child(f, name, labels)];
  if (!p) p = std::make_unique<Counter>();
  return *p;
}

Gauge& MetricsRegistry::gaugeLocked(const std::string& name, const std::string& help,
                                    const Labels& labels) {
  auto& f = family(name, Type::kGauge, help, nullptr);
  auto& p = f.gauges[child(f, name, labels)];
  if (!p) p = std::make_unique<Gauge>();
  return *p;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const Labels& labels) {
  MutexLock lk(mu_);
  return counterLocked(name, help, labels);
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const Labels& labels) {
  MutexLock lk(mu_);
  return gaugeLocked(name, help, labels);
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      std::vector<double> bounds, const Labels& labels) {
  MutexLock lk(mu_);
  auto& f = family(name, Type::kHistogram, help, nullptr);
  auto& p = f.histograms[child(f, name, labels)];
  if (!p) p = std::make_unique<Histogram>(std::move(bounds));
  return *p;
}

CounterFamily MetricsRegistry::counterFamily(const std::string& name, const std::string& help,
                                             std::vector<std::string> label_keys) {
  MutexLock lk(mu_);
  family(name, Type::kCounter, help, &label_keys);
  return CounterFamily(this, name);
}

GaugeFamily MetricsRegistry::gaugeFamily(const std::string& name, const std::string& help,
                                         std::vector<std::string> label_keys) {
  MutexLock lk(mu_);
  family(name, Type::kGauge, help, &label_keys);
  return GaugeFamily(this, name);
}

Counter& CounterFamily::with(const Labels& labels) const {
  MutexLock lk(r_->mu_);
  return r_->counterLocked(name_, "", labels);
}

Gauge& GaugeFamily::with(const Labels& labels) const {
  MutexLock lk(r_->mu_);
  return r_->gaugeLocked(name_, "", labels);
}

void GaugeFamily::replaceAll(const std::vector<std::pair<Labels, double>>& values) const {
  MutexLock lk(r_->mu_);
  auto& f = r_->families_.at(name_);
  f.gauges.clear();
  f.label_sets.clear();
  for (const auto& [labels, v] : values) r_->gaugeLocked(name_, "", labels).set(v);
}

MetricsRegistry::Collector::~Collector() {
  MutexLock lk(r_->collect_mu_);
  r_->collectors_.erase(id_);
}

std::unique_ptr<MetricsRegistry::Collector> MetricsRegistry::addCollector(
    std::function<void()> collect) {
  MutexLock lk(collect_mu_);
  uint64_t id = next_collector_++;
  collectors_.emplace(id, std::move(collect));
  return std::unique_ptr<Collector>(new Collector(this, id));
}

double MetricsRegistry::valueOf(const std::string& name, const Labels& labels) const {
  MutexLock lk(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return -1;
  std::string l = formatLabels(labels);
  if (auto c = it->second.counters.find(l); c != it->second.counters.end())
    return c->second->value();
  if (auto g = it->second.gauges.find(l); g != it->second.gauges.end()) return g->second->value();
  return -1;
}

namespace {
const char* typeName(int t) { return t == 0 ? "counter" : t == 1 ? "gauge" : "histogram"; }
}  // namespace

std::string MetricsRegistry::render() const {
  MutexLock collect(collect_mu_);
  for (const auto& [id, fn] : collectors_) fn();
  MutexLock lk(mu_);
  std::ostringstream os;
  for (const auto& [name, f] : families_) {
    os << "# HELP " << name << " " << escapeHelp(f.help) << "\n# TYPE " << name << " "
       << typeName(static_cast<int>(f.type)) << "\n";
    for (const auto& [l, c] : f.counters) os << name << l << " " << num(c->value()) << "\n";
    for (const auto& [l, g] : f.gauges) os << name << l << " " << num(g->value()) << "\n";
    for (const auto& [l, h] : f.histograms) {
      auto cum = h->cumulative();
      std::string inner = l.empty() ? "" : l.substr(1, l.size() - 2) + ",";
      for (size_t i = 0; i < h->bounds().size(); i++) {
        os << name << "_bucket{" << inner << "le=\"" << num(h->bounds()[i]) << "\"} " << cum[i]
           << "\n";
      }
      os << name << "_bucket{" << inner << "le=\"+Inf\"} " << cum.back() << "\n";
      os << name << "_sum" << l << " " << num(h->sum()) << "\n";
      os << name << "_count" << l << " " << h->count() << "\n";
    }
  }
  return os.str();
}

std::vector<MetricDescription> MetricsRegistry::describe() const {
  MutexLock lk(mu_);
  std::vector<MetricDescription> out;
  for (const auto& [name, f] : families_) {
    MetricDescription d{name, typeName(static_cast<int>(f.type)), f.help, {}, f.open_labels};
    for (const auto& key : f.label_keys) {
      std::set<std::string> values;
      for (const auto& [k, labels] : f.label_sets) {
        if (auto v = labels.find(key); v != labels.end()) values.insert(v->second);
      }
      d.labels.emplace_back(key, std::vector<std::string>(values.begin(), values.end()));
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string formatDescriptions(const std::vector<MetricDescription>& families) {
  std::string out;
  for (const auto& d : families) {
    std::string labels;
    for (const auto& [key, values] : d.labels) {
      if (!labels.empty()) labels += ";";
      labels += key + "=";
      std::string vs;
      for (const auto& v : values) vs += (vs.empty() ? "" : ",") + v;
      if (d.open_labels) vs += (vs.empty() ? "" : ",") + std::string("...");
      labels += vs;
    }
    out += d.name + "\t" + d.type + "\t" + (labels.empty() ? "-" : labels) + "\t" + d.help + "\n";
  }
  return out;
}

ProcessMetrics::ProcessMetrics(MetricsRegistry& m)
    : cpu_seconds(m.counter("process_cpu_seconds_total",
                            "Total user and system CPU time spent in seconds.")),
      virtual_memory_bytes(
          m.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.")),
      resident_memory_bytes(
          m.gauge("process_resident_memory_bytes", "Resident memory size in bytes.")),
      open_fds(m.gauge("process_open_fds", "Number of open file descriptors.")),
      max_fds(m.gauge("process_max_fds", "Maximum number of open file descriptors.")),
      start_time_seconds(m.gauge("process_start_time_seconds",
                                 "Start time of the process since unix epoch in seconds.")) {}

namespace {

// Fields of /proc/self/stat after the command name, numbered as in proc(5)
// (field 3 is the state); the command may hold spaces and parentheses.
Result<std::vector<std::string>> readProcStat() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return unavailable("cannot read /proc/self/stat");
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) {
    return unavailable("/proc/self/stat: unexpected format");
  }
  std::vector<std::string> fields(3);  // 0..2 unused: pid, comm
  std::istringstream rest(line.substr(close + 2));
  for (std::string f; rest >> f;) fields.push_back(f);
  if (fields.size() < 25) return unavailable("/proc/self/stat: too few fields");
  return fields;
}

// Seconds since the epoch at boot (btime of /proc/stat), or -1.
double bootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::atof(line.c_str() + 6);
  }
  return -1;
}

}  // namespace

Status updateProcessMetrics(MetricsRegistry& metrics) {
  ProcessMetrics m(metrics);
  auto fields = readProcStat();
  if (!fields.isOk()) return fields.status();
  const auto& f = *fields;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  // The process's CPU clock (all threads, user + system) in nanoseconds, not
  // /proc/self/stat's utime + stime in clock ticks: at 10 ms a tick, a
  // daemon that has just started reads 0 (a CI run saw it).
  timespec cpu{};
  const double cpu_s =
      ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0
          ? static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) / 1e9
          : (std::stod(f[14]) + std::stod(f[15])) / tick;
  m.cpu_seconds.advanceTo(cpu_s);
  m.virtual_memory_bytes.set(std::stod(f[23]));
  m.resident_memory_bytes.set(std::stod(f[24]) * page);
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    fds++;
  }
  if (ec) return unavailable("cannot list /proc/self/fd: " + ec.message());
  m.open_fds.set(fds);
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    m.max_fds.set(static_cast<double>(rl.rlim_cur));
  }
  double boot = bootTimeSeconds();
  if (boot < 0) return unavailable("cannot read btime from /proc/stat");
  m.start_time_seconds.set(boot + std::stod(f[22]) / tick);
  return Status::ok();
}

}  // namespace morpheus
