// HPACK (RFC 7541) header-block decoder: the header compression of HTTP/2.
//
// Why: the gRPC connection guard (grpc_guard.h) needs the method (":path")
// and whether a call carries credentials ("authorization") of every stream a
// plaintext client opens, before gRPC buffers the call's message. HTTP/2
// sends them HPACK-compressed, with state shared by every header block of
// the connection, so every block must be decoded in order.
//
// Contract:
//  - One decoder per connection and direction (the guard: client to server).
//    decode() takes one complete header block (a HEADERS frame's fragment
//    plus its CONTINUATIONs, padding and priority removed) and returns its
//    fields in order.
//  - Complete RFC 7541: the static table (Appendix A), the dynamic table with
//    eviction (§4) and size updates (§6.3; only at the start of a block, and
//    at most `max_table_size`, the SETTINGS_HEADER_TABLE_SIZE the decoding
//    side advertised), integers of any prefix (§5.1), string literals raw or
//    Huffman-coded (§5.2, Appendix B; padding longer than 7 bits, padding
//    that is not the EOS prefix, or an EOS symbol are errors), and every
//    field representation (indexed, literal with incremental indexing,
//    without indexing, never indexed).
//  - Memory is bounded: the dynamic table holds at most `max_table_size`
//    octets as RFC 7541 counts them (name + value + 32 per entry), and a
//    block whose decoded header list (the same count, RFC 9113 §6.5.2)
//    exceeds `max_header_list_bytes` is an error.
//  - Any error is a compression error (INVALID_ARGUMENT "HPACK: ..."): the
//    decoder's state no longer matches the encoder's, so the connection must
//    be closed (RFC 9113 §4.3). Later calls keep failing.
// Thread-safety: none; one connection's thread uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/status.h"

namespace morpheus {

struct HpackField {
  std::string name;
  std::string value;
  bool operator==(const HpackField& o) const { return name == o.name && value == o.value; }
};

class HpackDecoder {
 public:
  // RFC 7541 §4.1: an entry's size is its name's and value's octets plus 32.
  static constexpr size_t kEntryOverhead = 32;
  // gRPC's (and HTTP/2's) default SETTINGS_HEADER_TABLE_SIZE.
  static constexpr size_t kDefaultTableSize = 4096;

  explicit HpackDecoder(size_t max_table_size = kDefaultTableSize,
                        size_t max_header_list_bytes = 64 * 1024);

  Result<std::vector<HpackField>> decode(const uint8_t* data, size_t size);

  // The dynamic table: its size in octets (§4.1), the limit the last size
  // update set, and its entries, 0 the newest (dynamic index 62 of §2.3.3).
  size_t tableSize() const { return table_size_; }
  size_t tableCapacity() const { return capacity_; }
  size_t tableEntries() const { return table_.size(); }
  const HpackField& tableEntry(size_t i) const { return table_[i]; }

  // A Huffman-coded string literal (Appendix B), or INVALID_ARGUMENT.
  static Result<std::string> decodeHuffman(const uint8_t* data, size_t size);

 private:
  Status fail(const std::string& what);
  void insert(HpackField field);
  void evictTo(size_t limit);

  size_t max_table_size_;
  size_t max_header_list_bytes_;
  size_t capacity_;
  size_t table_size_ = 0;
  std::deque<HpackField> table_;  // front = newest
  bool failed_ = false;
};

}  // namespace morpheus
