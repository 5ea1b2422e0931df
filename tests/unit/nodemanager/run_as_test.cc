// RunAsPolicy: which local account a container runs as (nm.run-as*).
#include "nodemanager/run_as.h"

#include <gtest/gtest.h>

namespace morpheus::nm {
namespace {

RunAsOptions opts(const std::string& mode) {
  RunAsOptions o;
  o.mode = mode;
  return o;
}

// As root, nm-user (containers as root) needs nm.allow-root-containers; not
// as root, mapped is impossible; auto picks mapped as root, nm-user otherwise.
TEST(RunAsPolicyTest, RootContainersOnlyWithTheExplicitOption) {
  auto refused = RunAsPolicy::make(opts("nm-user"), 0);
  EXPECT_EQ(refused.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(refused.status().message().find("nm.allow-root-containers"), std::string::npos);
  RunAsOptions allowed = opts("nm-user");
  allowed.allow_root = true;
  auto p = RunAsPolicy::make(allowed, 0);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_TRUE(p->runsAsRoot());
  EXPECT_FALSE(p->mapped());

  EXPECT_EQ(RunAsPolicy::make(opts("mapped"), 1000).status().code(), StatusCode::kInfeasible);
  auto root_auto = RunAsPolicy::make(opts("auto"), 0);
  ASSERT_TRUE(root_auto.isOk());
  EXPECT_TRUE(root_auto->mapped());
  auto user_auto = RunAsPolicy::make(opts("auto"), 1000);
  ASSERT_TRUE(user_auto.isOk());
  EXPECT_FALSE(user_auto->mapped());
  EXPECT_FALSE(user_auto->runsAsRoot());
  EXPECT_EQ(RunAsPolicy::make(opts("sudo"), 0).status().code(), StatusCode::kInvalidArgument);
}

// A map entry naming no valid account name is INVALID_ARGUMENT naming the entry.
TEST(RunAsPolicyTest, MalformedMapEntryIsRefused) {
  RunAsOptions o = opts("mapped");
  o.user_map = {{"alice", "../root"}};
  auto p = RunAsPolicy::make(o, 0);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("nm.run-as-map.alice"), std::string::npos)
      << p.status().message();
}

// Mapped: the map first, then the same name; root, accounts below the minimum
// uid, unknown accounts, an empty submitter and (without same-name) an
// unmapped one are PERMISSION_DENIED naming the submitter.
TEST(RunAsPolicyTest, MappedAccountsAreCheckedAgainstTheMinimumUid) {
  RunAsOptions o = opts("mapped");
  o.user_map = {{"alice", "nobody"}, {"eve", "root"}};
  auto p = RunAsPolicy::make(o, 0);
  ASSERT_TRUE(p.isOk());
  auto alice = p->accountFor("alice");
  ASSERT_TRUE(alice.isOk()) << alice.status().toString();
  EXPECT_EQ(alice->name, "nobody");
  EXPECT_GE(alice->uid, 1000u);
  for (const std::string who : {"eve", "root", "daemon", "", "no-such-account-x", "Bad|Name"}) {
    auto r = p->accountFor(who);
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << who;
    if (!who.empty()) {
      EXPECT_NE(r.status().message().find("'" + who + "'"), std::string::npos)
          << r.status().message();
    }
  }
  o.same_name = false;
  o.user_map = {};
  auto strict = RunAsPolicy::make(o, 0);
  ASSERT_TRUE(strict.isOk());
  EXPECT_EQ(strict->accountFor("nobody").status().code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace morpheus::nm
