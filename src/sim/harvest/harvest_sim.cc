#include "sim/harvest/harvest_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numbers>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "harvest/harvest_forecast.h"
#include "harvest/harvest_replicas.h"
#include "harvest/harvest_selection.h"

namespace morpheus::sim {

const char* strategyName(PlacementStrategy s) {
  switch (s) {
    case PlacementStrategy::kHistory:
      return "history";
    case PlacementStrategy::kPrimaryAware:
      return "primary-aware";
    case PlacementStrategy::kRandom:
      return "random";
    case PlacementStrategy::kClairvoyantBestFit:
      return "clairvoyant-best-fit";
    case PlacementStrategy::kClairvoyantMostRoom:
      return "clairvoyant-most-room";
    case PlacementStrategy::kClairvoyantWait:
      return "clairvoyant-wait";
  }
  return "?";
}

Result<PlacementStrategy> parsePlacementStrategy(const std::string& name) {
  std::string known;
  for (auto s : {PlacementStrategy::kHistory, PlacementStrategy::kPrimaryAware,
                 PlacementStrategy::kRandom, PlacementStrategy::kClairvoyantBestFit,
                 PlacementStrategy::kClairvoyantMostRoom, PlacementStrategy::kClairvoyantWait}) {
    if (name == strategyName(s)) return s;
    known += (known.empty() ? "" : ", ") + std::string(strategyName(s));
  }
  return invalidArgument("strategy", "'" + name + "' is not one of " + known);
}

const char* historyFallbackName(HistoryFallback f) {
  switch (f) {
    case HistoryFallback::kRanked:
      return "ranked";
    case HistoryFallback::kAnyServer:
      return "any";
    case HistoryFallback::kHold:
      return "hold";
  }
  return "?";
}

Result<HistoryFallback> parseHistoryFallback(const std::string& name) {
  for (auto f : {HistoryFallback::kRanked, HistoryFallback::kAnyServer, HistoryFallback::kHold})
    if (name == historyFallbackName(f)) return f;
  return invalidArgument("history-fallback", "'" + name + "' is not one of ranked, any, hold");
}

const char* replicaStrategyName(ReplicaStrategy s) {
  switch (s) {
    case ReplicaStrategy::kAlgorithm2:
      return "algorithm2";
    case ReplicaStrategy::kRandom:
      return "random";
    case ReplicaStrategy::kBestFirst:
      return "best-first";
  }
  return "?";
}

double throttleSpeed(double cpu_left, int64_t tasks) {
  if (tasks <= 0 || static_cast<double>(tasks) <= cpu_left) return 1.0;
  return std::clamp(std::max(0.0, cpu_left) / static_cast<double>(tasks), 0.01, 1.0);
}

namespace {

// The pattern of each of `n` tenants: smooth weighted round-robin over the
// shares (ties go to the earlier pattern).
std::vector<rm::UtilPattern> patternOrder(int n, const std::array<double, 3>& mix) {
  const double total = mix[0] + mix[1] + mix[2];
  std::array<double, 3> credit = {0, 0, 0};
  std::vector<rm::UtilPattern> out;
  for (int t = 0; t < n; t++) {
    size_t best = 0;
    for (size_t p = 0; p < 3; p++) credit[p] += mix[p];
    for (size_t p = 1; p < 3; p++)
      if (credit[p] > credit[best]) best = p;
    credit[best] -= total;
    out.push_back(static_cast<rm::UtilPattern>(best));
  }
  return out;
}

}  // namespace

Result<std::vector<PrimaryTrace>> generatePrimaryTraces(const PrimaryGenOptions& o) {
  for (double m : o.mix) {
    if (!(m >= 0) || !std::isfinite(m))
      return invalidArgument("mix", "shares must be finite and >= 0, not all 0");
  }
  if (o.mix[0] + o.mix[1] + o.mix[2] <= 0)
    return invalidArgument("mix", "shares must be finite and >= 0, not all 0");
  if (o.tenants < 1) return invalidArgument("tenants", "must be >= 1");
  if (o.days < 2)
    return invalidArgument("days", "must be >= 2 (all days but the last are history)");
  if (!(o.mean_util >= 0 && o.mean_util <= 0.95))
    return invalidArgument("mean_util", "must be in [0, 0.95] (0 = the fixed ranges)");
  const double target = o.mean_util;
  const std::vector<rm::UtilPattern> order = patternOrder(o.tenants, o.mix);
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 1);
  const int per_day = static_cast<int>(Millis(86400000) / o.step);
  const int n = per_day * o.days;
  std::vector<PrimaryTrace> out;
  for (int t = 0; t < o.tenants; t++) {
    PrimaryTrace tr;
    tr.truth = order[static_cast<size_t>(t)];
    tr.tenant = std::string(rm::patternName(tr.truth)) + "-" + std::to_string(t);
    if (tr.truth == rm::UtilPattern::kPeriodic) {
      double mean = 0.15 + 0.3 * u(rng), amp = 0.1 + 0.25 * u(rng);
      if (target > 0) {
        mean = std::clamp(target + 0.2 * (u(rng) - 0.5), 0.05, 0.95);
        amp = std::min({amp, 0.98 - mean, mean - 0.02});
      }
      double phase = (u(rng) - 0.5) * 0.25;  // +-3 h of a common peak
      for (int i = 0; i < n; i++) {
        double x = static_cast<double>(i) / per_day + phase;
        tr.util.push_back(std::clamp(
            mean + amp * std::sin(2 * std::numbers::pi * x) + 0.02 * noise(rng), 0.0, 1.0));
      }
    } else if (tr.truth == rm::UtilPattern::kConstant) {
      double level = 0.1 + 0.5 * u(rng);
      if (target > 0) level = std::clamp(target + 0.3 * (u(rng) - 0.5), 0.05, 0.95);
      for (int i = 0; i < n; i++)
        tr.util.push_back(std::clamp(level + 0.01 * noise(rng), 0.0, 1.0));
    } else {
      double x = 0.1 + 0.5 * u(rng);
      const double level = std::clamp(target + 0.3 * (u(rng) - 0.5), 0.05, 0.95);
      if (target > 0) x = level;
      for (int i = 0; i < n; i++) {
        x += 0.06 * noise(rng);
        if (target > 0) x += 0.05 * (level - x);  // pulled back towards its level
        if (u(rng) < 0.02) x += 0.5 * u(rng);     // burst
        x = std::clamp(x, 0.05, 0.95);
        tr.util.push_back(x);
      }
    }
    out.push_back(std::move(tr));
  }
  return out;
}

Result<std::vector<PrimaryTrace>> parsePrimaryTraces(const std::string& text) {
  std::vector<PrimaryTrace> out;
  std::istringstream lines(text);
  std::string line;
  int no = 0;
  for (; std::getline(lines, line);) {
    no++;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream w(line);
    PrimaryTrace tr;
    if (!(w >> tr.tenant)) continue;
    for (const auto& seen : out) {
      if (seen.tenant == tr.tenant)
        return invalidArgument("line " + std::to_string(no),
                               "tenant '" + tr.tenant + "' appears twice");
    }
    std::string v;
    while (w >> v) {
      char* end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (*end != '\0' || !(x >= 0 && x <= 1)) {
        return invalidArgument("line " + std::to_string(no),
                               "'" + v + "' is not a fraction in [0, 1]");
      }
      tr.util.push_back(x);
    }
    if (tr.util.empty()) return invalidArgument("line " + std::to_string(no), "no samples");
    if (!out.empty() && out.front().util.size() != tr.util.size()) {
      return invalidArgument("line " + std::to_string(no),
                             std::to_string(tr.util.size()) + " samples, the first line has " +
                                 std::to_string(out.front().util.size()));
    }
    auto p = rm::profileTenant({tr.tenant, tr.util}, rm::ClassifierOptions{});
    if (p.isOk()) tr.truth = p->pattern;
    out.push_back(std::move(tr));
  }
  if (out.empty()) return invalidArgument("traces", "no tenant lines");
  return out;
}

Result<std::array<double, 3>> parseClassMix(const std::string& spec) {
  const std::string what = "'" + spec + "': ";
  std::array<double, 3> mix = {0, 0, 0};
  size_t n = 0, from = 0;
  while (true) {
    const size_t comma = spec.find(',', from);
    std::string v =
        spec.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    v.erase(0, v.find_first_not_of(' '));
    v.erase(v.find_last_not_of(' ') + 1);
    if (n == 3)
      return invalidArgument("mix", what + "more than 3 shares (periodic,constant,unpredictable)");
    char* end = nullptr;
    const double x = v.empty() ? 0 : std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0')
      return invalidArgument("mix", what + "'" + v + "' is not a number");
    if (!(x >= 0) || !std::isfinite(x))
      return invalidArgument("mix", what + "'" + v + "' is not a finite share >= 0");
    mix[n++] = x;
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (n != 3)
    return invalidArgument("mix", what + "3 shares wanted (periodic,constant,unpredictable), got " +
                                      std::to_string(n));
  if (mix[0] + mix[1] + mix[2] <= 0) return invalidArgument("mix", what + "all shares are 0");
  return mix;
}

Status parseRankingWeights(const std::string& spec, rm::SelectionOptions& o) {
  auto colon = spec.find(':');
  const std::string length = spec.substr(0, colon);
  const std::map<std::string, rm::JobLength> names = {{"short", rm::JobLength::kShort},
                                                      {"medium", rm::JobLength::kMedium},
                                                      {"long", rm::JobLength::kLong}};
  if (colon == std::string::npos || !names.count(length))
    return invalidArgument("weights", "'" + spec + "': expected short|medium|long:P,C,U");
  std::istringstream in(spec.substr(colon + 1));
  std::map<rm::UtilPattern, double> w;
  std::string v;
  for (int p = 0; p < 3; p++) {
    char* end = nullptr;
    if (!std::getline(in, v, ',')) return invalidArgument("weights", "'" + spec + "': 3 weights");
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x >= 0))
      return invalidArgument("weights", "'" + spec + "': '" + v + "' is not a weight >= 0");
    w[static_cast<rm::UtilPattern>(p)] = x;
  }
  if (std::getline(in, v, ','))
    return invalidArgument("weights", "'" + spec + "': more than 3 weights");
  o.weights[names.at(length)] = w;
  return Status::ok();
}

namespace {

using rm::forEachSegment;
using rm::RangeMax;

struct Task {
  int job;
  int stage;
  double work_left;          // ticks at full speed still to run
  double work;               // ticks at full speed in all
  int placed = 0;            // history: 0 in its job's classes, 1 outside them, 2 job without class
  int64_t expected_end = 0;  // start tick + work: when history expects it to end
};

struct JobRt {
  const SwimJob* swim;
  int64_t submit_tick;
  int64_t pending[2] = {0, 0};
  int64_t running[2] = {0, 0};
  int64_t left[2] = {0, 0};  // tasks not yet finished per stage
  int64_t dur_ticks[2] = {1, 1};
  std::vector<int> preferred;  // servers of the chosen classes (history)
  int64_t hold_until = -1;     // history: held without a class until this tick
  // History with kHold: the tick since which the stage has held tasks no
  // server was predicted to fit (-1: none held).
  int64_t held_since[2] = {-1, -1};
  int64_t finish_tick = -1;
  rm::JobLength length = rm::JobLength::kMedium;
};

struct Server {
  int tenant;
  std::vector<Task> tasks;  // in start order: newest last
  int64_t over_since = -1;  // first tick of the current throttled phase (-1: not throttled)
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

class HarvestRun {
 public:
  HarvestRun(const std::vector<PrimaryTrace>& traces, PlacementStrategy s,
             const HarvestSimOptions& o)
      : traces_(traces), strategy_(s), o_(o), rng_(o.seed) {
    for (size_t t = 0; t < traces.size(); t++)
      for (int k = 0; k < o.servers_per_tenant; k++) servers_.push_back({static_cast<int>(t), {}});
    per_day_ = Millis(86400000) / o.step;
    ticks_per_step_ = std::max<int64_t>(1, o.step / o.tick);
  }

  Status classify() {
    std::vector<rm::TenantSeries> hist;
    for (const auto& tr : traces_) {
      size_t n = static_cast<size_t>(historySteps());
      hist.push_back({tr.tenant, std::vector<double>(tr.util.begin(),
                                                     tr.util.begin() + static_cast<long>(n))});
    }
    auto cls = rm::clusterTenants(hist, rm::ClassifierOptions{});
    if (!cls.isOk()) return cls.status();
    classes_ = std::move(cls).value();
    std::map<std::string, int> index;
    for (size_t t = 0; t < traces_.size(); t++) index[traces_[t].tenant] = static_cast<int>(t);
    class_servers_.resize(classes_.size());
    class_tenants_.resize(classes_.size());
    for (size_t c = 0; c < classes_.size(); c++) {
      for (const auto& name : classes_[c].tenants) class_tenants_[c].push_back(index[name]);
      for (size_t s = 0; s < servers_.size(); s++) {
        for (int t : class_tenants_[c])
          if (servers_[s].tenant == t) class_servers_[c].push_back(static_cast<int>(s));
      }
    }
    for (size_t c = 0; c < classes_.size(); c++)
      for (int t : class_tenants_[c])
        tenants_mislabelled_ += traces_[t].truth != classes_[c].pattern ? 1 : 0;
    buildPrediction();
    server_class_.assign(servers_.size(), -1);
    server_pos_.assign(servers_.size(), -1);
    for (size_t c = 0; c < classes_.size(); c++) {
      for (size_t i = 0; i < class_servers_[c].size(); i++) {
        server_class_[class_servers_[c][i]] = static_cast<int>(c);
        server_pos_[class_servers_[c][i]] = static_cast<int>(i);
      }
    }
    return Status::ok();
  }

  HarvestSimResult run(const std::vector<SwimJob>& swim) {
    std::bernoulli_distribution keep(o_.job_sample);
    const int64_t day_ticks = historySteps() * ticks_per_step_;
    for (const auto& j : swim) {
      if (!keep(rng_)) continue;
      JobRt r;
      r.swim = &j;
      r.submit_tick = day_ticks + j.submit / o_.tick;
      r.left[0] = r.pending[0] = std::min(j.map_tasks, o_.max_tasks_per_stage);
      r.left[1] = std::min(j.reduce_tasks, o_.max_tasks_per_stage);
      r.dur_ticks[0] = std::max<int64_t>(1, (j.map_task_duration + o_.tick - Millis(1)) / o_.tick);
      r.dur_ticks[1] =
          std::max<int64_t>(1, (j.reduce_task_duration + o_.tick - Millis(1)) / o_.tick);
      r.length = rm::lengthType(j.map_task_duration + j.reduce_task_duration, o_.selection);
      jobs_.push_back(r);
    }
    std::sort(jobs_.begin(), jobs_.end(),
              [](const JobRt& a, const JobRt& b) { return a.submit_tick < b.submit_tick; });
    const int64_t end_tick = static_cast<int64_t>(traces_.front().util.size()) * ticks_per_step_;
    const int64_t drain_until = end_tick + o_.drain / o_.tick;
    if (clairvoyant()) {
      int64_t longest = 1;
      for (const auto& j : jobs_) longest = std::max({longest, j.dur_ticks[0], j.dur_ticks[1]});
      buildFuture(drain_until + longest + 1);
    }
    size_t next_job = 0;
    double secondary = 0, primary = 0;
    int64_t measured = 0;
    for (int64_t now = day_ticks; now < drain_until; now++) {
      if (now >= end_tick && active_.empty()) break;
      while (next_job < jobs_.size() && jobs_[next_job].submit_tick <= now) {
        admit(static_cast<int>(next_job), now);
        active_.push_back(static_cast<int>(next_job++));
      }
      // A task whose work ran out during the last tick has ended: it holds
      // no memory or CPU at this tick's checks.
      complete(now);
      enforce(now);
      place(now);
      advance(now);
      if (now >= end_tick) continue;  // draining: the day's utilisation is measured
      for (const auto& s : servers_) {
        secondary += static_cast<double>(s.tasks.size());
        primary += primaryCores(s, now);
      }
      measured++;
    }
    HarvestSimResult r;
    r.jobs = static_cast<int64_t>(jobs_.size());
    r.tasks_run = tasks_run_;
    r.task_kills = kills_;
    std::vector<double> jct, floor;
    const double tick_s = static_cast<double>(o_.tick.count()) / 1000.0;
    for (const auto& j : jobs_) {
      if (j.finish_tick < 0) continue;
      r.jobs_finished++;
      jct.push_back(static_cast<double>(j.finish_tick - j.submit_tick) * tick_s);
      floor.push_back(static_cast<double>(noWaitTicks(j)) * tick_s);
      const auto l = static_cast<size_t>(j.length);
      r.jobs_by_length[l]++;
      r.mean_jct_by_length_s[l] += jct.back();
      r.floor_mean_jct_by_length_s[l] += floor.back();
    }
    for (size_t l = 0; l < 3; l++) {
      r.kills_by_pattern[l] = kills_by_pattern_[l];
      r.kills_by_length[l] = kills_by_length_[l];
      r.throttled_task_s_by_pattern[l] = throttled_by_pattern_[l] * tick_s;
      if (r.jobs_by_length[l] > 0) {
        r.mean_jct_by_length_s[l] /= static_cast<double>(r.jobs_by_length[l]);
        r.floor_mean_jct_by_length_s[l] /= static_cast<double>(r.jobs_by_length[l]);
      }
    }
    r.floor_mean_jct_s = floor.empty() ? 0
                                       : std::accumulate(floor.begin(), floor.end(), 0.0) /
                                             static_cast<double>(floor.size());
    r.floor_p95_jct_s = percentile(floor, 0.95);
    r.lost_core_s = lost_ticks_ * tick_s;
    r.memory_kills = memory_kills_;
    r.throttled_task_s = throttled_ticks_ * tick_s;
    r.throttle_lost_core_s = throttle_lost_ticks_ * tick_s;
    r.jobs_without_class = jobs_without_class_;
    r.tasks_outside_class = tasks_outside_class_;
    r.tenants_mislabelled = tenants_mislabelled_;
    r.held_task_s = held_ticks_ * tick_s;
    r.tasks_placed_after_hold = tasks_after_hold_;
    for (size_t k = 0; k < 3; k++) {
      r.tasks_by_placement[k] = tasks_by_placement_[k];
      r.throttled_task_s_by_placement[k] = throttled_by_placement_[k] * tick_s;
      r.throttled_task_s_by_length[k] = throttled_by_length_[k] * tick_s;
    }
    double sum = 0;
    for (double v : jct) sum += v;
    r.mean_jct_s = jct.empty() ? 0 : sum / static_cast<double>(jct.size());
    r.p50_jct_s = percentile(jct, 0.5);
    r.p95_jct_s = percentile(jct, 0.95);
    double all = static_cast<double>(measured) * static_cast<double>(servers_.size() * o_.cores);
    r.harvested_util = all > 0 ? secondary / all : 0;
    r.primary_util = all > 0 ? primary / all : 0;
    return r;
  }

 private:
  // Ticks job `j` takes when nothing waits or is killed: its map wave, then
  // its reduce wave (a stage without tasks takes none).
  static int64_t noWaitTicks(const JobRt& j) {
    return (j.swim->map_tasks > 0 ? j.dur_ticks[0] : 0) +
           (j.swim->reduce_tasks > 0 ? j.dur_ticks[1] : 0);
  }
  // Every day but the last is history; jobs run on the last day.
  int64_t historySteps() const {
    int64_t days = static_cast<int64_t>(traces_.front().util.size()) / per_day_;
    return (days - 1) * per_day_;
  }
  double primaryCores(const Server& s, int64_t now) const {
    const auto& u = traces_[s.tenant].util;
    // Past the series (draining), the last day repeats.
    auto i = static_cast<size_t>(now / ticks_per_step_);
    if (i >= u.size())
      i = u.size() - static_cast<size_t>(per_day_) + (i - u.size()) % static_cast<size_t>(per_day_);
    return u[i] * o_.cores;
  }
  bool clairvoyant() const {
    return strategy_ == PlacementStrategy::kClairvoyantBestFit ||
           strategy_ == PlacementStrategy::kClairvoyantMostRoom ||
           strategy_ == PlacementStrategy::kClairvoyantWait;
  }

  // The clairvoyant strategies' view of the future, per tenant over steps
  // 0 .. the last tick any task can run (the series, then the repeated last
  // day as primaryCores() has it): over_[t][k][i] counts the steps before i
  // where `k` tasks would be throttled (k > what the primary and the reserve
  // leave, the test advance() applies), and max_[t] gives the largest
  // primary (cores) over any range of steps.
  void buildFuture(int64_t ticks) {
    const int64_t steps = (ticks + ticks_per_step_ - 1) / ticks_per_step_ + 1;
    const int kmax = o_.cores + 2;
    over_.assign(traces_.size(), std::vector<std::vector<int32_t>>(
                                     static_cast<size_t>(kmax),
                                     std::vector<int32_t>(static_cast<size_t>(steps) + 1, 0)));
    max_.assign(traces_.size(), {});
    Server probe{0, {}};
    for (size_t t = 0; t < traces_.size(); t++) {
      probe.tenant = static_cast<int>(t);
      std::vector<double> prim(static_cast<size_t>(steps));
      for (int64_t i = 0; i < steps; i++)
        prim[static_cast<size_t>(i)] = primaryCores(probe, i * ticks_per_step_);
      for (int k = 0; k < kmax; k++) {
        auto& c = over_[t][static_cast<size_t>(k)];
        for (size_t i = 0; i < prim.size(); i++) {
          const double cpu_left = o_.cores - prim[i] - o_.reserve_cores;
          c[i + 1] = c[i] + (static_cast<double>(k) > cpu_left ? 1 : 0);
        }
      }
      max_[t] = RangeMax(std::move(prim));
    }
  }

  // Ticks in [a, b) at which `k` tasks on a server of tenant `t` run throttled.
  int64_t ticksOver(int t, int64_t k, int64_t a, int64_t b) const {
    if (a >= b || k <= 0) return 0;
    const auto& c =
        over_[static_cast<size_t>(t)]
             [static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(over_[0].size()) - 1))];
    const int64_t sa = a / ticks_per_step_, sb = (b - 1) / ticks_per_step_;
    auto over = [&](int64_t s) { return static_cast<int64_t>(c[s + 1] - c[s]); };
    if (sa == sb) return (b - a) * over(sa);
    return ((sa + 1) * ticks_per_step_ - a) * over(sa) + (b - sb * ticks_per_step_) * over(sb) +
           ticks_per_step_ * static_cast<int64_t>(c[sb] - c[sa + 1]);
  }

  // The primary's largest use (cores) over ticks [a, b), a < b.
  double maxPrimary(int t, int64_t a, int64_t b) const {
    const auto sa = static_cast<size_t>(a / ticks_per_step_);
    const auto sb = static_cast<size_t>((b - 1) / ticks_per_step_) + 1;
    return max_[static_cast<size_t>(t)].max(sa, sb - sa);
  }

  // The clairvoyant strategies (PlacementStrategy): a task of `work` ticks
  // placed at `now`; -1 holds it (kClairvoyantWait without a fitting
  // server, or no server with a core now). Each server's tasks are counted
  // until their remaining work would end at full speed.
  int pickClairvoyant(int64_t work, int64_t now) {
    const bool best_fit = strategy_ != PlacementStrategy::kClairvoyantMostRoom;
    const bool wait = strategy_ == PlacementStrategy::kClairvoyantWait;
    int fit = -1, fallback = -1;
    double fit_room = 0, fallback_cost = 0;
    int64_t fit_ties = 0, fallback_ties = 0;
    std::vector<int64_t> ends;
    for (size_t si = 0; si < servers_.size(); si++) {
      const Server& s = servers_[si];
      if (room(s, now) < 1) continue;
      ends.clear();
      for (const auto& t : s.tasks)
        ends.push_back(static_cast<int64_t>(std::ceil(t.work_left - 1e-9)));
      std::sort(ends.begin(), ends.end());
      // Segments of [now, now + work) with n tasks already there.
      bool fits = true;
      double least = std::numeric_limits<double>::infinity();
      double cost = 0;
      forEachSegment(ends, work, [&](int64_t from, int64_t to, int64_t n) {
        const int64_t a = now + from, b = now + to;
        const int64_t over_new = ticksOver(s.tenant, n + 1, a, b);
        if (over_new > 0) fits = false;
        cost += static_cast<double>((n + 1) * over_new - n * ticksOver(s.tenant, n, a, b));
        least = std::min(least, o_.cores - o_.reserve_cores - static_cast<double>(n + 1) -
                                    maxPrimary(s.tenant, a, b));
      });
      if (fits) {
        const bool better = fit < 0 || (best_fit ? least < fit_room : least > fit_room);
        if (better || least == fit_room) {
          fit_ties = better ? 1 : fit_ties + 1;
          if (better || std::uniform_int_distribution<int64_t>(1, fit_ties)(rng_) == 1) {
            fit = static_cast<int>(si);
            fit_room = least;
          }
        }
      } else if (fit < 0 && !wait) {
        const bool better = fallback < 0 || cost < fallback_cost;
        if (better || cost == fallback_cost) {
          fallback_ties = better ? 1 : fallback_ties + 1;
          if (better || std::uniform_int_distribution<int64_t>(1, fallback_ties)(rng_) == 1) {
            fallback = static_cast<int>(si);
            fallback_cost = cost;
          }
        }
      }
    }
    return fit >= 0 ? fit : fallback;
  }

  // Cores a new task may use on `s` (the placement view of the strategy).
  int64_t room(const Server& s, int64_t now) const {
    double busy = static_cast<double>(s.tasks.size());
    if (strategy_ != PlacementStrategy::kRandom) busy += primaryCores(s, now) + o_.reserve_cores;
    return static_cast<int64_t>(std::floor(o_.cores - busy));
  }

  // The classes as Algorithm 1 sees them at `now`; computed once per tick
  // and kept current as this tick's placements take slots (placeTask).
  const std::vector<rm::ClassState>& classStates(int64_t now) {
    if (states_tick_ == now) return states_;
    states_.clear();
    for (size_t c = 0; c < classes_.size(); c++) {
      rm::ClassState st;
      st.cls = classes_[c];
      double cur = 0;
      int64_t used = 0;
      for (int s : class_servers_[c]) {
        const double current = primaryCores(servers_[s], now) / o_.cores;
        const auto tasks = static_cast<int64_t>(servers_[s].tasks.size());
        cur += current;
        used += tasks;
        // Counted per server as placement counts them (headroomRoom): a
        // task takes a whole core of one server.
        st.nodes.push_back({current, o_.cores, o_.reserve_cores + tasks});
      }
      st.current =
          class_servers_[c].empty() ? 0 : cur / static_cast<double>(class_servers_[c].size());
      // The headroom is a share of the class's cores; the NMs' reserves and
      // the secondary tasks already there are taken from it.
      const auto n = static_cast<int64_t>(class_servers_[c].size());
      st.capacity_slots = n * o_.cores;
      st.taken_slots = n * o_.reserve_cores + used;
      states_.push_back(st);
    }
    states_tick_ = now;
    return states_;
  }

  // Algorithm 1 for the job's remaining tasks; fills `preferred` with the
  // chosen classes' servers. False when no class (or combination) fits.
  bool select(JobRt& job, int64_t now) {
    std::vector<rm::StageShape> dag = {{"map", job.left[0], {}}, {"reduce", job.left[1], {"map"}}};
    int64_t width = rm::maxConcurrentContainers(dag).value();
    std::uniform_real_distribution<double> u(0, 1);
    auto chosen = rm::selectClasses(job.length, width, classStates(now), o_.selection, u(rng_));
    for (const auto& id : chosen) {
      for (size_t c = 0; c < classes_.size(); c++)
        if (classes_[c].id == id)
          job.preferred.insert(job.preferred.end(), class_servers_[c].begin(),
                               class_servers_[c].end());
    }
    return !chosen.empty();
  }

  // History: a job no class fits either runs unconstrained at once or, with
  // no_class_wait, is held (selection retried every tick) for that long.
  void admit(int j, int64_t now) {
    if (strategy_ != PlacementStrategy::kHistory) return;
    JobRt& job = jobs_[j];
    if (select(job, now)) return;
    if (o_.no_class_wait.count() > 0) {
      job.hold_until = now + (o_.no_class_wait + o_.tick - Millis(1)) / o_.tick;
    } else {
      jobs_without_class_++;
    }
  }

  // True while the job is held; releases it when a class fits or time is up.
  bool held(JobRt& job, int64_t now) {
    if (job.hold_until < 0) return false;
    if (select(job, now)) {
      job.hold_until = -1;
      return false;
    }
    if (now < job.hold_until) return true;
    job.hold_until = -1;
    jobs_without_class_++;
    return false;
  }

  // The NM's harvest guard on every server (decideHarvest): a memory overlap
  // kills the newest tasks at once; a CPU overlap throttles them
  // (advance()) and, once that has lasted cpu_kill_after, kills the newest
  // until the rest fit.
  void enforce(int64_t now) {
    for (auto& s : servers_) {
      const double primary = primaryCores(s, now);
      const double mem_limit = o_.cores - o_.primary_memory * primary - o_.reserve_cores;
      while (!s.tasks.empty() && static_cast<double>(s.tasks.size()) > mem_limit) {
        kill(s, now);
        memory_kills_++;
      }
      const double cpu_left = o_.cores - primary - o_.reserve_cores;
      if (static_cast<double>(s.tasks.size()) <= cpu_left) {
        s.over_since = -1;
        continue;
      }
      if (s.over_since < 0) s.over_since = now;
      if ((now - s.over_since) * o_.tick < o_.cpu_kill_after) continue;
      while (!s.tasks.empty() && static_cast<double>(s.tasks.size()) > cpu_left) kill(s, now);
      s.over_since = -1;
    }
  }

  void kill(Server& s, int64_t now) {
    (void)now;
    Task t = s.tasks.back();
    s.tasks.pop_back();
    JobRt& j = jobs_[t.job];
    j.running[t.stage]--;
    j.pending[t.stage]++;
    kills_++;
    kills_by_pattern_[static_cast<size_t>(traces_[s.tenant].truth)]++;
    kills_by_length_[static_cast<size_t>(j.length)]++;
    lost_ticks_ += t.work - t.work_left;
  }

  // One tick of running: every task progresses at its server's speed.
  void advance(int64_t now) {
    for (auto& s : servers_) {
      if (s.tasks.empty()) continue;
      const double cpu_left = o_.cores - primaryCores(s, now) - o_.reserve_cores;
      const auto n = static_cast<int64_t>(s.tasks.size());
      const double speed = throttleSpeed(cpu_left, n);
      if (speed < 1) {
        throttled_ticks_ += static_cast<double>(n);
        throttled_by_pattern_[static_cast<size_t>(traces_[s.tenant].truth)] +=
            static_cast<double>(n);
        throttle_lost_ticks_ += static_cast<double>(n) * (1 - speed);
      }
      if (speed < 1) {
        for (const auto& t : s.tasks) {
          throttled_by_length_[static_cast<size_t>(jobs_[t.job].length)] += 1;
          if (strategy_ == PlacementStrategy::kHistory)
            throttled_by_placement_[static_cast<size_t>(t.placed)] += 1;
        }
      }
      for (auto& t : s.tasks) t.work_left -= speed;
    }
  }

  void complete(int64_t now) {
    for (auto& s : servers_) {
      for (size_t i = 0; i < s.tasks.size();) {
        Task& t = s.tasks[i];
        if (t.work_left > 1e-9) {
          i++;
          continue;
        }
        JobRt& j = jobs_[t.job];
        j.running[t.stage]--;
        j.left[t.stage]--;
        if (t.stage == 0 && j.left[0] == 0) j.pending[1] = j.left[1];
        if (j.left[0] == 0 && j.left[1] == 0 && j.finish_tick < 0) j.finish_tick = now;
        s.tasks.erase(s.tasks.begin() + static_cast<long>(i));
      }
    }
  }

  // Cores a task of a job of length `type` may use on `s` within the
  // headroom its classes were chosen for (Algorithm 1's headroom per type,
  // with the tags of the server's class): a long job does not fill a server
  // above what the class's peak leaves, so the primary's return to its peak
  // does not kill it.
  int64_t headroomRoom(const Server& s, int server, rm::JobLength type, int64_t now) const {
    return static_cast<int64_t>(std::floor(headroomMargin(s, server, type, now)));
  }
  // The same unrounded: cores left within the headroom (negative: how far
  // the tasks there already exceed it).
  // (rm::headroomMargin, the ranked fallback's, on the server's own counts.)
  double headroomMargin(const Server& s, int server, rm::JobLength type, int64_t now) const {
    const int c = server_class_[server];
    if (c < 0) return static_cast<double>(room(s, now));
    const rm::NodeSlots n{primaryCores(s, now) / o_.cores, o_.cores,
                          o_.reserve_cores + static_cast<int64_t>(s.tasks.size())};
    return rm::headroomMargin(type, classes_[static_cast<size_t>(c)], n);
  }

  // kHold's prediction per tenant (rm::TenantForecast), from the history
  // days only; tick 0 is a midnight.
  void buildPrediction() {
    const auto n = static_cast<long>(historySteps());
    forecasts_.clear();
    for (const auto& tr : traces_) {
      forecasts_.emplace_back(std::vector<double>(tr.util.begin(), tr.util.begin() + n),
                              fromEpochMs(0), o_.tick * ticks_per_step_, o_.history_rise_quantile);
    }
  }

  // The fewest cores left on `server` over a run of `work` ticks from `now`
  // beside the primary's predicted share, the reserve and the tasks there
  // (rm::predictedMargin): each task counts until its expected end (start +
  // its expected run; one past it, throttled, counts for the whole run).
  double predictedMargin(int server, int64_t work, int64_t now) {
    const Server& s = servers_[static_cast<size_t>(server)];
    ends_.clear();
    for (const auto& t : s.tasks)
      ends_.push_back(o_.tick * (t.expected_end > now ? t.expected_end - now : work));
    std::sort(ends_.begin(), ends_.end());
    const int c = server_class_[static_cast<size_t>(server)];
    const rm::UtilPattern pattern =
        c >= 0 ? classes_[static_cast<size_t>(c)].pattern : rm::UtilPattern::kUnpredictable;
    return rm::predictedMargin(forecasts_[static_cast<size_t>(s.tenant)], pattern,
                               primaryCores(s, now) / o_.cores, o_.cores, o_.reserve_cores, ends_,
                               fromEpochMs(0) + o_.tick * now, o_.tick * work);
  }

  // kHold outside the job's classes: among the servers predicted to fit a
  // task of `work` ticks, the first in the ranked order (ranking weight for
  // `type`, then the most predicted room); ties drawn at random. -1: none.
  int pickPredicted(rm::JobLength type, int64_t work, int64_t now) {
    if (fit_failed_tick_ == now && work >= fit_failed_work_) return -1;
    const int best = pickRanked(type, now, [&](int s) -> std::optional<double> {
      const double r = predictedMargin(s, work, now);
      if (r < 1) return std::nullopt;
      return r;
    });
    if (best < 0 && (fit_failed_tick_ != now || work < fit_failed_work_)) {
      fit_failed_tick_ = now;
      fit_failed_work_ = work;
    }
    return best;
  }

  // The server first in Algorithm 1's order for combining classes among
  // those with a core now that `margin` accepts: the highest ranking weight
  // for `type`, then the largest margin (rm::ranksBefore); ties drawn at
  // random. `margin(server)` gives the server's room, or nullopt to pass it
  // over. -1: none.
  template <typename Margin>
  int pickRanked(rm::JobLength type, int64_t now, Margin&& margin) {
    int best = -1;
    double best_weight = 0, best_room = 0;
    int64_t ties = 0;
    for (size_t s = 0; s < servers_.size(); s++) {
      if (room(servers_[s], now) < 1) continue;
      const std::optional<double> r = margin(static_cast<int>(s));
      if (!r) continue;
      const double w = rankWeight(static_cast<int>(s), type);
      const bool better = best < 0 || rm::ranksBefore(w, *r, best_weight, best_room);
      if (better || (w == best_weight && *r == best_room)) {
        ties = better ? 1 : ties + 1;
        if (better || std::uniform_int_distribution<int64_t>(1, ties)(rng_) == 1) {
          best = static_cast<int>(s);
          best_weight = w;
          best_room = *r;
        }
      }
    }
    return best;
  }

  // Algorithm 1's ranking weight of `server`'s class for jobs of `type`
  // (0 without a class or weight).
  double rankWeight(int server, rm::JobLength type) const {
    const int c = server_class_[static_cast<size_t>(server)];
    if (c < 0) return 0;
    return rm::rankingWeight(o_.selection, type, classes_[static_cast<size_t>(c)].pattern);
  }

  int pickServer(JobRt& j, int stage, int64_t now) {
    fallback_ = false;
    held_ = false;
    after_hold_ = false;
    if (clairvoyant()) return pickClairvoyant(j.dur_ticks[stage], now);
    const bool history = strategy_ == PlacementStrategy::kHistory;
    const bool hold = history && o_.history_fallback == HistoryFallback::kHold;
    const int64_t work = j.dur_ticks[stage];
    std::vector<int> cand;
    if (history) {
      for (int s : j.preferred) {
        if (headroomRoom(servers_[s], s, j.length, now) < 1) continue;
        if (hold && predictedMargin(s, work, now) < 1) continue;
        cand.push_back(s);
      }
    }
    if (cand.empty() && hold) {
      fallback_ = !j.preferred.empty();
      const int best = pickPredicted(j.length, work, now);
      if (best >= 0) return best;
      if (j.held_since[stage] < 0) j.held_since[stage] = now;
      if ((now - j.held_since[stage]) * o_.tick < o_.history_hold) {
        held_ = true;
        return -1;
      }
      after_hold_ = true;  // held long enough: the ranked fallback below
    }
    if (cand.empty() && history && o_.history_fallback != HistoryFallback::kAnyServer) {
      // Outside the classes (or without any), in Algorithm 1's order for
      // combining classes (rm::rankedFallback, node by node): the servers
      // whose class has the highest ranking weight for the job's length
      // type, and among them the one with a core now and the most room left
      // within the type's headroom.
      fallback_ = !j.preferred.empty();
      return pickRanked(j.length, now, [&](int s) -> std::optional<double> {
        return headroomMargin(servers_[s], s, j.length, now);
      });
    }
    if (cand.empty()) {
      if (strategy_ == PlacementStrategy::kHistory && !j.preferred.empty()) fallback_ = true;
      for (size_t s = 0; s < servers_.size(); s++)
        if (room(servers_[s], now) >= 1) cand.push_back(static_cast<int>(s));
    }
    if (cand.empty()) return -1;
    return cand[std::uniform_int_distribution<size_t>(0, cand.size() - 1)(rng_)];
  }

  void place(int64_t now) {
    states_tick_ = -1;  // kills and completions since admission changed the classes
    std::vector<int> still;
    for (int ji : active_) {
      JobRt& j = jobs_[ji];
      if (j.finish_tick < 0) still.push_back(ji);
      if (held(j, now)) continue;
      for (int st = 0; st < 2; st++) {
        while (j.pending[st] > 0) {
          int s = pickServer(j, st, now);
          if (s < 0) {
            if (held_) held_ticks_ += static_cast<double>(j.pending[st]);
            break;
          }
          tasks_outside_class_ += fallback_ ? 1 : 0;
          tasks_after_hold_ += after_hold_ ? 1 : 0;
          placeTask(ji, st, s, now);
        }
        if (j.pending[st] == 0) j.held_since[st] = -1;
      }
    }
    active_ = std::move(still);
  }

  void placeTask(int ji, int stage, int s, int64_t now) {
    JobRt& j = jobs_[ji];
    const auto work = static_cast<double>(j.dur_ticks[stage]);
    const int placed = j.preferred.empty() ? 2 : (fallback_ ? 1 : 0);
    servers_[s].tasks.push_back({ji, stage, work, work, placed, now + j.dur_ticks[stage]});
    if (strategy_ == PlacementStrategy::kHistory) tasks_by_placement_[placed]++;
    j.pending[stage]--;
    j.running[stage]++;
    tasks_run_++;
    if (states_tick_ == now && server_class_[s] >= 0) {
      auto& st = states_[static_cast<size_t>(server_class_[s])];
      st.taken_slots++;
      st.nodes[static_cast<size_t>(server_pos_[static_cast<size_t>(s)])].taken_slots++;
    }
  }

  const std::vector<PrimaryTrace>& traces_;
  const PlacementStrategy strategy_;
  const HarvestSimOptions o_;
  std::mt19937_64 rng_;
  int64_t per_day_ = 0, ticks_per_step_ = 1;
  std::vector<Server> servers_;
  std::vector<JobRt> jobs_;
  std::vector<int> active_;
  std::vector<rm::HarvestClass> classes_;
  std::vector<std::vector<int>> class_servers_, class_tenants_;
  std::vector<int> server_class_;       // class index per server (-1: none)
  std::vector<int> server_pos_;         // its index in class_servers_ (ClassState::nodes)
  std::vector<rm::ClassState> states_;  // classStates() cache, valid at states_tick_
  int64_t states_tick_ = -1;
  int64_t kills_ = 0, tasks_run_ = 0, jobs_without_class_ = 0, memory_kills_ = 0;
  int64_t tasks_outside_class_ = 0, tenants_mislabelled_ = 0;
  int64_t tasks_by_placement_[3] = {0, 0, 0};
  double throttled_by_length_[3] = {0, 0, 0}, throttled_by_placement_[3] = {0, 0, 0};
  bool fallback_ = false;    // the last pickServer fell back outside the job's classes
  bool held_ = false;        // the last pickServer held the task (kHold: no server fits)
  bool after_hold_ = false;  // the last pickServer's task took the ranked fallback after the hold
  double held_ticks_ = 0;
  int64_t tasks_after_hold_ = 0;
  std::vector<rm::TenantForecast> forecasts_;  // kHold's prediction, per tenant
  std::vector<Millis> ends_;                   // predictedMargin's scratch
  // The shortest run (ticks) no server was predicted to fit at
  // fit_failed_tick_: placements within a tick only take room, and a longer
  // run is predicted no more room, so longer ones fail too.
  int64_t fit_failed_tick_ = -1, fit_failed_work_ = 0;
  double lost_ticks_ = 0, throttled_ticks_ = 0, throttle_lost_ticks_ = 0;
  double throttled_by_pattern_[3] = {0, 0, 0};
  int64_t kills_by_pattern_[3] = {0, 0, 0}, kills_by_length_[3] = {0, 0, 0};
  // Clairvoyant strategies only (buildFuture).
  std::vector<std::vector<std::vector<int32_t>>> over_;
  std::vector<RangeMax> max_;
};

}  // namespace

Result<HarvestSimResult> runHarvestSim(const std::vector<PrimaryTrace>& traces,
                                       const std::vector<SwimJob>& jobs, PlacementStrategy strategy,
                                       const HarvestSimOptions& o) {
  if (traces.empty()) return invalidArgument("traces", "no primary tenants");
  if (o.cores < 1) return invalidArgument("cores", "must be >= 1");
  if (o.servers_per_tenant < 1) return invalidArgument("servers_per_tenant", "must be >= 1");
  if (o.tick.count() <= 0 || o.step < o.tick)
    return invalidArgument("tick", "must be > 0 and <= step");
  if (o.no_class_wait.count() < 0) return invalidArgument("no_class_wait", "must be >= 0");
  if (o.drain.count() < 0) return invalidArgument("drain", "must be >= 0");
  if (o.cpu_kill_after.count() < 0) return invalidArgument("cpu_kill_after", "must be >= 0");
  if (o.history_hold.count() < 0) return invalidArgument("history_hold", "must be >= 0");
  if (!(o.history_rise_quantile >= 0 && o.history_rise_quantile <= 1))
    return invalidArgument("history_rise_quantile", "must be in [0, 1]");
  if (!(o.primary_memory >= 0 && o.primary_memory <= 1))
    return invalidArgument("primary_memory", "must be in [0, 1]");
  const int64_t per_day = Millis(86400000) / o.step;
  if (static_cast<int64_t>(traces.front().util.size()) < 2 * per_day) {
    return invalidArgument("traces", "need two days of samples (day 0 is history)");
  }
  HarvestRun run(traces, strategy, o);
  if (Status st = run.classify(); !st.isOk()) return st;
  return run.run(jobs);
}

namespace {

struct ReplicaWorld {
  std::vector<rm::StorageServer> servers;
  std::vector<int> tenant_of;               // per server
  std::vector<std::vector<double>> events;  // per tenant: reimage times (hours)
};

ReplicaWorld makeWorld(const std::vector<PrimaryTrace>& traces, const ReplicaSimOptions& o,
                       std::mt19937_64& rng) {
  ReplicaWorld w;
  const double hours = 24.0 * o.days;
  for (size_t t = 0; t < traces.size(); t++) {
    // Tenants t..t+2 share a rate, so every pattern meets every rate.
    double rate = o.reimage_rates[(t / 3) % o.reimage_rates.size()];  // per month
    double peak = *std::max_element(traces[t].util.begin(), traces[t].util.end());
    for (int k = 0; k < o.servers_per_tenant; k++) {
      w.servers.push_back({NodeId(traces[t].tenant + "/" + std::to_string(k)), traces[t].tenant,
                           rate, peak, o.free_blocks_per_server});
      w.tenant_of.push_back(static_cast<int>(t));
    }
    std::exponential_distribution<double> gap(rate / (30 * 24.0));
    std::vector<double> ev;
    for (double x = gap(rng); x < hours; x += gap(rng)) ev.push_back(x);
    w.events.push_back(ev);
  }
  return w;
}

// Lost: at some reimage time every replica's tenant was reimaged within
// `window` hours before (all copies gone before re-replication).
bool blockLost(const std::vector<int>& tenants, const ReplicaWorld& w, double window) {
  for (int t : tenants) {
    for (double at : w.events[t]) {
      bool all = true;
      for (int u : tenants) {
        const auto& ev = w.events[u];
        auto it = std::upper_bound(ev.begin(), ev.end(), at);
        if (it == ev.begin() || at - *std::prev(it) > window) {
          all = false;
          break;
        }
      }
      if (all) return true;
    }
  }
  return false;
}

}  // namespace

Result<std::pair<double, double>> seedRatioInterval(const std::vector<double>& num,
                                                    const std::vector<double>& den, int resamples) {
  if (num.empty() || num.size() != den.size())
    return invalidArgument("num", "one count per seed in num and den, at least one seed");
  if (resamples < 1) return invalidArgument("resamples", "must be >= 1");
  std::mt19937_64 rng(20161102);
  std::uniform_int_distribution<size_t> pick(0, num.size() - 1);
  std::vector<double> ratios;
  for (int b = 0; b < resamples; b++) {
    double n = 0, d = 0;
    for (size_t i = 0; i < num.size(); i++) {
      const size_t k = pick(rng);
      n += num[k];
      d += den[k];
    }
    ratios.push_back(d > 0 ? n / d : std::numeric_limits<double>::infinity());
  }
  std::sort(ratios.begin(), ratios.end());
  const auto at = [&](size_t per_mille) {
    return ratios[std::min(ratios.size() - 1, ratios.size() * per_mille / 1000)];
  };
  return std::make_pair(at(25), at(975));
}

Result<ReplicaSimResult> runReplicaSim(const std::vector<PrimaryTrace>& traces,
                                       ReplicaStrategy strategy, const ReplicaSimOptions& o) {
  if (traces.empty()) return invalidArgument("traces", "no primary tenants");
  if (o.reimage_rates.empty()) return invalidArgument("reimage_rates", "empty");
  std::mt19937_64 rng(o.seed);
  ReplicaWorld w = makeWorld(traces, o, rng);
  std::map<std::string, int> index;
  for (size_t i = 0; i < w.servers.size(); i++)
    index[w.servers[i].id.value()] = static_cast<int>(i);
  std::optional<rm::ReplicaPlacer> placer;
  if (strategy == ReplicaStrategy::kAlgorithm2) {
    auto p = rm::ReplicaPlacer::create(w.servers, {3, 3, o.seed});
    if (!p.isOk()) return p.status();
    placer.emplace(std::move(p).value());
  }
  const double window = std::chrono::duration<double, std::ratio<3600>>(o.rereplicate).count();
  const size_t steps = traces.front().util.size();
  ReplicaSimResult r;
  double unavailable = 0;
  for (int64_t b = 0; b < o.blocks; b++) {
    rm::Block blk{"blk" + std::to_string(b), o.replicas};
    Result<std::vector<NodeId>> nodes =
        strategy == ReplicaStrategy::kAlgorithm2 ? placer->PlaceReplicas(blk)
        : strategy == ReplicaStrategy::kRandom   ? rm::placeRandom(w.servers, blk, o.seed)
                                                 : rm::placeBestFirst(w.servers, blk);
    if (!nodes.isOk()) return nodes.status();
    std::vector<int> tenants;
    for (const auto& n : *nodes) tenants.push_back(w.tenant_of[index[n.value()]]);
    r.blocks++;
    const bool lost = blockLost(tenants, w, window);
    if (tenants.size() >= 4) {
      const size_t rate = (static_cast<size_t>(tenants[3]) / 3) % o.reimage_rates.size();
      r.fourth_by_rate.resize(o.reimage_rates.size());
      r.lost_fourth_by_rate.resize(o.reimage_rates.size());
      r.fourth_by_rate[rate]++;
      r.lost_fourth_by_rate[rate] += lost ? 1 : 0;
    }
    if (lost) {
      r.lost++;
      const size_t distinct = std::set<int>(tenants.begin(), tenants.end()).size();
      r.lost_by_tenants[std::min<size_t>(distinct, 4)]++;
    }
    int64_t down = 0;
    for (size_t i = 0; i < steps; i++) {
      bool all_busy = true;
      for (int t : tenants) all_busy = all_busy && traces[t].util[i] > o.busy_util;
      down += all_busy ? 1 : 0;
    }
    unavailable += static_cast<double>(down) / static_cast<double>(steps);
  }
  r.unavailable = r.blocks > 0 ? unavailable / static_cast<double>(r.blocks) : 0;
  return r;
}

}  // namespace morpheus::sim
