#include "rm/core/queue_acls.h"

#include <gtest/gtest.h>

namespace morpheus::rm {
namespace {

QueueAcls acls(const std::map<std::string, std::string>& submit,
               const std::map<std::string, std::string>& administer) {
  auto a = QueueAcls::parse(submit, administer);
  EXPECT_TRUE(a.isOk()) << a.status().toString();
  return a.isOk() ? *a : QueueAcls();
}

// An unlisted queue is open to every submitter and administered by nobody here.
TEST(QueueAclsTest, UnlistedQueueOpenToSubmitNotToAdminister) {
  QueueAcls a = acls({}, {});
  EXPECT_TRUE(a.maySubmit("bob", "root.default"));
  EXPECT_TRUE(a.maySubmit("bob", "default"));
  EXPECT_FALSE(a.mayAdminister("bob", "root.default"));
}

// A submit list restricts the queue and, as in YARN, its children.
TEST(QueueAclsTest, ParentSubmitListAppliesToChildren) {
  QueueAcls a = acls({{"root.prod", "alice carol"}}, {});
  EXPECT_TRUE(a.maySubmit("alice", "root.prod.etl"));
  EXPECT_FALSE(a.maySubmit("bob", "root.prod.etl"));
  EXPECT_FALSE(a.maySubmit("bob", "root.prod"));
  EXPECT_TRUE(a.maySubmit("bob", "root.dev"));
}

// "default" (a reservable queue) and "root.default" (an ad-hoc queue) share one entry.
TEST(QueueAclsTest, ShortNameIsUnderRoot) {
  QueueAcls a = acls({{"default", "alice"}}, {{"root.default", "ops2"}});
  EXPECT_FALSE(a.maySubmit("bob", "root.default"));
  EXPECT_TRUE(a.maySubmit("alice", "default"));
  EXPECT_TRUE(a.mayAdminister("ops2", "default"));
}

// Administrators of a queue (or a parent) may administer and submit; '*' lists everyone.
TEST(QueueAclsTest, AdministerImpliesSubmitAndStarMatchesAll) {
  QueueAcls a = acls({{"root", "nobody"}}, {{"root.prod", "dave"}, {"root.dev", "*"}});
  EXPECT_TRUE(a.mayAdminister("dave", "root.prod.etl"));
  EXPECT_TRUE(a.maySubmit("dave", "root.prod.etl"));
  EXPECT_FALSE(a.maySubmit("erin", "root.prod"));
  EXPECT_TRUE(a.mayAdminister("erin", "root.dev"));
}

// An entry with no user is a config error naming the key and queue.
TEST(QueueAclsTest, EmptyUserListRefused) {
  auto a = QueueAcls::parse({{"root.prod", "  "}}, {});
  ASSERT_FALSE(a.isOk());
  EXPECT_NE(a.status().message().find("rm.queue-acls.submit.root.prod"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::rm
