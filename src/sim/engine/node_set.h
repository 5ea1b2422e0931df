// A set of dense node indices [0, size) as a bitset, for scale:
// morpheus-sim's free and dirty node sets. It replaces std::set<int>, whose
// per-insert allocation and tree walk led the simulator's own share of the
// profile at thousands of nodes.
//
// Contract: the same answers as an ordered std::set<int> over the same
// operations — first() is the smallest member, next(n) the smallest member
// > n — so the simulator visits nodes in the same order and its decisions do
// not change (summary.json byte-identical for seeds 1-3, README
// "morpheus-sim"). insert/erase are O(1); first/next scan 64 nodes per word
// from a low-water mark (no member lies below `low_`), so a sparse set at
// 50,000 nodes costs at most ~800 word tests per full walk.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace morpheus::sim {

class NodeSet {
 public:
  static constexpr int kNone = -1;

  explicit NodeSet(size_t size = 0) : words_((size + 63) / 64, 0), low_(words_.size()) {}

  void resize(size_t size) {
    words_.assign((size + 63) / 64, 0);
    low_ = words_.size();
    count_ = 0;
  }

  bool empty() const { return count_ == 0; }
  size_t count() const { return count_; }

  bool contains(int n) const { return (words_[word(n)] >> bit(n)) & 1U; }

  void insert(int n) {
    uint64_t& w = words_[word(n)];
    const uint64_t m = uint64_t{1} << bit(n);
    if ((w & m) != 0) return;
    w |= m;
    count_++;
    if (word(n) < low_) low_ = word(n);
  }

  void erase(int n) {
    uint64_t& w = words_[word(n)];
    const uint64_t m = uint64_t{1} << bit(n);
    if ((w & m) == 0) return;
    w &= ~m;
    count_--;
  }

  // The smallest member, or kNone.
  int first() {
    if (count_ == 0) return kNone;
    while (low_ < words_.size() && words_[low_] == 0) low_++;
    return scanFrom(low_, 0);
  }

  // The smallest member > n, or kNone.
  int next(int n) const {
    const size_t b = static_cast<size_t>(n) + 1;
    return scanFrom(b / 64, static_cast<unsigned>(b % 64));
  }

  // Removes and returns the smallest member (kNone when empty).
  int popFirst() {
    const int n = first();
    if (n != kNone) erase(n);
    return n;
  }

 private:
  static size_t word(int n) { return static_cast<size_t>(n) / 64; }
  static unsigned bit(int n) { return static_cast<unsigned>(n) % 64; }

  int scanFrom(size_t w, unsigned from_bit) const {
    if (w >= words_.size()) return kNone;
    uint64_t cur = from_bit >= 64 ? 0 : words_[w] & (~uint64_t{0} << from_bit);
    while (cur == 0) {
      if (++w >= words_.size()) return kNone;
      cur = words_[w];
    }
    return static_cast<int>(w * 64 + static_cast<size_t>(std::countr_zero(cur)));
  }

  std::vector<uint64_t> words_;
  size_t low_;  // no member in a word below this one
  size_t count_ = 0;
};

}  // namespace morpheus::sim
