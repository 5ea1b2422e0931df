// Phoenix in the RM daemon: real RM, two NMs with resource-kind
// attributes, morpheusctl and morpheus-dag-am on loopback, with
// scheduler.policy root.default=phoenix.
#include <sys/utsname.h>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.h"

using namespace std::chrono_literals;

namespace morpheus::testing {
namespace {

class PhoenixIT : public ClusterTest {
 protected:
  // The RM with `policy` in root.default; nm1 an x86_64 node with 2 vcores, nm2 the only
  // aarch64 node with 4 vcores (heartbeat 300 ms): room for the three AMs
  // (1 vcore each) anywhere and still a task slot on nm2.
  void startHeterogeneous(const std::string& policy) {
    startCluster(0, {"--set", "scheduler.policy=root.default=" + policy});
    struct Spec {
      std::string id, resources, attrs;
    };
    for (const Spec& s : {Spec{"nm1", "memory=2048,vcores=2", "isa=x86_64,cores=16"},
                          Spec{"nm2", "memory=4096,vcores=4", "isa=aarch64,cores=64"}}) {
      std::vector<std::string> args = {"--rm",        rm_.grpcAddress(),
                                       "--node-id",   s.id,
                                       "--resources", s.resources,
                                       "--set",       "nm.attributes=" + s.attrs,
                                       "--set",       "nm.monitor-interval=200ms",
                                       "--set",       "nm.heartbeat-interval=300ms"};
      for (auto& a : nmAuthArgs(s.id)) args.push_back(std::move(a));
      nms_.push_back(Process::startDaemon("nm", freshDir("nm"), args));
      ASSERT_FALSE(nms_.back().grpcAddress().empty()) << nms_.back().log();
    }
    ASSERT_TRUE(waitLiveNodes(2)) << rm_.log();
  }

  std::string submit(const std::string& yaml) {
    auto [code, out] = ctl({"app", "submit", writeJob(yaml)});
    EXPECT_EQ(code, 0) << out;
    return out.substr(0, out.find('\n'));
  }

  // A long job: many 1 vcore tasks of 2 s each, declared as 10 min long. 64
  // tasks per job keep both long jobs draining for about a minute on the four
  // task slots, so the first one still runs when a short job that overtakes
  // it ends, even on a loaded machine where starting its AM takes seconds.
  static std::string longJob(const std::string& name) {
    return "name: " + name +
           "\n"
           "stages:\n"
           "  - name: work\n"
           "    tasks: 64\n"
           "    command: \"sleep 2\"\n"
           "    expected_task_ms: 600000\n"
           "    resources: {memory_mib: 256, vcores: 1}\n";
  }
};

// A short job that needs the aarch64 node, submitted behind two long jobs
// (64 tasks of 2 s each on 5 vcores) that keep every slot busy, finishes
// while the long job that started first still runs (under FIFO its AM and task would wait
// for every task of both long jobs to be placed);
// an ask no node can meet shows a pending reason in `app status`; node
// attributes are listed by `cluster status`.
TEST_F(PhoenixIT, ConstrainedShortJobOvertakesLongQueue) {
  startHeterogeneous("phoenix");
  auto [cs, status] = ctl({"cluster", "status"});
  EXPECT_NE(status.find("isa=aarch64"), std::string::npos) << status;

  std::string l1 = submit(longJob("long-1"));
  std::string l2 = submit(longJob("long-2"));
  // Whichever long job's AM asks first runs first (Phoenix keeps a started
  // long job ahead of a fresh one of equal work), so "the first" is the one
  // that has containers running, not the one submitted first.
  std::string first;
  ASSERT_TRUE(waitFor(
      [&] {
        for (const std::string& id : {l1, l2}) {
          nlohmann::json a = app(id);
          if (!a.is_discarded() && a["running_containers"].get<double>() >= 2) {
            first = id;
            return true;
          }
        }
        return false;
      },
      20s))
      << rm_.log();
  std::string s = submit(
      "name: short-arm\n"
      "stages:\n"
      "  - name: probe\n"
      "    tasks: 1\n"
      "    command: \"true\"\n"
      "    expected_task_ms: 1000\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    constraints: [{key: isa, values: [aarch64], hard: true}]\n");
  ASSERT_TRUE(waitFinal(s, 20s)) << rm_.log();
  EXPECT_EQ(app(s)["state"], "FINISHED");
  EXPECT_EQ(app(first)["state"], "RUNNING") << "the short job did not overtake " << first;

  // Admission control: nothing has isa sparc, so the app says why it waits.
  std::string u = submit(
      "name: no-such-node\n"
      "stages:\n"
      "  - name: probe\n"
      "    tasks: 1\n"
      "    command: \"true\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    constraints: [{key: isa, values: [sparc], hard: true}]\n");
  std::string reason;
  EXPECT_TRUE(waitFor(
      [&] {
        auto a = app(u);
        if (a.is_discarded() || a["pending_reasons"].empty()) return false;
        reason = a["pending_reasons"][0].get<std::string>();
        return true;
      },
      20s))
      << rm_.log();
  EXPECT_NE(reason.find("no registered node has isa in {sparc}"), std::string::npos) << reason;
  auto [code, text] = ctl({"app", "status", u});
  EXPECT_NE(text.find("Pending:"), std::string::npos) << text;
  for (const auto& id : {l1, l2, u}) ctl({"app", "kill", id});
  for (const auto& id : {l1, l2, u}) EXPECT_TRUE(waitFinal(id, 20s));
}

// Attributes detected at NM start reach `cluster status` next to the
// configured ones: isa and kernel are uname's, cores is set; a configured
// value overrides the detected one (nm1 says isa=x86_64 whatever the host is).
TEST_F(PhoenixIT, NmDetectedAttributesShowInClusterStatus) {
  startHeterogeneous("phoenix");
  auto [code, out] = ctl({"cluster", "status", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto status = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << out;
  struct utsname u {};
  ASSERT_EQ(uname(&u), 0);
  ASSERT_EQ(status["nodes"].size(), 2u);
  for (const auto& n : status["nodes"]) {
    const auto& a = n["attributes"];
    EXPECT_EQ(a.value("kernel", ""), std::string(u.release)) << n.dump();
    EXPECT_FALSE(a.value("memory_mib", "").empty()) << n.dump();
    // Configured in startHeterogeneous: they override the detected values.
    EXPECT_EQ(a.value("cores", ""), n["node_id"] == "nm1" ? "16" : "64") << n.dump();
    EXPECT_EQ(a.value("isa", ""), n["node_id"] == "nm1" ? "x86_64" : "aarch64") << n.dump();
  }
}

}  // namespace
}  // namespace morpheus::testing
