// morpheusctl's habits against a real RM on loopback, with the real binary:
// global options after the subcommand, reservations from flags with times
// people type, times printed as ISO-8601 (never epoch milliseconds), states
// in any case, local errors that stay local, and parser errors with the
// `morpheusctl:` prefix (docs/reference/cli.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "harness.h"

namespace morpheus::testing {
namespace {

using json = nlohmann::json;

class CliHabitsIT : public ClusterTest {};

TEST_F(CliHabitsIT, GlobalOptionsAnywhereTimesAsTypedAndLocalErrorsStayLocal) {
  ASSERT_NO_FATAL_FAILURE(startCluster(1));
  // --rm and --token after the subcommand, as `yarn` and `kubectl` take them.
  auto [lc, listed] = runCommand({binary("morpheusctl"), "app", "list", "--rm", rm_.grpcAddress(),
                                  "--token", testToken("alice"), "--json"},
                                 {{"MORPHEUS_RM", ""}, {"MORPHEUS_TOKEN", ""}});
  ASSERT_EQ(lc, 0) << listed;
  EXPECT_TRUE(json::parse(listed, nullptr, false).contains("applications")) << listed;

  // A reservation without hand-written JSON; what the CLI prints is ISO-8601.
  auto [cc, created] = ctl({"reservation", "create", "--queue", "default", "--start", "now+1h",
                            "--deadline", "now+3h", "--containers", "2", "--memory", "512MiB",
                            "--vcores", "1", "--duration", "10m", "--gang", "2"});
  ASSERT_EQ(cc, 0) << created;
  EXPECT_NE(created.find(" accepted"), std::string::npos) << created;
  auto [rc, rlist] = ctl({"reservation", "list"});
  ASSERT_EQ(rc, 0) << rlist;
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)");
  const std::regex epoch_ms(R"(\b1\d{12}\b)");
  for (const std::string& text : {created, rlist}) {
    EXPECT_TRUE(std::regex_search(text, iso)) << text;
    EXPECT_FALSE(std::regex_search(text, epoch_ms)) << "raw epoch ms printed:\n" << text;
  }

  // States in any case, as REST names them.
  EXPECT_EQ(ctl({"app", "list", "--state", "running"}).first, 0);
  EXPECT_EQ(ctl({"app", "list", "--state", "Finished,KILLED"}).first, 0);
  auto [sc, bad_state] = ctl({"app", "list", "--state", "sleeping"});
  EXPECT_EQ(sc, 2) << bad_state;
  EXPECT_EQ(bad_state.rfind("morpheusctl: ", 0), 0u) << bad_state;
  EXPECT_NE(bad_state.find("sleeping"), std::string::npos) << bad_state;

  // A missing job file is a local error, not an RM refusal.
  const std::string missing = freshDir("cli") + "/no-such-job.yaml";
  auto [mc, mout] = ctl({"app", "submit", missing});
  EXPECT_EQ(mc, 2) << mout;
  EXPECT_EQ(
      mout.rfind("morpheusctl: cannot read job file " + missing + ": No such file or directory", 0),
      0u)
      << mout;
  EXPECT_EQ(mout.find("INVALID_ARGUMENT"), std::string::npos) << mout;

  // Parser errors carry the prefix and name the option as written.
  auto [pc, pout] = ctl({"app", "list", "--no-such-flag"});
  EXPECT_EQ(pc, 2) << pout;
  EXPECT_EQ(pout.rfind("morpheusctl: ", 0), 0u) << pout;
  EXPECT_NE(pout.find("--no-such-flag"), std::string::npos) << pout;
}

}  // namespace
}  // namespace morpheus::testing
