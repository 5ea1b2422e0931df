// How the daemons and the DAG AM end on bad options (common/daemon.h
// daemonExit, dagam/main.cc): exit code 2 and one line on stderr that names
// the flag, key or file as the user gave it; nothing started, no data dir.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

namespace morpheus::testing {
namespace {

// The last line of `out` (without its newline).
std::string lastLine(const std::string& out) {
  std::string text = out;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
}

class DaemonExitIT : public ::testing::TestWithParam<std::string> {};

// A bad flag value, an unknown flag, a value only the daemon's validation
// refuses, a bad config file and a daemon-specific refusal: exit 2, one line
// "morpheus-<daemon>: [config error: ]<what the user wrote>: ...", and the data
// dir not created. A data dir that is a file: exit 2, "<program>: data-dir: ...".
TEST_P(DaemonExitIT, BadOptionsExitTwoWithOneLineNamingThem) {
  const std::string daemon = GetParam();
  const std::string program = "morpheus-" + daemon;
  const std::string dir = freshDir(daemon + "-exit");
  const std::string data = dir + "/data";
  std::ofstream(dir + "/a-file") << "x";
  std::ofstream(dir + "/bad.yaml") << "http:\n  port: 70000\n";
  auto refused = [&](std::vector<std::string> args, const std::string& line_start) {
    std::vector<std::string> argv = {binary(program), "--data-dir", data, "--grpc-port", "0",
                                     "--http-port",   "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = runCommand(argv);
    EXPECT_EQ(code, 2) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_EQ(out.rfind(line_start, 0), 0u) << "expected '" << line_start << "...', got: " << out;
    EXPECT_FALSE(std::filesystem::exists(data)) << "a refused config created the data dir";
  };
  const std::string config_error = program + ": config error: ";
  refused({"--log-level", "loud"}, config_error + "--log-level: log.level: 'loud'");
  refused({"--no-such-flag"}, program + ": ");
  refused({"--set", "log.file=" + dir + "/a-file/log"}, config_error + "log.file: cannot open");
  refused({"--config", dir + "/bad.yaml"}, config_error + dir + "/bad.yaml: http.port: ");
  if (daemon == "rm") refused({}, config_error + "rm.token-file: is required");
  if (daemon == "nm") {
    refused({"--rm", "127.0.0.1:1", "--set", "nm.auth-disabled=true", "--resources",
             "memory=0,vcores=2"},
            config_error + "nm.resources: memory and vcores must be > 0");
    // Harvesting's options are checked with the rest, before anything starts.
    refused({"--rm", "127.0.0.1:1", "--set", "nm.auth-disabled=true", "--set",
             "nm.harvest.source=file"},
            config_error + "nm.harvest.file: required by source file");
  }
  if (daemon == "inference") refused({}, config_error + "inference.token-file: required");

  // A start step that fails: no "config error" label, still exit 2.
  std::vector<std::string> argv = {
      binary(program), "--data-dir", dir + "/a-file", "--grpc-port", "0", "--http-port", "0"};
  if (daemon == "rm") argv.insert(argv.end(), {"--set", "rm.token-file=" + testTokenFile()});
  if (daemon == "nm") {
    argv.insert(argv.end(),
                {"--rm", "127.0.0.1:1", "--set", "nm.token-file=" + nodeTokenFile("nm1")});
  }
  if (daemon == "inference") argv.insert(argv.end(), {"--set", "inference.auth-disabled=true"});
  auto [code, out] = runCommand(argv);
  EXPECT_EQ(code, 2) << out;
  EXPECT_EQ(lastLine(out).rfind(program + ": data-dir: ", 0), 0u) << out;
  EXPECT_EQ(out.find("config error"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Daemons, DaemonExitIT, ::testing::Values("rm", "nm", "inference"));

// morpheus-dag-am: a bad flag value, an unknown flag, a missing required flag
// and a bad job file each exit 2 with one line naming the flag or the file
// and field; --validate of a good file exits 0.
TEST(DagAmExitIT, BadFlagsAndJobFilesExitTwoWithOneLineNamingThem) {
  const std::string dir = freshDir("dag-am-exit");
  const std::string good = dir + "/good.yaml", bad = dir + "/bad.yaml";
  std::ofstream(good) << "name: j\nstages:\n  - name: a\n    tasks: 1\n    command: \"true\"\n"
                         "    resources: {memory_mib: 64, vcores: 1}\n";
  std::ofstream(bad) << "name: j\nstages:\n  - name: a\n    tasks: zero\n    command: \"true\"\n"
                        "    resources: {memory_mib: 64, vcores: 1}\n";
  auto refused = [&](std::vector<std::string> args, const std::string& line_start,
                     const std::string& names) {
    std::vector<std::string> argv = {binary("morpheus-dag-am")};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = runCommand(argv, {{"MORPHEUS_RM_AM_ADDRESS", ""}, {"MORPHEUS_APP_ID", ""}});
    EXPECT_EQ(code, 2) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_EQ(out.rfind(line_start, 0), 0u) << "expected '" << line_start << "...', got: " << out;
    EXPECT_NE(out.find(names), std::string::npos) << out;
  };
  const std::vector<std::string> identity = {"--rm-am-address", "127.0.0.1:1", "--app-id", "a1"};
  std::vector<std::string> args = {"--job", good, "--heartbeat", "3x"};
  args.insert(args.end(), identity.begin(), identity.end());
  refused(args, "morpheus-dag-am: --heartbeat: ", "duration");
  refused({"--job", good, "--no-such-flag"}, "morpheus-dag-am: ", "--no-such-flag");
  refused({"--rm-am-address", "127.0.0.1:1"}, "morpheus-dag-am: ", "--job");
  refused({"--job", good, "--app-id", "a1"}, "morpheus-dag-am: --rm-am-address: required", "");
  refused({"--job", bad, "--validate"}, "morpheus-dag-am: " + bad + ": ", "tasks");
  auto [code, out] = runCommand({binary("morpheus-dag-am"), "--job", good, "--validate"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("job 'j' is valid: 1 stage(s)"), std::string::npos) << out;
}

}  // namespace
}  // namespace morpheus::testing
