// The containers of each application as the RM saw them, for ListContainers
// (`morpheusctl app containers`, `morpheusctl app logs`): every container the
// RM allocated to an app, AM containers of every attempt and task containers
// alike, with its node, allocation, state and, once complete, exit status,
// reason and diagnostics. YARN keeps the same per-application history
// (`yarn container -list`, `yarn logs -applicationId`).
//
// Bounds (memory stays proportional to the apps the RM keeps):
//  - at most kMaxPerApp containers per application: a new one beyond that
//    drops the oldest COMPLETE one (counted in AppView::omitted); containers
//    not complete are never dropped (the cluster's capacity bounds them);
//  - at most kMaxApps applications and kMaxEntries containers in all:
//    beyond either the history of the app recorded first whose containers
//    have all completed is dropped whole (ListContainers then falls back to
//    the app record's AM container). About 300 bytes per container: the
//    whole history stays within some 30 MB.
// An app's history otherwise lives as long as this object, i.e. as long as
// the RM process keeps the app record in memory. It is not persisted: an RM
// that restarts knows the containers NMs report again (running ones, re-adopted)
// and those allocated after it started (ListContainers says `partial`).
//
// Thread-safety: none; the owner (RmRuntime) holds its lock around every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"

namespace morpheus::rm {

struct ContainerHistoryEntry {
  // kAllocated: granted, its node has not reported it running yet.
  enum class State { kAllocated, kRunning, kComplete };
  ContainerId id;
  NodeId node;
  Resource resource;
  bool am = false;
  State state = State::kAllocated;
  int32_t exit_status = 0;
  int32_t exit_reason = 0;  // a v1::ContainerExitReason value
  std::string diagnostics;
  TimePoint start, end;  // end: when complete
};

class ContainerHistory {
 private:
  struct AppHistory;

 public:
  static constexpr size_t kMaxPerApp = 1000;
  static constexpr size_t kMaxApps = 10000;
  static constexpr size_t kMaxEntries = 100000;

  // A handle on one container's entry, so the owner, which keeps its own
  // record of every live container, reaches the entry again without looking
  // the app and the container id up (three lookups per container otherwise,
  // on the allocation path). Valid while its entry is not complete: only
  // complete entries are ever dropped, and completed() through it is the last
  // use. A null Ref (the id was known and already complete) makes running()
  // and completed() no-ops, as they are for such an id.
  class Ref {
   public:
    Ref() = default;
    bool isNull() const { return app_ == nullptr; }

   private:
    friend class ContainerHistory;
    AppHistory* app_ = nullptr;
    std::list<ContainerHistoryEntry>::iterator entry_;
  };

  // A container allocated (or re-adopted, `running` true) to `app`. A known
  // id is left as it is; the Ref is its entry's, null when that is complete.
  Ref allocated(const AppId& app, const ContainerId& id, const NodeId& node,
                const Resource& resource, bool am, TimePoint start, bool running);
  // Its node reported it running (no-op unless it is kAllocated).
  void running(const AppId& app, const ContainerId& id);
  void running(Ref ref);
  // It completed; recorded as allocated first when unknown (an AM container
  // that ended while no RM watched it).
  void completed(const AppId& app, const ContainerId& id, const NodeId& node,
                 const Resource& resource, bool am, TimePoint start, TimePoint end,
                 int32_t exit_status, int32_t exit_reason, std::string diagnostics);
  // The same for the entry `ref` holds (from allocated()); `ref` is spent.
  void completed(Ref ref, TimePoint end, int32_t exit_status, int32_t exit_reason,
                 std::string diagnostics);

  struct AppView {
    bool known = false;                             // any history of the app
    std::vector<ContainerHistoryEntry> containers;  // in allocation order
    int64_t omitted = 0;                            // complete containers dropped over kMaxPerApp
  };
  AppView of(const AppId& app) const;

  size_t apps() const { return apps_.size(); }
  size_t entries() const { return total_; }

 private:
  struct AppHistory {
    std::list<ContainerHistoryEntry> entries;  // allocation order
    // Keyed by a view of the entry's own id (list nodes do not move): no
    // second copy of each id on the heap.
    std::unordered_map<std::string_view, std::list<ContainerHistoryEntry>::iterator> by_id;
    int64_t omitted = 0;
    int64_t open = 0;  // entries not complete
  };
  Ref find(const AppId& app, const ContainerId& id);
  // Drops whole histories of finished apps, first recorded first, other
  // than `keep`'s, while over kMaxApps or kMaxEntries.
  void evict(const AppId& keep);

  // Counts an app whose containers have all completed (open == 0): evict()
  // scans for one only when there is one, so a history over its bounds while
  // every app still runs costs nothing per container.
  void openChanged(int64_t before, int64_t after);

  // Hashed, not ordered (order_ keeps the order): one hash per call instead
  // of a string comparison per tree level. Elements never move, so a Ref's
  // AppHistory* stays valid across rehashing.
  std::unordered_map<AppId, AppHistory> apps_;
  std::deque<AppId> order_;  // apps in the order they were first recorded
  size_t total_ = 0;         // entries over all apps
  size_t closed_apps_ = 0;   // apps with open == 0
};

}  // namespace morpheus::rm
