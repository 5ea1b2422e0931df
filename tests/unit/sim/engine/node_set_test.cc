#include "sim/engine/node_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace morpheus::sim {
namespace {

int firstOf(const std::set<int>& s) { return s.empty() ? NodeSet::kNone : *s.begin(); }

int nextOf(const std::set<int>& s, int n) {
  auto it = s.upper_bound(n);
  return it == s.end() ? NodeSet::kNone : *it;
}

// NodeSet answers first/next/popFirst exactly as an ordered std::set<int> on
// random operation sequences (the simulator's visit order depends on it).
TEST(NodeSetTest, SameOrderAsStdSetOnRandomOperations) {
  std::mt19937_64 rng(7);
  for (int size : {1, 63, 64, 65, 200, 1000}) {
    NodeSet flat(static_cast<size_t>(size));
    std::set<int> ref;
    std::uniform_int_distribution<int> node(0, size - 1), op(0, 5);
    for (int i = 0; i < 5000; i++) {
      const int n = node(rng);
      switch (op(rng)) {
        case 0:
        case 1:
          flat.insert(n);
          ref.insert(n);
          break;
        case 2:
          flat.erase(n);
          ref.erase(n);
          break;
        case 3:
          ASSERT_EQ(flat.popFirst(), firstOf(ref)) << "size " << size << " op " << i;
          if (!ref.empty()) ref.erase(ref.begin());
          break;
        case 4:
          ASSERT_EQ(flat.next(n), nextOf(ref, n)) << "size " << size << " op " << i;
          break;
        default:
          ASSERT_EQ(flat.first(), firstOf(ref)) << "size " << size << " op " << i;
          ASSERT_EQ(flat.contains(n), ref.count(n) == 1);
      }
      ASSERT_EQ(flat.count(), ref.size());
    }
  }
}

// A member inserted below the low-water mark after pops is still found first.
TEST(NodeSetTest, InsertBelowScannedWordIsFoundFirst) {
  NodeSet s(300);
  s.insert(250);
  EXPECT_EQ(s.popFirst(), 250);
  EXPECT_EQ(s.first(), NodeSet::kNone);
  s.insert(3);
  s.insert(299);
  EXPECT_EQ(s.first(), 3);
  EXPECT_EQ(s.next(3), 299);
  EXPECT_EQ(s.next(299), NodeSet::kNone);
}

}  // namespace
}  // namespace morpheus::sim
