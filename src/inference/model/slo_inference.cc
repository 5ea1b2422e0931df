#include "inference/model/slo_inference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

namespace morpheus::inference {

namespace {

std::string fmtDuration(Millis d) {
  int64_t s = d.count() / 1000;
  char buf[64];
  if (s % 86400 == 0 && s > 0) {
    std::snprintf(buf, sizeof buf, "%lldd", static_cast<long long>(s / 86400));
  } else if (s % 3600 == 0 && s > 0) {
    std::snprintf(buf, sizeof buf, "%lldh", static_cast<long long>(s / 3600));
  } else if (s % 60 == 0 && s > 0) {
    std::snprintf(buf, sizeof buf, "%lldmin", static_cast<long long>(s / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(d.count()) / 1000.0);
  }
  return buf;
}

std::string fmt3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Does event e belong to run r of its job? By run id when the event has one,
// else by time within [submit, end].
bool ofRun(const store::FileEvent& e, const store::RunRecord& r) {
  if (!e.run.empty()) return e.run == r.run;
  return e.time >= r.submit && e.time <= r.end;
}

// Start time of every known run, keyed by job and run id (reader lookup).
using RunStarts = std::unordered_map<std::string, TimePoint>;
std::string runKey(const JobKey& job, const RunId& run) { return job.value() + '\n' + run.value(); }

RunStarts runStarts(const std::vector<JobHistory>& jobs,
                    const std::vector<store::RunRecord>& reader_runs) {
  RunStarts out;
  for (const auto& h : jobs) {
    for (const auto& r : h.runs) out.emplace(runKey(r.job, r.run), r.start);
  }
  for (const auto& r : reader_runs) out.emplace(runKey(r.job, r.run), r.start);
  return out;
}

// T_need of a read of producer run `producer`'s output: the start of the
// reading run when it is known, not after the read (the reader was running
// and needed the data from then on, even if the read had to wait for the
// output) and not before the producer run was submitted (a reader running
// since before says nothing about this instance); else the read itself.
TimePoint neededAt(const store::FileEvent& read, const RunStarts& starts,
                   const store::RunRecord& producer) {
  if (read.run.empty()) return read.time;
  auto it = starts.find(runKey(read.job, read.run));
  if (it == starts.end() || it->second >= read.time || it->second < producer.submit) {
    return read.time;
  }
  return it->second;
}

}  // namespace

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double f = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * f;
}

double mad(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(std::move(dev));
}

double cv(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double m = std::fabs(median(v));
  double d = mad(v);
  if (m == 0) return d == 0 ? 0 : std::numeric_limits<double>::infinity();
  return d / m;
}

std::optional<Millis> snapPeriod(Millis gap, double tolerance, Millis lcm, Millis step) {
  if (gap.count() <= 0 || lcm.count() <= 0 || step.count() <= 0) return std::nullopt;
  std::optional<Millis> best;
  double best_rel = tolerance;
  // Divisors lcm/n, n = 1 .. lcm/step: at most 1440 candidates for a day of minutes.
  for (int64_t n = 1; n <= lcm.count() / step.count(); n++) {
    if (lcm.count() % n != 0) continue;
    const int64_t cand = lcm.count() / n;
    if (cand % step.count() != 0) continue;
    double rel = std::fabs(static_cast<double>(gap.count() - cand)) / static_cast<double>(cand);
    if (rel <= best_rel) {
      best_rel = rel;
      best = Millis(cand);
    }
  }
  return best;
}

Millis phaseDrift(const std::vector<store::RunRecord>& runs, Millis period) {
  if (runs.size() < 2 || period.count() <= 0) return Millis(0);
  const auto p = static_cast<double>(period.count());
  const TimePoint t0 = runs.front().submit;
  std::vector<double> t, u;  // time since the first submission, unwrapped phase
  for (const auto& r : runs) {
    const auto x = static_cast<double>((r.submit - t0).count());
    double phase = std::fmod(x, p);
    if (!u.empty()) phase += p * std::round((u.back() - phase) / p);
    t.push_back(x);
    u.push_back(phase);
  }
  const double n = static_cast<double>(t.size());
  double mt = 0, mu = 0;
  for (size_t i = 0; i < t.size(); i++) {
    mt += t[i] / n;
    mu += u[i] / n;
  }
  double stt = 0, stu = 0;
  for (size_t i = 0; i < t.size(); i++) {
    stt += (t[i] - mt) * (t[i] - mt);
    stu += (t[i] - mt) * (u[i] - mu);
  }
  if (stt <= 0) return Millis(0);
  return Millis(std::llround(std::fabs(stu / stt) * t.back()));
}

std::optional<InferredPeriod> inferPeriod(const std::vector<store::RunRecord>& runs,
                                          const SloParams& p, double* cv_out, std::string* reason) {
  if (static_cast<int64_t>(runs.size()) < std::max<int64_t>(p.min_runs, 2)) {
    *reason = "needs at least " + std::to_string(std::max<int64_t>(p.min_runs, 2)) + " runs, has " +
              std::to_string(runs.size());
    return std::nullopt;
  }
  std::vector<double> gaps;
  for (size_t i = 1; i < runs.size(); i++) {
    double g = static_cast<double>((runs[i].submit - runs[i - 1].submit).count());
    if (g > 0) gaps.push_back(g);
  }
  if (gaps.empty()) {
    *reason = "all runs were submitted at the same time";
    return std::nullopt;
  }
  double c = cv(gaps);
  *cv_out = c;
  Millis m(static_cast<int64_t>(median(gaps)));
  if (c > p.max_period_cv) {
    *reason = "not periodic: submission gaps too dispersed (CV " + fmt3(c) + " > " +
              fmt3(p.max_period_cv) + ", median gap " + fmtDuration(m) + ")";
    return std::nullopt;
  }
  if (auto snapped = snapPeriod(m, p.period_tolerance, p.lcm, p.step)) {
    const auto drift = static_cast<double>(phaseDrift(runs, *snapped).count());
    if (drift <= p.period_tolerance * static_cast<double>(snapped->count())) {
      return InferredPeriod{*snapped, true};
    }
  }
  // Off-kilter or longer than the LCM: whole steps, one-off reservation per instance.
  const int64_t step = std::max<int64_t>(p.step.count(), 1);
  const int64_t steps = std::max<int64_t>(1, (m.count() + step / 2) / step);
  return InferredPeriod{Millis(steps * step), false};
}

std::vector<SloVerdict> inferSlos(const std::vector<JobHistory>& jobs,
                                  const std::vector<store::FileEvent>& path_events,
                                  const SloParams& p,
                                  const std::vector<store::RunRecord>& reader_runs,
                                  const JobOwners* owners) {
  const RunStarts starts = runStarts(jobs, reader_runs);
  // Whether `other`'s events may speak for `job` (see the header).
  auto trusted = [owners](const JobKey& job, const JobKey& other) {
    if (!owners) return true;
    auto o = owners->find(other);
    if (o == owners->end()) return true;
    auto mine = owners->find(job);
    return mine != owners->end() && mine->second == o->second;
  };
  // Pass 1: periods (consumers' periods are needed by pass 2).
  std::unordered_map<std::string, Millis> periods;
  std::unordered_map<std::string, bool> one_off;
  std::vector<SloVerdict> out(jobs.size());
  std::vector<double> period_cvs(jobs.size(), 0);
  for (size_t j = 0; j < jobs.size(); j++) {
    out[j].job = jobs[j].job;
    auto per = inferPeriod(jobs[j].runs, p, &period_cvs[j], &out[j].reason);
    if (per) {
      periods[jobs[j].job.value()] = per->period;
      one_off[jobs[j].job.value()] = !per->divides_lcm;
    }
  }
  // Events on each path, by time.
  std::unordered_map<std::string, std::vector<const store::FileEvent*>> on_path;
  for (const auto& e : path_events) on_path[e.path].push_back(&e);
  for (auto& [_, v] : on_path) {
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->time < b->time; });
  }

  // Pass 2: deadlines (§4).
  for (size_t j = 0; j < jobs.size(); j++) {
    const JobHistory& h = jobs[j];
    auto pit = periods.find(h.job.value());
    if (pit == periods.end()) continue;  // reason set in pass 1
    const int64_t P = pit->second.count();

    // Phase of the submissions inside the period (circular median).
    int64_t phi0 = toEpochMs(h.runs.front().submit) % P;
    std::vector<double> rel;
    for (const auto& r : h.runs) {
      int64_t d = ((toEpochMs(r.submit) - phi0) % P + P) % P;
      if (d > P / 2) d -= P;
      rel.push_back(static_cast<double>(d));
    }
    int64_t phase = ((phi0 + static_cast<int64_t>(median(rel))) % P + P) % P;

    std::vector<double> ready, out_read, slack, start_wait, read_gap;
    for (const auto& r : h.runs) {
      int64_t n = static_cast<int64_t>(
          std::llround(static_cast<double>(toEpochMs(r.submit) - phase) / static_cast<double>(P)));
      int64_t base = n * P;
      auto off = [&](TimePoint t) { return static_cast<double>(toEpochMs(t) - base); };
      // T_inAvail: last write by another job to an input, before the start.
      std::optional<TimePoint> avail;
      std::optional<TimePoint> first_read;
      std::optional<TimePoint> need;  // T_need of first_read
      bool forced = false;
      for (const auto& e : h.events) {
        if (!ofRun(e, r)) continue;
        auto it = on_path.find(e.path);
        if (it == on_path.end()) continue;
        if (e.kind == store::FileAccess::kRead) {
          for (const auto* o : it->second) {
            if (o->time > r.start) break;
            if (o->kind == store::FileAccess::kWrite && o->job != h.job && trusted(h.job, o->job) &&
                (!avail || o->time > *avail)) {
              avail = o->time;
            }
          }
        } else {
          for (const auto* o : it->second) {
            if (o->time < e.time || o->time < r.start) continue;
            if (o->kind == store::FileAccess::kRead && o->job != h.job && trusted(h.job, o->job)) {
              if (!first_read || o->time < *first_read) {
                first_read = o->time;
                need = neededAt(*o, starts, r);
                auto cp = periods.find(o->job.value());
                forced = cp != periods.end() && cp->second.count() > P;
              }
              break;
            }
          }
        }
      }
      // The run could start once its input was there and it was submitted.
      ready.push_back(std::max(off(r.submit), avail ? off(*avail) : 0.0));
      if (avail) start_wait.push_back(static_cast<double>((r.start - *avail).count()));
      if (first_read) {
        double o = off(*first_read);
        // A longer-period consumer forces the deadline to the period's end.
        if (forced) o = std::min(o, static_cast<double>(P));
        out_read.push_back(forced ? std::min(off(*need), static_cast<double>(P)) : off(*need));
        double dur = static_cast<double>((r.end - r.start).count());
        if (dur > 0) slack.push_back((o - off(r.end)) / dur);
        read_gap.push_back(o - off(r.end));
      }
    }
    SloVerdict& v = out[j];
    if (static_cast<int64_t>(out_read.size()) < p.min_runs) {
      v.reason = out_read.empty() ? "no deadline: no other job reads its output (no T_outRead)"
                                  : "no deadline: only " + std::to_string(out_read.size()) +
                                        " run(s) have their output read, " +
                                        std::to_string(p.min_runs) + " needed";
      continue;
    }
    double c = cv(out_read);
    double s = median(slack);
    if (c > p.max_outread_cv) {
      v.reason = "no actionable deadline: T_outRead too dispersed (CV " + fmt3(c) + " > " +
                 fmt3(p.max_outread_cv) + ")";
      continue;
    }
    if (s < p.min_slack) {
      v.reason = "no actionable deadline: median slack (T_outRead - T_end)/(T_end - T_start) " +
                 fmt3(s) + " < " + fmt3(p.min_slack);
      continue;
    }
    InferredSlo slo;
    slo.period = Millis(P);
    slo.one_off_instances = one_off[h.job.value()];
    double a = std::max(0.0, percentile(ready, p.start_percentile));
    double d = percentile(out_read, p.deadline_percentile);
    // Whole seconds: a rounded up, d rounded down (never looser than inferred).
    slo.start_offset = Millis(static_cast<int64_t>(std::ceil(a / 1000.0)) * 1000);
    slo.deadline_offset = Millis(static_cast<int64_t>(std::floor(d / 1000.0)) * 1000);
    if (slo.deadline_offset <= slo.start_offset) {
      v.reason = "no actionable deadline: d (" + fmtDuration(slo.deadline_offset) +
                 ") is not after a (" + fmtDuration(slo.start_offset) + ")";
      continue;
    }
    slo.period_cv = period_cvs[j];
    slo.outread_cv = c;
    slo.median_slack = s;
    slo.runs_used = static_cast<int>(h.runs.size());
    slo.problematic = cv(start_wait) > p.problematic_cv || cv(read_gap) > p.problematic_cv;
    v.slo = slo;
    v.reason.clear();
  }
  return out;
}

}  // namespace morpheus::inference
