// LowCost (Morpheus §6) and greedy (YARN GreedyReservationAgent-style) agents
// over one shared gang-placement engine. See agent.h for the contracts.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>

#include "planner/agent.h"
#include "planner/dense_resource.h"

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
  const int64_t* urow = nullptr;  // unit as an Engine row
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
// propose() call: the agents themselves stay stateless. Resources are held as
// DenseDims rows (k() integers per window step), which give the same shares
// and fits as Resource.
class Engine {
 public:
  explicit Engine(const PlanningProblem& p)
      : p_(p), dims_(p), k_(dims_.k()), load_(static_cast<size_t>(p.window) * k_) {
    for (size_t j = 0; j < p.load.size(); ++j) dims_.put(p.load[j], &load_[j * k_]);
    used_ = load_;
    added_.assign(load_.size(), 0);
    unit_.assign(k_, 0);
    scratch_.assign(k_, 0);
  }

  const PlanningProblem& problem() const { return p_; }
  const DenseDims& dims() const { return dims_; }
  void reset() {
    std::fill(added_.begin(), added_.end(), 0);
    std::copy(load_.begin(), load_.end(), used_.begin());
  }

  // Load plus what this allocation holds so far at window step s (a row).
  const int64_t* used(int64_t s) const { return &used_[static_cast<size_t>(s) * k_]; }
  // `r` as a row, valid until the next unitRow() call.
  const int64_t* unitRow(const Resource& r) {
    dims_.put(r, unit_.data());
    return unit_.data();
  }
  // Units (rows) that still fit at window step s.
  int64_t fitAt(int64_t s, const int64_t* unit) const { return dims_.fitting(used(s), unit); }

  // Holds `containers` (= m x unit) over [pos, pos + len) for the stage of `out`.
  void apply(StageTrack& out, int64_t pos, int64_t len, int64_t containers, const int64_t* unit,
             int64_t m) {
    for (int64_t s = pos; s < pos + len; ++s) {
      auto at = static_cast<size_t>(s) * k_;
      dims_.addScaled(&added_[at], unit, m);
      dims_.addScaled(&used_[at], unit, m);
    }
    out.gangs.push_back({pos, len, containers});
    out.lo = std::min(out.lo, pos);
    out.hi = std::max(out.hi, pos + len);
  }

  void undo(const StageTrack& t) {
    const ReservationStage& st = p_.def->stages[static_cast<size_t>(t.stage)];
    dims_.put(st.capability, scratch_.data());
    for (const auto& g : t.gangs) {
      for (int64_t s = g.pos; s < g.pos + g.len; ++s) {
        auto at = static_cast<size_t>(s) * k_;
        dims_.addScaled(&added_[at], scratch_.data(), -g.containers);
        dims_.addScaled(&used_[at], scratch_.data(), -g.containers);
      }
    }
  }

  // Highest step cost (share of load + allocation) over the steps of t that
  // hold some of this allocation; what cost() takes the peak over.
  double peakOver(const StageTrack& t) const {
    double m = 0;
    for (int64_t s = t.lo; s < t.hi; ++s) {
      if (DenseDims::isZero(&added_[static_cast<size_t>(s) * k_], k_)) continue;
      m = std::max(m, dims_.share(used(s)));
    }
    return m;
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
      const int64_t* a = &added_[static_cast<size_t>(s) * k_];
      if (DenseDims::isZero(a, k_)) continue;
      double ca = dims_.share(used(s));
      double aa = dims_.share(a);
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
  DenseDims dims_;
  size_t k_;
  std::vector<int64_t> load_;   // the problem's load, k_ per window step
  std::vector<int64_t> added_;  // this allocation so far
  std::vector<int64_t> used_;   // load_ + added_
  std::vector<int64_t> unit_, scratch_;
};

// StageAllocator policy (docs/design/conventions.md "Shape"): where the gangs of one
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
      for (int64_t s = p; s < p + d && f > 0; ++s) f = std::min(f, eng.fitAt(s, req.urow));
      if (f <= 0) continue;
      int64_t k = std::min(remaining, f);
      eng.apply(out, p, d, k * req.gang, req.urow, k);
      remaining -= k;
    }
    return true;
  }
};

// Morpheus §6 LowCost: every gang goes to the eligible position of least cost
// (the highest step cost c(t) it would create, then the block's average
// cost), ties broken by AgentOptions::tie_break. Costs are kept as (peak,
// exact integer sum), so equal step profiles give exactly equal costs and
// positions are totally ordered by (cost, tie rank). This base scans a range
// of positions and keeps every position's cost current as gangs are placed;
// the subclasses choose how many gangs go where.
class LowCostPositions : public StagePlacer {
 public:
  LowCostPositions(const PlanningProblem& p, const AgentOptions& o) : opts_(o), window_(p.window) {
    int64_t slack =
        static_cast<int64_t>(std::ceil(o.tie_break_slack * static_cast<double>(p.window) - 1e-9));
    slack_end_ = p.window - std::max<int64_t>(0, slack);
    if (p.def->problematic) center2_ = static_cast<int64_t>(std::llround(2.0 * p.center));
  }

  bool placeGangs(Engine& eng, const GangRequest& req, StageTrack& out) override {
    int64_t remaining = req.count;
    while (remaining > 0) {
      // A contiguous stage's eligible window follows the allocation
      // (setEligible); the scan covers it plus as much again on each side,
      // so a growing allocation is scanned again O(log) times.
      int64_t pmin = req.lo, pmax = req.hi - req.d;
      if (req.anchor_end && out.gangs.empty()) pmin = pmax;
      if (pmin > pmax) return false;
      full_lo_ = pmin;
      full_hi_ = pmax;
      if (req.contiguous && !out.gangs.empty()) {
        int64_t elo = std::max(pmin, out.lo - req.d), ehi = std::min(pmax, out.hi);
        int64_t margin = std::max<int64_t>(req.d, ehi - elo + 1);
        pmin = std::max(pmin, elo - margin);
        pmax = std::min(pmax, ehi + margin);
      }
      scan(eng, req, pmin, pmax);
      setEligible(req, out);
      if (elig_lo_ > elig_hi_) return false;
      int64_t placed = placeSome(eng, req, remaining, out);
      if (placed == 0) return false;
      remaining -= placed;
    }
    return true;
  }

 protected:
  // Places at least one of `remaining` gangs on the scanned range (positions
  // 0..npos()-1 = window steps pmin_..); 0 when no position fits.
  virtual int64_t placeSome(Engine& eng, const GangRequest& req, int64_t remaining,
                            StageTrack& out) = 0;
  // Positions [lo, hi] changed cost or fit (after apply).
  virtual void changed(int64_t lo, int64_t hi) = 0;

  int64_t npos() const { return static_cast<int64_t>(cost_.size()); }
  bool fits(int64_t q) const {
    return q >= elig_lo_ && q <= elig_hi_ && bfit_[static_cast<size_t>(q)] > 0;
  }
  // Eligible positions: all, or for a contiguous stage with an allocation
  // those touching it ([out.lo - d, out.hi] in window steps).
  void setEligible(const GangRequest& req, const StageTrack& out) {
    elig_lo_ = 0;
    elig_hi_ = npos() - 1;
    if (req.contiguous && !out.gangs.empty()) {
      elig_lo_ = std::max(elig_lo_, out.lo - req.d - pmin_);
      elig_hi_ = std::min(elig_hi_, out.hi - pmin_);
    }
  }
  // Whether position a is preferred to position b.
  bool before(int64_t a, int64_t b) const {
    return ahead(cost_[static_cast<size_t>(a)], rank_[static_cast<size_t>(a)],
                 cost_[static_cast<size_t>(b)], rank_[static_cast<size_t>(b)]);
  }
  static bool ahead(double c1, int64_t r1, double c2, int64_t r2) {
    return c1 < c2 || (c1 == c2 && r1 < r2);
  }

  // Position cost: the highest step cost the gang would create (peak first,
  // Morpheus §6 c(t)), then the block's average cost. Measured against the
  // GLPK optimum, the alternatives (sum of c(t)^2 / c(t)^4 / exp(c(t)),
  // global-peak-first) pack no better than this rule
  // (docs/experiments/benchmarks.md).
  // Step costs enter the average as integers (units of 2^-40), so the sum is
  // exact whatever the order it was accumulated in.
  // std::llround(c x 2^40), inlined for the finite non-negative values below
  // 2^52 where the truncation and the remainder are exact (rounding half away
  // from zero, as llround); anything else goes to std::llround.
  static int64_t quantize(double c) {
    double x = c * 0x1p40;
    if (!(x >= 0 && x < 0x1p52)) return std::llround(x);
    auto r = static_cast<int64_t>(x);
    return x - static_cast<double>(r) >= 0.5 ? r + 1 : r;
  }
  double positionCost(double peak, int64_t sum) const {
    double avg = 1e-3 * (static_cast<double>(sum) * 0x1p-40);
    // x / 1.0 == x exactly: one-step gangs (every skyline stage) skip the division.
    return peak + (d_ == 1 ? avg : avg / static_cast<double>(d_));
  }

  // Holds k gangs at position q; updates the step values of its block and
  // the cost and fit of the 2d - 1 positions overlapping it in O(d) (step
  // costs only grow and fits only shrink, so a position's new peak / fit is
  // its old one against the block's changed part; its sum moves by the
  // block's exact delta).
  void apply(Engine& eng, const GangRequest& req, int64_t q, int64_t k, StageTrack& out) {
    eng.apply(out, pmin_ + q, d_, k * req.gang, req.urow, k);
    auto d = static_cast<size_t>(d_);
    delta_.assign(d + 1, 0);
    for (size_t j = 0; j < d; ++j) {
      size_t i = static_cast<size_t>(q) + j;
      int64_t before_isc = isc_[i];
      refreshStep(eng, req, pmin_ + static_cast<int64_t>(i));
      delta_[j + 1] = delta_[j] + isc_[i] - before_isc;
    }
    pre_max_.resize(d);
    pre_fit_.resize(d);
    suf_max_.resize(d);
    suf_fit_.resize(d);
    for (size_t j = 0; j < d; ++j) {
      size_t i = static_cast<size_t>(q) + j, r = static_cast<size_t>(q) + d - 1 - j;
      pre_max_[j] = j == 0 ? sc_[i] : std::max(pre_max_[j - 1], sc_[i]);
      pre_fit_[j] = j == 0 ? fit_[i] : std::min(pre_fit_[j - 1], fit_[i]);
      suf_max_[d - 1 - j] = j == 0 ? sc_[r] : std::max(suf_max_[d - j], sc_[r]);
      suf_fit_[d - 1 - j] = j == 0 ? fit_[r] : std::min(suf_fit_[d - j], fit_[r]);
    }
    int64_t lo = std::max<int64_t>(0, q - d_ + 1), hi = std::min(npos() - 1, q + d_ - 1);
    for (int64_t o = lo; o <= hi; ++o) {
      // Overlap with the block, in block offsets [x, y).
      auto x = static_cast<size_t>(std::max(o, q) - q);
      auto y = static_cast<size_t>(std::min(o + d_, q + d_) - q);
      double mx = x == 0 ? pre_max_[y - 1] : suf_max_[x];
      int64_t mf = x == 0 ? pre_fit_[y - 1] : suf_fit_[x];
      auto os = static_cast<size_t>(o);
      peak_[os] = std::max(peak_[os], mx);
      sum_[os] += delta_[y] - delta_[x];
      bfit_[os] = std::min(bfit_[os], mf);
      cost_[os] = positionCost(peak_[os], sum_[os]);
    }
    changed(lo, hi);
  }

  // True when a gang at position q would widen a contiguous stage's eligible range.
  bool widens(const GangRequest& req, const StageTrack& out, int64_t q) const {
    int64_t pos = pmin_ + q;
    if (req.anchor_end && out.gangs.empty()) return true;
    return req.contiguous && (out.gangs.empty() || pos < out.lo || pos + req.d > out.hi);
  }

  int64_t pmin_ = 0;                    // window step of position 0 of the current scan
  int64_t elig_lo_ = 0, elig_hi_ = -1;  // eligible positions [elig_lo_, elig_hi_]
  int64_t full_lo_ = 0, full_hi_ = -1;  // window steps of every position the request allows
  // After a widening gang: the eligible window reaches past the scanned range.
  bool outgrown(const GangRequest& req, const StageTrack& out) const {
    return (out.lo - req.d < pmin_ && pmin_ > full_lo_) ||
           (out.hi > pmin_ + npos() - 1 && pmin_ + npos() - 1 < full_hi_);
  }
  int64_t d_ = 0;  // gang duration of the current scan
  std::vector<double> cost_;
  std::vector<int64_t> bfit_;  // per position: units that fit at every step
  std::vector<int64_t> rank_;  // per position: tie-break rank (lower first)

 private:
  // Step values for the positions pmin..pmax, then every position's cost.
  void scan(const Engine& eng, const GangRequest& req, int64_t pmin, int64_t pmax) {
    pmin_ = pmin;
    d_ = req.d;
    auto m = static_cast<size_t>(pmax + req.d - pmin);
    sc_.resize(m);
    isc_.resize(m);
    fit_.resize(m);
    for (int64_t s = pmin; s < pmax + req.d; ++s) refreshStep(eng, req, s);
    auto n = static_cast<size_t>(pmax - pmin + 1);
    cost_.resize(n);
    bfit_.resize(n);
    peak_.resize(n);
    sum_.resize(n);
    rank_.resize(n);
    // Sliding windows of d steps: max of sc_, min of fit_, exact sum of isc_.
    dmax_.clear();
    dmin_.clear();
    int64_t sum = 0;
    auto d = static_cast<size_t>(req.d);
    for (size_t i = 0; i < m; ++i) {
      while (!dmax_.empty() && sc_[dmax_.back()] <= sc_[i]) dmax_.pop_back();
      dmax_.push_back(i);
      while (!dmin_.empty() && fit_[dmin_.back()] >= fit_[i]) dmin_.pop_back();
      dmin_.push_back(i);
      sum += isc_[i];
      if (i + 1 < d) continue;
      size_t q = i + 1 - d;
      if (dmax_.front() < q) dmax_.pop_front();
      if (dmin_.front() < q) dmin_.pop_front();
      peak_[q] = sc_[dmax_.front()];
      sum_[q] = sum;
      cost_[q] = positionCost(peak_[q], sum);
      bfit_[q] = fit_[dmin_.front()];
      rank_[q] = tieRank(pmin + static_cast<int64_t>(q));
      sum -= isc_[q];
    }
  }

  void refreshStep(const Engine& eng, const GangRequest& req, int64_t s) {
    const int64_t* u = eng.used(s);
    auto i = static_cast<size_t>(s - pmin_);
    fit_[i] = eng.dims().fitting(u, req.urow);
    sc_[i] = eng.dims().shareWith(u, req.urow, 1);
    isc_[i] = quantize(sc_[i]);
  }

  // Tie-break preference of a gang at window step pos (lower is preferred; a
  // total order over positions).
  int64_t tieRank(int64_t pos) const {
    // Problematic jobs (Morpheus §6 alignment penalty): ties go to the
    // position centred closest to (a + d) / 2, whatever the rule.
    if (center2_ >= 0) return std::abs(2 * pos + d_ - center2_);
    switch (opts_.tie_break) {
      case TieBreak::kLatest:
        return -pos;
      case TieBreak::kEarliest:
        return pos;
      case TieBreak::kSlack:
        break;
    }
    int64_t end = pos + d_;
    return end <= slack_end_ ? slack_end_ - end : window_ + (end - slack_end_);
  }

  const AgentOptions& opts_;
  int64_t window_ = 0;
  int64_t slack_end_ = 0;           // kSlack: the window step tied gangs prefer to end by
  int64_t center2_ = -1;            // problematic: twice the window centre (steps); else -1
  std::vector<double> sc_;          // per step: cost with one more unit
  std::vector<int64_t> isc_;        // per step: sc_ quantized
  std::vector<int64_t> fit_;        // per step: units that fit
  std::vector<double> peak_;        // per position: max of sc_ over its block
  std::vector<int64_t> sum_;        // per position: sum of isc_ over its block
  std::deque<size_t> dmax_, dmin_;  // scan(): sliding-window scratch
  std::vector<int64_t> delta_, pre_fit_, suf_fit_;  // apply() scratch
  std::vector<double> pre_max_, suf_max_;
};

// The reference LowCost placement (AgentOptions::batch_gangs false): one gang
// at the best position of a full scan. O(gangs x window).
class LowCostOneGangPlacer final : public LowCostPositions {
 public:
  using LowCostPositions::LowCostPositions;

 private:
  int64_t placeSome(Engine& eng, const GangRequest& req, int64_t, StageTrack& out) override {
    int64_t b = -1;
    for (int64_t q = 0; q < npos(); ++q) {
      if (fits(q) && (b < 0 || before(q, b))) b = q;
    }
    if (b < 0) return 0;
    apply(eng, req, b, 1, out);
    return 1;
  }
  void changed(int64_t, int64_t) override {}
};

// LowCost with batches: the same placement as LowCostOneGangPlacer, fast on
// large requests. A min-tree over positions finds the best one in O(1) and is
// refreshed over the 2d - 1 positions a gang changes in O(d + log n). The best
// position takes its gang, then as many more as keep it ahead of every other
// position (cost-gap estimate, then gallop and bisect on the exact cost). A
// gang that widens a contiguous stage's eligible range goes alone and the
// range is scanned again.
class LowCostStagePlacer final : public LowCostPositions {
 public:
  using LowCostPositions::LowCostPositions;

 private:
  int64_t placeSome(Engine& eng, const GangRequest& req, int64_t remaining,
                    StageTrack& out) override {
    build();
    int64_t placed = 0;
    while (placed < remaining) {
      int64_t b = tree_[1];
      if (b < 0) break;
      bool widening = widens(req, out, b);
      bool anchored = req.anchor_end && out.gangs.empty();
      if (d_ == 1 && !widening && !anchored) {
        placed += fillSteps(eng, req, remaining - placed, out);
        continue;
      }
      apply(eng, req, b, 1, out);
      ++placed;
      if (anchored) break;  // the rest may go anywhere touching it: scan again
      if (widening) {       // the eligible window follows the allocation
        if (outgrown(req, out)) break;
        int64_t lo = elig_lo_, hi = elig_hi_;
        setEligible(req, out);
        if (elig_lo_ != lo || elig_hi_ != hi) {
          changed(std::min(lo, elig_lo_), std::max(hi, elig_hi_));
        }
        continue;
      }
      int64_t more = std::min(remaining - placed, bfit_[static_cast<size_t>(b)]);
      if (more <= 0) continue;
      int64_t next = bestExcept(b);
      if (next >= 0 && !before(b, next)) continue;
      int64_t k = next < 0 ? more : gangsAhead(eng, req, b, next, more);
      apply(eng, req, b, k, out);
      placed += k;
    }
    return placed;
  }

  // One-step gangs (d == 1, every skyline stage): a position is one step and
  // a gang changes only its own position's cost, which never falls. The
  // one-gang-at-a-time placement is then the merge of each position's cost
  // sequence (least cost, then rank, then index, as the tree), cut where the
  // best widening position (whose cost does not move meanwhile) would come
  // first or after `limit` gangs. So: count each position's gangs ahead of
  // that position (gallop on costAfter); when more than `limit`, the first
  // `limit` of the merge are the least `limit` elements, found from a
  // water-level estimate corrected by exchanges until every gang taken is
  // ahead of every gang left. Each position's gangs are then held at once.
  // Returns the gangs placed (>= 1: the caller checked the tree's best is
  // not widening).
  int64_t fillSteps(Engine& eng, const GangRequest& req, int64_t limit, StageTrack& out) {
    int64_t wall = -1;  // best eligible widening position
    cand_.clear();
    for (int64_t q = elig_lo_; q <= elig_hi_; ++q) {
      if (!fits(q)) continue;
      if (!widens(req, out, q)) {
        cand_.push_back(q);
      } else if (wall < 0 || before(q, wall)) {
        wall = q;
      }
    }
    room_.clear();
    int64_t total = 0;
    for (int64_t q : cand_) {
      int64_t r = bfit_[static_cast<size_t>(q)];
      if (wall >= 0) r = countAhead(eng, req, q, elemAt(eng, req, wall, 0));
      room_.push_back(r);
      total += r;
    }
    take_ = room_;
    if (total > limit) {
      estimateLeast(eng, req, limit);
      exchangeToLeast(eng, req);
      total = limit;
    }
    for (size_t i = 0; i < cand_.size(); ++i) {
      if (take_[i] > 0) apply(eng, req, cand_[i], take_[i], out);
    }
    return total;
  }
  // Gang j (0 = the next one) at one-step position q: its cost, rank, index.
  struct Next {
    double cost;
    int64_t rank;
    int64_t q;
    int64_t j;
  };
  Next elemAt(const Engine& eng, const GangRequest& req, int64_t q, int64_t j) const {
    auto i = static_cast<size_t>(q);
    return {j == 0 ? cost_[i] : costAfter(eng, req, q, j), rank_[i], q, j};
  }
  // Merge order: x comes after y (least cost, then rank, then index, then gang).
  static bool later(const Next& x, const Next& y) {
    if (x.cost != y.cost) return x.cost > y.cost;
    if (x.rank != y.rank) return x.rank > y.rank;
    if (x.q != y.q) return x.q > y.q;
    return x.j > y.j;
  }
  // Gangs at q (at most its fit) that come before `stop`.
  int64_t countAhead(const Engine& eng, const GangRequest& req, int64_t q, const Next& stop) const {
    int64_t fit = bfit_[static_cast<size_t>(q)];
    auto ahead = [&](int64_t j) { return later(stop, elemAt(eng, req, q, j)); };
    if (!ahead(0)) return 0;
    int64_t lo = 0, step = 1;  // ahead(lo)
    while (lo + step < fit && ahead(lo + step)) {
      lo += step;
      step *= 2;
    }
    int64_t hi = std::min(lo + step, fit);  // hi == fit or !ahead(hi)
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (ahead(mid) ? lo : hi) = mid;
    }
    return lo + 1;
  }
  // take_ := about `limit` gangs spread to an equal cost level (each gang
  // raises a position's cost by about the unit's share), within room_,
  // summing to exactly `limit`.
  void estimateLeast(const Engine& eng, const GangRequest& req, int64_t limit) {
    double per = std::max(eng.dims().share(req.urow), 1e-15), inv = 1 / per;
    auto at = [&](double level) {
      int64_t sum = 0;
      for (size_t i = 0; i < cand_.size(); ++i) {
        double c0 = cost_[static_cast<size_t>(cand_[i])];
        double n = level < c0 ? 0.0 : std::floor((level - c0) * inv) + 1;
        take_[i] = static_cast<int64_t>(std::min(n, static_cast<double>(room_[i])));
        sum += take_[i];
      }
      return sum;
    };
    double lo = std::numeric_limits<double>::max(), hi = 0;
    for (int64_t q : cand_) {
      lo = std::min(lo, cost_[static_cast<size_t>(q)]);
      hi = std::max(hi, cost_[static_cast<size_t>(q)]);
    }
    hi += per * static_cast<double>(limit + 1);
    // About the least level reaching `limit`, to a quarter gang (the exchanges
    // below make it exact).
    while (hi - lo > per / 4) {
      double mid = lo + (hi - lo) / 2;
      if (at(mid) >= limit) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    int64_t excess = at(hi) - limit;
    for (size_t i = cand_.size(); i-- > 0 && excess != 0;) {
      int64_t d = excess > 0 ? std::min(excess, take_[i]) : std::max(excess, take_[i] - room_[i]);
      take_[i] -= d;
      excess -= d;
    }
  }
  // Exchanges the latest gang taken for the earliest left until every gang
  // taken comes before every gang left: then take_ holds the least elements
  // of the merge (each exchange strictly lowers the taken set, so it ends).
  void exchangeToLeast(const Engine& eng, const GangRequest& req) {
    size_t m = cand_.size();
    last_.resize(m);
    first_.resize(m);
    for (size_t i = 0; i < m; ++i) {
      if (take_[i] > 0) last_[i] = elemAt(eng, req, cand_[i], take_[i] - 1);
      if (take_[i] < room_[i]) first_[i] = elemAt(eng, req, cand_[i], take_[i]);
    }
    for (;;) {
      size_t a = m, b = m;  // latest taken, earliest left
      for (size_t i = 0; i < m; ++i) {
        if (take_[i] > 0 && (a == m || later(last_[i], last_[a]))) a = i;
        if (take_[i] < room_[i] && (b == m || later(first_[b], first_[i]))) b = i;
      }
      if (a == m || b == m || later(first_[b], last_[a])) return;
      first_[a] = last_[a];
      last_[b] = first_[b];
      --take_[a];
      ++take_[b];
      if (take_[a] > 0) last_[a] = elemAt(eng, req, cand_[a], take_[a] - 1);
      if (take_[b] < room_[b]) first_[b] = elemAt(eng, req, cand_[b], take_[b]);
    }
  }

  // Winner of two positions (-1 = none).
  int64_t pick(int64_t a, int64_t b) const {
    if (a < 0) return b;
    if (b < 0) return a;
    return before(b, a) ? b : a;
  }
  void build() {
    leaves_ = 1;
    while (leaves_ < npos()) leaves_ *= 2;
    tree_.assign(static_cast<size_t>(2 * leaves_), -1);
    for (int64_t q = 0; q < npos(); ++q) tree_[static_cast<size_t>(leaves_ + q)] = fits(q) ? q : -1;
    for (int64_t v = leaves_ - 1; v >= 1; --v) pull(v);
  }
  void pull(int64_t v) {
    tree_[static_cast<size_t>(v)] =
        pick(tree_[static_cast<size_t>(2 * v)], tree_[static_cast<size_t>(2 * v + 1)]);
  }
  void changed(int64_t lo, int64_t hi) override {
    for (int64_t q = lo; q <= hi; ++q) tree_[static_cast<size_t>(leaves_ + q)] = fits(q) ? q : -1;
    for (int64_t l = (leaves_ + lo) / 2, r = (leaves_ + hi) / 2; l >= 1; l /= 2, r /= 2) {
      for (int64_t v = l; v <= r; ++v) pull(v);
    }
  }
  // Best position other than b (-1 = none).
  int64_t bestExcept(int64_t b) const {
    int64_t best = -1;
    auto query = [&](int64_t lo, int64_t hi) {  // leaves [lo, hi)
      for (lo += leaves_, hi += leaves_; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) best = pick(best, tree_[static_cast<size_t>(lo++)]);
        if (hi & 1) best = pick(best, tree_[static_cast<size_t>(--hi)]);
      }
    };
    query(0, b);
    query(b + 1, npos());
    return best;
  }

  // Cost at position q of one more gang after j more (j >= 0); j = 0 is cost_[q].
  double costAfter(const Engine& eng, const GangRequest& req, int64_t q, int64_t j) const {
    double peak = 0;
    int64_t sum = 0;
    for (int64_t s = pmin_ + q; s < pmin_ + q + d_; ++s) {
      double c = eng.dims().shareWith(eng.used(s), req.urow, j + 1);
      peak = std::max(peak, c);
      sum += quantize(c);
    }
    return positionCost(peak, sum);
  }

  // Gangs (1..k) position b takes while ahead of position `next` (the best
  // other one, whose cost does not change meanwhile): 1 + the largest j in
  // [0, k-1] such that b's gang after j more is still ahead. Starts from the
  // cost-gap estimate (one unit raises the cost by about its share), then
  // gallops and bisects on the exact cost.
  int64_t gangsAhead(const Engine& eng, const GangRequest& req, int64_t b, int64_t next,
                     int64_t k) const {
    double next_cost = cost_[static_cast<size_t>(next)];
    int64_t next_rank = rank_[static_cast<size_t>(next)], b_rank = rank_[static_cast<size_t>(b)];
    auto stays = [&](int64_t j) {
      return j == 0 || ahead(costAfter(eng, req, b, j), b_rank, next_cost, next_rank);
    };
    double per = std::max(req.unit.dominantShare(eng.problem().capacity), 1e-15) * (1 + 1e-3);
    double est = std::floor((next_cost - cost_[static_cast<size_t>(b)]) / per);
    auto guess = static_cast<int64_t>(std::clamp(est, 0.0, static_cast<double>(k - 1)));
    int64_t lo = 0, hi = k - 1;  // the answer lies in [lo, hi]; stays(lo)
    if (stays(guess)) {
      lo = guess;
      for (int64_t step = 1;; step *= 2) {
        if (lo + step > k - 1) break;
        if (!stays(lo + step)) {
          hi = lo + step - 1;
          break;
        }
        lo += step;
      }
    } else {
      int64_t bad = guess;  // !stays(bad)
      for (int64_t step = 1;; step *= 2) {
        int64_t c = std::max<int64_t>(0, bad - step);
        if (stays(c)) {
          lo = c;
          hi = bad - 1;
          break;
        }
        bad = c;
      }
    }
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (stays(mid)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo + 1;
  }

  int64_t leaves_ = 1;
  // fillSteps scratch, per candidate position: the position, the gangs
  // before the wall, the gangs taken, the last taken and first left.
  std::vector<int64_t> cand_, room_, take_;
  std::vector<Next> last_, first_;
  std::vector<int64_t> tree_;  // min-tree over positions: index of the best leaf below (-1: none)
};

// Places all gangs of stage k inside [lo, hi): full gangs of min_concurrency,
// then the remainder as one smaller gang. Partial placement stays in `out`.
bool placeStage(Engine& eng, StagePlacer& placer, int k, int64_t lo, int64_t hi, bool contiguous,
                bool anchor_end, StageTrack& out) {
  const PlanningProblem& p = eng.problem();
  const ReservationStage& st = p.def->stages[static_cast<size_t>(k)];
  int64_t g = st.min_concurrency;
  GangRequest req{st.capability * g,
                  eng.unitRow(st.capability * g),
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
  req.urow = eng.unitRow(req.unit);
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

// One pass over `ids` (stages, chronological) with the allocation ending by
// E. Exact early cut-off: the pass stops (false, failed = -1) as
// soon as the highest step cost under the stages placed so far reaches
// `cutoff`. Steps only gain load during a pass, so that is a lower bound on
// the whole allocation's peak, and Engine::cost >= its peak: a pass stopped
// here could not have been cheaper than `cutoff` (the propose() loop would
// have dropped it).
// `anchor_last` (R_ORDER_NO_GAP only): the last stage too must end exactly at
// E, so the whole chain ends there; otherwise it goes to its cheapest place
// below E and the earlier stages are anchored to wherever it starts.
bool runPass(Engine& eng, StagePlacer& placer, const SearchOptions& so, const std::vector<int>& ids,
             bool ordered, bool no_gap, bool anchor_last, int64_t e, double cutoff,
             std::vector<StageTrack>& tracks, int& failed) {
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
  double peak = 0;  // highest step cost under the stages placed so far
  for (size_t ii = n; ii-- > 0;) {
    int k = ids[ii];
    int64_t d = p.duration[static_cast<size_t>(k)];
    int64_t lo_min = ordered ? sum_d[ii] : 0;
    int64_t stage_hi = ordered ? hi : e;
    if (stage_hi - lo_min < d) {
      failed = k;
      return false;
    }
    bool anchor = no_gap && (ii + 1 < n || anchor_last);
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
    peak = std::max(peak, eng.peakOver(tr));
    tracks.push_back(std::move(tr));
    if (peak >= cutoff) {
      failed = -1;
      return false;
    }
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
        bool ok =
            runPass(eng, *placer, so, ids, ordered, no_gap, false, e, best_cost - kEps, tracks, f);
        // The last stage's cheapest place can leave the stages anchored
        // before it no room (whole-step skylines: a busy step right before
        // it); the chain ending at e is then tried as well.
        if (!ok && f >= 0 && no_gap && ids.size() > 1) {
          f = -1;
          ok =
              runPass(eng, *placer, so, ids, ordered, no_gap, true, e, best_cost - kEps, tracks, f);
        }
        if (!ok) {
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
    if (!opts_.batch_gangs) return std::make_unique<LowCostOneGangPlacer>(p, opts_);
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
    if (opts_.tie_break == TieBreak::kSlack) e.push_back(std::max(emin, slackEnd(p.window)));
    std::sort(e.begin(), e.end(), std::greater<>());
    e.erase(std::unique(e.begin(), e.end()), e.end());
    orderByTieBreak(p.window, e);
    return e;
  }

 private:
  int64_t slackEnd(int64_t window) const {
    auto slack =
        static_cast<int64_t>(std::ceil(opts_.tie_break_slack * static_cast<double>(window)));
    return window - slack;
  }
  // propose() keeps the first of equally cheap allocations, so the end points
  // are tried in the tie-break's order of preference (ties must
  // not default to the latest end): latest first, earliest first, or (slack)
  // the ends at or before deadline - slack from the latest down, then the
  // later ones from the earliest up. `e` comes sorted latest first.
  void orderByTieBreak(int64_t window, std::vector<int64_t>& e) const {
    switch (opts_.tie_break) {
      case TieBreak::kLatest:
        return;
      case TieBreak::kEarliest:
        std::reverse(e.begin(), e.end());
        return;
      case TieBreak::kSlack:
        break;
    }
    const int64_t by = slackEnd(window);
    auto late = std::stable_partition(e.begin(), e.end(), [by](int64_t x) { return x <= by; });
    std::reverse(late, e.end());
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
