// SLO inference (Morpheus §4): a recurring job's period, earliest start a and
// deadline d from its run history and the provenance of the files it reads
// and writes. Pure functions: no store, no clock.
//
// Definitions (all offsets relative to the run's period start, an
// epoch-aligned multiple of the period P, the one nearest to submit - phase):
// - P: median gap between submissions; the gaps' dispersion CV = MAD/median
//   must not exceed `max_period_cv`. A median gap within `period_tolerance`
//   (relative) of a divisor of the plan's LCM that is a whole number of plan
//   steps snaps to it (LCM 1 day: 5, 20 min, 1, 2, 3, 4, 6, 8, 12 h, 1 day,
//   ...) unless the submissions drift from that divisor's schedule
//   (phaseDrift): the job is periodic and gets one recurring reservation. Otherwise
//   (off-kilter, e.g. 7 h, or longer than the LCM: weekly, monthly) P is the
//   median gap rounded to whole steps and the job gets a non-periodic
//   (one-off) reservation per instance (Morpheus §6), `one_off_instances`.
// - T_inAvail: the last write by another job to any file the run read,
//   before the run started; T_start, T_end: the run's own; T_outRead: the
//   first read by another job of any file the run wrote, after it started.
// - T_need: when the consumer needed the output (Morpheus §4: the deadline is
//   when the dependent job needs the data). A consumer whose run record is
//   known (a JobHistory's runs or `reader_runs`, matched by the read's job
//   and run id) needed it from that run's start when the read came later
//   and the start was not before the producing run's submission —
//   a scheduled consumer that started on time and waited for a late output
//   still shows its scheduled start, so a producer late under the status
//   quo keeps its true deadline. Otherwise T_need = T_outRead.
// - Actionable: CV(T_need) <= max_outread_cv and
//   median((T_outRead - T_end) / (T_end - T_start)) >= min_slack.
// - a = p(start_percentile) of T_ready = max(T_submit, T_inAvail): the
//   earliest a run could start is when its input is there (Morpheus §4) and
//   it has been submitted (T_inAvail counts as 0 when the job reads nothing
//   others write). A window opened before the submission would reserve
//   capacity no run can use (with a = p95(T_inAvail), jobs
//   submitted 100 s after their input lost that much of a skyline that
//   filled their window). d = p(deadline_percentile) of T_need.
// - A consumer with a longer period than the producer forces the producer's
//   deadline: a reservation has one deadline per period, so every instance
//   must be done by the end of its period (T_need is capped at P).
// - Problematic (alignment penalty, §6/§7): CV of T_start - T_inAvail or of
//   T_outRead - T_end above `problematic_cv`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "store/provenance/provenance_store.h"

namespace morpheus::inference {

struct SloParams {
  double period_tolerance = 0.1;     // relative distance to a natural period that snaps
  double max_period_cv = 0.1;        // MAD/median of submission gaps
  double max_outread_cv = 0.1;       // MAD/median of T_outRead
  double min_slack = 0.0;            // median (T_outRead - T_end)/(T_end - T_start)
  double start_percentile = 0.95;    // a
  double deadline_percentile = 0.5;  // d
  double problematic_cv = 0.5;
  Millis lcm{86400000};  // the RM plan's LCM: periods dividing it are periodic
  Millis step{60000};    // plan step: periods are whole steps
  int64_t min_runs = 3;
};

struct JobHistory {
  JobKey job;
  std::vector<store::RunRecord> runs;    // sorted by submit
  std::vector<store::FileEvent> events;  // this job's own reads and writes
};

// Instance k of a job with period P is the period [k*P, (k+1)*P) from the
// epoch; its window is [k*P + a, k*P + d].
struct InferredPeriod {
  Millis period{0};
  bool divides_lcm = true;  // false: one one-off reservation per instance (§6)
};

struct InferredSlo {
  Millis period{0};
  bool one_off_instances = false;  // the period does not divide the LCM
  Millis start_offset{0};          // a
  Millis deadline_offset{0};       // d
  bool problematic = false;
  double period_cv = 0;
  double outread_cv = 0;
  double median_slack = 0;
  int runs_used = 0;
};

struct SloVerdict {
  JobKey job;
  std::optional<InferredSlo> slo;  // nullopt: not actionable, see reason
  std::string reason;
};

// Statistics (exposed for tests). Empty input -> 0.
double median(std::vector<double> v);
double percentile(std::vector<double> v, double q);  // linear interpolation, q in [0, 1]
double mad(const std::vector<double>& v);            // median absolute deviation
double cv(const std::vector<double>& v);             // MAD / |median|; inf if median 0 and MAD > 0

// The divisor of `lcm` that is a whole number of `step`s nearest to `gap`
// (relative distance), if within `tolerance`; nullopt otherwise.
std::optional<Millis> snapPeriod(Millis gap, double tolerance, Millis lcm, Millis step);

// How far submissions (sorted) drift from a schedule of period `period` over
// their history: the least-squares trend of their phases modulo the period
// (each unwrapped to within half a period of the previous one) times the
// history's span. Jitter and missing runs do not drift; a job that recurs
// every 5 h read on a 4.8 h schedule drifts 12 min per instance.
Millis phaseDrift(const std::vector<store::RunRecord>& runs, Millis period);

// Period of one job from its submissions; nullopt + reason when the gaps are
// too few or too dispersed to call the job recurring. A median gap is only
// snapped to a divisor of the LCM when the submissions do not drift from it
// by more than `period_tolerance` of it over the history (else a true 5 h,
// 11 h or 25 h job would get a 4.8 h, 12 h or 1 day reservation whose windows
// slide off its instances).
std::optional<InferredPeriod> inferPeriod(const std::vector<store::RunRecord>& runs,
                                          const SloParams& p, double* cv_out, std::string* reason);

// Job -> owner (store::ProvenanceStore::jobOwner); a job not listed has none.
using JobOwners = std::map<JobKey, std::string>;

// Infers every job's SLO. `path_events` holds the events (of any job) on the
// paths the jobs read or wrote; `reader_runs` run records of readers that are
// not among `jobs` (their starts give T_need; see above). With `owners`, the
// events of another job count for a job (its T_inAvail from their writes,
// its T_outRead and T_need from their reads) only when that job has the same
// owner or none (provenance only an admin imported): nobody moves another
// owner's window with made-up reads or writes. Without, every job counts.
std::vector<SloVerdict> inferSlos(const std::vector<JobHistory>& jobs,
                                  const std::vector<store::FileEvent>& path_events,
                                  const SloParams& p,
                                  const std::vector<store::RunRecord>& reader_runs = {},
                                  const JobOwners* owners = nullptr);

}  // namespace morpheus::inference
