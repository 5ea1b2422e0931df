// `morpheusctl app logs` and `app containers` end to end: a real RM, an NM
// on fixed ports (so that it can restart on the same address) and the DAG
// application master. Every container's stdout and stderr, each under its
// header; the container list with exit statuses; logs still readable after
// the NM restarts; nm.log-retention removes a finished container's logs and
// never a running one's.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

class AppLogsIT : public ClusterTest {
 protected:
  // The RM and one NM "nm1" on fixed ports, with `nm_args` added.
  void startWithNm(const std::vector<std::string>& nm_args = {}) {
    ASSERT_NO_FATAL_FAILURE(startCluster(0));
    auto ports = freeLoopbackPorts(2);
    ASSERT_EQ(ports.size(), 2u);
    grpc_port_ = ports[0];
    http_port_ = ports[1];
    nm_args_ = {"--rm",        rm_.grpcAddress(),
                "--node-id",   "nm1",
                "--resources", "memory=4096,vcores=4",
                "--set",       "nm.monitor-interval=200ms",
                "--set",       "nm.heartbeat-interval=300ms"};
    for (auto& a : nmAuthArgs("nm1")) nm_args_.push_back(std::move(a));
    nm_args_.insert(nm_args_.end(), nm_args.begin(), nm_args.end());
    nm_dirs_.push_back(freshDir("nm"));
    startNm();
  }
  void startNm() {
    if (nms_.empty()) nms_.emplace_back();
    nms_[0] = Process::startDaemonOnPorts("nm", nm_dirs_[0], grpc_port_, http_port_, nm_args_);
    ASSERT_FALSE(nms_[0].grpcAddress().empty()) << nms_[0].log();
    ASSERT_TRUE(waitLiveNodes(1)) << rm_.log();
  }
  std::string submit(const std::string& yaml, bool wait) {
    std::vector<std::string> args = {"app", "submit", writeJob(yaml)};
    if (wait) args.push_back("--wait");
    auto [code, out] = ctl(args);
    EXPECT_EQ(code, 0) << out << rm_.log();
    return out.substr(0, out.find('\n'));
  }
  json containers(const std::string& id) {
    auto [code, out] = ctl({"app", "containers", id, "--json"});
    EXPECT_EQ(code, 0) << out;
    json j = json::parse(out, nullptr, false);
    return j.is_discarded() ? json::array() : j["containers"];
  }
  // Polls until every container of `id` is COMPLETE (the AM's container
  // ends a moment after the app does).
  bool waitAllComplete(const std::string& id) {
    return waitFor(
        [&] {
          json list = containers(id);
          if (list.empty()) return false;
          for (const auto& c : list) {
            if (c["state"] != "COMPLETE") return false;
          }
          return true;
        },
        10s);
  }
  std::string containerDir(const std::string& container) const {
    return nm_dirs_[0] + "/local/containers/" + container;
  }
  // `app logs` text: (container, stream) -> contents, from the sections
  // "Container: C on NODE" / "LogType: S" / "LogContents:" ... "End of
  // LogType: S"; an unreadable log maps to its "Logs not available: ..."
  // line. `nodes` gets each container's node.
  static std::map<std::pair<std::string, std::string>, std::string> sections(
      const std::string& out, std::map<std::string, std::string>* nodes = nullptr) {
    std::map<std::pair<std::string, std::string>, std::string> got;
    std::istringstream in(out);
    std::string line, container, stream, body;
    bool in_body = false;
    while (std::getline(in, line)) {
      if (in_body) {
        if (line == "End of LogType: " + stream) {
          got[{container, stream}] = body;
          in_body = false;
        } else {
          body += line + "\n";
        }
      } else if (line.rfind("Container: ", 0) == 0) {
        auto on = line.find(" on ");
        container = line.substr(11, on - 11);
        if (nodes != nullptr && on != std::string::npos) (*nodes)[container] = line.substr(on + 4);
      } else if (line.rfind("LogType: ", 0) == 0) {
        stream = line.substr(9);
      } else if (line == "LogContents:") {
        in_body = true;
        body.clear();
      } else if (line.rfind("Logs not available: ", 0) == 0) {
        got[{container, stream}] = line;
      }
    }
    return got;
  }

  int grpc_port_ = 0, http_port_ = 0;
  std::vector<std::string> nm_args_;
};

// Two tasks with their own output, and a task whose first attempt fails
// (exit 3) and whose second succeeds: 4 task containers and the AM's.
std::string twoTasksAndAFlakyOne(const std::string& marker) {
  return "name: two-tasks\n"
         "stages:\n"
         "  - name: work\n"
         "    tasks: 2\n"
         "    command: \"echo out-$MORPHEUS_TASK_INDEX; echo err-$MORPHEUS_TASK_INDEX >&2\"\n"
         "    resources: {memory_mib: 128, vcores: 1}\n"
         "  - name: flaky\n"
         "    tasks: 1\n"
         "    max_attempts: 2\n"
         "    command: \"echo flaky-out; [ -e " +
         marker + " ] && exit 0; touch " + marker +
         "; echo flaky-err >&2; exit 3\"\n"
         "    resources: {memory_mib: 128, vcores: 1}\n";
}

// Every container (the AM, both tasks and both attempts of the flaky one)
// under its header with its own stdout and stderr; the list with node,
// state, exit status and resources; after the NM restarts, the same logs.
TEST_F(AppLogsIT, EveryContainersLogsAndTheListSurviveAnNmRestart) {
  ASSERT_NO_FATAL_FAILURE(startWithNm());
  const std::string id = submit(twoTasksAndAFlakyOne(freshDir("flaky") + "/tried"), /*wait=*/true);
  ASSERT_FALSE(id.empty());

  // The list: AM + 4 tasks, all COMPLETE on nm1; the flaky task's first
  // attempt with exit status 3, every other with 0.
  ASSERT_TRUE(waitAllComplete(id)) << containers(id).dump(2);
  json list = containers(id);
  ASSERT_EQ(list.size(), 5u) << list.dump(2);
  std::set<std::string> tasks;
  std::string am, failed;
  for (const auto& c : list) {
    EXPECT_EQ(c["state"], "COMPLETE") << c.dump();
    EXPECT_EQ(c["node_id"], "nm1") << c.dump();
    EXPECT_FALSE(c["finish_time"].is_null()) << c.dump();
    if (c["exit_status"] == 3) {
      EXPECT_EQ(c["exit_reason"], "FAILURE") << c.dump();
      EXPECT_TRUE(failed.empty()) << list.dump(2);
      failed = c["container_id"];
    } else {
      EXPECT_EQ(c["exit_status"], 0) << c.dump();
      EXPECT_EQ(c["exit_reason"], "SUCCESS") << c.dump();
    }
    if (c["am"].get<bool>()) {
      am = c["container_id"];
    } else {
      tasks.insert(c["container_id"].get<std::string>());
      EXPECT_EQ(c["resource"]["memory_mib"], 128) << c.dump();
    }
  }
  ASSERT_EQ(tasks.size(), 4u) << list.dump(2);
  ASSERT_FALSE(am.empty()) << list.dump(2);
  ASSERT_FALSE(failed.empty()) << list.dump(2);
  auto [ct, table] = ctl({"app", "containers", id});
  ASSERT_EQ(ct, 0) << table;
  EXPECT_NE(table.find("EXIT"), std::string::npos) << table;
  EXPECT_NE(table.find("128 MiB / 1 vcore"), std::string::npos) << table;
  for (const auto& t : tasks) EXPECT_NE(table.find(t), std::string::npos) << table;

  // Each task's stdout holds its out-N and its stderr the same N's err-N.
  auto check_logs = [&](const std::string& when) {
    SCOPED_TRACE(when);
    auto [code, out] = ctl({"app", "logs", id});
    ASSERT_EQ(code, 0) << out;
    std::map<std::string, std::string> nodes;
    auto got = sections(out, &nodes);
    EXPECT_EQ(got.size(), 10u) << out;
    EXPECT_EQ(nodes[am], "nm1") << out;
    EXPECT_TRUE(got.count({am, "stdout"}) && got.count({am, "stderr"})) << out;
    std::set<std::string> indices;
    int flaky = 0;
    for (const auto& t : tasks) {
      const std::string o = got[{t, "stdout"}], e = got[{t, "stderr"}];
      EXPECT_EQ(nodes[t], "nm1") << out;
      if (o == "flaky-out\n") {
        EXPECT_EQ(e, t == failed ? "flaky-err\n" : "") << t << ": " << out;
        flaky++;
        continue;
      }
      ASSERT_EQ(o.rfind("out-", 0), 0u) << t << " stdout: " << out;
      const std::string n = o.substr(4, o.find('\n') - 4);
      EXPECT_EQ(o, "out-" + n + "\n") << out;
      EXPECT_EQ(e, "err-" + n + "\n") << out;
      indices.insert(n);
    }
    EXPECT_EQ(indices, (std::set<std::string>{"0", "1"})) << out;
    EXPECT_EQ(flaky, 2) << out;
  };
  check_logs("before the NM restart");

  // --json: one record per container and stream.
  auto [cj, oj] = ctl({"app", "logs", id, "--json"});
  ASSERT_EQ(cj, 0) << oj;
  json logs = json::parse(oj, nullptr, false);
  ASSERT_FALSE(logs.is_discarded()) << oj;
  EXPECT_EQ(logs["application_id"], id);
  EXPECT_EQ(logs["logs"].size(), 10u) << oj;

  // One container, one stream, as before: its content alone.
  const std::string task = failed;
  auto [c1, o1] = ctl({"app", "logs", id, "--container", task, "--stderr"});
  ASSERT_EQ(c1, 0) << o1;
  EXPECT_EQ(o1, "flaky-err\n");
  EXPECT_EQ(o1.find("Container:"), std::string::npos) << o1;

  // The NM restarts on the same address: the finished containers' logs stay.
  ASSERT_EQ(nms_[0].signalAndWait(SIGTERM, 10s), 0) << nms_[0].log();
  ASSERT_TRUE(fs::exists(containerDir(task) + "/stdout"));
  ASSERT_NO_FATAL_FAILURE(startNm());
  ASSERT_TRUE(waitFor(
      [&] {
        auto [code, out] = ctl({"app", "logs", id, "--container", task});
        return code == 0 && out == "flaky-out\n";
      },
      10s))
      << nms_[0].log();
  check_logs("after the NM restart");
  EXPECT_EQ(containers(id).size(), 5u);
}

// With nm.log-retention of 1 s a finished container's logs go within a
// sweep or two, while a running container's (older than that by then) stay;
// `app logs` says which were removed and still prints the others.
TEST_F(AppLogsIT, RetentionRemovesFinishedContainersLogsNeverRunningOnes) {
  ASSERT_NO_FATAL_FAILURE(startWithNm({"--set", "nm.log-retention=1s"}));
  const std::string id = submit(
      "name: quick-and-slow\n"
      "stages:\n"
      "  - name: quick\n"
      "    tasks: 1\n"
      "    command: \"echo quick-out\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n"
      "  - name: slow\n"
      "    tasks: 1\n"
      "    command: \"echo slow-out; exec sleep 60\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n",
      /*wait=*/false);
  ASSERT_FALSE(id.empty());
  std::string quick, slow;
  ASSERT_TRUE(waitFor(
      [&] {
        quick.clear();
        slow.clear();
        for (const auto& c : containers(id)) {
          if (c["am"].get<bool>()) continue;
          if (c["state"] == "COMPLETE") quick = c["container_id"];
          if (c["state"] == "RUNNING") slow = c["container_id"];
        }
        return !quick.empty() && !slow.empty();
      },
      20s))
      << rm_.log();
  ASSERT_TRUE(waitFor([&] { return !fs::exists(containerDir(quick) + "/stdout"); }, 5s))
      << nms_[0].log();
  EXPECT_FALSE(fs::exists(containerDir(quick) + "/work"));
  // The sweep that removed them found the running container older than the
  // retention too (it started first); one more sweep, and it still stays.
  std::this_thread::sleep_for(1200ms);
  EXPECT_TRUE(fs::exists(containerDir(slow) + "/stdout"));
  auto [cs, os] = ctl({"app", "logs", id, "--container", slow});
  EXPECT_EQ(cs, 0) << os;
  EXPECT_EQ(os, "slow-out\n");

  auto [code, out] = ctl({"app", "logs", id});
  EXPECT_EQ(code, 0) << out;
  auto got = sections(out);
  EXPECT_EQ(got[std::make_pair(slow, std::string("stdout"))], "slow-out\n") << out;
  const std::string removed = got[{quick, "stdout"}];
  EXPECT_EQ(removed.rfind("Logs not available: ", 0), 0u) << out;
  EXPECT_NE(removed.find("nm.log-retention"), std::string::npos) << out;

  auto [ck, ok] = ctl({"app", "kill", id});
  EXPECT_EQ(ck, 0) << ok;
  EXPECT_TRUE(waitFinal(id, 20s));
  EXPECT_TRUE(waitAllComplete(id)) << containers(id).dump(2);
}

}  // namespace
}  // namespace morpheus::testing
