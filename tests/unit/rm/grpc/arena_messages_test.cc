#include "rm/grpc/arena_messages.h"

#include <gtest/gtest.h>

#include <string>

#include "morpheus/v1/resource_tracker.pb.h"

namespace morpheus::rm {
namespace {

using HeartbeatAllocator =
    ArenaMessageAllocator<v1::NodeHeartbeatRequest, v1::NodeHeartbeatResponse>;

// Both messages of a call live on one arena, and a released holder comes back
// for the next call with both messages empty (no allocation per call).
TEST(ArenaMessageAllocatorTest, ReleasedHolderIsReusedWithEmptyMessages) {
  HeartbeatAllocator alloc(4096, 4);
  auto* h = alloc.AllocateMessages();
  ASSERT_NE(h->request()->GetArena(), nullptr);
  EXPECT_EQ(h->request()->GetArena(), h->response()->GetArena());
  h->request()->set_node_id("node-1");
  for (int i = 0; i < 200; i++) {  // beyond the first block: the arena grows
    h->response()->add_containers_to_acknowledge("container_" + std::to_string(i));
  }
  h->Release();
  EXPECT_EQ(alloc.pooled(), 1u);
  auto* again = alloc.AllocateMessages();
  EXPECT_EQ(again, h);
  EXPECT_EQ(alloc.created(), 1u);
  EXPECT_TRUE(again->request()->node_id().empty());
  EXPECT_EQ(again->response()->containers_to_acknowledge_size(), 0);
  again->Release();
}

// Holders released beyond max_pooled are freed, not kept.
TEST(ArenaMessageAllocatorTest, PoolKeepsAtMostMaxPooled) {
  HeartbeatAllocator alloc(1024, 2);
  auto* a = alloc.AllocateMessages();
  auto* b = alloc.AllocateMessages();
  auto* c = alloc.AllocateMessages();
  EXPECT_EQ(alloc.created(), 3u);
  a->Release();
  b->Release();
  c->Release();
  EXPECT_EQ(alloc.pooled(), 2u);
}

}  // namespace
}  // namespace morpheus::rm
