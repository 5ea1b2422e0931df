#include "harvest/harvest_replicas.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

namespace morpheus::rm {
namespace {

uint64_t hashId(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Class of each value: its quantile bucket among all values (ties together).
std::vector<int> quantileClasses(const std::vector<double>& v, int classes) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); i++) {
    auto rank =
        static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v[i]) - sorted.begin());
    out[i] = static_cast<int>((rank * static_cast<size_t>(classes)) / v.size());
  }
  return out;
}

Status validateBlock(const Block& b) {
  if (b.id.empty()) return invalidArgument("block.id", "empty");
  if (b.replicas < 1) return invalidArgument("block.replicas", "must be >= 1");
  return Status::ok();
}

Status enoughServers(const std::vector<int64_t>& free, const Block& b) {
  int64_t with_space = std::count_if(free.begin(), free.end(), [](int64_t f) { return f > 0; });
  if (with_space < b.replicas) {
    return infeasible("block " + b.id + ": " + std::to_string(b.replicas) + " replicas wanted, " +
                      std::to_string(with_space) + " servers have free space");
  }
  return Status::ok();
}

}  // namespace

Result<ReplicaPlacer> ReplicaPlacer::create(std::vector<StorageServer> servers,
                                            ReplicaPlacerOptions options) {
  if (options.reimage_classes < 1)
    return invalidArgument("options.reimage_classes", "must be >= 1");
  if (options.util_classes < 1) return invalidArgument("options.util_classes", "must be >= 1");
  std::set<std::string> ids;
  for (size_t i = 0; i < servers.size(); i++) {
    const auto& s = servers[i];
    std::string f = "servers[" + std::to_string(i) + "]";
    if (s.id.empty()) return invalidArgument(f + ".id", "empty");
    if (!ids.insert(s.id.value()).second)
      return invalidArgument(f + ".id", "duplicate " + s.id.value());
    if (s.reimages_per_month < 0) return invalidArgument(f + ".reimages_per_month", "must be >= 0");
    if (s.peak_util < 0) return invalidArgument(f + ".peak_util", "must be >= 0");
    if (s.free_blocks < 0) return invalidArgument(f + ".free_blocks", "must be >= 0");
  }
  return ReplicaPlacer(std::move(servers), options);
}

ReplicaPlacer::ReplicaPlacer(std::vector<StorageServer> servers, ReplicaPlacerOptions options)
    : opts_(options) {
  std::vector<double> re, pk;
  for (const auto& s : servers) {
    re.push_back(s.reimages_per_month);
    pk.push_back(s.peak_util);
  }
  auto rc = quantileClasses(re, opts_.reimage_classes);
  auto uc = quantileClasses(pk, opts_.util_classes);
  for (size_t i = 0; i < servers.size(); i++)
    servers_.push_back({std::move(servers[i]), rc[i], uc[i]});
}

std::pair<int, int> ReplicaPlacer::cellOf(const NodeId& id) const {
  for (const auto& s : servers_)
    if (s.s.id == id) return {s.rc, s.uc};
  return {-1, -1};
}

int64_t ReplicaPlacer::freeBlocks(const NodeId& id) const {
  for (const auto& s : servers_)
    if (s.s.id == id) return s.s.free_blocks;
  return 0;
}

Result<std::vector<NodeId>> ReplicaPlacer::PlaceReplicas(const Block& block) {
  if (Status st = validateBlock(block); !st.isOk()) return st;
  std::vector<int64_t> free;
  for (const auto& s : servers_) free.push_back(s.s.free_blocks);
  if (Status st = enoughServers(free, block); !st.isOk()) return st;
  std::mt19937_64 rng(hashId(block.id, opts_.seed));
  std::vector<size_t> chosen;
  std::set<int> used_rc, used_uc;
  std::set<std::pair<int, int>> used_cells;
  std::set<std::string> used_racks;
  const int uclasses = opts_.util_classes;
  std::vector<int64_t> free_in(static_cast<size_t>(opts_.reimage_classes * uclasses));
  for (int r = 0; r < block.replicas; r++) {
    // Free space per cell among servers not holding the block, in (reimage
    // class, utilisation class) order; cells without any are left out.
    std::fill(free_in.begin(), free_in.end(), 0);
    for (size_t i = 0; i < servers_.size(); i++) {
      if (servers_[i].s.free_blocks <= 0 ||
          std::find(chosen.begin(), chosen.end(), i) != chosen.end())
        continue;
      free_in[static_cast<size_t>(servers_[i].rc * uclasses + servers_[i].uc)] +=
          servers_[i].s.free_blocks;
    }
    std::vector<std::pair<std::pair<int, int>, int64_t>> cell_free;
    for (size_t c = 0; c < free_in.size(); c++) {
      if (free_in[c] > 0)
        cell_free.push_back(
            {{static_cast<int>(c) / uclasses, static_cast<int>(c) % uclasses}, free_in[c]});
    }
    // Diversity tiers: 0 = shares no class, 1 = shares one, 2 = new cell, 3 = any.
    auto tier = [&](const std::pair<int, int>& c) {
      bool rc = used_rc.count(c.first) > 0, uc = used_uc.count(c.second) > 0;
      if (!rc && !uc) return 0;
      if (!(rc && uc)) return 1;
      return used_cells.count(c) == 0 ? 2 : 3;
    };
    int best_tier = 4;
    for (const auto& [c, f] : cell_free) best_tier = std::min(best_tier, tier(c));
    std::vector<std::pair<std::pair<int, int>, int64_t>> cells;
    int64_t total = 0;
    for (const auto& [c, f] : cell_free) {
      if (tier(c) != best_tier) continue;
      cells.push_back({c, f});
      total += f;
    }
    int64_t x = static_cast<int64_t>(rng() % static_cast<uint64_t>(total));
    std::pair<int, int> cell = cells.back().first;
    for (const auto& [c, f] : cells) {
      if (x < f) {
        cell = c;
        break;
      }
      x -= f;
    }
    std::vector<size_t> in_cell, new_rack;
    for (size_t i = 0; i < servers_.size(); i++) {
      const auto& s = servers_[i];
      if (s.s.free_blocks <= 0 || s.rc != cell.first || s.uc != cell.second ||
          std::find(chosen.begin(), chosen.end(), i) != chosen.end())
        continue;
      in_cell.push_back(i);
      if (used_racks.count(s.s.rack) == 0) new_rack.push_back(i);
    }
    const auto& pool = new_rack.empty() ? in_cell : new_rack;
    size_t pick = pool[rng() % pool.size()];
    chosen.push_back(pick);
    used_rc.insert(cell.first);
    used_uc.insert(cell.second);
    used_cells.insert(cell);
    used_racks.insert(servers_[pick].s.rack);
  }
  std::vector<NodeId> out;
  for (size_t i : chosen) {
    servers_[i].s.free_blocks--;
    out.push_back(servers_[i].s.id);
  }
  return out;
}

Result<std::vector<NodeId>> placeRandom(std::vector<StorageServer>& servers, const Block& block,
                                        uint64_t seed) {
  if (Status st = validateBlock(block); !st.isOk()) return st;
  std::vector<int64_t> free;
  for (const auto& s : servers) free.push_back(s.free_blocks);
  if (Status st = enoughServers(free, block); !st.isOk()) return st;
  std::vector<size_t> idx;
  for (size_t i = 0; i < servers.size(); i++)
    if (servers[i].free_blocks > 0) idx.push_back(i);
  std::mt19937_64 rng(hashId(block.id, seed));
  std::shuffle(idx.begin(), idx.end(), rng);
  std::vector<NodeId> out;
  for (int r = 0; r < block.replicas; r++) {
    servers[idx[r]].free_blocks--;
    out.push_back(servers[idx[r]].id);
  }
  return out;
}

Result<std::vector<NodeId>> placeBestFirst(std::vector<StorageServer>& servers,
                                           const Block& block) {
  if (Status st = validateBlock(block); !st.isOk()) return st;
  std::vector<int64_t> free;
  for (const auto& s : servers) free.push_back(s.free_blocks);
  if (Status st = enoughServers(free, block); !st.isOk()) return st;
  std::vector<size_t> idx;
  for (size_t i = 0; i < servers.size(); i++)
    if (servers[i].free_blocks > 0) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (servers[a].reimages_per_month != servers[b].reimages_per_month)
      return servers[a].reimages_per_month < servers[b].reimages_per_month;
    return servers[a].peak_util < servers[b].peak_util;
  });
  std::vector<NodeId> out;
  for (int r = 0; r < block.replicas; r++) {
    servers[idx[r]].free_blocks--;
    out.push_back(servers[idx[r]].id);
  }
  return out;
}

}  // namespace morpheus::rm
