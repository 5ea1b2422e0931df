// Skyline inference: the LP of Morpheus §5 (see skyline_fit.h for the model).
//
// Two solvers of the same LP:
//
// - solveSkylineReference() states the LP exactly as the paper writes it: one
//   variable per (run, step) for the over-allocation o_ik, the under-allocation
//   u_ik and the debt D_ik, plus s_k and eps; GLPK simplex with presolve. It is
//   O(N*K) columns and rows and takes seconds at K = 240, minutes at K = 1440.
//
// - solveSkyline() solves an equivalent compact LP by row generation (below).
//   Its optimum is the optimum of the reference LP, not an approximation.
//
// The compact LP (Morpheus §5, variables eliminated).
//   For a fixed s the per-(run, step) variables have closed forms at the
//   optimum: o_ik = (s_k - s_ik)+, u_ik = (s_ik - s_k)+ (the eps row is then
//   tight whenever beta_eff > 0, and eps is irrelevant when beta_eff = 0), and
//   the debt recursion D_ik = (D_i,k-1 + s_ik - s_k)+ (Lindley) ends at
//     D_iK = max(0, max_j (c_ij - P_j)),  c_ij = sum_{k>=j} s_ik,  P_j = sum_{k>=j} s_k.
//   So the reference objective, minimised over everything but s, is
//     sum_k [alpha * ov_k(s_k) + beta_eff * un_k(s_k)] + (1-alpha)/N sum_i D_iK(s)
//   with ov_k(x) = 1/N sum_i (x - s_ik)+ and un_k(x) = 1/N sum_{i: S_i>0} (s_ik - x)+ / S_i,
//   both convex piecewise linear with breakpoints at the s_ik. Written as an LP:
//     min  alpha sum_k x_k + beta_eff sum_k y_k + (1-alpha)/N sum_i D_i
//     x_k >= every affine piece of ov_k(s_k)  (at most N+1 pieces per step)
//     y_k >= every affine piece of un_k(s_k)  (at most N+1 pieces per step)
//     D_i + P_j >= c_ij for every run i and step j,   P_j = s_j + P_j+1,  P_K = 0
//     s, x, y, D >= 0
//   The two LPs have the same optimal value and the same optimal s: any
//   feasible point of one maps to a point of the other with an objective no
//   larger (take x_k = alpha-weighted sums of the o_ik, D_i = D_iK, ... one
//   way; o, u, D, eps at their closed forms the other way).
//
// Row generation (why it is exact). We solve the compact LP with only a subset
// of its rows: first the rows active at a cheap guess (per-step median
// pieces, the maximal suffix row of each run), then repeatedly add every row
// the current optimum violates (for each step the piece of ov_k / un_k that is
// active at s_k; for each run the suffix row j maximising c_ij - P_j) and
// re-solve with GLPK's dual simplex from the previous basis (new rows enter
// basic, so the old basis stays dual feasible and only a few pivots are
// needed). A relaxation's optimum is a lower bound on the full LP; once it
// violates no row of the full LP (beyond a 1e-9 relative tolerance, or only
// rows already present, i.e. solver round-off) it is feasible for the full LP
// and therefore optimal. Each step has at most N+1 pieces and each run K
// suffix rows, so the loop ends after finitely many rounds; in practice a few
// tens of rounds with a few percent of the rows.
//
// The relative mode (beta_eff = beta * V) solves twice on the same GLPK
// problem: the first solve has no y rows and cost 0 on y; the second sets the
// y costs to beta_eff (y is nonbasic at 0, so the basis stays dual feasible),
// adds the violated un_k pieces and continues the dual simplex.
#include "inference/skyline_fit.h"

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

// GLPK's simplex with messages off. `presolve` discards any basis; the
// row-generation loop therefore runs without it.
glp_smcp simplexParams(bool presolve) {
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = presolve ? GLP_ON : GLP_OFF;
  parm.meth = presolve ? GLP_PRIMAL : GLP_DUALP;
  return parm;
}

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

Status runSimplex(glp_prob* lp, bool presolve, const char* what) {
  glp_smcp parm = simplexParams(presolve);
  int rc = glp_simplex(lp, &parm);
  if (rc != 0 && !presolve) {
    // A singular or ill-conditioned warm basis: restart from a fresh one.
    glp_adv_basis(lp, 0);
    parm.meth = GLP_PRIMAL;
    rc = glp_simplex(lp, &parm);
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

// Per-problem data for the compact LP, computed once.
struct Compact {
  int n = 0, K = 0, m = 0;  // m: runs with S_i > 0
  double alpha = 0;
  std::vector<double> suffix;  // n x (K+1): c_ij = sum_{k>=j} s_ik
  // ov_k pieces: ascending samples of step k and their prefix sums.
  std::vector<double> ov_val;     // K x n
  std::vector<double> ov_prefix;  // K x (n+1)
  // un_k pieces: samples of runs with S_i > 0, descending, with cumulative
  // weights w = 1/(N S_i) and cumulative w * sample.
  std::vector<double> un_val;  // K x m
  std::vector<double> un_w;    // K x (m+1)
  std::vector<double> un_wv;   // K x (m+1)

  Compact(const SkylineProblem& p) {
    n = static_cast<int>(p.runs.size());
    K = static_cast<int>(horizon(p));
    alpha = p.alpha;
    const double dn = n;
    std::vector<double> weight;
    std::vector<int> weighted;
    for (int i = 0; i < n; ++i) {
      double t = runTotal(p.runs[i]);
      if (t > 0) {
        weighted.push_back(i);
        weight.push_back(1.0 / (dn * t));
      }
    }
    m = static_cast<int>(weighted.size());
    suffix.assign(static_cast<size_t>(n) * (K + 1), 0.0);
    for (int i = 0; i < n; ++i) {
      for (int j = K - 1; j >= 0; --j)
        suffix[i * (K + 1) + j] = suffix[i * (K + 1) + j + 1] + sample(p, i, j);
    }
    ov_val.resize(static_cast<size_t>(K) * n);
    ov_prefix.resize(static_cast<size_t>(K) * (n + 1));
    un_val.resize(static_cast<size_t>(K) * m);
    un_w.resize(static_cast<size_t>(K) * (m + 1));
    un_wv.resize(static_cast<size_t>(K) * (m + 1));
    std::vector<int> order(m);
    for (int k = 0; k < K; ++k) {
      double* v = &ov_val[static_cast<size_t>(k) * n];
      for (int i = 0; i < n; ++i) v[i] = sample(p, i, k);
      std::sort(v, v + n);
      double* pre = &ov_prefix[static_cast<size_t>(k) * (n + 1)];
      pre[0] = 0;
      for (int i = 0; i < n; ++i) pre[i + 1] = pre[i] + v[i];

      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        return sample(p, weighted[a], k) > sample(p, weighted[b], k);
      });
      double* uv = &un_val[static_cast<size_t>(k) * m];
      double* uw = &un_w[static_cast<size_t>(k) * (m + 1)];
      double* uwv = &un_wv[static_cast<size_t>(k) * (m + 1)];
      uw[0] = uwv[0] = 0;
      for (int l = 0; l < m; ++l) {
        uv[l] = sample(p, weighted[order[l]], k);
        uw[l + 1] = uw[l] + weight[order[l]];
        uwv[l + 1] = uwv[l] + weight[order[l]] * uv[l];
      }
    }
  }

  double c(int i, int j) const { return suffix[static_cast<size_t>(i) * (K + 1) + j]; }
  // Index of the ov_k piece active at x: the number of samples below x.
  int ovPiece(int k, double x) const {
    const double* v = &ov_val[static_cast<size_t>(k) * n];
    return static_cast<int>(std::lower_bound(v, v + n, x) - v);
  }
  // Piece `q` of ov_k: (q/N) x - prefix_q / N.
  double ovSlope(int q) const { return q / static_cast<double>(n); }
  double ovIntercept(int k, int q) const {
    return -ov_prefix[static_cast<size_t>(k) * (n + 1) + q] / n;
  }
  // Index of the un_k piece active at x: the number of samples above x.
  int unPiece(int k, double x) const {
    const double* v = &un_val[static_cast<size_t>(k) * m];
    return static_cast<int>(std::upper_bound(v, v + m, x, std::greater<double>()) - v);
  }
  // Piece `q` of un_k: -W_q x + WV_q.
  double unSlope(int k, int q) const { return -un_w[static_cast<size_t>(k) * (m + 1) + q]; }
  double unIntercept(int k, int q) const { return un_wv[static_cast<size_t>(k) * (m + 1) + q]; }
};

class RowGeneration {
 public:
  explicit RowGeneration(const Compact& d)
      : d_(d),
        have_ov_(static_cast<size_t>(d.K) * (d.n + 1), 0),
        have_un_(static_cast<size_t>(d.K) * (d.m + 1), 0),
        have_suffix_(static_cast<size_t>(d.n) * d.K, 0) {
    glp_prob* lp = prob_.get();
    const int K = d.K;
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, 4 * K + d.n);
    for (int k = 0; k < K; ++k) {
      glp_set_col_bnds(lp, colS(k), GLP_LO, 0.0, 0.0);
      glp_set_col_bnds(lp, colP(k), GLP_FR, 0.0, 0.0);
      glp_set_col_bnds(lp, colX(k), GLP_LO, 0.0, 0.0);
      glp_set_col_bnds(lp, colY(k), GLP_LO, 0.0, 0.0);
      glp_set_obj_coef(lp, colX(k), d.alpha);
    }
    for (int i = 0; i < d.n; ++i) {
      glp_set_col_bnds(lp, colD(i), GLP_LO, 0.0, 0.0);
      glp_set_obj_coef(lp, colD(i), (1.0 - d.alpha) / d.n);
    }
    // P_k - P_k+1 - s_k = 0.
    glp_add_rows(lp, K);
    for (int k = 0; k < K; ++k) {
      int ind[4] = {0, colP(k), colS(k), 0};
      double val[4] = {0, 1.0, -1.0, -1.0};
      int len = 2;
      if (k + 1 < K) {
        ind[3] = colP(k + 1);
        len = 3;
      }
      glp_set_row_bnds(lp, k + 1, GLP_FX, 0.0, 0.0);
      glp_set_mat_row(lp, k + 1, len, ind, val);
    }
  }

  // Minimises with the given weight on the un_k terms (beta_eff), starting
  // from the current rows and basis. Rows active at `guess` (s values) are
  // added first when given.
  Status solve(double beta_eff, const std::vector<double>* guess) {
    beta_eff_ = beta_eff;
    for (int k = 0; k < d_.K; ++k) glp_set_obj_coef(prob_.get(), colY(k), beta_eff);
    if (guess != nullptr) {
      std::vector<double> p(d_.K + 1, 0.0);
      for (int k = d_.K - 1; k >= 0; --k) p[k] = p[k + 1] + (*guess)[k];
      const double kNoBound = -std::numeric_limits<double>::infinity();
      std::vector<double> none_k(d_.K, kNoBound), none_n(d_.n, kNoBound);
      separate(*guess, p, none_k, none_k, none_n);
      flush();
    }
    for (int round = 0;; ++round) {
      MORPHEUS_RETURN_IF_ERROR(runSimplex(prob_.get(), false, "skyline LP"));
      ++rounds_;
      std::vector<double> s(d_.K), p(d_.K + 1, 0.0), x(d_.K), y(d_.K), dd(d_.n);
      glp_prob* lp = prob_.get();
      for (int k = 0; k < d_.K; ++k) {
        s[k] = glp_get_col_prim(lp, colS(k));
        p[k] = glp_get_col_prim(lp, colP(k));
        x[k] = glp_get_col_prim(lp, colX(k));
        y[k] = glp_get_col_prim(lp, colY(k));
      }
      for (int i = 0; i < d_.n; ++i) dd[i] = glp_get_col_prim(lp, colD(i));
      if (separate(s, p, x, y, dd) == 0) return Status::ok();
      flush();
      if (round > 100000) return internalError("skyline LP: row generation did not converge");
    }
  }

  std::vector<double> s() const {
    std::vector<double> s(d_.K);
    for (int k = 0; k < d_.K; ++k) s[k] = std::max(0.0, glp_get_col_prim(prob_.get(), colS(k)));
    return s;
  }
  int rounds() const { return rounds_; }
  int rows() const { return glp_get_num_rows(prob_.get()); }

 private:
  int colS(int k) const { return 1 + k; }
  int colP(int k) const { return 1 + d_.K + k; }
  int colX(int k) const { return 1 + 2 * d_.K + k; }
  int colY(int k) const { return 1 + 3 * d_.K + k; }
  int colD(int i) const { return 1 + 4 * d_.K + i; }

  static bool violated(double lhs, double rhs) { return rhs - lhs > 1e-9 * (1.0 + std::fabs(rhs)); }

  // Queues the rows of the full compact LP that (s, P, x, y, D) violates and
  // that are not in the LP yet; returns how many.
  int separate(const std::vector<double>& s, const std::vector<double>& p,
               const std::vector<double>& x, const std::vector<double>& y,
               const std::vector<double>& dd) {
    int added = 0;
    const int K = d_.K;
    for (int k = 0; k < K; ++k) {
      if (d_.alpha > 0) {
        int q = d_.ovPiece(k, s[k]);
        double rhs = d_.ovSlope(q) * s[k] + d_.ovIntercept(k, q);
        char& have = have_ov_[static_cast<size_t>(k) * (d_.n + 1) + q];
        if (q > 0 && !have && violated(x[k], rhs)) {
          have = 1;
          // x_k - (q/N) s_k >= intercept
          queue(colX(k), 1.0, colS(k), -d_.ovSlope(q), d_.ovIntercept(k, q));
          ++added;
        }
      }
      if (beta_eff_ > 0 && d_.m > 0) {
        int q = d_.unPiece(k, s[k]);
        double rhs = d_.unSlope(k, q) * s[k] + d_.unIntercept(k, q);
        char& have = have_un_[static_cast<size_t>(k) * (d_.m + 1) + q];
        if (q > 0 && !have && violated(y[k], rhs)) {
          have = 1;
          // y_k + W_q s_k >= WV_q
          queue(colY(k), 1.0, colS(k), -d_.unSlope(k, q), d_.unIntercept(k, q));
          ++added;
        }
      }
    }
    if (d_.alpha < 1) {
      for (int i = 0; i < d_.n; ++i) {
        int best = -1;
        double best_gap = 0;
        for (int j = 0; j < K; ++j) {
          double gap = d_.c(i, j) - p[j] - dd[i];
          if (gap > best_gap) {
            best_gap = gap;
            best = j;
          }
        }
        if (best < 0) continue;
        char& have = have_suffix_[static_cast<size_t>(i) * K + best];
        if (!have && violated(dd[i] + p[best], d_.c(i, best))) {
          have = 1;
          // D_i + P_j >= c_ij
          queue(colD(i), 1.0, colP(best), 1.0, d_.c(i, best));
          ++added;
        }
      }
    }
    return added;
  }

  void queue(int c1, double v1, int c2, double v2, double lb) {
    pending_.push_back({c1, v1, c2, v2, lb});
  }

  void flush() {
    if (pending_.empty()) return;
    glp_prob* lp = prob_.get();
    int first = glp_add_rows(lp, static_cast<int>(pending_.size()));
    for (size_t r = 0; r < pending_.size(); ++r) {
      const Pending& q = pending_[r];
      int ind[3] = {0, q.c1, q.c2};
      double val[3] = {0, q.v1, q.v2};
      int row = first + static_cast<int>(r);
      glp_set_row_bnds(lp, row, GLP_LO, q.lb, 0.0);
      glp_set_mat_row(lp, row, 2, ind, val);
    }
    pending_.clear();
  }

  struct Pending {
    int c1;
    double v1;
    int c2;
    double v2;
    double lb;
  };

  const Compact& d_;
  GlpProblem prob_;
  double beta_eff_ = 0;
  int rounds_ = 0;
  std::vector<char> have_ov_, have_un_, have_suffix_;
  std::vector<Pending> pending_;
};

// A cheap starting point for the row set: the per-step median of the runs.
std::vector<double> medianGuess(const Compact& d) {
  std::vector<double> g(d.K);
  for (int k = 0; k < d.K; ++k) g[k] = d.ov_val[static_cast<size_t>(k) * d.n + d.n / 2];
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
    MORPHEUS_RETURN_IF_ERROR(runSimplex(r.prob.get(), true, "skyline reference LP"));
    v = evaluateSkyline(p, referenceS(r), 0.0).objective;
    beta_eff = p.beta * v;
  }
  glp_set_obj_coef(r.prob.get(), r.eps_col, beta_eff);
  MORPHEUS_RETURN_IF_ERROR(runSimplex(r.prob.get(), true, "skyline reference LP"));
  SkylineSolution sol = evaluateSkyline(p, referenceS(r), beta_eff);
  sol.v = v;
  return sol;
}

Result<SkylineSolution> solveSkyline(const SkylineProblem& p) {
  MORPHEUS_RETURN_IF_ERROR(validateProblem(p));
  if (horizon(p) == 0) return trivialSolution(p);
  Compact d(p);
  RowGeneration lp(d);
  std::vector<double> guess = medianGuess(d);
  double beta_eff = p.beta;
  double v = 0;
  if (p.beta_relative) {
    MORPHEUS_RETURN_IF_ERROR(lp.solve(0.0, &guess));
    std::vector<double> s1 = lp.s();
    v = evaluateSkyline(p, s1, 0.0).objective;
    beta_eff = p.beta * v;
    if (beta_eff > 0) MORPHEUS_RETURN_IF_ERROR(lp.solve(beta_eff, &s1));
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
  if (params.step.count() <= 0) return invalidArgument("step", "must be > 0");
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
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::string field = "runs[" + std::to_string(i) + "]";
    if (r.step.count() <= 0) return invalidArgument(field + ".step", "must be > 0");
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
