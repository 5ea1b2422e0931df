// Skyline inference: the LP of Morpheus §5 (see skyline_fit.h for the model).
//
// Two solvers of the same LP:
//
// - solveSkylineReference() states the LP exactly as the paper writes it: one
//   variable per (run, step) for the over-allocation o_ik, the under-allocation
//   u_ik and the debt D_ik, plus s_k and eps; GLPK simplex with presolve. It has
//   O(N*K) columns and rows and takes seconds at K = 240, minutes at K = 1440.
//
// - solveSkyline() solves an equivalent compact LP by row generation with a
//   warm-started simplex. Its optimum is the reference LP's optimum (same
//   value up to simplex round-off), not an approximation.
//
// The compact LP (Morpheus §5 with the per-(run, step) variables eliminated).
//   For a fixed s, the best o, u, D, eps have closed forms: o_ik = (s_k - s_ik)+,
//   u_ik = (s_ik - s_k)+, eps = the regularisation sum (any larger eps only
//   costs more when beta_eff > 0, and is free when beta_eff = 0), and the debt
//   recursion D_ik = (D_i,k-1 + s_ik - s_k)+ (Lindley) ends at
//     D_iK = max(0, max_j (c_ij - P_j)),  c_ij = sum_{k>=j} s_ik,  P_j = sum_{k>=j} s_k.
//   (The reference LP's D rows only bound D_ik from below, and D_iK has a
//   non-negative cost, so its optimum also sits at this value.) Minimised
//   over everything but s, the reference objective is therefore
//     sum_k g_k(s_k) + (1-alpha)/N sum_i D_iK(s),
//     g_k(x) = sum_i [alpha/N (x - s_ik)+ + beta_eff/(N S_i) (s_ik - x)+]  (S_i = 0 runs: no u
//     term)
//   g_k is convex piecewise linear with breakpoints at the step's samples. We
//   write it in segment form: s_k = sum_l delta_kl, 0 <= delta_kl <= length of
//   the l-th segment of [0, inf) between breakpoints, cost = slope of g_k on
//   it. The slopes ascend (convexity), so a minimiser fills segments left to
//   right and pays exactly g_k(s_k) - g_k(0); the epigraph needs no rows, only
//   bounded columns. With P_k = s_k + P_k+1 (K equality rows) the LP is
//     min  sum_kl slope_kl delta_kl + (1-alpha)/N sum_i D_i
//     D_i + P_j >= c_ij for every run i and step j,   D >= 0,
//   whose optimal value is the reference optimum minus the constant
//   sum_k g_k(0), with the same optimal s. Reported terms are always
//   evaluateSkyline(s), as for the reference.
//
// Row generation (why it is exact). Of the N*K suffix rows only a few per run
// bind. We start from the rows active at a guess (the per-step median: per
// run its largest local maxima of c_ij - P_j) and a crash basis at that guess
// (segments below it at their upper bounds, P basic, D_i basic in its largest
// row) that is primal feasible, solve with the primal simplex, then repeatedly
// add the violated rows (per run, up to 8 most violated local maxima of
// c_ij - P_j; the global maximum is one of them) and re-solve with GLPK's dual
// simplex from the previous basis (new rows enter with their auxiliary
// variable basic, so the basis stays dual feasible). The relaxation's optimum
// is a lower bound on the full LP; once it violates no suffix row (beyond a
// 1e-9 relative tolerance, or only rows already present, i.e. simplex
// round-off) it is feasible for the full LP and therefore optimal. There are
// finitely many rows, so the loop ends; in practice after 3-6 rounds with a
// few rows per run.
//
// The relative mode (beta_eff = beta * V) solves twice on the same GLPK
// problem: the second solve only changes segment costs, so the first optimal
// basis stays primal feasible and the primal simplex continues from it; then
// row generation resumes.
#include "inference/model/skyline_fit.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace morpheus::inference {

namespace {

std::string sampleField(size_t i, size_t k) {
  std::string f = "runs[";
  f += std::to_string(i);
  f += "][";
  f += std::to_string(k);
  f += "]";
  return f;
}

Status validateProblem(const SkylineProblem& p) {
  if (!(p.alpha >= 0.0 && p.alpha <= 1.0)) return invalidArgument("alpha", "must be in [0, 1]");
  if (!(p.beta >= 0.0) || !std::isfinite(p.beta)) {
    return invalidArgument("beta", "must be finite and >= 0");
  }
  if (p.runs.empty()) return invalidArgument("runs", "need at least 1 run, got 0");
  for (size_t i = 0; i < p.runs.size(); ++i) {
    for (size_t k = 0; k < p.runs[i].size(); ++k) {
      double v = p.runs[i][k];
      if (!(v >= 0.0) || !std::isfinite(v)) {
        return invalidArgument(sampleField(i, k), "must be finite and >= 0");
      }
    }
  }
  return Status::ok();
}

size_t horizon(const SkylineProblem& p) {
  size_t k = 0;
  for (const auto& r : p.runs) k = std::max(k, r.size());
  return k;
}

double sample(const SkylineProblem& p, size_t i, size_t k) {
  return k < p.runs[i].size() ? p.runs[i][k] : 0.0;
}

double runTotal(const std::vector<double>& run) {
  return std::accumulate(run.begin(), run.end(), 0.0);
}

// How glp_simplex is run (messages off in every mode).
enum class Simplex {
  kPresolved,   // presolve on, primal simplex: a cold solve (the reference LP)
  kWarmPrimal,  // from the current basis, still primal feasible (costs changed)
  kWarmDual,    // from the current basis, still dual feasible (rows added)
};

// Owns a glp_prob.
class GlpProblem {
 public:
  GlpProblem() : lp_(glp_create_prob()) {}
  ~GlpProblem() { glp_delete_prob(lp_); }
  GlpProblem(const GlpProblem&) = delete;
  GlpProblem& operator=(const GlpProblem&) = delete;
  glp_prob* get() const { return lp_; }

 private:
  glp_prob* lp_;
};

// How long one glp_simplex call runs before a fit's stop check is polled.
constexpr int kSimplexSliceMs = 100;

// `stop` (may be empty) is polled every kSimplexSliceMs of a warm solve; its
// non-OK status ends the solve. A presolved (cold, reference) solve is not
// sliced: its basis would be lost at each slice.
Status runSimplex(glp_prob* lp, Simplex mode, const char* what, const FitStop& stop = {}) {
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  const bool presolve = mode == Simplex::kPresolved;
  parm.presolve = presolve ? GLP_ON : GLP_OFF;
  parm.meth = mode == Simplex::kWarmDual ? GLP_DUALP : GLP_PRIMAL;
  const bool sliced = !presolve && stop;
  if (sliced) parm.tm_lim = kSimplexSliceMs;
  auto simplex = [&]() -> Result<int> {
    for (;;) {
      int rc = glp_simplex(lp, &parm);
      if (!sliced || rc != GLP_ETMLIM) return rc;
      MORPHEUS_RETURN_IF_ERROR(stop());  // else continue from the basis reached
    }
  };
  MORPHEUS_ASSIGN_OR_RETURN(int rc, simplex());
  if (rc != 0 && !presolve) {
    // A singular or ill-conditioned warm basis: restart from a fresh one.
    glp_adv_basis(lp, 0);
    parm.meth = GLP_PRIMAL;
    MORPHEUS_ASSIGN_OR_RETURN(rc, simplex());
  }
  if (rc != 0) {
    return internalError(std::string(what) + ": glp_simplex failed, code " + std::to_string(rc));
  }
  int st = glp_get_status(lp);
  if (st != GLP_OPT) {
    return internalError(std::string(what) + ": LP not optimal, GLPK status " + std::to_string(st));
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Reference LP.

// Builds the LP exactly as written in skyline_fit.h. Columns: s_k, o_ik,
// u_ik (runs with S_i > 0), D_ik, eps. The eps column's cost is set by the
// caller.
struct ReferenceLp {
  GlpProblem prob;
  int k = 0;
  int eps_col = 0;
};

void buildReference(const SkylineProblem& p, ReferenceLp& r) {
  glp_prob* lp = r.prob.get();
  const int n = static_cast<int>(p.runs.size());
  const int K = static_cast<int>(horizon(p));
  r.k = K;
  const double dn = n;
  std::vector<double> total(n);
  int with_total = 0;
  for (int i = 0; i < n; ++i) {
    total[i] = runTotal(p.runs[i]);
    if (total[i] > 0) ++with_total;
  }
  glp_set_obj_dir(lp, GLP_MIN);
  // Column layout.
  const int s0 = 1, o0 = s0 + K, u0 = o0 + n * K, d0 = u0 + with_total * K;
  r.eps_col = d0 + n * K;
  glp_add_cols(lp, r.eps_col);
  for (int c = 1; c <= r.eps_col; ++c) glp_set_col_bnds(lp, c, GLP_LO, 0.0, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < K; ++k) glp_set_obj_coef(lp, o0 + i * K + k, p.alpha / dn);
    glp_set_obj_coef(lp, d0 + i * K + K - 1, (1.0 - p.alpha) / dn);
  }

  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0.0};
  int row = 0;
  auto entry = [&](int col, double v) {
    ia.push_back(row);
    ja.push_back(col);
    ar.push_back(v);
  };
  const int rows = 2 * n * K + with_total * K + 1;
  glp_add_rows(lp, rows);
  int ui = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < K; ++k) {
      const double x = sample(p, i, k);
      // o_ik >= s_k - s_ik
      ++row;
      glp_set_row_bnds(lp, row, GLP_LO, -x, 0.0);
      entry(o0 + i * K + k, 1.0);
      entry(s0 + k, -1.0);
      // D_ik >= D_i,k-1 + s_ik - s_k
      ++row;
      glp_set_row_bnds(lp, row, GLP_LO, x, 0.0);
      entry(d0 + i * K + k, 1.0);
      if (k > 0) entry(d0 + i * K + k - 1, -1.0);
      entry(s0 + k, 1.0);
      if (total[i] > 0) {
        // u_ik >= s_ik - s_k
        ++row;
        glp_set_row_bnds(lp, row, GLP_LO, x, 0.0);
        entry(u0 + ui * K + k, 1.0);
        entry(s0 + k, 1.0);
      }
    }
    if (total[i] > 0) ++ui;
  }
  // (1/N) sum_i sum_k u_ik / S_i - eps <= 0
  ++row;
  glp_set_row_bnds(lp, row, GLP_UP, 0.0, 0.0);
  ui = 0;
  for (int i = 0; i < n; ++i) {
    if (total[i] <= 0) continue;
    for (int k = 0; k < K; ++k) entry(u0 + ui * K + k, 1.0 / (dn * total[i]));
    ++ui;
  }
  entry(r.eps_col, -1.0);
  MORPHEUS_CHECK(row == rows, "reference LP row count");
  glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
}

std::vector<double> referenceS(const ReferenceLp& r) {
  std::vector<double> s(r.k);
  for (int k = 0; k < r.k; ++k) s[k] = std::max(0.0, glp_get_col_prim(r.prob.get(), 1 + k));
  return s;
}

// ---------------------------------------------------------------------------
// Compact LP with row generation (see the top of the file).

// Per-problem data for the compact LP, computed once: the suffix sums c_ij and,
// per step, the distinct sample values with the count of runs at each value
// and the sum of their eps weights w_i = 1/(N S_i).
struct Compact {
  int n = 0, K = 0;
  double alpha = 0;
  std::vector<double> suffix;  // n x (K+1): c_ij = sum_{k>=j} s_ik
  // Step k's breakpoints are value[first[k] .. first[k+1]), ascending, with
  // count[] runs and weight[] summed w_i at each.
  std::vector<int> first;
  std::vector<double> value, weight;
  std::vector<int> count;

  explicit Compact(const SkylineProblem& p) {
    n = static_cast<int>(p.runs.size());
    K = static_cast<int>(horizon(p));
    alpha = p.alpha;
    std::vector<double> w(n, 0.0);
    for (int i = 0; i < n; ++i) {
      double t = runTotal(p.runs[i]);
      if (t > 0) w[i] = 1.0 / (static_cast<double>(n) * t);
    }
    suffix.assign(static_cast<size_t>(n) * (K + 1), 0.0);
    for (int i = 0; i < n; ++i) {
      double* c = &suffix[static_cast<size_t>(i) * (K + 1)];
      for (int j = K - 1; j >= 0; --j) c[j] = c[j + 1] + sample(p, i, j);
    }
    std::vector<std::pair<double, double>> col(n);
    first.reserve(K + 1);
    for (int k = 0; k < K; ++k) {
      first.push_back(static_cast<int>(value.size()));
      for (int i = 0; i < n; ++i) col[i] = {sample(p, i, k), w[i]};
      std::sort(col.begin(), col.end());
      for (const auto& [v, wi] : col) {
        if (value.size() > static_cast<size_t>(first.back()) && value.back() == v) {
          ++count.back();
          weight.back() += wi;
        } else {
          value.push_back(v);
          count.push_back(1);
          weight.push_back(wi);
        }
      }
    }
    first.push_back(static_cast<int>(value.size()));
  }

  double c(int i, int j) const { return suffix[static_cast<size_t>(i) * (K + 1) + j]; }
  // Step k's segments: [0, b_1] when b_1 > 0, then [b_l, b_l+1], then [b_m, inf).
  int segments(int k) const {
    int m = first[k + 1] - first[k];
    return m + (value[first[k]] > 0 ? 1 : 0);
  }
};

// The compact LP with g_k in "segment" form: s_k = sum_l delta_kl with
// 0 <= delta_kl <= length of segment l of g_k and cost = slope of g_k on it.
// g_k is convex (slopes ascend), so an optimum fills segments left to right
// and sum_l slope_l delta_kl = g_k(s_k) - g_k(0): the epigraph needs no rows.
// Only the suffix rows D_i + P_j >= c_ij are generated.
class RowGeneration {
 public:
  // `stop` (may be empty) is polled between rounds and simplex slices.
  RowGeneration(const Compact& d, FitStop stop)
      : d_(d),
        stop_(std::move(stop)),
        have_(static_cast<size_t>(d.n) * d.K, 0),
        seg_first_(d.K + 1, 0) {
    glp_prob* lp = prob_.get();
    const int K = d.K;
    for (int k = 0; k < K; ++k) seg_first_[k + 1] = seg_first_[k] + d.segments(k);
    const int segs = seg_first_[K];
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, K + d.n + segs);
    for (int k = 0; k < K; ++k) glp_set_col_bnds(lp, colP(k), GLP_FR, 0.0, 0.0);
    for (int i = 0; i < d.n; ++i) {
      glp_set_col_bnds(lp, colD(i), GLP_LO, 0.0, 0.0);
      glp_set_obj_coef(lp, colD(i), (1.0 - d.alpha) / d.n);
    }
    // Segment bounds and P_k - P_k+1 - sum_l delta_kl = 0.
    glp_add_rows(lp, K);
    std::vector<int> ind(1);
    std::vector<double> val(1);
    for (int k = 0; k < K; ++k) {
      ind.assign(1, 0);
      val.assign(1, 0.0);
      ind.push_back(colP(k));
      val.push_back(1.0);
      if (k + 1 < K) {
        ind.push_back(colP(k + 1));
        val.push_back(-1.0);
      }
      double lo = 0;
      const int b0 = d.first[k], m = d.first[k + 1] - b0;
      const int lead = d.value[b0] > 0 ? 1 : 0;
      for (int l = 0; l < d.segments(k); ++l) {
        const int col = colSeg(k, l);
        // Segment l covers [lo, hi): hi is breakpoint l - lead + 1.
        const int next = l - lead + 1;  // index of the breakpoint ending it
        if (next < m) {
          double hi = d.value[b0 + next];
          glp_set_col_bnds(lp, col, GLP_DB, 0.0, hi - lo);
          lo = hi;
        } else {
          glp_set_col_bnds(lp, col, GLP_LO, 0.0, 0.0);
        }
        ind.push_back(col);
        val.push_back(-1.0);
      }
      glp_set_row_bnds(lp, k + 1, GLP_FX, 0.0, 0.0);
      glp_set_mat_row(lp, k + 1, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
    }
  }

  // Minimises with beta_eff weighting the under-allocation part of g_k. The
  // first call starts from a crash basis at `guess` (required); later calls
  // continue from the current rows and basis (guess must be null).
  Status solve(double beta_eff, const std::vector<double>* guess) {
    if (rounds_ > 0 && guess != nullptr) return internalError("skyline LP: guess on a warm start");
    setSegmentCosts(beta_eff);
    // A cold start goes from a basis at `guess` (primal feasible, primal
    // simplex). After a cost change the basis is still primal feasible
    // (primal simplex); after adding rows it is still dual feasible (dual
    // simplex).
    bool primal = rounds_ > 0;
    if (rounds_ == 0) {
      MORPHEUS_CHECK(guess != nullptr, "a cold start needs a guess");
      crashBasis(*guess);
      primal = true;
    }
    for (int round = 0;; ++round) {
      if (stop_) MORPHEUS_RETURN_IF_ERROR(stop_());
      MORPHEUS_RETURN_IF_ERROR(runSimplex(
          prob_.get(), primal ? Simplex::kWarmPrimal : Simplex::kWarmDual, "skyline LP", stop_));
      primal = false;
      ++rounds_;
      std::vector<double> p(d_.K + 1, 0.0), dd(d_.n);
      glp_prob* lp = prob_.get();
      for (int k = 0; k < d_.K; ++k) p[k] = glp_get_col_prim(lp, colP(k));
      for (int i = 0; i < d_.n; ++i) dd[i] = glp_get_col_prim(lp, colD(i));
      if (separate(p, dd) == 0) return Status::ok();
      if (round > 100000) return internalError("skyline LP: row generation did not converge");
    }
  }

  std::vector<double> s() const {
    std::vector<double> s(d_.K, 0.0);
    for (int k = 0; k < d_.K; ++k) {
      for (int l = 0; l < d_.segments(k); ++l) {
        s[k] += glp_get_col_prim(prob_.get(), colSeg(k, l));
      }
      s[k] = std::max(0.0, s[k]);
    }
    return s;
  }

 private:
  int colP(int k) const { return 1 + k; }
  int colD(int i) const { return 1 + d_.K + i; }
  int colSeg(int k, int l) const { return 1 + d_.K + d_.n + seg_first_[k] + l; }

  void setSegmentCosts(double beta_eff) {
    glp_prob* lp = prob_.get();
    const double dn = d_.n;
    for (int k = 0; k < d_.K; ++k) {
      const int b0 = d_.first[k], m = d_.first[k + 1] - b0;
      const int lead = d_.value[b0] > 0 ? 1 : 0;
      int below = 0;     // runs with a sample <= the segment's start
      double above = 0;  // eps weight of runs with a sample >= the segment's end
      for (int l = 0; l < m; ++l) above += d_.weight[b0 + l];
      for (int l = 0; l < d_.segments(k); ++l) {
        const int start = l - lead;  // breakpoint starting the segment (-1: zero)
        if (start >= 0) {
          below += d_.count[b0 + start];
          above -= d_.weight[b0 + start];
        }
        if (start + 1 >= m) above = 0;
        glp_set_obj_coef(lp, colSeg(k, l), d_.alpha * below / dn - beta_eff * above);
      }
    }
  }

  // Starts from s = `guess` rounded down to a breakpoint of each g_k: the
  // segments below it at their upper bounds, P_k basic in the equality rows,
  // the suffix rows at `guess` (per run its local maxima of c_ij - P_j) with
  // D_i basic in the largest one when positive. This basis is primal feasible
  // and typically close to the optimum, so the primal simplex needs far fewer
  // pivots than from GLPK's standard basis (s = 0).
  void crashBasis(const std::vector<double>& guess) {
    glp_prob* lp = prob_.get();
    const int K = d_.K;
    std::vector<double> s(K, 0.0);
    for (int k = 0; k < K; ++k) {
      double hi = 0;  // end of the filled segments
      bool filling = true;
      for (int l = 0; l < d_.segments(k); ++l) {
        const int col = colSeg(k, l);
        filling = filling && glp_get_col_type(lp, col) == GLP_DB &&
                  hi + glp_get_col_ub(lp, col) <= guess[k] * (1 + 1e-12);
        if (filling) hi += glp_get_col_ub(lp, col);
        glp_set_col_stat(lp, col, filling ? GLP_NU : GLP_NL);
      }
      s[k] = hi;
      glp_set_row_stat(lp, k + 1, GLP_NS);
      glp_set_col_stat(lp, colP(k), GLP_BS);
    }
    std::vector<double> p(K + 1, 0.0);
    for (int k = K - 1; k >= 0; --k) p[k] = p[k + 1] + s[k];
    std::vector<double> none(d_.n, -std::numeric_limits<double>::infinity());
    const int first = glp_get_num_rows(lp) + 1;
    separate(p, none);
    const int last = glp_get_num_rows(lp);
    std::vector<int> best_row(d_.n, 0);
    std::vector<double> best(d_.n, 0.0);
    for (int r = first; r <= last; ++r) {
      glp_set_row_stat(lp, r, GLP_BS);
      const Pending& q = added_[r - first];
      const double f = d_.c(q.i, q.j) - p[q.j];
      if (f > best[q.i]) {
        best[q.i] = f;
        best_row[q.i] = r;
      }
    }
    for (int i = 0; i < d_.n; ++i) {
      glp_set_col_stat(lp, colD(i), best_row[i] > 0 ? GLP_BS : GLP_NL);
      if (best_row[i] > 0) glp_set_row_stat(lp, best_row[i], GLP_NL);
    }
  }

  static bool violated(double lhs, double rhs) { return rhs - lhs > 1e-9 * (1.0 + std::fabs(rhs)); }

  // Adds the suffix rows D_i + P_j >= c_ij that (P, D) violates and that are
  // not in the LP yet: per run, the most violated local maxima of
  // c_ij - P_j over j. Returns how many.
  int separate(const std::vector<double>& p, const std::vector<double>& dd) {
    if (d_.alpha >= 1) return 0;  // D has no cost
    const int K = d_.K;
    std::vector<std::pair<double, int>> cand;
    std::vector<Pending> rows;
    for (int i = 0; i < d_.n; ++i) {
      cand.clear();
      for (int j = 0; j < K; ++j) {
        const double f = d_.c(i, j) - p[j];
        // A local maximum over j: no larger neighbour.
        if (j > 0 && d_.c(i, j - 1) - p[j - 1] > f) continue;
        if (j + 1 < K && d_.c(i, j + 1) - p[j + 1] > f) continue;
        if (have_[static_cast<size_t>(i) * K + j] || !violated(dd[i] + p[j], d_.c(i, j))) continue;
        cand.push_back({-f, j});
      }
      const size_t take = std::min(cand.size(), kRowsPerRunPerRound);
      std::partial_sort(cand.begin(), cand.begin() + take, cand.end());
      for (size_t r = 0; r < take; ++r) {
        const int j = cand[r].second;
        have_[static_cast<size_t>(i) * K + j] = 1;
        rows.push_back({i, j});
      }
    }
    added_ = rows;
    if (rows.empty()) return 0;
    glp_prob* lp = prob_.get();
    const int first = glp_add_rows(lp, static_cast<int>(rows.size()));
    for (size_t r = 0; r < rows.size(); ++r) {
      int ind[3] = {0, colD(rows[r].i), colP(rows[r].j)};
      double val[3] = {0, 1.0, 1.0};
      const int row = first + static_cast<int>(r);
      glp_set_row_bnds(lp, row, GLP_LO, d_.c(rows[r].i, rows[r].j), 0.0);
      glp_set_mat_row(lp, row, 2, ind, val);
    }
    return static_cast<int>(rows.size());
  }

  static constexpr size_t kRowsPerRunPerRound = 8;
  struct Pending {
    int i, j;
  };

  const Compact& d_;
  const FitStop stop_;
  GlpProblem prob_;
  int rounds_ = 0;
  std::vector<Pending> added_;  // the rows the last separate() added, in order
  std::vector<char> have_;      // n x K: suffix row (i, j) is in the LP
  std::vector<int> seg_first_;
};

// A cheap starting point for the row set: the per-step median of the runs.
std::vector<double> medianGuess(const SkylineProblem& p) {
  const size_t K = horizon(p);
  std::vector<double> g(K), col(p.runs.size());
  for (size_t k = 0; k < K; ++k) {
    for (size_t i = 0; i < p.runs.size(); ++i) col[i] = sample(p, i, k);
    std::nth_element(col.begin(), col.begin() + col.size() / 2, col.end());
    g[k] = col[col.size() / 2];
  }
  return g;
}

SkylineSolution trivialSolution(const SkylineProblem& p) {
  // No steps: nothing to reserve.
  SkylineSolution sol = evaluateSkyline(p, {}, p.beta_relative ? 0.0 : p.beta);
  return sol;
}

}  // namespace

SkylineSolution evaluateSkyline(const SkylineProblem& p, std::vector<double> s,
                                double beta_effective) {
  const size_t K = std::max(s.size(), horizon(p));
  s.resize(K, 0.0);
  SkylineSolution sol;
  const double n = static_cast<double>(p.runs.size());
  if (p.runs.empty()) {
    sol.s = std::move(s);
    sol.beta_effective = beta_effective;
    return sol;
  }
  double over = 0, under = 0, eps = 0;
  for (size_t i = 0; i < p.runs.size(); ++i) {
    const double total = runTotal(p.runs[i]);
    double debt = 0, shortfall = 0;
    for (size_t k = 0; k < K; ++k) {
      const double x = sample(p, i, k);
      over += std::max(0.0, s[k] - x);
      shortfall += std::max(0.0, x - s[k]);
      debt = std::max(0.0, debt + x - s[k]);  // Lindley recursion
    }
    under += debt;
    if (total > 0) eps += shortfall / total;
  }
  sol.over_allocation = over / n;
  sol.under_allocation = under / n;
  sol.epsilon = eps / n;
  sol.beta_effective = beta_effective;
  sol.objective = p.alpha * sol.over_allocation + (1.0 - p.alpha) * sol.under_allocation +
                  beta_effective * sol.epsilon;
  sol.s = std::move(s);
  return sol;
}

Result<SkylineSolution> solveSkylineReference(const SkylineProblem& p) {
  MORPHEUS_RETURN_IF_ERROR(validateProblem(p));
  if (horizon(p) == 0) return trivialSolution(p);
  ReferenceLp r;
  buildReference(p, r);
  double beta_eff = p.beta;
  double v = 0;
  if (p.beta_relative) {
    glp_set_obj_coef(r.prob.get(), r.eps_col, 0.0);
    MORPHEUS_RETURN_IF_ERROR(runSimplex(r.prob.get(), Simplex::kPresolved, "skyline reference LP"));
    v = evaluateSkyline(p, referenceS(r), 0.0).objective;
    beta_eff = p.beta * v;
  }
  glp_set_obj_coef(r.prob.get(), r.eps_col, beta_eff);
  MORPHEUS_RETURN_IF_ERROR(runSimplex(r.prob.get(), Simplex::kPresolved, "skyline reference LP"));
  SkylineSolution sol = evaluateSkyline(p, referenceS(r), beta_eff);
  sol.v = v;
  return sol;
}

Result<SkylineSolution> solveSkyline(const SkylineProblem& p) {
  MORPHEUS_RETURN_IF_ERROR(validateProblem(p));
  if (horizon(p) == 0) return trivialSolution(p);
  Compact d(p);
  RowGeneration lp(d, p.stop);
  std::vector<double> guess = medianGuess(p);
  double beta_eff = p.beta;
  double v = 0;
  if (p.beta_relative) {
    MORPHEUS_RETURN_IF_ERROR(lp.solve(0.0, &guess));
    std::vector<double> s1 = lp.s();
    v = evaluateSkyline(p, s1, 0.0).objective;
    beta_eff = p.beta * v;
    if (beta_eff > 0) MORPHEUS_RETURN_IF_ERROR(lp.solve(beta_eff, nullptr));
  } else {
    MORPHEUS_RETURN_IF_ERROR(lp.solve(beta_eff, &guess));
  }
  SkylineSolution sol = evaluateSkyline(p, lp.s(), beta_eff);
  sol.v = v;
  return sol;
}

std::vector<double> resample(const store::RunRecord& run, Millis step, SampleMode mode) {
  const int64_t rs = run.step.count();
  const int64_t ts = step.count();
  if (rs <= 0 || ts <= 0 || run.skyline.empty()) return {};
  const int64_t n = static_cast<int64_t>(run.skyline.size());
  const int64_t out_steps = (n * rs + ts - 1) / ts;
  std::vector<double> out(static_cast<size_t>(out_steps), 0.0);
  for (int64_t m = 0; m < n; ++m) {
    const int64_t a = m * rs, b = a + rs;
    const double v = run.skyline[static_cast<size_t>(m)];
    for (int64_t k = a / ts; k < out_steps && k * ts < b; ++k) {
      const int64_t overlap = std::min(b, (k + 1) * ts) - std::max(a, k * ts);
      if (overlap <= 0) continue;
      double& o = out[static_cast<size_t>(k)];
      if (mode == SampleMode::kAverage) {
        o += v * static_cast<double>(overlap);
      } else {
        o = std::max(o, v);
      }
    }
  }
  if (mode == SampleMode::kAverage) {
    for (double& o : out) o /= static_cast<double>(ts);
  }
  return out;
}

Result<FitResult> fitRuns(const std::vector<store::RunRecord>& runs, const FitParams& params) {
  if (params.step.count() <= 0) return invalidArgument(params.step_field, "must be > 0");
  if (!(params.alpha >= 0.0 && params.alpha <= 1.0)) {
    return invalidArgument("alpha", "must be in [0, 1]");
  }
  if (!(params.beta >= 0.0) || !std::isfinite(params.beta)) {
    return invalidArgument("beta", "must be finite and >= 0");
  }
  const int64_t need = std::max<int64_t>(params.min_runs, 1);
  if (static_cast<int64_t>(runs.size()) < need) {
    return invalidArgument("runs", "need at least " + std::to_string(need) + " runs, got " +
                                       std::to_string(runs.size()));
  }
  SkylineProblem p;
  p.alpha = params.alpha;
  p.beta = params.beta;
  p.beta_relative = params.beta_relative;
  p.stop = params.stop;
  double steps = 0;  // of the longest run at params.step (double: no overflow)
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (r.step.count() <= 0) {
      return invalidArgument("runs[" + std::to_string(i) + "].step", "must be > 0");
    }
    steps = std::max(steps, std::ceil(static_cast<double>(r.skyline.size()) *
                                      static_cast<double>(r.step.count()) /
                                      static_cast<double>(params.step.count())));
  }
  const double samples = steps * static_cast<double>(runs.size());
  if (params.max_samples > 0 && samples > static_cast<double>(params.max_samples)) {
    return invalidArgument(
        params.step_field,
        std::to_string(runs.size()) + " run(s) of up to " +
            std::to_string(static_cast<int64_t>(std::min(steps, 1e18))) + " steps of " +
            std::to_string(params.step.count()) + " ms exceed the limit of " +
            std::to_string(params.max_samples) +
            " samples (runs x steps) of one fit (skyline.max-fit-samples); use a longer "
            "step or fewer runs");
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::string field = "runs[" + std::to_string(i) + "]";
    for (size_t k = 0; k < r.skyline.size(); ++k) {
      if (!(r.skyline[k] >= 0.0) || !std::isfinite(r.skyline[k])) {
        return invalidArgument(field + ".skyline[" + std::to_string(k) + "]",
                               "must be finite and >= 0");
      }
    }
    p.runs.push_back(resample(r, params.step, params.sample));
  }
  MORPHEUS_ASSIGN_OR_RETURN(SkylineSolution sol, solveSkyline(p));
  FitResult out;
  out.skyline.reserve(sol.s.size());
  for (double v : sol.s) {
    out.skyline.push_back(std::max<int64_t>(0, static_cast<int64_t>(std::ceil(v - 1e-9))));
  }
  out.over_allocation = sol.over_allocation;
  out.under_allocation = sol.under_allocation;
  out.epsilon = sol.epsilon;
  out.objective = sol.objective;
  out.runs_used = static_cast<int>(runs.size());
  return out;
}

}  // namespace morpheus::inference
