#include <gtest/gtest.h>

#include "planner/rle.h"

namespace morpheus::planner {
namespace {

// Adding and then subtracting the same runs leaves an empty step function.
TEST(RleResourceTest, SubtractRestoresEmptyFunction) {
  RleResource r;
  r.add(0, 10, Resource(10, 1));
  r.add(5, 15, Resource(20, 2));
  EXPECT_EQ(r.at(-1), Resource());
  EXPECT_EQ(r.at(0), Resource(10, 1));
  EXPECT_EQ(r.at(7), Resource(30, 3));
  EXPECT_EQ(r.at(12), Resource(20, 2));
  EXPECT_EQ(r.at(15), Resource());
  EXPECT_EQ(r.maxOver(0, 20), Resource(30, 3));
  r.subtract(0, 10, Resource(10, 1));
  r.subtract(5, 15, Resource(20, 2));
  EXPECT_TRUE(r.empty());
}

// Adjacent equal runs are merged, so the encoding stays canonical.
TEST(RleResourceTest, AdjacentEqualRunsCoalesce) {
  RleResource r;
  r.add(0, 5, Resource(1, 1));
  r.add(5, 10, Resource(1, 1));
  EXPECT_EQ(r.runCount(), 2u);  // start of [0,10) and its zero end
  auto segs = r.segments(-2, 12);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[1].start, 0);
  EXPECT_EQ(segs[1].end, 10);
}

// fill() writes the dense values of a range; eraseBefore keeps later values.
TEST(RleResourceTest, FillAndEraseBeforeKeepLaterValues) {
  RleResource r;
  r.add(2, 6, Resource(4, 4));
  std::vector<Resource> out(8);
  r.fill(0, 8, out, 0);
  EXPECT_EQ(out[1], Resource());
  EXPECT_EQ(out[2], Resource(4, 4));
  EXPECT_EQ(out[6], Resource());
  r.eraseBefore(4);
  EXPECT_EQ(r.at(3), Resource());
  EXPECT_EQ(r.at(4), Resource(4, 4));
  EXPECT_EQ(r.at(6), Resource());
}

}  // namespace
}  // namespace morpheus::planner
