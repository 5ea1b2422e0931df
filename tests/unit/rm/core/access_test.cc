#include "rm/core/access.h"

#include <gtest/gtest.h>

namespace morpheus::rm {
namespace {

Authenticator tokens() {
  return Authenticator({{"tok-alice-0123456789", {"alice", false, false}},
                        {"tok-carol-0123456789", {"carol", false, false}},
                        {"tok-ops-01234567890", {"ops", true, false}},
                        {"tok-nm1-01234567890", {"nm1", false, true}}},
                       false);
}

HttpRequest withToken(const std::string& token) {
  HttpRequest r;
  if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
  return r;
}

// The caller comes from the token: missing/unknown -> 401, node -> 403, rm.admins -> admin.
TEST(RmAccessTest, CallerIsTheTokensPrincipal) {
  Authenticator auth = tokens();
  RmAccess access(auth, {"carol"}, QueueAcls());
  int status = 0;
  EXPECT_FALSE(access.caller(withToken(""), &status).isOk());
  EXPECT_EQ(status, 401);
  EXPECT_FALSE(access.caller(withToken("tok-unknown-0123456789"), &status).isOk());
  EXPECT_EQ(status, 401);
  EXPECT_FALSE(access.caller(withToken("tok-nm1-01234567890"), &status).isOk());
  EXPECT_EQ(status, 403);
  auto alice = access.caller(withToken("tok-alice-0123456789"), &status);
  ASSERT_TRUE(alice.isOk());
  EXPECT_EQ(alice->user, "alice");
  EXPECT_FALSE(alice->admin);
  auto carol = access.caller(withToken("tok-carol-0123456789"), &status);
  ASSERT_TRUE(carol.isOk());
  EXPECT_TRUE(carol->admin) << "rm.admins lists carol";
}

// A stated user other than the caller needs an admin; "" means the caller.
TEST(RmAccessTest, StatedUserOtherThanCallerNeedsAnAdmin) {
  Principal bob{"bob", false, false};
  Principal ops{"ops", true, false};
  EXPECT_EQ(*RmAccess::actingUser(bob, "", "kill application a"), "bob");
  EXPECT_EQ(*RmAccess::actingUser(bob, "bob", "kill application a"), "bob");
  auto forged = RmAccess::actingUser(bob, "alice", "kill application a");
  ASSERT_FALSE(forged.isOk());
  EXPECT_EQ(forged.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(forged.status().message().find("bob may not kill application a as alice"),
            std::string::npos)
      << forged.status().message();
  EXPECT_EQ(*RmAccess::actingUser(ops, "alice", "kill application a"), "alice");
}

// Owner, queue administrator or admin administer; others are refused naming user, action, queue.
TEST(RmAccessTest, AdministerNeedsOwnerQueueAdminOrAdmin) {
  Authenticator auth = tokens();
  auto acls = QueueAcls::parse({{"root.prod", "alice"}}, {{"root.prod", "dave"}});
  ASSERT_TRUE(acls.isOk());
  RmAccess access(auth, {}, *acls);
  Principal bob{"bob", false, false}, dave{"dave", false, false}, alice{"alice", false, false},
      ops{"ops", true, false};
  EXPECT_TRUE(access.mayAdminister(alice, "alice", "root.prod.etl", "kill application a").isOk());
  EXPECT_TRUE(access.mayAdminister(dave, "alice", "root.prod.etl", "kill application a").isOk());
  EXPECT_TRUE(access.mayAdminister(ops, "alice", "root.prod.etl", "kill application a").isOk());
  Status st = access.mayAdminister(bob, "alice", "root.prod.etl", "kill application a");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("bob may not kill application a of alice in queue root.prod.etl"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(access.maySubmit(bob, "root.prod", "submit application x").isOk());
  EXPECT_TRUE(access.maySubmit(ops, "root.prod", "submit application x").isOk());
}

}  // namespace
}  // namespace morpheus::rm
