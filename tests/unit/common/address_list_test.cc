// Peer address lists: parsing, and the pick_first gRPC target.
#include "common/address_list.h"

#include <gtest/gtest.h>

namespace morpheus {
namespace {

// Entries are trimmed and lose an http:// prefix; one address stays as given.
TEST(AddressListTest, SplitsTrimsAndKeepsASingleAddress) {
  auto l = splitAddressList(" 127.0.0.1:1 , http://localhost:2", "f");
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  EXPECT_EQ(*l, (std::vector<std::string>{"127.0.0.1:1", "localhost:2"}));
  EXPECT_EQ(*grpcTargetForList("rm.example:8030", "f"), "rm.example:8030");
}

// Several peers become one resolved ipv4: (or ipv6:) target.
TEST(AddressListTest, SeveralPeersBecomeOneResolvedTarget) {
  EXPECT_EQ(*grpcTargetForList("127.0.0.1:1,localhost:2", "f"), "ipv4:127.0.0.1:1,127.0.0.1:2");
  EXPECT_EQ(*grpcTargetForList("[::1]:1,[::1]:2", "f"), "ipv6:[::1]:1,[::1]:2");
}

// Empty entries, missing ports, unresolvable hosts and mixed families name the field.
TEST(AddressListTest, BadListsNameTheField) {
  for (const std::string bad : {"", "a:1,,b:2", "a:1,b", "a:1,b:", "127.0.0.1:1,[::1]:2",
                                "127.0.0.1:1,no-such-host.invalid:2"}) {
    auto r = grpcTargetForList(bad, "nm.rm-address");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("nm.rm-address"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace morpheus
