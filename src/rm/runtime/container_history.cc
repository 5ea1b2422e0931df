#include "rm/runtime/container_history.h"

#include <algorithm>
#include <utility>

namespace morpheus::rm {

ContainerHistoryEntry* ContainerHistory::find(const AppId& app, const ContainerId& id) {
  auto a = apps_.find(app);
  if (a == apps_.end()) return nullptr;
  auto e = a->second.by_id.find(id);
  return e == a->second.by_id.end() ? nullptr : &*e->second;
}

void ContainerHistory::openChanged(int64_t before, int64_t after) {
  if (before == 0 && after != 0) closed_apps_--;
  if (before != 0 && after == 0) closed_apps_++;
}

void ContainerHistory::add(const AppId& app, ContainerHistoryEntry e) {
  auto [it, fresh] = apps_.try_emplace(app);
  if (fresh) {
    order_.push_back(app);
    closed_apps_++;  // open == 0 until the entry below counts
  }
  AppHistory& h = it->second;
  if (h.entries.size() >= kMaxPerApp) {
    auto oldest = std::find_if(h.entries.begin(), h.entries.end(), [](const auto& x) {
      return x.state == ContainerHistoryEntry::State::kComplete;
    });
    if (oldest != h.entries.end()) {
      h.by_id.erase(oldest->id);
      h.entries.erase(oldest);
      h.omitted++;
      total_--;
    }
  }
  if (e.state != ContainerHistoryEntry::State::kComplete) {
    openChanged(h.open, h.open + 1);
    h.open++;
  }
  ContainerId id = e.id;
  h.entries.push_back(std::move(e));
  h.by_id[id] = std::prev(h.entries.end());
  total_++;
  evict(app);
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

void ContainerHistory::allocated(const AppId& app, const ContainerId& id, const NodeId& node,
                                 const Resource& resource, bool am, TimePoint start, bool running) {
  if (find(app, id) != nullptr) return;
  ContainerHistoryEntry e;
  e.id = id;
  e.node = node;
  e.resource = resource;
  e.am = am;
  e.start = start;
  e.state =
      running ? ContainerHistoryEntry::State::kRunning : ContainerHistoryEntry::State::kAllocated;
  add(app, std::move(e));
}

void ContainerHistory::running(const AppId& app, const ContainerId& id) {
  ContainerHistoryEntry* e = find(app, id);
  if (e != nullptr && e->state == ContainerHistoryEntry::State::kAllocated) {
    e->state = ContainerHistoryEntry::State::kRunning;
  }
}

void ContainerHistory::completed(const AppId& app, const ContainerId& id, const NodeId& node,
                                 const Resource& resource, bool am, TimePoint start, TimePoint end,
                                 int32_t exit_status, int32_t exit_reason,
                                 std::string diagnostics) {
  ContainerHistoryEntry* e = find(app, id);
  if (e == nullptr) {
    allocated(app, id, node, resource, am, start, /*running=*/true);
    e = find(app, id);
  }
  if (e == nullptr || e->state == ContainerHistoryEntry::State::kComplete) return;
  e->state = ContainerHistoryEntry::State::kComplete;
  e->end = end;
  e->exit_status = exit_status;
  e->exit_reason = exit_reason;
  e->diagnostics = std::move(diagnostics);
  AppHistory& h = apps_[app];
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
