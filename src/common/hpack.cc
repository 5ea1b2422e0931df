#include "common/hpack.h"

#include <array>

namespace morpheus {

namespace {

// RFC 7541 Appendix A.
constexpr std::array<std::pair<const char*, const char*>, 61> kStaticTable = {{
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
}};

// The code length of each symbol of RFC 7541 Appendix B (0-255, then EOS).
// The code is canonical: sorted by (length, symbol), each code is the
// previous one plus one, shifted left by the growth in length; so the lengths
// alone define it (the unit test checks codes of the appendix against it).
constexpr std::array<uint8_t, 257> kHuffmanLengths = {
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,  // 0x00
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,  // 0x10
    6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11, 8,  6,  6,  6,   // 0x20
    5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10,  // 0x30
    13, 6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,   // 0x40
    7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8,  13, 19, 13, 14, 6,   // 0x50
    15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,   // 0x60
    6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7,  15, 11, 14, 13, 28,  // 0x70
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,  // 0x80
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,  // 0x90
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,  // 0xa0
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,  // 0xb0
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,  // 0xc0
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,  // 0xd0
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,  // 0xe0
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,  // 0xf0
    30,                                                              // EOS
};
constexpr int kMaxCodeLength = 30;
constexpr int kEos = 256;

// Canonical decoding tables: how many codes each length has, and the symbols
// sorted by (length, symbol).
struct HuffmanTables {
  std::array<int, kMaxCodeLength + 1> count{};
  std::array<int, 257> symbols{};
  HuffmanTables() {
    for (uint8_t len : kHuffmanLengths) count[len]++;
    std::array<int, kMaxCodeLength + 2> offset{};
    for (int len = 1; len <= kMaxCodeLength; len++) offset[len + 1] = offset[len] + count[len];
    for (int s = 0; s < 257; s++) symbols[offset[kHuffmanLengths[s]]++] = s;
  }
};

const HuffmanTables& huffman() {
  static const HuffmanTables tables;
  return tables;
}

// Reads an integer with an N-bit prefix (RFC 7541 §5.1) at *p; false when the
// block ends first or the value exceeds 2^32 - 1 (nothing in a header block
// is that large).
bool readInt(const uint8_t*& p, const uint8_t* end, int prefix_bits, uint64_t* out) {
  if (p >= end) return false;
  uint64_t mask = (uint64_t{1} << prefix_bits) - 1;
  uint64_t v = *p++ & mask;
  if (v < mask) {
    *out = v;
    return true;
  }
  for (int shift = 0;; shift += 7) {
    if (p >= end || shift > 28) return false;
    uint8_t b = *p++;
    v += uint64_t{b & 0x7fu} << shift;
    if (v > UINT32_MAX) return false;
    if ((b & 0x80) == 0) break;
  }
  *out = v;
  return true;
}

}  // namespace

Result<std::string> HpackDecoder::decodeHuffman(const uint8_t* data, size_t size) {
  const HuffmanTables& h = huffman();
  std::string out;
  out.reserve(size + size / 2);
  // puff-style canonical decoding: `code` holds the bits of the symbol being
  // read; `first` is the first code of length `len`, `index` the position of
  // that length's symbols.
  int code = 0, first = 0, index = 0, len = 0;
  bool all_ones = true;  // the bits of the symbol being read, for the padding rule
  for (size_t i = 0; i < size; i++) {
    for (int bit = 7; bit >= 0; bit--) {
      int b = (data[i] >> bit) & 1;
      code |= b;
      all_ones = all_ones && b == 1;
      len++;
      int count = h.count[len];
      if (code - count < first) {
        int sym = h.symbols[index + (code - first)];
        if (sym == kEos) {
          return Status(StatusCode::kInvalidArgument, "HPACK: EOS symbol in a Huffman string");
        }
        out.push_back(static_cast<char>(sym));
        code = first = index = len = 0;
        all_ones = true;
        continue;
      }
      if (len == kMaxCodeLength) {
        return Status(StatusCode::kInvalidArgument, "HPACK: invalid Huffman code");
      }
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
  }
  // §5.2: padding is at most 7 bits, the most significant bits of EOS (ones).
  if (len > 7 || !all_ones) {
    return Status(StatusCode::kInvalidArgument, "HPACK: invalid Huffman padding");
  }
  return out;
}

HpackDecoder::HpackDecoder(size_t max_table_size, size_t max_header_list_bytes)
    : max_table_size_(max_table_size),
      max_header_list_bytes_(max_header_list_bytes),
      capacity_(max_table_size) {}

Status HpackDecoder::fail(const std::string& what) {
  failed_ = true;
  return Status(StatusCode::kInvalidArgument, "HPACK: " + what);
}

void HpackDecoder::evictTo(size_t limit) {
  while (table_size_ > limit && !table_.empty()) {
    const HpackField& old = table_.back();
    table_size_ -= old.name.size() + old.value.size() + kEntryOverhead;
    table_.pop_back();
  }
}

void HpackDecoder::insert(HpackField field) {
  size_t size = field.name.size() + field.value.size() + kEntryOverhead;
  if (size > capacity_) {  // §4.4: empties the table, not an error
    evictTo(0);
    return;
  }
  evictTo(capacity_ - size);
  table_size_ += size;
  table_.push_front(std::move(field));
}

Result<std::vector<HpackField>> HpackDecoder::decode(const uint8_t* data, size_t size) {
  if (failed_) return fail("the connection's header compression state is lost");
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  std::vector<HpackField> fields;
  size_t list_bytes = 0;
  auto lookup = [&](uint64_t index, HpackField* out) {
    if (index == 0) return false;
    if (index <= kStaticTable.size()) {
      *out = {kStaticTable[index - 1].first, kStaticTable[index - 1].second};
      return true;
    }
    uint64_t d = index - kStaticTable.size() - 1;
    if (d >= table_.size()) return false;
    *out = table_[d];
    return true;
  };
  auto readString = [&](std::string* out) -> Status {
    if (p >= end) return fail("truncated string literal");
    bool coded = (*p & 0x80) != 0;
    uint64_t len = 0;
    if (!readInt(p, end, 7, &len)) return fail("invalid string length");
    if (len > static_cast<uint64_t>(end - p)) return fail("string literal past the block's end");
    if (coded) {
      auto s = decodeHuffman(p, len);
      if (!s.isOk()) {
        failed_ = true;
        return s.status();
      }
      *out = std::move(s).value();
    } else {
      out->assign(reinterpret_cast<const char*>(p), len);
    }
    p += len;
    return Status::ok();
  };
  while (p < end) {
    uint8_t b = *p;
    HpackField field;
    if (b & 0x80) {  // §6.1 indexed field
      uint64_t index = 0;
      if (!readInt(p, end, 7, &index)) return fail("invalid index");
      if (!lookup(index, &field))
        return fail("index " + std::to_string(index) + " not in the table");
    } else if ((b & 0xe0) == 0x20) {  // §6.3 dynamic table size update
      if (!fields.empty()) return fail("table size update after a header field");
      uint64_t cap = 0;
      if (!readInt(p, end, 5, &cap)) return fail("invalid table size update");
      if (cap > max_table_size_) {
        return fail("table size " + std::to_string(cap) + " above the advertised " +
                    std::to_string(max_table_size_));
      }
      capacity_ = static_cast<size_t>(cap);
      evictTo(capacity_);
      continue;
    } else {  // §6.2 literal: with incremental indexing, without, never indexed
      bool indexing = (b & 0xc0) == 0x40;
      uint64_t index = 0;
      if (!readInt(p, end, indexing ? 6 : 4, &index)) return fail("invalid name index");
      if (index == 0) {
        MORPHEUS_RETURN_IF_ERROR(readString(&field.name));
      } else {
        HpackField named;
        if (!lookup(index, &named)) {
          return fail("name index " + std::to_string(index) + " not in the table");
        }
        field.name = std::move(named.name);
      }
      MORPHEUS_RETURN_IF_ERROR(readString(&field.value));
      if (indexing) insert(field);
    }
    list_bytes += field.name.size() + field.value.size() + kEntryOverhead;
    if (list_bytes > max_header_list_bytes_) {
      return fail("header list larger than " + std::to_string(max_header_list_bytes_) + " bytes");
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

}  // namespace morpheus
