// NM attribute auto-detection on fixture sysfs/proc/dev trees:
// every detected key, what is skipped, and configured values overriding.
#include "nodemanager/node_attributes_detect.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace morpheus::nm {
namespace {

namespace fs = std::filesystem;

// A fresh fixture root, removed by the fixture's destructor.
class NodeAttributesDetectTest : public ::testing::Test {
 protected:
  NodeAttributesDetectTest()
      : root_(fs::temp_directory_path() /
              ("morpheus-nmattr-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
    roots_.sys = (root_ / "sys").string();
    roots_.proc = (root_ / "proc").string();
    roots_.dev = (root_ / "dev").string();
    for (const auto& d : {roots_.sys, roots_.proc, roots_.dev}) fs::create_directories(d);
  }
  ~NodeAttributesDetectTest() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  void touch(const fs::path& rel) { write(rel, ""); }

  fs::path root_;
  DetectRoots roots_;
};

// A full host: ISA and kernel from uname, online CPUs, MemTotal in MiB,
// physical disks only (loop/dm/ram skipped) with their kind, the fastest
// link except lo and down links, NVIDIA device nodes.
TEST_F(NodeAttributesDetectTest, DetectsEveryKindFromFixtureTree) {
  write("sys/devices/system/cpu/online", "0-31,64-95\n");
  write("proc/meminfo", "MemTotal:       65861172 kB\nMemFree:        1000 kB\n");
  write("sys/block/nvme0n1/queue/rotational", "0\n");
  write("sys/block/sda/queue/rotational", "0\n");
  write("sys/block/loop0/queue/rotational", "1\n");
  write("sys/block/dm-0/queue/rotational", "1\n");
  write("sys/block/ram0/queue/rotational", "1\n");
  write("sys/class/net/lo/speed", "100000\n");
  write("sys/class/net/eth0/speed", "25000\n");
  write("sys/class/net/eth1/speed", "-1\n");
  touch("dev/nvidia0");
  touch("dev/nvidia1");
  touch("dev/nvidiactl");
  touch("dev/nvidia-uvm");
  auto a = detectNodeAttributes(roots_, UnameInfo{"aarch64", "6.1.0-18-arm64"});
  EXPECT_EQ(a, (Attributes{{"isa", "aarch64"},
                           {"kernel", "6.1.0-18-arm64"},
                           {"cores", "64"},
                           {"memory_mib", "64317"},
                           {"disks", "2"},
                           {"disk_kind", "ssd"},
                           {"network_gbps", "25"},
                           {"gpus", "2"},
                           {"gpu_vendor", "nvidia"}}));
}

// Without /dev/nvidia*, GPUs come from DRM cards with an NVIDIA or AMD
// vendor (connectors and Intel cards are not counted); mixed disks; a
// fractional link speed.
TEST_F(NodeAttributesDetectTest, DrmCardsMixedDisksAndFractionalSpeed) {
  write("sys/class/drm/card0/device/vendor", "0x1002\n");
  write("sys/class/drm/card1/device/vendor", "0x8086\n");
  write("sys/class/drm/card0-DP-1/device/vendor", "0x1002\n");
  write("sys/block/sda/queue/rotational", "1\n");
  write("sys/block/nvme0n1/queue/rotational", "0\n");
  write("sys/class/net/enp3s0/speed", "2500\n");
  auto a = detectNodeAttributes(roots_, UnameInfo{});
  EXPECT_EQ(a.at("gpus"), "1");
  EXPECT_EQ(a.at("gpu_vendor"), "amd");
  EXPECT_EQ(a.at("disk_kind"), "mixed");
  EXPECT_EQ(a.at("network_gbps"), "2.5");
  EXPECT_EQ(a.count("isa"), 0u);  // uname unknown: left out, not guessed
}

// An empty tree detects nothing (no key is guessed).
TEST_F(NodeAttributesDetectTest, EmptyTreeDetectsNothing) {
  EXPECT_TRUE(detectNodeAttributes(roots_, UnameInfo{}).empty());
}

// Configured nm.attributes override detected keys; an empty value drops one.
TEST(NodeAttributesMergeTest, ConfiguredOverridesAndEmptyRemoves) {
  auto m = mergeAttributes({{"isa", "x86_64"}, {"cores", "8"}, {"gpus", "1"}},
                           {{"cores", "16"}, {"gpus", ""}, {"rack", "r1"}});
  EXPECT_EQ(m, (Attributes{{"isa", "x86_64"}, {"cores", "16"}, {"rack", "r1"}}));
}

// CPU lists and speed text.
TEST(NodeAttributesParseTest, CpuListAndGbpsText) {
  EXPECT_EQ(countCpuList("0"), 1);
  EXPECT_EQ(countCpuList("0-3,8,10-11"), 7);
  EXPECT_EQ(countCpuList("3-1"), -1);
  EXPECT_EQ(countCpuList("a-b"), -1);
  EXPECT_EQ(countCpuList(""), -1);
  EXPECT_EQ(gbpsText(100000), "100");
  EXPECT_EQ(gbpsText(1000), "1");
  EXPECT_EQ(gbpsText(2500), "2.5");
  EXPECT_EQ(gbpsText(100), "0.1");
}

}  // namespace
}  // namespace morpheus::nm
