#include "nodemanager/node_attributes_detect.h"

#include <sys/utsname.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

namespace morpheus::nm {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> firstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::optional<int64_t> parseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Sorted directory entry names (empty when the directory cannot be read).
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void detectMemory(const DetectRoots& r, Attributes& out) {
  std::ifstream in(fs::path(r.proc) / "meminfo");
  std::string key;
  int64_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemTotal:") {
      out["memory_mib"] = std::to_string(kb / 1024);
      return;
    }
    in.ignore(1 << 16, '\n');
  }
}

bool isPhysicalDisk(std::string_view name) {
  for (std::string_view p : {"loop", "ram", "zram", "dm-", "md", "sr", "nbd", "fd"}) {
    if (startsWith(name, p)) return false;
  }
  return true;
}

void detectDisks(const DetectRoots& r, Attributes& out) {
  int64_t disks = 0, rotational = 0, solid = 0;
  for (const auto& name : entries(fs::path(r.sys) / "block")) {
    if (!isPhysicalDisk(name)) continue;
    disks++;
    auto rot = firstLine(fs::path(r.sys) / "block" / name / "queue" / "rotational");
    if (rot == "1") rotational++;
    if (rot == "0") solid++;
  }
  if (disks == 0) return;
  out["disks"] = std::to_string(disks);
  if (solid == disks)
    out["disk_kind"] = "ssd";
  else if (rotational == disks)
    out["disk_kind"] = "hdd";
  else
    out["disk_kind"] = "mixed";
}

void detectNetwork(const DetectRoots& r, Attributes& out) {
  int64_t best = 0;
  for (const auto& name : entries(fs::path(r.sys) / "class" / "net")) {
    if (name == "lo") continue;
    auto speed = firstLine(fs::path(r.sys) / "class" / "net" / name / "speed");
    if (!speed) continue;
    if (auto v = parseInt(*speed); v && *v > best) best = *v;
  }
  if (best > 0) out["network_gbps"] = gbpsText(best);
}

bool isCardN(std::string_view name, std::string_view prefix) {
  if (!startsWith(name, prefix) || name.size() == prefix.size()) return false;
  return parseInt(name.substr(prefix.size())).has_value();
}

void detectGpus(const DetectRoots& r, Attributes& out) {
  int64_t nvidia_dev = 0;
  for (const auto& name : entries(fs::path(r.dev))) {
    if (isCardN(name, "nvidia")) nvidia_dev++;
  }
  if (nvidia_dev > 0) {
    out["gpus"] = std::to_string(nvidia_dev);
    out["gpu_vendor"] = "nvidia";
    return;
  }
  int64_t nvidia = 0, amd = 0;
  for (const auto& name : entries(fs::path(r.sys) / "class" / "drm")) {
    if (!isCardN(name, "card")) continue;
    auto vendor = firstLine(fs::path(r.sys) / "class" / "drm" / name / "device" / "vendor");
    if (vendor == "0x10de") nvidia++;
    if (vendor == "0x1002") amd++;
  }
  if (nvidia + amd == 0) return;
  out["gpus"] = std::to_string(nvidia + amd);
  out["gpu_vendor"] = nvidia >= amd ? "nvidia" : "amd";
}

}  // namespace

int64_t countCpuList(const std::string& list) {
  int64_t n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const size_t dash = part.find('-');
    auto lo = parseInt(std::string_view(part).substr(0, dash));
    auto hi = dash == std::string::npos ? lo : parseInt(std::string_view(part).substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return -1;
    n += *hi - *lo + 1;
  }
  return n > 0 ? n : -1;
}

std::string gbpsText(int64_t mbps) {
  std::string s = std::to_string(mbps / 1000);
  int64_t frac = mbps % 1000;
  if (frac == 0) return s;
  std::string f = std::to_string(1000 + frac).substr(1);  // three digits
  while (f.back() == '0') f.pop_back();
  return s + "." + f;
}

UnameInfo hostUname() {
  struct utsname u {};
  if (uname(&u) != 0) return {};
  return UnameInfo{u.machine, u.release};
}

Attributes detectNodeAttributes(const DetectRoots& roots, const UnameInfo& uname) {
  Attributes out;
  if (!uname.machine.empty()) out["isa"] = uname.machine;
  if (!uname.release.empty()) out["kernel"] = uname.release;
  if (auto online = firstLine(fs::path(roots.sys) / "devices" / "system" / "cpu" / "online")) {
    if (int64_t n = countCpuList(*online); n > 0) out["cores"] = std::to_string(n);
  }
  detectMemory(roots, out);
  detectDisks(roots, out);
  detectNetwork(roots, out);
  detectGpus(roots, out);
  return out;
}

Attributes mergeAttributes(Attributes detected, const Attributes& configured) {
  for (const auto& [k, v] : configured) {
    if (v.empty()) {
      detected.erase(k);
    } else {
      detected[k] = v;
    }
  }
  return detected;
}

}  // namespace morpheus::nm
