#include "nodemanager/primary_usage.h"

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace morpheus::nm {
namespace {

constexpr const char* kFileField = "nm.harvest.file";

bool readText(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// Converts a cumulative CPU counter (seconds of CPU) into vcores since the
// previous call; 0 on the first call or when the counter went backwards.
class CpuRate {
 public:
  double update(double cpu_seconds, TimePoint now) {
    double rate = 0;
    if (have_ && now > last_at_ && cpu_seconds >= last_cpu_) {
      double wall = std::chrono::duration<double>(now - last_at_).count();
      rate = (cpu_seconds - last_cpu_) / wall;
    }
    have_ = true;
    last_cpu_ = cpu_seconds;
    last_at_ = now;
    return rate;
  }

 private:
  bool have_ = false;
  double last_cpu_ = 0;
  TimePoint last_at_;
};

class FileSource : public PrimaryUsageSource {
 public:
  explicit FileSource(std::string path) : path_(std::move(path)) {}
  Result<PrimaryUsage> sample(TimePoint) override {
    std::string text;
    if (!readText(path_, &text))
      return unavailable(std::string(kFileField) + ": cannot read '" + path_ + "'");
    return parsePrimaryUsageFile(text);
  }

 private:
  const std::string path_;
};

class CgroupSource : public PrimaryUsageSource {
 public:
  explicit CgroupSource(std::string dir) : dir_(std::move(dir)) {}
  Result<PrimaryUsage> sample(TimePoint now) override {
    double cpu_seconds = 0;
    int64_t mem_bytes = 0;
    if (!readV2(&cpu_seconds, &mem_bytes) && !readV1(&cpu_seconds, &mem_bytes)) {
      return unavailable(
          "nm.harvest.cgroup: cannot read cpu.stat/memory.current (v2) or "
          "cpuacct.usage/memory.usage_in_bytes (v1) in '" +
          dir_ + "'");
    }
    PrimaryUsage u;
    u.cpu_vcores = rate_.update(cpu_seconds, now);
    u.memory_mib = mem_bytes / (1024 * 1024);
    return u;
  }

 private:
  bool readV2(double* cpu_seconds, int64_t* mem_bytes) const {
    std::string stat, mem;
    if (!readText(dir_ + "/cpu.stat", &stat) || !readText(dir_ + "/memory.current", &mem)) {
      return false;
    }
    std::istringstream in(stat);
    std::string key;
    long long value = 0;
    bool found = false;
    while (in >> key >> value) {
      if (key == "usage_usec") {
        *cpu_seconds = static_cast<double>(value) / 1e6;
        found = true;
      }
    }
    *mem_bytes = std::atoll(mem.c_str());
    return found;
  }
  bool readV1(double* cpu_seconds, int64_t* mem_bytes) const {
    std::string usage, mem;
    if (!readText(dir_ + "/cpuacct.usage", &usage) ||
        !readText(dir_ + "/memory.usage_in_bytes", &mem)) {
      return false;
    }
    *cpu_seconds = static_cast<double>(std::atoll(usage.c_str())) / 1e9;
    *mem_bytes = std::atoll(mem.c_str());
    return true;
  }

  const std::string dir_;
  CpuRate rate_;
};

class ProcessSetSource : public PrimaryUsageSource {
 public:
  ProcessSetSource(std::vector<std::string> names, std::string proc_root)
      : names_(names.begin(), names.end()), proc_(std::move(proc_root)) {}
  Result<PrimaryUsage> sample(TimePoint now) override {
    DIR* d = opendir(proc_.c_str());
    if (d == nullptr) return unavailable("nm.harvest.processes: cannot list '" + proc_ + "'");
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    const int64_t page = sysconf(_SC_PAGESIZE);
    double cpu_seconds = 0;
    int64_t rss_bytes = 0;
    while (dirent* de = readdir(d)) {
      std::string pid = de->d_name;
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string comm, stat;
      if (!readText(proc_ + "/" + pid + "/comm", &comm)) continue;
      while (!comm.empty() && comm.back() == '\n') comm.pop_back();
      if (names_.count(comm) == 0 || !readText(proc_ + "/" + pid + "/stat", &stat)) continue;
      // Fields after the ')' that closes comm: state is field 3; utime 14,
      // stime 15, rss (pages) 24.
      auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream in(stat.substr(close + 2));
      std::vector<std::string> f;
      for (std::string w; in >> w;) f.push_back(w);
      if (f.size() < 22) continue;
      cpu_seconds +=
          static_cast<double>(std::atoll(f[11].c_str()) + std::atoll(f[12].c_str())) / tick;
      rss_bytes += std::atoll(f[21].c_str()) * page;
    }
    closedir(d);
    PrimaryUsage u;
    // Exited processes take their CPU with them: a drop yields 0 this once.
    u.cpu_vcores = rate_.update(cpu_seconds, now);
    u.memory_mib = rss_bytes / (1024 * 1024);
    return u;
  }

 private:
  const std::set<std::string> names_;
  const std::string proc_;
  CpuRate rate_;
};

}  // namespace

Result<PrimaryUsage> parsePrimaryUsageFile(const std::string& text) {
  PrimaryUsage u;
  bool have_cpu = false, have_mem = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key, value, extra;
    if (!(words >> key)) continue;
    if (!(words >> value) || (words >> extra)) {
      return invalidArgument(kFileField, "'" + key + "' needs exactly one value");
    }
    char* end = nullptr;
    if (key == "cpu_vcores") {
      double v = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !std::isfinite(v) || v < 0) {
        return invalidArgument(kFileField, "cpu_vcores must be a number >= 0, got '" + value + "'");
      }
      u.cpu_vcores = v;
      have_cpu = true;
    } else if (key == "memory_mib") {
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (*end != '\0' || v < 0) {
        return invalidArgument(kFileField,
                               "memory_mib must be an integer >= 0, got '" + value + "'");
      }
      u.memory_mib = v;
      have_mem = true;
    } else {
      return invalidArgument(kFileField, "unknown key '" + key + "'");
    }
  }
  if (!have_cpu) return invalidArgument(kFileField, "cpu_vcores missing");
  if (!have_mem) return invalidArgument(kFileField, "memory_mib missing");
  return u;
}

std::unique_ptr<PrimaryUsageSource> makeFileUsageSource(std::string path) {
  return std::make_unique<FileSource>(std::move(path));
}
std::unique_ptr<PrimaryUsageSource> makeCgroupUsageSource(std::string cgroup_dir) {
  return std::make_unique<CgroupSource>(std::move(cgroup_dir));
}
std::unique_ptr<PrimaryUsageSource> makeProcessSetUsageSource(std::vector<std::string> names,
                                                              std::string proc_root) {
  return std::make_unique<ProcessSetSource>(std::move(names), std::move(proc_root));
}

}  // namespace morpheus::nm
