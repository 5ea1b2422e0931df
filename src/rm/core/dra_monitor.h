// Dynamic reprovisioning in the RM (Morpheus §7): the monitoring
// thread. Once per interval (default: the plan step) it looks at every
// reservation whose bound apps are running, gathers the policy's input
// (demand from the runtime, skyline, extras and budget from the plan) and
// applies the configured ReprovisionPolicy's decision through the
// ReservationManager: a grant is a swap on the current instance only, made
// only where the plan has room and within the owner's budget. When no bound
// app runs any more its grant is released at once.
//
// Every decision is visible: metrics (morpheus_rm_dra_*), one log line with
// the reservation and app ids, and the reservation's history
// (`morpheusctl reservation show ID`).
//
// Thread-safety: tick() may be called from any one thread at a time (the
// monitor's own thread, or a test); start()/stop() from the owner.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/resource.h"
#include "reprovision/policy.h"
#include "reprovision/review.h"
#include "rm/core/reservation_manager.h"

namespace morpheus::rm {

// What the apps bound to one reservation do now (the runtime's view).
struct ReservationDemand {
  std::vector<AppId> apps;  // submitted or running, bound to the reservation
  // Containers in use, AM containers included: the same containers the
  // app's telemetry skyline counts (computeSkyline), so a run at its skyline
  // has demand == skyline.
  Resource used;
  Resource am;       // of `used`: the AM containers (Jockey simulates tasks on the rest)
  Resource pending;  // outstanding asks, plus AMs waiting for a container
  // Jockey's view of the bound apps: their AM-reported stages (one app's
  // stages after another's, deps re-indexed), task durations completed from
  // the recurrence key's last run (RmRuntime::reservationDemand).
  std::vector<reprovision::StageState> stages;
};

struct DraOptions {
  bool enabled = true;
  std::string policy = "morpheus-dra";  // "morpheus-dra" or "jockey"
  Millis interval{60000};               // monitoring interval (the RM sets it to the plan step)
  reprovision::MorpheusDraOptions dra;
  reprovision::JockeyOptions jockey;
};

class DraMonitor {
 public:
  using DemandSource = std::function<std::map<ReservationId, ReservationDemand>()>;
  // `reservations`, `clock` and `metrics` must outlive the monitor.
  DraMonitor(DraOptions opts, std::unique_ptr<reprovision::ReprovisionPolicy> policy,
             ReservationManager& reservations, DemandSource demand, Clock& clock,
             MetricsRegistry& metrics);
  ~DraMonitor();

  // Starts the monitoring thread: a tick every interval of the clock.
  void start();
  void stop();

  // One monitoring pass at clock.now().
  void tick();

 private:
  // One reservation's review: the policy's input and decision through
  // reprovision::reviewInput and decideReview (the arithmetic morpheus-sim
  // runs too), then the grant through ReservationManager::reprovision.
  void review(const ReservationId& id, const ReservationDemand& d, TimePoint now);
  // The clock's timer callback: asks the monitoring thread for a pass and
  // arms the next timer, unless stopping. It captures only `this`, which
  // stop() keeps alive until a running callback has returned
  // (Clock::cancelAndWait).
  void requestTick() EXCLUDES(mu_);

  const DraOptions opts_;
  const std::unique_ptr<reprovision::ReprovisionPolicy> policy_;
  ReservationManager& reservations_;
  const DemandSource demand_;
  Clock& clock_;
  MetricsRegistry& metrics_;
  RmLatencyMetrics latency_;
  DraMetrics m_;

  // Per reservation, for its current instance: the allocation the policy
  // chose at the last review and the progress against the plan. Forgotten
  // when no bound app runs (tick). Owned by the ticking thread, as the two
  // maps below.
  std::map<ReservationId, reprovision::ReviewState> chosen_;
  std::map<ReservationId, std::string> last_denial_;   // ditto: budget denials are logged once
  std::map<ReservationId, std::string> last_outcome_;  // ditto: renewals are not re-logged

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t due_ GUARDED_BY(mu_) = 0;  // ticks requested by the clock
  TimerId timer_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace morpheus::rm
