// Phoenix ordering (Thinakaran et al., "Phoenix: A Constraint-aware Scheduler
// for Heterogeneous Datacenters", ICDCS'17), as a
// QueueOrderingPolicy of the centralised scheduler core.
//
// The paper (§IV) keeps a Constraint Resource Vector per constrained resource
// (demand over supply), estimates the waiting time of constrained tasks with
// an M/G/1 model and reorders worker queues so short and constrained tasks are
// not stuck behind long ones: its queue order is Eagle's shortest remaining
// work first, with constrained tasks moved ahead by their estimated wait.
// Here the "worker queue" is the pending apps of a user in an ad-hoc leaf
// queue, which every node heartbeat scans in key order, and the CRV is kept
// by the scheduler core (crv.h). An app's key is
//
//   work = pending_containers x expected_duration          (ms of one slot)
//   key  = since + clamp(work - estimated_wait, 0, bypass_bound)   (ms, lower first)
//
// - Remaining work first (SRPT): an app that still wants little work goes
//   before one that wants much, whatever their arrival order within the
//   bound, so a new short job goes ahead of a backlog of long ones; the key
//   falls as the app's containers are granted, so a started app is finished
//   before a fresh one of the same size.
// - The CRV on top: the time the app's hard-constrained resource is expected
//   to make it wait (M/G/1 from the CRV, the longest over its pending asks)
//   is taken off its work, so an app that can only run on scarce nodes takes
//   such a node when one frees instead of leaving it to work that could run
//   anywhere.
// - Bounded bypass: the advance over `since` is at most `bypass_bound`
//   (kPhoenixBypassBound unless given), so an app is overtaken only by apps
//   that joined less than bypass_bound after it: no app starves, however
//   much work it wants. The clamp at 0 keeps the same bound for apps whose
//   wait exceeds their work.
//
// Placement (LongWorkCap, ordering_policy.h): the key decides who takes a
// node when it frees, not whether long work has filled a constrained kind's
// few nodes before a constrained short job arrives (then it waits for a
// long task to end). So long work — an ask whose expected task duration is
// above `long_task`, the workload's short/long cutoff (an operator setting,
// as Eagle's cutoff is; 0 turns the rule off) — may hold at most a share
// (below, at least `long_share`) of the vcores of each scarce constraint kind (a hard
// constraint some ask has carried that fewer than half of the nodes meet;
// crv.h), whether or not it is constrained itself; short work may use all
// of it. Constrained long work is capped too: a kind's own long jobs are
// what fill its nodes (exempting them left the kinds' nodes about 92% held
// by long work on the calibrated yahoo mix, docs/experiments/phoenix.md).
// The task duration, not the app's remaining work, marks long work: a
// container holds its node for its own duration, and a long job's last
// containers hold nodes as long as its first.
//
// The reserve of each kind (the share long work may not hold) is sized by
// the short work that needs it, as Eagle sizes its short partition by the
// short load: with s the short share of the work started on containers
// whose asks require the kind (vcores x expected duration, long or short by
// the cutoff, counted at the grant, decayed with half-life
// kPhoenixShortShareHalfLife), long work may hold
//
//   phoenixKindLongShare = max(long_share, 1 - reserve_factor x s)
//
// of the kind's vcores: a kind whose demand is almost all long keeps little
// from long work (whose capacity the reserve would otherwise take), and no
// kind keeps more than 1 - long_share. Until the kind's grants span one
// half-life (s unknown: a few early long jobs would read as a share of 0 and
// open the kind to long work) the reserve is 1 - long_share; reserve_factor 0
// keeps it there whatever s (the fixed cap). On the calibrated yahoo mix
// (short work 1.7% of the task-seconds) a fixed 10% reserve slowed long
// jobs by 13% over ten seeds; cloudera (7%) needs the full 10% for its
// short-job tail (docs/experiments/phoenix.md).
//
// Apps without durations or pending containers have work 0 (unknown = not
// known to be long). Ties go to the app created first (FIFO). Between users
// and queues Phoenix keeps weighted DRF (score()), so it changes the order
// of work inside a user, not the fairness between users.
//
// Admission control (asks whose hard constraints no registered node can meet)
// is a pending reason from the scheduler core (Scheduler::pendingReasons), not
// part of the ordering.
//
// Two policies: PhoenixOrderingPolicy ("phoenix") provides the
// constraint-aware app ordering, so the scheduler keeps its constrained apps
// keyed to the CRV; PhoenixNoCrvOrderingPolicy ("phoenix-no-crv", the
// simulator's ablation) the same key with an estimated wait of 0 (remaining
// work first and the bypass bound only), as a plain app ordering that never
// reads the CRV.
//
// Stateless; may be shared and called re-entrantly from any thread.
#pragma once

#include "scheduler/ordering_policy.h"

namespace morpheus::sched {

// Remaining work of an app, ms of one container: pending_containers x
// expected_duration (0 when either is unknown or 0). Pure.
double phoenixRemainingWork(const AppInput& in);

// The key above, ms: in.since + clamp(phoenixRemainingWork(in) -
// estimated_wait, 0, bypass_bound). Pure.
double phoenixKey(const AppInput& in, Millis estimated_wait, Millis bypass_bound);

// The bypass bound of both policies unless given: 12 h. On the calibrated
// mixes (docs/experiments/phoenix.md) tighter bounds cost the short-job tail
// (2 h and 6 h on seed 1) and a 12 h bound still binds on yahoo.
inline constexpr Millis kPhoenixBypassBound{12 * 3600 * 1000};

// The share of a scarce kind's vcores long work may hold unless given
// (tuned on seed 1 of the calibrated mixes, docs/experiments/phoenix.md).
inline constexpr double kPhoenixLongShare = 0.9;

// The reserve per unit of short share unless given (above; tuned on seed 1
// of the calibrated mixes, docs/experiments/phoenix.md).
inline constexpr double kPhoenixReserveFactor = 3.0;

// Half-life of the work counts the short share is measured from: the
// reserve follows a change of mix within hours, not the whole history.
inline constexpr Millis kPhoenixShortShareHalfLife{3600 * 1000};

// The placement rule's settings (above; PolicySettings::phoenix: the RM's
// scheduler.phoenix.long-task, scheduler.phoenix.long-share and
// scheduler.phoenix.reserve-factor, morpheus-sim phoenix's per-trace cutoff).
struct PhoenixLongWork {
  Millis long_task{0};  // expected task duration above which an ask is long; 0: rule off
  double long_share = kPhoenixLongShare;          // in (0, 1]: the least long work may hold
  double reserve_factor = kPhoenixReserveFactor;  // >= 0; 0: the reserve is 1 - long_share
};

// The share of a scarce kind's vcores long work may hold when short work is
// `short_share` of the work started on the kind (< 0: none started yet):
// max(long_share, 1 - reserve_factor x short_share), or long_share when
// reserve_factor is 0 or short_share < 0. In [long_share, 1]. Pure.
double phoenixKindLongShare(const PhoenixLongWork& long_work, double short_share);

class PhoenixOrderingPolicy final : public QueueOrderingPolicy,
                                    public ConstraintAwareAppOrdering,
                                    public LongWorkCap {
 public:
  explicit PhoenixOrderingPolicy(Millis bypass_bound = kPhoenixBypassBound,
                                 PhoenixLongWork long_work = {})
      : bypass_bound_(bypass_bound), long_work_(long_work) {}
  std::string_view name() const override { return "phoenix"; }
  // Weighted DRF between queues and users.
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  // phoenixKey(in, estimated_wait, bypass bound).
  double appScore(const AppInput& in, Millis estimated_wait) const override;
  Millis bypassBound() const { return bypass_bound_; }
  Millis longTask() const override { return long_work_.long_task; }
  double longShare() const override { return long_work_.long_share; }
  double longShareOf(double short_share) const override {
    return phoenixKindLongShare(long_work_, short_share);
  }
  Millis shortShareHalfLife() const override { return kPhoenixShortShareHalfLife; }

 private:
  Millis bypass_bound_;
  PhoenixLongWork long_work_;
};

class PhoenixNoCrvOrderingPolicy final : public QueueOrderingPolicy,
                                         public AppOrdering,
                                         public LongWorkCap {
 public:
  explicit PhoenixNoCrvOrderingPolicy(Millis bypass_bound = kPhoenixBypassBound,
                                      PhoenixLongWork long_work = {})
      : bypass_bound_(bypass_bound), long_work_(long_work) {}
  std::string_view name() const override { return "phoenix-no-crv"; }
  // Weighted DRF between queues and users.
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  // phoenixKey(in, 0, bypass bound).
  double appScore(const AppInput& in) const override;
  Millis bypassBound() const { return bypass_bound_; }
  Millis longTask() const override { return long_work_.long_task; }
  double longShare() const override { return long_work_.long_share; }
  double longShareOf(double short_share) const override {
    return phoenixKindLongShare(long_work_, short_share);
  }
  Millis shortShareHalfLife() const override { return kPhoenixShortShareHalfLife; }

 private:
  Millis bypass_bound_;
  PhoenixLongWork long_work_;
};

}  // namespace morpheus::sched
