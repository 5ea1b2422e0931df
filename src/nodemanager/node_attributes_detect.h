// Node attributes detected at NM start (Phoenix's resource kinds —
// ISA, cores, memory, kernel, disks, network speed, accelerators — so
// placement constraints work without hand-written nm.attributes).
//
// Detected keys (absent when the source is missing or unreadable, so a
// constraint on them does not match rather than matching a guess):
//   isa           uname(2) machine, e.g. x86_64, aarch64
//   kernel        uname(2) release, e.g. 6.1.0-18-amd64 (version_at_least
//                 compares its leading numeric components)
//   cores         online CPUs, <sys>/devices/system/cpu/online ("0-7,16")
//   memory_mib    <proc>/meminfo MemTotal, in MiB (physical, not nm.resources)
//   disks         block devices in <sys>/block, without loop, ram, zram, dm-,
//                 md, sr and nbd devices (virtual or removable)
//   disk_kind     ssd (every such disk has queue/rotational 0), hdd (every
//                 one 1) or mixed
//   network_gbps  fastest link of <sys>/class/net/*/speed (Mb/s) except lo,
//                 in Gb/s ("25", "2.5"); links reporting -1 (down) ignored
//   gpus          /dev/nvidia<N> devices, else <sys>/class/drm/card<N> whose
//                 device/vendor is NVIDIA (0x10de) or AMD (0x1002)
//   gpu_vendor    nvidia or amd, when gpus is set
// Configured nm.attributes override detected ones key by key; a configured
// empty value removes the detected key.
#pragma once

#include <map>
#include <string>

namespace morpheus::nm {

using Attributes = std::map<std::string, std::string>;

// Where to look: the real roots in the daemon, fixture directories in tests.
struct DetectRoots {
  std::string sys = "/sys";
  std::string proc = "/proc";
  std::string dev = "/dev";
};

struct UnameInfo {
  std::string machine;  // "" = not known
  std::string release;
};

// uname(2) of this host.
UnameInfo hostUname();

// The keys above from `roots` and `uname`. Never fails: what cannot be read
// is left out.
Attributes detectNodeAttributes(const DetectRoots& roots, const UnameInfo& uname);

// `detected` with `configured` on top (an empty configured value drops the
// key).
Attributes mergeAttributes(Attributes detected, const Attributes& configured);

// Parsers, exposed for tests. CPU list "0-3,8,10-11" -> 7; -1 when malformed.
int64_t countCpuList(const std::string& list);
// Mb/s -> Gb/s text without trailing zeros: 25000 -> "25", 2500 -> "2.5".
std::string gbpsText(int64_t mbps);

}  // namespace morpheus::nm
