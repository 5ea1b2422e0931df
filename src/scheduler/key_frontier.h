// The frontier of a best-first walk over a binary heap's array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace morpheus::sched {

// A min-heap of (key, index) pairs with the keys held inline: the frontier
// of a walk that visits a binary heap's entries in key order (an entry's
// children, at 2i+1 and 2i+2, join once it is passed over: passTopOf).
// Comparing inline keys reads no entry of the walked heap. An entry the
// walk would pass over without effect (`wanted` says no) never joins: its
// children are offered in its place at once (offer). `Key` needs a strict
// weak order (operator<); with a total order (no two keys equivalent) the
// order of tops does not depend on the layout.
template <typename Key>
class KeyFrontier {
 public:
  void clear() { v_.clear(); }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  // The least key's index and key. Not empty.
  uint32_t top() const { return v_.front().i; }
  const Key& topKey() const { return v_.front().key; }

  void push(const Key& k, uint32_t i) {
    size_t at = v_.size();
    v_.push_back({k, i});
    while (at > 0) {
      const size_t p = (at - 1) / 2;
      if (!(k < v_[p].key)) break;
      v_[at] = v_[p];
      at = p;
    }
    v_[at] = {k, i};
  }
  // Drops the top. Not empty.
  void pop() {
    const Item last = v_.back();
    v_.pop_back();
    if (!v_.empty()) siftDown(last);
  }
  // Drops the top and pushes (k, i): one sift. Not empty.
  void replaceTop(const Key& k, uint32_t i) { siftDown({k, i}); }

  // Starts a walk of `heap` (keyAt(size_t), size()): the frontier holds its
  // root, or what offer puts in its place. `wanted(i)`: whether the walk
  // must see entry i.
  template <typename Heap, typename Wanted>
  void startAt(const Heap& heap, Wanted wanted) {
    clear();
    bool hole = false;
    if (heap.size() > 0) offer(heap, 0, wanted, hole);
  }

  // Passes over the top, an entry of `heap`: its children are offered.
  // Not empty.
  template <typename Heap, typename Wanted>
  void passTopOf(const Heap& heap, Wanted wanted) {
    const size_t c = 2 * static_cast<size_t>(top()) + 1;
    bool hole = true;  // the top's place, taken by the first entry to join
    if (c < heap.size()) offer(heap, c, wanted, hole);
    if (c + 1 < heap.size()) offer(heap, c + 1, wanted, hole);
    if (hole) pop();
  }

 private:
  struct Item {
    Key key;
    uint32_t i;
  };
  // Entry `i` of `heap` joins the frontier if `wanted(i)` (in the top's
  // place while `hole`); else it is passed over at once and its children
  // are offered in its place. The entries the walk must see come in the
  // same order either way: each one not seen yet has itself or an ancestor
  // in the frontier, whose key is not above its own.
  template <typename Heap, typename Wanted>
  void offer(const Heap& heap, size_t i, Wanted wanted, bool& hole) {
    size_t stack[128];  // depth-first: at most two entries per level
    size_t depth = 0;
    stack[depth++] = i;
    while (depth > 0) {
      const size_t j = stack[--depth];
      if (wanted(j)) {
        if (hole) {
          replaceTop(heap.keyAt(j), static_cast<uint32_t>(j));
          hole = false;
        } else {
          push(heap.keyAt(j), static_cast<uint32_t>(j));
        }
        continue;
      }
      const size_t c = 2 * j + 1;
      if (c + 1 < heap.size()) stack[depth++] = c + 1;
      if (c < heap.size()) stack[depth++] = c;
    }
  }
  // Puts `it` at the root's place and sifts it down.
  void siftDown(const Item& it) {
    const size_t n = v_.size();
    size_t at = 0;
    for (;;) {
      size_t c = 2 * at + 1;
      if (c >= n) break;
      if (c + 1 < n && v_[c + 1].key < v_[c].key) c++;
      if (!(v_[c].key < it.key)) break;
      v_[at] = v_[c];
      at = c;
    }
    v_[at] = it;
  }
  std::vector<Item> v_;
};

}  // namespace morpheus::sched
