#include "common/metrics.h"

#include <cctype>
#include <charconv>
#include <cmath>
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

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}
}  // namespace

void Counter::inc(double v) { atomicAdd(v_, v); }
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

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, Type type,
                                                 const std::string& help) {
  MORPHEUS_CHECK(validName(name), "invalid metric name " + name);
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(name, Family{type, help, {}, {}, {}}).first;
  }
  MORPHEUS_CHECK(it->second.type == type, "metric " + name + " re-registered with another type");
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const Labels& labels) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& f = family(name, Type::kCounter, help);
  auto& p = f.counters[formatLabels(labels)];
  if (!p) p = std::make_unique<Counter>();
  return *p;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const Labels& labels) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& f = family(name, Type::kGauge, help);
  auto& p = f.gauges[formatLabels(labels)];
  if (!p) p = std::make_unique<Gauge>();
  return *p;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      std::vector<double> bounds, const Labels& labels) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& f = family(name, Type::kHistogram, help);
  auto& p = f.histograms[formatLabels(labels)];
  if (!p) p = std::make_unique<Histogram>(std::move(bounds));
  return *p;
}

double MetricsRegistry::valueOf(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return -1;
  std::string l = formatLabels(labels);
  if (auto c = it->second.counters.find(l); c != it->second.counters.end())
    return c->second->value();
  if (auto g = it->second.gauges.find(l); g != it->second.gauges.end()) return g->second->value();
  return -1;
}

std::string MetricsRegistry::render() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::ostringstream os;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::kCounter ? "counter"
                       : f.type == Type::kGauge ? "gauge"
                                                : "histogram";
    os << "# HELP " << name << " " << f.help << "\n# TYPE " << name << " " << type << "\n";
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

}  // namespace morpheus
