#include "rm/runtime/container_history.h"

#include <algorithm>
#include <utility>

namespace morpheus::rm {

ContainerHistory::Ref ContainerHistory::find(const AppId& app, const ContainerId& id) {
  Ref ref;
  auto a = apps_.find(app);
  if (a == apps_.end()) return ref;
  auto e = a->second.by_id.find(id.value());
  if (e == a->second.by_id.end()) return ref;
  ref.app_ = &a->second;
  ref.entry_ = e->second;
  return ref;
}

void ContainerHistory::openChanged(int64_t before, int64_t after) {
  if (before == 0 && after != 0) closed_apps_--;
  if (before != 0 && after == 0) closed_apps_++;
}

void ContainerHistory::evict(const AppId& keep) {
  // The first-recorded app with nothing left running goes; when every other
  // app still has containers out, none does (capacity bounds those).
  auto evictable = [&] {
    auto k = apps_.find(keep);
    return closed_apps_ > (k != apps_.end() && k->second.open == 0 ? 1u : 0u);
  };
  auto from = order_.begin();
  while ((apps_.size() > kMaxApps || total_ > kMaxEntries) && from != order_.end() && evictable()) {
    from = std::find_if(from, order_.end(), [this, &keep](const AppId& a) {
      auto h = apps_.find(a);
      return a != keep && h != apps_.end() && h->second.open == 0;
    });
    if (from == order_.end()) break;
    auto h = apps_.find(*from);
    total_ -= h->second.entries.size();
    closed_apps_--;
    apps_.erase(h);
    from = order_.erase(from);
  }
}

ContainerHistory::Ref ContainerHistory::allocated(const AppId& app, const ContainerId& id,
                                                  const NodeId& node, const Resource& resource,
                                                  bool am, TimePoint start, bool running) {
  auto [a, fresh] = apps_.try_emplace(app);
  if (fresh) {
    order_.push_back(app);
    closed_apps_++;  // open == 0 until the entry below counts
  }
  AppHistory& h = a->second;
  Ref ref;
  if (auto known = h.by_id.find(id.value()); known != h.by_id.end()) {
    if (known->second->state != ContainerHistoryEntry::State::kComplete) {
      ref.app_ = &h;
      ref.entry_ = known->second;
    }
    return ref;
  }
  if (h.entries.size() >= kMaxPerApp) {
    // The oldest complete entry goes (`id` is not in the list yet).
    auto oldest = std::find_if(h.entries.begin(), h.entries.end(), [](const auto& x) {
      return x.state == ContainerHistoryEntry::State::kComplete;
    });
    if (oldest != h.entries.end()) {
      h.by_id.erase(oldest->id.value());
      h.entries.erase(oldest);
      h.omitted++;
      total_--;
    }
  }
  ContainerHistoryEntry& e = h.entries.emplace_back();
  e.id = id;
  e.node = node;
  e.resource = resource;
  e.am = am;
  e.start = start;
  e.state =
      running ? ContainerHistoryEntry::State::kRunning : ContainerHistoryEntry::State::kAllocated;
  openChanged(h.open, h.open + 1);
  h.open++;
  ref.app_ = &h;
  ref.entry_ = std::prev(h.entries.end());
  h.by_id.emplace(ref.entry_->id.value(), ref.entry_);
  total_++;
  evict(app);  // never `app`'s history: it is kept
  return ref;
}

void ContainerHistory::running(const AppId& app, const ContainerId& id) { running(find(app, id)); }

void ContainerHistory::running(Ref ref) {
  if (!ref.isNull() && ref.entry_->state == ContainerHistoryEntry::State::kAllocated) {
    ref.entry_->state = ContainerHistoryEntry::State::kRunning;
  }
}

void ContainerHistory::completed(const AppId& app, const ContainerId& id, const NodeId& node,
                                 const Resource& resource, bool am, TimePoint start, TimePoint end,
                                 int32_t exit_status, int32_t exit_reason,
                                 std::string diagnostics) {
  Ref ref = find(app, id);
  if (ref.isNull()) ref = allocated(app, id, node, resource, am, start, /*running=*/true);
  completed(ref, end, exit_status, exit_reason, std::move(diagnostics));
}

void ContainerHistory::completed(Ref ref, TimePoint end, int32_t exit_status, int32_t exit_reason,
                                 std::string diagnostics) {
  if (ref.isNull()) return;
  ContainerHistoryEntry& e = *ref.entry_;
  if (e.state == ContainerHistoryEntry::State::kComplete) return;
  e.state = ContainerHistoryEntry::State::kComplete;
  e.end = end;
  e.exit_status = exit_status;
  e.exit_reason = exit_reason;
  e.diagnostics = std::move(diagnostics);
  AppHistory& h = *ref.app_;
  openChanged(h.open, h.open - 1);
  h.open--;
}

ContainerHistory::AppView ContainerHistory::of(const AppId& app) const {
  AppView v;
  auto it = apps_.find(app);
  if (it == apps_.end()) return v;
  v.known = true;
  v.omitted = it->second.omitted;
  v.containers.assign(it->second.entries.begin(), it->second.entries.end());
  return v;
}

}  // namespace morpheus::rm
