#include "nodemanager/harvest_cpu.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/ignore.h"
#include "nodemanager/container_runtime.h"

namespace morpheus::nm {
namespace {

// cfs_quota_us's "no cap"; cpu.max writes it as "max".
constexpr int64_t kNoCap = -1;

void forgetAllBut(std::map<ContainerId, int64_t>* written, const std::vector<ContainerId>& live) {
  std::erase_if(*written, [&](const auto& e) {
    return std::find(live.begin(), live.end(), e.first) == live.end();
  });
}

class V2Throttle final : public CpuThrottle {
 public:
  explicit V2Throttle(std::string parent) : parent_(std::move(parent)) {}
  std::string describe() const override { return "cgroup v2 cpu.max under " + parent_; }
  Status limit(const ContainerId& id, int, std::optional<double> vcores) override {
    const int64_t quota = vcores ? cpuQuotaUs(*vcores) : kNoCap;
    if (auto it = written_.find(id); it != written_.end() && it->second == quota) {
      return Status::ok();
    }
    std::string value = vcores ? std::to_string(quota) : "max";
    std::string path = parent_ + "/" + id.value() + "/cpu.max";
    if (!writeControlFile(path, value + " " + std::to_string(kPeriodUs))) {
      written_.erase(id);
      return unavailable("cannot write " + path + ": " + std::strerror(errno));
    }
    written_[id] = quota;
    return Status::ok();
  }
  // The runtime owns the cgroups: only the record of what was written goes.
  void prune(const std::vector<ContainerId>& live) override { forgetAllBut(&written_, live); }

 private:
  const std::string parent_;
  std::map<ContainerId, int64_t> written_;  // the quota last written (kNoCap = "max")
};

class V1Throttle final : public CpuThrottle {
 public:
  V1Throttle(std::string root, std::string dir) : root_(std::move(root)), dir_(std::move(dir)) {}
  ~V1Throttle() override { prune({}); }
  std::string describe() const override { return "cgroup v1 cpu.cfs_quota_us under " + dir_; }

  Status limit(const ContainerId& id, int session, std::optional<double> vcores) override {
    const std::string cg = dir_ + "/" + id.value();
    if ((::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) ||
        (::mkdir(cg.c_str(), 0755) != 0 && errno != EEXIST)) {
      return unavailable("cannot create " + cg + ": " + std::strerror(errno));
    }
    created_.insert(id);
    if (session > 0) {
      for (int pid : sessionProcesses(session)) {
        ignoreError(writeControlFile(cg + "/cgroup.procs", std::to_string(pid)),
                    "a process that ended meanwhile is no error");
      }
    }
    const int64_t quota = vcores ? cpuQuotaUs(*vcores) : kNoCap;
    if (auto it = written_.find(id); it != written_.end() && it->second == quota) {
      return Status::ok();
    }
    written_.erase(id);
    if (!writeControlFile(cg + "/cpu.cfs_period_us", std::to_string(kPeriodUs))) {
      return unavailable("cannot write " + cg + "/cpu.cfs_period_us: " + std::strerror(errno));
    }
    if (!writeControlFile(cg + "/cpu.cfs_quota_us", std::to_string(quota))) {
      return unavailable("cannot write " + cg + "/cpu.cfs_quota_us: " + std::strerror(errno));
    }
    written_[id] = quota;
    return Status::ok();
  }

  void prune(const std::vector<ContainerId>& live) override {
    for (auto it = created_.begin(); it != created_.end();) {
      if (std::find(live.begin(), live.end(), *it) != live.end()) {
        ++it;
        continue;
      }
      remove(dir_ + "/" + it->value());
      written_.erase(*it);
      it = created_.erase(it);
    }
    if (created_.empty()) ::rmdir(dir_.c_str());  // created again by the next limit()
  }

 private:
  // Moves what is left back to the root, then removes the cgroup.
  void remove(const std::string& cg) {
    std::ifstream procs(cg + "/cgroup.procs");
    for (std::string pid; std::getline(procs, pid);) {
      if (!pid.empty()) {
        ignoreError(writeControlFile(root_ + "/cgroup.procs", pid), "it ended meanwhile");
      }
    }
    ::rmdir(cg.c_str());
  }

  const std::string root_, dir_;
  std::set<ContainerId> created_;
  std::map<ContainerId, int64_t> written_;  // the quota last written (kNoCap = -1)
};

}  // namespace

int removeStaleCpuGroups(const std::string& root, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind(prefix, 0) != 0) continue;
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash + 1 >= name.size()) continue;
    const std::string pid = name.substr(dash + 1);
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::filesystem::exists("/proc/" + pid)) continue;  // its NM still runs
    for (const auto& c : std::filesystem::directory_iterator(e.path(), ec)) {
      if (!c.is_directory()) continue;
      std::ifstream procs(c.path() / "cgroup.procs");
      for (std::string p; std::getline(procs, p);) {
        if (!p.empty()) {
          ignoreError(writeControlFile(root + "/cgroup.procs", p), "it ended meanwhile");
        }
      }
      ::rmdir(c.path().c_str());
    }
    if (::rmdir(e.path().c_str()) == 0) removed++;
  }
  return removed;
}

int64_t cpuQuotaUs(double vcores) {
  return std::max<int64_t>(1000,
                           static_cast<int64_t>(std::max(0.0, vcores) * CpuThrottle::kPeriodUs));
}

std::unique_ptr<CpuThrottle> makeCgroupV2CpuThrottle(std::string parent) {
  return std::make_unique<V2Throttle>(std::move(parent));
}

Result<std::unique_ptr<CpuThrottle>> makeCgroupV1CpuThrottle(const std::string& root,
                                                             const std::string& group) {
  if (::access((root + "/cpu.cfs_quota_us").c_str(), F_OK) != 0) {
    return unavailable(root + " is not a cgroup v1 hierarchy with the cpu controller");
  }
  const std::string dir = root + "/" + group;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return unavailable("cannot create " + dir + ": " + std::strerror(errno));
  }
  const bool writable = ::access((dir + "/cpu.cfs_quota_us").c_str(), W_OK) == 0;
  ::rmdir(dir.c_str());  // a probe: the group exists only while a container is capped
  if (!writable) return unavailable(dir + "/cpu.cfs_quota_us is not writable");
  return std::unique_ptr<CpuThrottle>(std::make_unique<V1Throttle>(root, dir));
}

}  // namespace morpheus::nm
