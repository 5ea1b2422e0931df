// LowCost (Morpheus §6) and greedy (YARN GreedyReservationAgent-style) agents
// over one shared gang-placement engine. See agent.h for the contracts.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>

#include "planner/agent.h"

namespace morpheus::planner {

namespace {

constexpr double kEps = 1e-12;

struct Gang {
  int64_t pos = 0;         // first window step
  int64_t len = 0;         // steps
  int64_t containers = 0;  // containers held at each step of [pos, pos + len)
};

struct StageTrack {
  int stage = 0;
  std::vector<Gang> gangs;
  int64_t lo = std::numeric_limits<int64_t>::max();  // span of the stage's allocation
  int64_t hi = std::numeric_limits<int64_t>::min();
};

// The gangs of one stage to place: `count` gangs of `unit` (= capability x
// `gang` containers), each `d` steps inside the window steps [lo, hi).
// `contiguous`: each gang must touch the stage's allocation so far;
// `anchor_end`: the first gang must end exactly at hi.
struct GangRequest {
  Resource unit;
  int64_t gang = 0;
  int64_t count = 0;
  int64_t d = 0;
  int64_t lo = 0;
  int64_t hi = 0;
  bool contiguous = false;
  bool anchor_end = false;
};

// The allocation under construction: an overlay (added_) on the problem's
// load, with apply/undo and the whole-allocation cost. One Engine per
// propose() call: the agents themselves stay stateless.
class Engine {
 public:
  explicit Engine(const PlanningProblem& p) : p_(p), added_(static_cast<size_t>(p.window)) {}

  const PlanningProblem& problem() const { return p_; }
  void reset() { std::fill(added_.begin(), added_.end(), Resource()); }

  // Load plus what this allocation holds so far at window step s.
  Resource used(int64_t s) const {
    return p_.load[static_cast<size_t>(s)] + added_[static_cast<size_t>(s)];
  }
  // Units that still fit at window step s.
  int64_t fitAt(int64_t s, const Resource& unit) const {
    return (p_.capacity - used(s)).countFitting(unit);
  }

  // Holds `containers` (= r) over [pos, pos + len) for the stage of `out`.
  void apply(StageTrack& out, int64_t pos, int64_t len, int64_t containers, const Resource& r) {
    for (int64_t s = pos; s < pos + len; ++s) added_[static_cast<size_t>(s)] += r;
    out.gangs.push_back({pos, len, containers});
    out.lo = std::min(out.lo, pos);
    out.hi = std::max(out.hi, pos + len);
  }

  void undo(const StageTrack& t) {
    const ReservationStage& st = p_.def->stages[static_cast<size_t>(t.stage)];
    for (const auto& g : t.gangs) {
      Resource r = st.capability * g.containers;
      for (int64_t s = g.pos; s < g.pos + g.len; ++s) added_[static_cast<size_t>(s)] -= r;
    }
  }

  // Cost of the current overlay: peak step cost after placement, plus a small
  // area-weighted term (cost where the allocation sits), plus the alignment
  // penalty (Morpheus §6, problematic jobs).
  double cost(const std::vector<StageTrack>& tracks, double alignment_penalty) const {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const auto& t : tracks) {
      lo = std::min(lo, t.lo);
      hi = std::max(hi, t.hi);
    }
    if (lo >= hi) return 0;
    double peak = 0, sumw = 0, suma = 0;
    for (int64_t s = lo; s < hi; ++s) {
      const Resource& a = added_[static_cast<size_t>(s)];
      if (a.isZero()) continue;
      double ca = (p_.load[static_cast<size_t>(s)] + a).dominantShare(p_.capacity);
      double aa = a.dominantShare(p_.capacity);
      peak = std::max(peak, ca);
      sumw += aa * ca;
      suma += aa;
    }
    double c = peak + (suma > 0 ? 0.01 * sumw / suma : 0.0);
    if (p_.def->problematic && p_.window > 0) {
      double mid = (static_cast<double>(lo) + static_cast<double>(hi)) / 2.0;
      c += alignment_penalty * std::abs(mid - p_.center) / static_cast<double>(p_.window);
    }
    return c;
  }

 private:
  const PlanningProblem& p_;
  std::vector<Resource> added_;
};

// StageAllocator policy (CONVENTIONS.md "Shape"): where the gangs of one
// stage go. Returns false when not all fit; the partial placement then stays
// in `out` (the caller undoes it).
class StagePlacer {
 public:
  virtual ~StagePlacer() = default;
  virtual bool placeGangs(Engine& eng, const GangRequest& req, StageTrack& out) = 0;
};

// YARN GreedyReservationAgent-style: latest position first, each filled as
// far as it goes, then one step earlier.
class GreedyStagePlacer final : public StagePlacer {
 public:
  bool placeGangs(Engine& eng, const GangRequest& req, StageTrack& out) override {
    int64_t remaining = req.count, d = req.d;
    for (int64_t p = req.hi - d; remaining > 0; --p) {
      if (p < req.lo) return false;
      if (req.anchor_end && out.gangs.empty() && p != req.hi - d) return false;
      if (req.contiguous && !out.gangs.empty()) {
        if (p + d < out.lo) return false;
        if (p > out.hi) continue;  // would leave a gap after the allocation so far
      }
      int64_t f = std::numeric_limits<int64_t>::max();
      for (int64_t s = p; s < p + d && f > 0; ++s) f = std::min(f, eng.fitAt(s, req.unit));
      if (f <= 0) continue;
      int64_t k = std::min(remaining, f);
      eng.apply(out, p, d, k * req.gang, req.unit * k);
      remaining -= k;
    }
    return true;
  }
};

// Morpheus §6 LowCost: every gang goes to the eligible position of least cost
// (the highest step cost c(t) it would create, then the block's average
// cost), ties broken by AgentOptions::tie_break. Gangs are placed in batches
// that reproduce one-gang-at-a-time placement exactly (up to kEps ties):
//  - a unique cheapest position takes as many gangs as keep its cost below
//    every other position's current cost (others only get dearer, so the
//    gang-by-gang rule would pick it each time; found by binary search);
//  - tied positions take one gang each, in tie-break order, skipping those
//    overlapping a position already taken this round (those got dearer);
//  - a gang that widens a contiguous stage's eligible range goes alone.
// Each batch scans the eligible range once: O(window) per batch.
class LowCostStagePlacer final : public StagePlacer {
 public:
  LowCostStagePlacer(const PlanningProblem& p, const AgentOptions& o)
      : opts_(o), window_(p.window) {
    int64_t slack =
        static_cast<int64_t>(std::ceil(o.tie_break_slack * static_cast<double>(p.window) - 1e-9));
    slack_end_ = p.window - std::max<int64_t>(0, slack);
  }

  bool placeGangs(Engine& eng, const GangRequest& req, StageTrack& out) override {
    int64_t remaining = req.count;
    while (remaining > 0) {
      int64_t pmin = req.lo, pmax = req.hi - req.d;
      if (req.anchor_end && out.gangs.empty()) pmin = pmax;
      if (req.contiguous && !out.gangs.empty()) {
        pmin = std::max(pmin, out.lo - req.d);
        pmax = std::min(pmax, out.hi);
      }
      if (pmin > pmax) return false;
      scan(eng, req, pmin, pmax);
      int64_t placed = opts_.batch_gangs ? placeBatch(eng, req, pmin, remaining, out)
                                         : placeOne(eng, req, pmin, out);
      if (placed == 0) return false;
      remaining -= placed;
    }
    return true;
  }

 private:
  // Fills, for positions pmin..pmax, how many units fit (bfit_) and the cost
  // of one more unit there (pos_cost_); step costs after one more unit in
  // prefix_ (prefix sums). Sliding window min/max over d steps: O(range).
  void scan(const Engine& eng, const GangRequest& req, int64_t pmin, int64_t pmax) {
    const PlanningProblem& p = eng.problem();
    int64_t d = req.d;
    size_t m = static_cast<size_t>(pmax + d - pmin);
    fit_.resize(m);
    prefix_.assign(m + 1, 0.0);
    for (size_t i = 0; i < m; ++i) {
      Resource u = eng.used(pmin + static_cast<int64_t>(i));
      fit_[i] = (p.capacity - u).countFitting(req.unit);
      prefix_[i + 1] = prefix_[i] + (u + req.unit).dominantShare(p.capacity);
    }
    size_t npos = static_cast<size_t>(pmax - pmin + 1);
    bfit_.assign(npos, 0);
    pos_cost_.assign(npos, 0.0);
    std::deque<size_t> dq, dqm;
    auto stepCost = [&](size_t i) { return prefix_[i + 1] - prefix_[i]; };
    for (size_t i = 0; i < m; ++i) {
      while (!dq.empty() && fit_[dq.back()] >= fit_[i]) dq.pop_back();
      dq.push_back(i);
      while (!dqm.empty() && stepCost(dqm.back()) <= stepCost(i)) dqm.pop_back();
      dqm.push_back(i);
      if (i + 1 < static_cast<size_t>(d)) continue;
      size_t q = i + 1 - static_cast<size_t>(d);
      while (dq.front() < q) dq.pop_front();
      while (dqm.front() < q) dqm.pop_front();
      bfit_[q] = fit_[dq.front()];
      // Position cost: the highest step cost the gang would create (peak
      // first, Morpheus §6 c(t)), then the block's average cost. Measured
      // alternatives (bench 2a generator, 300 instances against the GLPK
      // optimum, and the same instances mirrored in time): sum of c(t)^2 /
      // c(t)^4 / exp(c(t)) and global-peak-first all land within ~1% of this
      // rule (median ratio ~1.22); for the tie-break see AgentOptions.
      pos_cost_[q] =
          stepCost(dqm.front()) +
          1e-3 * (prefix_[q + static_cast<size_t>(d)] - prefix_[q]) / static_cast<double>(d);
    }
  }

  // Tie-break preference of a gang at window step pos (lower is preferred; a
  // total order over positions).
  int64_t tieRank(int64_t pos, int64_t d) const {
    switch (opts_.tie_break) {
      case TieBreak::kLatest:
        return -pos;
      case TieBreak::kEarliest:
        return pos;
      case TieBreak::kSlack:
        break;
    }
    int64_t end = pos + d;
    return end <= slack_end_ ? slack_end_ - end : window_ + (end - slack_end_);
  }

  // The cheapest eligible position (index into bfit_), ties by tieRank; -1 if none.
  int64_t best(int64_t pmin, int64_t d) const {
    int64_t b = -1;
    for (size_t q = 0; q < bfit_.size(); ++q) {
      if (bfit_[q] <= 0) continue;
      double c = pos_cost_[q];
      auto qi = static_cast<int64_t>(q);
      if (b < 0 || c < pos_cost_[static_cast<size_t>(b)] - kEps ||
          (c <= pos_cost_[static_cast<size_t>(b)] + kEps &&
           tieRank(pmin + qi, d) < tieRank(pmin + b, d))) {
        b = qi;
      }
    }
    return b;
  }

  // True when a gang at `pos` would widen a contiguous stage's eligible range.
  static bool widens(const GangRequest& req, const StageTrack& out, int64_t pos) {
    if (req.anchor_end && out.gangs.empty()) return true;
    return req.contiguous && (out.gangs.empty() || pos < out.lo || pos + req.d > out.hi);
  }

  int64_t placeOne(Engine& eng, const GangRequest& req, int64_t pmin, StageTrack& out) {
    int64_t b = best(pmin, req.d);
    if (b < 0) return 0;
    eng.apply(out, pmin + b, req.d, req.gang, req.unit);
    return 1;
  }

  int64_t placeBatch(Engine& eng, const GangRequest& req, int64_t pmin, int64_t remaining,
                     StageTrack& out) {
    int64_t b = best(pmin, req.d);
    if (b < 0) return 0;
    double cb = pos_cost_[static_cast<size_t>(b)];
    double second = std::numeric_limits<double>::infinity();
    std::vector<int64_t>& tied = tied_;
    tied.clear();
    for (size_t q = 0; q < bfit_.size(); ++q) {
      if (bfit_[q] <= 0) continue;
      if (pos_cost_[q] <= cb + kEps) {
        tied.push_back(static_cast<int64_t>(q));
      } else {
        second = std::min(second, pos_cost_[q]);
      }
    }
    if (widens(req, out, pmin + b)) {
      eng.apply(out, pmin + b, req.d, req.gang, req.unit);
      return 1;
    }
    if (tied.size() > 1) return tieRound(eng, req, pmin, remaining, out);
    int64_t k = std::min(remaining, bfit_[static_cast<size_t>(b)]);
    if (!std::isinf(second)) k = std::min(k, gangsBelow(eng, req, pmin + b, second - kEps));
    eng.apply(out, pmin + b, req.d, k * req.gang, req.unit * k);
    return k;
  }

  // One gang on each tied position, in tie-break order, skipping positions
  // overlapping one taken this round and (contiguous stages) any that would
  // widen the eligible range.
  int64_t tieRound(Engine& eng, const GangRequest& req, int64_t pmin, int64_t remaining,
                   StageTrack& out) {
    std::sort(tied_.begin(), tied_.end(), [&](int64_t a, int64_t b) {
      return tieRank(pmin + a, req.d) < tieRank(pmin + b, req.d);
    });
    taken_.clear();
    int64_t placed = 0;
    for (int64_t q : tied_) {
      if (placed == remaining) break;
      int64_t pos = pmin + q;
      bool overlaps = false;
      for (int64_t t : taken_) overlaps = overlaps || (pos < t + req.d && t < pos + req.d);
      if (overlaps || (placed > 0 && widens(req, out, pos))) continue;
      eng.apply(out, pos, req.d, req.gang, req.unit);
      taken_.push_back(pos);
      ++placed;
    }
    return placed;
  }

  // Cost at `pos` of the gang after j more (j >= 0), as pos_cost_ computes it.
  static double costAfter(const Engine& eng, const GangRequest& req, int64_t pos, int64_t j) {
    const PlanningProblem& p = eng.problem();
    Resource add = req.unit * (j + 1);
    double peak = 0, sum = 0;
    for (int64_t s = pos; s < pos + req.d; ++s) {
      double c = (eng.used(s) + add).dominantShare(p.capacity);
      peak = std::max(peak, c);
      sum += c;
    }
    return peak + 1e-3 * sum / static_cast<double>(req.d);
  }

  // Gangs the cheapest position takes in one batch: 1 + the largest j such
  // that the next gang after j costs less than `bound` (others' cost now).
  static int64_t gangsBelow(const Engine& eng, const GangRequest& req, int64_t pos, double bound) {
    int64_t lo = 0, hi = req.count;  // invariant: costAfter(lo) < bound (or lo == 0)
    if (costAfter(eng, req, pos, 1) >= bound) return 1;
    lo = 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (costAfter(eng, req, pos, mid) < bound) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo + 1;
  }

  const AgentOptions& opts_;
  int64_t window_ = 0;
  int64_t slack_end_ = 0;  // kSlack: the window step tied gangs prefer to end by
  std::vector<int64_t> fit_;
  std::vector<int64_t> bfit_;
  std::vector<double> prefix_;
  std::vector<double> pos_cost_;
  std::vector<int64_t> tied_;
  std::vector<int64_t> taken_;
};

// Places all gangs of stage k inside [lo, hi): full gangs of min_concurrency,
// then the remainder as one smaller gang. Partial placement stays in `out`.
bool placeStage(Engine& eng, StagePlacer& placer, int k, int64_t lo, int64_t hi, bool contiguous,
                bool anchor_end, StageTrack& out) {
  const PlanningProblem& p = eng.problem();
  const ReservationStage& st = p.def->stages[static_cast<size_t>(k)];
  int64_t g = st.min_concurrency;
  GangRequest req{st.capability * g,
                  g,
                  st.num_containers / g,
                  p.duration[static_cast<size_t>(k)],
                  lo,
                  hi,
                  contiguous,
                  anchor_end};
  if (req.count > 0 && !placer.placeGangs(eng, req, out)) return false;
  int64_t rem = st.num_containers % g;
  if (rem == 0) return true;
  req.unit = st.capability * rem;
  req.gang = rem;
  req.count = 1;
  req.anchor_end = anchor_end && out.gangs.empty();
  return placer.placeGangs(eng, req, out);
}

// How an agent searches (one options struct per algorithm, set by the agent).
struct SearchOptions {
  // Ordered interpreters: stage k first tries an interval ending at stage
  // k+1's start whose length is proportional to its share of the remaining
  // demand (LowCost); otherwise everything still free.
  bool proportional_intervals = false;
  // Stop at the first end point / R_ANY stage that fits (greedy) instead of
  // keeping the cheapest.
  bool first_fit = false;
};

// One pass over `ids` (stages, chronological) with the allocation ending by E.
bool runPass(Engine& eng, StagePlacer& placer, const SearchOptions& so, const std::vector<int>& ids,
             bool ordered, bool no_gap, int64_t e, std::vector<StageTrack>& tracks, int& failed) {
  const PlanningProblem& p = eng.problem();
  eng.reset();
  tracks.clear();
  size_t n = ids.size();
  std::vector<int64_t> sum_d(n + 1, 0);
  std::vector<double> demand(n), cum(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const auto& st = p.def->stages[static_cast<size_t>(ids[i])];
    int64_t d = p.duration[static_cast<size_t>(ids[i])];
    sum_d[i + 1] = sum_d[i] + d;
    demand[i] = static_cast<double>(st.num_containers * d) *
                std::max(st.capability.dominantShare(p.capacity), 1e-15);
    cum[i + 1] = cum[i] + demand[i];
  }
  int64_t hi = e;
  for (size_t ii = n; ii-- > 0;) {
    int k = ids[ii];
    int64_t d = p.duration[static_cast<size_t>(k)];
    int64_t lo_min = ordered ? sum_d[ii] : 0;
    int64_t stage_hi = ordered ? hi : e;
    if (stage_hi - lo_min < d) {
      failed = k;
      return false;
    }
    bool anchor = no_gap && ii + 1 < n;
    StageTrack tr;
    tr.stage = k;
    bool ok = false;
    if (so.proportional_intervals && ordered && ii > 0) {
      double share = demand[ii] / cum[ii + 1];
      int64_t len = std::max<int64_t>(
          d, static_cast<int64_t>(std::ceil(static_cast<double>(stage_hi) * share)));
      int64_t lo = std::max(lo_min, stage_hi - len);
      if (lo > lo_min) {
        ok = placeStage(eng, placer, k, lo, stage_hi, no_gap, anchor, tr);
        if (!ok) {
          eng.undo(tr);
          tr = StageTrack();
          tr.stage = k;
        }
      }
    }
    if (!ok) ok = placeStage(eng, placer, k, lo_min, stage_hi, no_gap, anchor, tr);
    if (!ok) {
      eng.undo(tr);
      failed = k;
      return false;
    }
    if (ordered) hi = tr.lo;
    tracks.push_back(std::move(tr));
  }
  return true;
}

Placement toPlacement(const PlanningProblem& p, std::vector<StageTrack> tracks, double cost,
                      const std::string& agent) {
  Placement out;
  out.period = p.def->period;
  out.cost = cost;
  out.agent = agent;
  std::sort(tracks.begin(), tracks.end(),
            [](const StageTrack& a, const StageTrack& b) { return a.stage < b.stage; });
  RleResource total;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  auto at = [&](int64_t j) { return fromEpochMs((p.first_step + j) * p.step.count()); };
  for (const auto& t : tracks) {
    if (t.gangs.empty()) continue;
    const Resource& cap = p.def->stages[static_cast<size_t>(t.stage)].capability;
    std::map<int64_t, int64_t> delta;
    for (const auto& g : t.gangs) {
      delta[g.pos] += g.containers;
      delta[g.pos + g.len] -= g.containers;
    }
    StagePlacement sp;
    sp.stage = t.stage;
    int64_t cur = 0, prev = 0;
    for (const auto& [s, dv] : delta) {
      if (cur > 0) {
        Resource r = cap * cur;
        if (!sp.allocations.empty() && sp.allocations.back().end == at(prev) &&
            sp.allocations.back().resource == r) {
          sp.allocations.back().end = at(s);
        } else {
          sp.allocations.push_back({at(prev), at(s), r});
        }
        total.add(prev, s, r);
      }
      cur += dv;
      prev = s;
    }
    lo = std::min(lo, t.lo);
    hi = std::max(hi, t.hi);
    out.stages.push_back(std::move(sp));
  }
  if (lo < hi) {
    for (const auto& seg : total.segments(lo, hi)) {
      if (seg.value.isZero()) continue;
      out.allocations.push_back({at(seg.start), at(seg.end), seg.value});
    }
  }
  return out;
}

class AgentBase : public ReservationAgent {
 public:
  explicit AgentBase(AgentOptions o) : opts_(o) {}

  Result<Placement> propose(const PlanningProblem& p, AgentFailure* failure) const override {
    const ReservationDefinition& def = *p.def;
    Interpreter in = def.interpreter;
    bool ordered = in == Interpreter::kOrder || in == Interpreter::kOrderNoGap;
    bool no_gap = in == Interpreter::kOrderNoGap;
    std::vector<std::vector<int>> lists;
    if (in == Interpreter::kAny) {
      for (size_t s = 0; s < def.stages.size(); ++s) lists.push_back({static_cast<int>(s)});
    } else {
      lists.emplace_back();
      for (size_t s = 0; s < def.stages.size(); ++s) lists.back().push_back(static_cast<int>(s));
    }
    Engine eng(p);
    std::unique_ptr<StagePlacer> placer = makePlacer(p);
    const SearchOptions so = searchOptions();
    std::vector<StageTrack> tracks, best_tracks;
    double best_cost = std::numeric_limits<double>::infinity();
    int failed = -1;
    for (const auto& ids : lists) {
      int64_t emin = 0;
      for (int k : ids) {
        int64_t d = p.duration[static_cast<size_t>(k)];
        emin = ordered ? emin + d : std::max(emin, d);
      }
      if (emin > p.window || emin <= 0) {
        if (failed < 0) failed = ids.back();
        continue;
      }
      for (int64_t e : endPoints(p, emin)) {
        int f = -1;
        if (!runPass(eng, *placer, so, ids, ordered, no_gap, e, tracks, f)) {
          if (e == p.window && failed < 0) failed = f;
          continue;
        }
        double c = eng.cost(tracks, opts_.alignment_penalty);
        if (c < best_cost - kEps) {
          best_cost = c;
          best_tracks = tracks;
        }
        if (so.first_fit) break;
      }
      if (so.first_fit && !best_tracks.empty()) break;  // R_ANY: first that fits
    }
    if (best_tracks.empty()) {
      std::string why = p.window <= 0 ? "no whole plan step inside [arrival, deadline)"
                                      : "stage " + std::to_string(std::max(failed, 0)) +
                                            " does not fit in the window";
      if (failure != nullptr) *failure = AgentFailure{std::max(failed, 0), why};
      return infeasible(why);
    }
    return toPlacement(p, std::move(best_tracks), best_cost, name());
  }

 protected:
  virtual SearchOptions searchOptions() const = 0;
  // A fresh stage placer for one propose() call (it holds scratch buffers).
  virtual std::unique_ptr<StagePlacer> makePlacer(const PlanningProblem& p) const = 0;
  // End points to try, latest first.
  virtual std::vector<int64_t> endPoints(const PlanningProblem& p, int64_t emin) const = 0;
  AgentOptions opts_;
};

class LowCostAgent final : public AgentBase {
 public:
  using AgentBase::AgentBase;
  std::string name() const override { return "lowcost"; }

 protected:
  SearchOptions searchOptions() const override {
    return {.proportional_intervals = true, .first_fit = false};
  }
  std::unique_ptr<StagePlacer> makePlacer(const PlanningProblem& p) const override {
    return std::make_unique<LowCostStagePlacer>(p, opts_);
  }
  std::vector<int64_t> endPoints(const PlanningProblem& p, int64_t emin) const override {
    std::vector<int64_t> e{p.window};
    int n = std::max(1, opts_.end_points);
    for (int i = 1; i < n; ++i) e.push_back(emin + (p.window - emin) * (n - 1 - i) / (n - 1));
    if (p.def->problematic) {
      int64_t c = static_cast<int64_t>(std::llround(p.center + static_cast<double>(emin) / 2.0));
      e.push_back(std::clamp(c, emin, p.window));
    }
    std::sort(e.begin(), e.end(), std::greater<>());
    e.erase(std::unique(e.begin(), e.end()), e.end());
    return e;
  }
};

class GreedyAgent final : public AgentBase {
 public:
  using AgentBase::AgentBase;
  std::string name() const override { return "greedy"; }

 protected:
  SearchOptions searchOptions() const override {
    return {.proportional_intervals = false, .first_fit = true};
  }
  std::unique_ptr<StagePlacer> makePlacer(const PlanningProblem&) const override {
    return std::make_unique<GreedyStagePlacer>();
  }
  std::vector<int64_t> endPoints(const PlanningProblem& p, int64_t) const override {
    return {p.window};
  }
};

}  // namespace

Result<TieBreak> parseTieBreak(const std::string& name) {
  if (name == "latest") return TieBreak::kLatest;
  if (name == "earliest") return TieBreak::kEarliest;
  if (name == "slack") return TieBreak::kSlack;
  return invalidArgument("tie_break", "'" + name + "' is not one of latest, earliest, slack");
}

std::string tieBreakName(TieBreak t) {
  switch (t) {
    case TieBreak::kLatest:
      return "latest";
    case TieBreak::kEarliest:
      return "earliest";
    case TieBreak::kSlack:
      break;
  }
  return "slack";
}

Result<std::unique_ptr<ReservationAgent>> makeAgent(const std::string& name,
                                                    const AgentOptions& options) {
  if (!(options.tie_break_slack >= 0 && options.tie_break_slack < 1)) {
    return invalidArgument("tie_break_slack", "must be in [0, 1)");
  }
  if (name == "lowcost") return std::unique_ptr<ReservationAgent>(new LowCostAgent(options));
  if (name == "greedy") return std::unique_ptr<ReservationAgent>(new GreedyAgent(options));
  return invalidArgument("agent", "'" + name + "' is not one of lowcost, greedy");
}

}  // namespace morpheus::planner
