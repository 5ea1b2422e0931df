// The HPACK decoder against RFC 7541 Appendix C (every example, the dynamic
// table checked after each block) and its error cases.
#include "common/hpack.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace morpheus {
namespace {

std::vector<uint8_t> hex(const std::string& text) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

using Fields = std::vector<HpackField>;
// The dynamic table as (name, value, size) from newest to oldest.
using Table = std::vector<std::tuple<std::string, std::string, size_t>>;

Table tableOf(const HpackDecoder& d) {
  Table t;
  for (size_t i = 0; i < d.tableEntries(); i++) {
    const auto& e = d.tableEntry(i);
    t.emplace_back(e.name, e.value, e.name.size() + e.value.size() + 32);
  }
  return t;
}

Fields decodeOk(HpackDecoder& d, const std::string& block) {
  auto bytes = hex(block);
  auto r = d.decode(bytes.data(), bytes.size());
  EXPECT_TRUE(r.isOk()) << block << ": " << r.status().message();
  return r.isOk() ? std::move(r).value() : Fields{};
}

Status decodeError(const std::string& block, size_t table = 4096) {
  HpackDecoder d(table);
  auto bytes = hex(block);
  auto r = d.decode(bytes.data(), bytes.size());
  return r.isOk() ? Status::ok() : r.status();
}

// C.1: integers with 5- and 8-bit prefixes (through a size update and an
// indexed field, the two representations whose whole first octet is the
// integer's prefix).
TEST(HpackDecoderTest, IntegerRepresentationsOfC1) {
  HpackDecoder d(4096);
  decodeOk(d, "3f e1 1f");  // size update to 4096: 31 + 0x61 + (0x1f << 7)
  EXPECT_EQ(d.tableCapacity(), 4096u);
  decodeOk(d, "2a");  // 10 with a 5-bit prefix
  EXPECT_EQ(d.tableCapacity(), 10u);
  HpackDecoder big(2000);
  decodeOk(big, "3f 9a 0a");  // 1337 with a 5-bit prefix (C.1.2): 31 + 26 + (10 << 7)
  EXPECT_EQ(big.tableCapacity(), 1337u);
}

// C.2: one block of each literal representation and an indexed field.
TEST(HpackDecoderTest, FieldRepresentationsOfC2) {
  {
    HpackDecoder d;
    EXPECT_EQ(decodeOk(d, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
              (Fields{{"custom-key", "custom-header"}}));
    EXPECT_EQ(tableOf(d), (Table{{"custom-key", "custom-header", 55}}));
    EXPECT_EQ(d.tableSize(), 55u);
  }
  {
    HpackDecoder d;
    EXPECT_EQ(decodeOk(d, "040c 2f73 616d 706c 652f 7061 7468"),
              (Fields{{":path", "/sample/path"}}));
    EXPECT_EQ(d.tableEntries(), 0u);
  }
  {
    HpackDecoder d;
    EXPECT_EQ(decodeOk(d, "1008 7061 7373 776f 7264 0673 6563 7265 74"),
              (Fields{{"password", "secret"}}));
    EXPECT_EQ(d.tableEntries(), 0u);
  }
  {
    HpackDecoder d;
    EXPECT_EQ(decodeOk(d, "82"), (Fields{{":method", "GET"}}));
    EXPECT_EQ(d.tableEntries(), 0u);
  }
}

const Fields kRequest1 = {
    {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}};
const Fields kRequest2 = {{":method", "GET"},
                          {":scheme", "http"},
                          {":path", "/"},
                          {":authority", "www.example.com"},
                          {"cache-control", "no-cache"}};
const Fields kRequest3 = {{":method", "GET"},
                          {":scheme", "https"},
                          {":path", "/index.html"},
                          {":authority", "www.example.com"},
                          {"custom-key", "custom-value"}};
const Table kRequestTable1 = {{":authority", "www.example.com", 57}};
const Table kRequestTable2 = {{"cache-control", "no-cache", 53},
                              {":authority", "www.example.com", 57}};
const Table kRequestTable3 = {{"custom-key", "custom-value", 54},
                              {"cache-control", "no-cache", 53},
                              {":authority", "www.example.com", 57}};

// C.3 (raw literals) and C.4 (Huffman): three requests on one connection.
TEST(HpackDecoderTest, RequestsOfC3AndC4ShareTheDynamicTable) {
  for (const auto& blocks :
       {std::vector<std::string>{
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"},
        std::vector<std::string>{"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                                 "8286 84be 5886 a8eb 1064 9cbf",
                                 "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"}}) {
    HpackDecoder d;
    EXPECT_EQ(decodeOk(d, blocks[0]), kRequest1);
    EXPECT_EQ(tableOf(d), kRequestTable1);
    EXPECT_EQ(decodeOk(d, blocks[1]), kRequest2);
    EXPECT_EQ(tableOf(d), kRequestTable2);
    EXPECT_EQ(decodeOk(d, blocks[2]), kRequest3);
    EXPECT_EQ(tableOf(d), kRequestTable3);
    EXPECT_EQ(d.tableSize(), 164u);
  }
}

// C.5 (raw) and C.6 (Huffman): three responses with a 256-octet table, so
// entries are evicted.
TEST(HpackDecoderTest, ResponsesOfC5AndC6EvictFromA256OctetTable) {
  const std::string date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
  const std::string date2 = "Mon, 21 Oct 2013 20:13:22 GMT";
  const std::string cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
  const Fields r1 = {{":status", "302"},
                     {"cache-control", "private"},
                     {"date", date1},
                     {"location", "https://www.example.com"}};
  Fields r2 = r1;
  r2[0].value = "307";
  const Fields r3 = {{":status", "200"},
                     {"cache-control", "private"},
                     {"date", date2},
                     {"location", "https://www.example.com"},
                     {"content-encoding", "gzip"},
                     {"set-cookie", cookie}};
  const Table t1 = {{"location", "https://www.example.com", 63},
                    {"date", date1, 65},
                    {"cache-control", "private", 52},
                    {":status", "302", 42}};
  const Table t2 = {{":status", "307", 42},
                    {"location", "https://www.example.com", 63},
                    {"date", date1, 65},
                    {"cache-control", "private", 52}};
  const Table t3 = {
      {"set-cookie", cookie, 98}, {"content-encoding", "gzip", 52}, {"date", date2, 65}};
  for (const auto& blocks :
       {std::vector<std::string>{
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 "
            "2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 "
            "6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d "
            "54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 "
            "5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e "
            "3d31"},
        std::vector<std::string>{
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 "
            "2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab "
            "77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f "
            "9587 3160 65c0 03ed 4ee5 b106 3d50 07"}}) {
    HpackDecoder d(256);
    EXPECT_EQ(decodeOk(d, blocks[0]), r1);
    EXPECT_EQ(tableOf(d), t1);
    EXPECT_EQ(d.tableSize(), 222u);
    EXPECT_EQ(decodeOk(d, blocks[1]), r2);
    EXPECT_EQ(tableOf(d), t2);
    EXPECT_EQ(d.tableSize(), 222u);
    EXPECT_EQ(decodeOk(d, blocks[2]), r3);
    EXPECT_EQ(tableOf(d), t3);
    EXPECT_EQ(d.tableSize(), 215u);
  }
}

// Codes of Appendix B decode to their symbols: the shortest, a long one and
// symbol 0, each padded with ones.
TEST(HpackDecoderTest, HuffmanCodesOfAppendixB) {
  auto one = [](uint64_t code, int bits) {
    // Left-align the code and pad it with ones to whole octets.
    int total = (bits + 7) / 8 * 8;
    uint64_t v = (code << (total - bits)) | ((uint64_t{1} << (total - bits)) - 1);
    std::vector<uint8_t> out;
    for (int i = total - 8; i >= 0; i -= 8) out.push_back(static_cast<uint8_t>(v >> i));
    return HpackDecoder::decodeHuffman(out.data(), out.size());
  };
  EXPECT_EQ(*one(0x0, 5), "0");
  EXPECT_EQ(*one(0x3, 5), "a");
  EXPECT_EQ(*one(0x1ff8, 13), std::string(1, '\0'));
  EXPECT_EQ(*one(0x7fff0, 19), "\\");
  EXPECT_EQ(*one(0xfffffe2, 28), "\x02");
  EXPECT_EQ(*one(0x3ffffffc, 30), "\n");
  EXPECT_EQ(*one(0x3ffffee, 26), "\xff");
  EXPECT_EQ(*one(0xfffe6, 20), "\x80");
  EXPECT_FALSE(one(0x3fffffff, 30).isOk());  // EOS inside the string
}

TEST(HpackDecoderTest, InvalidHuffmanPaddingIsAnError) {
  // 'a' (00011) then 3 bits of padding that are not all ones.
  uint8_t zero_pad[] = {0x18};
  EXPECT_FALSE(HpackDecoder::decodeHuffman(zero_pad, 1).isOk());
  // 'a' then 11 padding bits of ones: longer than 7 bits.
  uint8_t long_pad[] = {0x1f, 0xff};
  EXPECT_FALSE(HpackDecoder::decodeHuffman(long_pad, 2).isOk());
  uint8_t ok_pad[] = {0x1f};
  EXPECT_EQ(*HpackDecoder::decodeHuffman(ok_pad, 1), "a");
  EXPECT_EQ(*HpackDecoder::decodeHuffman(nullptr, 0), "");
}

TEST(HpackDecoderTest, MalformedBlocksAreCompressionErrors) {
  EXPECT_FALSE(decodeError("80").isOk());                 // index 0
  EXPECT_FALSE(decodeError("be").isOk());                 // index 62 with an empty table
  EXPECT_FALSE(decodeError("3fe21f").isOk());             // size update 4097 > 4096
  EXPECT_FALSE(decodeError("400a6375").isOk());           // name shorter than its length
  EXPECT_FALSE(decodeError("41").isOk());                 // no value
  EXPECT_FALSE(decodeError("ff ff ff ff ff 0f").isOk());  // integer overflow
  EXPECT_FALSE(decodeError("ff").isOk());                 // integer cut off
  EXPECT_FALSE(decodeError("82 20").isOk());              // size update after a field
  EXPECT_FALSE(decodeError("7f 20 80").isOk());  // name index 63 + 32 = 95, past the tables
  EXPECT_TRUE(decodeError("20 82").isOk());      // size update first: fine
  EXPECT_TRUE(decodeError("").isOk());
}

TEST(HpackDecoderTest, AnErrorLeavesTheDecoderFailed) {
  HpackDecoder d;
  auto bad = hex("80");
  EXPECT_FALSE(d.decode(bad.data(), bad.size()).isOk());
  auto good = hex("82");
  auto r = d.decode(good.data(), good.size());
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("HPACK"), std::string::npos);
}

TEST(HpackDecoderTest, SizeUpdatesEvictAndBoundTheTable) {
  HpackDecoder d;
  decodeOk(d, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
  EXPECT_EQ(d.tableEntries(), 1u);
  decodeOk(d, "20");  // size 0: evicts everything
  EXPECT_EQ(d.tableEntries(), 0u);
  EXPECT_EQ(d.tableSize(), 0u);
  // With capacity 0 an indexed literal is decoded but never stored (§4.4).
  EXPECT_EQ(decodeOk(d, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
            (Fields{{"custom-key", "custom-header"}}));
  EXPECT_EQ(d.tableEntries(), 0u);
  decodeOk(d, "3f e1 1f");  // back to 4096
  // Many inserts never take the table over its capacity.
  for (int i = 0; i < 200; i++) {
    decodeOk(d, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    EXPECT_LE(d.tableSize(), 4096u);
  }
  EXPECT_EQ(d.tableEntries(), 4096u / 55);
}

TEST(HpackDecoderTest, HeaderListOverTheCapIsAnError) {
  HpackDecoder d(4096, 100);
  // Two fields of 55 octets each (as counted by §4.1): 110 > 100.
  std::string field = "000a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572";
  decodeOk(d, field);
  auto bytes = hex(field + field);
  EXPECT_FALSE(d.decode(bytes.data(), bytes.size()).isOk());
}

}  // namespace
}  // namespace morpheus
