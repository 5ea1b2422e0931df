// GrpcRequestCheck: each stream's message limit from its method and
// credentials (decoded from HPACK headers), checked on the gRPC length
// prefixes of its DATA, with HTTP/2 frames built by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/grpc_guard.h"

namespace morpheus {
namespace {

constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kPushPromise = 5, kContinuation = 9;
constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriority = 0x20;

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  size_t n = payload.size();
  f.push_back(static_cast<char>(n >> 16));
  f.push_back(static_cast<char>(n >> 8));
  f.push_back(static_cast<char>(n));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(stream >> shift));
  return f + payload;
}

// An HPACK integer with an N-bit prefix whose other bits are `high`.
std::string hpackInt(uint8_t high, int prefix_bits, uint64_t v) {
  std::string out;
  uint64_t max = (uint64_t{1} << prefix_bits) - 1;
  if (v < max) {
    out.push_back(static_cast<char>(high | v));
    return out;
  }
  out.push_back(static_cast<char>(high | max));
  v -= max;
  while (v >= 128) {
    out.push_back(static_cast<char>(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

std::string hpackString(const std::string& s) { return hpackInt(0, 7, s.size()) + s; }

// A literal field without indexing (new name), or with incremental indexing.
std::string literal(const std::string& name, const std::string& value, bool index = false) {
  return (index ? std::string(1, '\x40') : std::string(1, '\0')) + hpackString(name) +
         hpackString(value);
}

// A gRPC request header block: POST, http, :path (static name 4).
std::string requestBlock(const std::string& path, const std::string& extra = "") {
  return "\x83\x86" + hpackInt(0x00, 4, 4) + hpackString(path) +
         literal("content-type", "application/grpc") + extra;
}

std::string headers(uint32_t stream, const std::string& block, uint8_t flags = kEndHeaders) {
  return frame(kHeaders, flags, stream, block);
}

// A gRPC message prefix announcing `len` bytes, and `body` bytes of it.
std::string message(uint32_t len, const std::string& body = "") {
  std::string m(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) m.push_back(static_cast<char>(len >> shift));
  return m + body;
}

bool feed(GrpcRequestCheck& c, const std::string& bytes) {
  return c.fromClient(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

GrpcGuardOptions options() {
  GrpcGuardOptions o;
  o.max_message_bytes = 16 << 20;
  o.default_method_bytes = 1 << 20;
  o.max_unauthenticated_bytes = 64 << 10;
  o.methods["/pkg.Svc/Big"] = {16 << 20, GrpcCredentials::kMetadata};
  o.methods["/pkg.Svc/Tokened"] = {8 << 20, GrpcCredentials::kInMessage};
  o.methods["/pkg.Svc/Tiny"] = {100, GrpcCredentials::kMetadata};
  return o;
}

const std::string kAuth = literal("authorization", "Bearer good");

TEST(GrpcRequestCheckTest, AStreamsLimitComesFromItsMethodAndCredentials) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Small"))));
  ASSERT_TRUE(feed(c, headers(3, requestBlock("/pkg.Svc/Small", kAuth))));
  ASSERT_TRUE(feed(c, headers(5, requestBlock("/pkg.Svc/Big"))));
  ASSERT_TRUE(feed(c, headers(7, requestBlock("/pkg.Svc/Big", kAuth))));
  ASSERT_TRUE(feed(c, headers(9, requestBlock("/pkg.Svc/Tokened"))));
  ASSERT_TRUE(feed(c, headers(11, requestBlock("/pkg.Svc/Tiny"))));
  EXPECT_EQ(c.streamLimit(1), 64 << 10);  // default 1 MiB, no credentials
  EXPECT_EQ(c.streamLimit(3), 1 << 20);   // default
  EXPECT_EQ(c.streamLimit(5), 64 << 10);  // big method, no credentials
  EXPECT_EQ(c.streamLimit(7), 16 << 20);
  EXPECT_EQ(c.streamLimit(9), 8 << 20);  // its token is in the message
  EXPECT_EQ(c.streamLimit(11), 100);     // below the unauthenticated limit anyway
  EXPECT_EQ(c.trackedStreams(), 6u);
}

TEST(GrpcRequestCheckTest, AMethodLimitNeverExceedsTheReceiveLimit) {
  GrpcGuardOptions o = options();
  o.max_message_bytes = 2 << 20;
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Big", kAuth))));
  EXPECT_EQ(c.streamLimit(1), 2 << 20);
}

// The refusal comes with the length prefix, before any byte of the body.
TEST(GrpcRequestCheckTest, AnUnauthenticatedLargeMessageIsRefusedAtItsPrefix) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Big"))));
  EXPECT_FALSE(feed(c, frame(kData, 0, 1, message(1 << 20))));
  EXPECT_STREQ(c.reason(), "unauthenticated");
  EXPECT_NE(c.error().find("/pkg.Svc/Big"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("grpc.max-unauthenticated-message-bytes"), std::string::npos);
  EXPECT_FALSE(feed(c, frame(kData, 0, 1, "x")));  // stays refused
}

TEST(GrpcRequestCheckTest, AnAuthenticatedMessageOverItsMethodsLimitIsRefused) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Small", kAuth))));
  ASSERT_TRUE(feed(c, frame(kData, 0, 1, message(1 << 20))));  // exactly the limit
  ASSERT_TRUE(feed(c, headers(3, requestBlock("/pkg.Svc/Small", kAuth))));
  EXPECT_FALSE(feed(c, frame(kData, 0, 3, message((1 << 20) + 1))));
  EXPECT_STREQ(c.reason(), "message-size");
}

TEST(GrpcRequestCheckTest, TheAuthenticatorJudgesTheToken) {
  GrpcGuardOptions o = options();
  o.authenticates = [](const std::string* v) { return v != nullptr && *v == "Bearer good"; };
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Big", kAuth))));
  ASSERT_TRUE(
      feed(c, headers(3, requestBlock("/pkg.Svc/Big", literal("authorization", "Bearer bad")))));
  EXPECT_EQ(c.streamLimit(1), 16 << 20);
  EXPECT_EQ(c.streamLimit(3), 64 << 10);
  // An open daemon accepts a call without a token.
  o.authenticates = [](const std::string*) { return true; };
  GrpcRequestCheck open(o);
  ASSERT_TRUE(feed(open, headers(1, requestBlock("/pkg.Svc/Big"))));
  EXPECT_EQ(open.streamLimit(1), 16 << 20);
}

// Messages across frames, several in one frame, two streams interleaved, each
// with its own limit; padding is not message bytes.
TEST(GrpcRequestCheckTest, MessagesAreFollowedPerStreamAcrossFrames) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Tiny"))));
  ASSERT_TRUE(feed(c, headers(3, requestBlock("/pkg.Svc/Big", kAuth))));
  std::string big = message(200000, std::string(1000, 'b'));
  ASSERT_TRUE(feed(c, frame(kData, 0, 3, big)));
  ASSERT_TRUE(feed(c, frame(kData, 0, 1, message(100, std::string(100, 't')) + message(50, ""))));
  // The rest of stream 3's message: its body bytes look like huge prefixes
  // ("bbbb"), which must not be read as one.
  ASSERT_TRUE(feed(c, frame(kData, 0, 3, std::string(199000, 'b'))));
  // Stream 1's second message arrives split, then padded.
  std::string padded =
      std::string(1, '\x04') + std::string(50, 't') + message(10) + std::string(4, '\0');
  ASSERT_TRUE(feed(c, frame(kData, kPadded, 1, padded)));
  // Stream 1's third message is over its 100 bytes: its prefix is split over
  // two frames.
  ASSERT_TRUE(feed(c, frame(kData, 0, 1, std::string(10, 't') + std::string("\0\0", 2))));
  EXPECT_FALSE(feed(c, frame(kData, 0, 1, std::string("\0\0\x65", 3))));
  EXPECT_STREQ(c.reason(), "message-size");
}

TEST(GrpcRequestCheckTest, ByteByByteFeedingGivesTheSameAnswer) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  std::string bytes = headers(1, requestBlock("/pkg.Svc/Big", kAuth)) +
                      frame(kData, 0, 1, message(3, "abc")) +
                      headers(3, requestBlock("/pkg.Svc/Big")) + frame(kData, 0, 3, message(70000));
  size_t i = 0;
  for (; i < bytes.size(); i++) {
    if (!c.fromClient(reinterpret_cast<const uint8_t*>(bytes.data()) + i, 1)) break;
  }
  EXPECT_EQ(i, bytes.size() - 1);  // refused at the prefix's last byte
  EXPECT_STREQ(c.reason(), "unauthenticated");
}

// A header block in HEADERS (padded, with priority) + CONTINUATION, and a
// dynamic-table entry of one stream reused by the next (as gRPC clients do
// with "authorization").
TEST(GrpcRequestCheckTest, HeaderBlocksSpanContinuationsAndShareTheTable) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  std::string block = requestBlock("/pkg.Svc/Big", literal("authorization", "Bearer good", true));
  std::string first =
      std::string("\x03", 1) + std::string("\x00\x00\x00\x00\x10", 5) + block.substr(0, 7) + "xyz";
  ASSERT_TRUE(feed(c, frame(kHeaders, kPadded | kPriority, 1, first)));
  ASSERT_TRUE(feed(c, frame(kContinuation, 0, 1, block.substr(7, 5))));
  EXPECT_EQ(c.streamLimit(1), -1);  // not decoded before END_HEADERS
  ASSERT_TRUE(feed(c, frame(kContinuation, kEndHeaders, 1, block.substr(12))));
  EXPECT_EQ(c.streamLimit(1), 16 << 20);
  // Stream 3 refers to the stored authorization field by index 62.
  ASSERT_TRUE(feed(c, headers(3, requestBlock("/pkg.Svc/Big", "\xbe"))));
  EXPECT_EQ(c.streamLimit(3), 16 << 20);
}

TEST(GrpcRequestCheckTest, StreamsEndWithEndStreamOrAReset) {
  GrpcGuardOptions o = options();
  GrpcRequestCheck c(o);
  ASSERT_TRUE(feed(c, headers(1, requestBlock("/pkg.Svc/Big"))));
  ASSERT_TRUE(feed(c, headers(3, requestBlock("/pkg.Svc/Big"))));
  ASSERT_TRUE(feed(c, headers(5, requestBlock("/pkg.Svc/Big"))));
  ASSERT_TRUE(feed(c, headers(7, requestBlock("/pkg.Svc/Big"), kEndHeaders | kEndStream)));
  EXPECT_EQ(c.trackedStreams(), 3u);  // 7 sent no message
  ASSERT_TRUE(feed(c, frame(kData, kEndStream, 1, message(3, "abc"))));
  ASSERT_TRUE(feed(c, frame(kRstStream, 0, 3, std::string(4, '\0'))));
  EXPECT_EQ(c.trackedStreams(), 1u);
  std::string rst = frame(kRstStream, 0, 5, std::string(4, '\0'));
  std::string settings = frame(4, 0, 0, "");
  std::string from_server = settings + frame(kData, 0, 5, "abc") + rst;
  c.fromServer(reinterpret_cast<const uint8_t*>(from_server.data()), 10);  // split anywhere
  c.fromServer(reinterpret_cast<const uint8_t*>(from_server.data()) + 10, from_server.size() - 10);
  EXPECT_EQ(c.trackedStreams(), 0u);
  // DATA of a closed stream is gRPC's to discard, not a message to check.
  EXPECT_TRUE(feed(c, frame(kData, 0, 5, message(1 << 30))));
}

TEST(GrpcRequestCheckTest, MalformedFramingOrCompressionClosesTheConnection) {
  GrpcGuardOptions o = options();
  auto refused = [&](const std::string& bytes) {
    GrpcRequestCheck c(o);
    bool ok = feed(c, bytes);
    return !ok && std::string(c.reason()) == "http2";
  };
  EXPECT_TRUE(refused(frame(kContinuation, kEndHeaders, 1, "\x82")));
  EXPECT_TRUE(refused(frame(kHeaders, 0, 1, "\x82") + frame(kData, 0, 1, "")));
  EXPECT_TRUE(refused(frame(kHeaders, 0, 1, "\x82") + frame(kContinuation, 0, 3, "\x82")));
  EXPECT_TRUE(refused(headers(1, "\x80")));  // HPACK index 0
  EXPECT_TRUE(refused(headers(0, "\x82")));
  EXPECT_TRUE(refused(frame(kPushPromise, kEndHeaders, 1, std::string(4, '\0'))));
  EXPECT_TRUE(refused(frame(kHeaders, 0, 1, std::string(70000, '\x82'))));
  EXPECT_TRUE(refused(frame(kHeaders, kPadded | kEndHeaders, 1, "\x05\x82")));
  EXPECT_FALSE(refused(headers(1, "\x82")));
}

}  // namespace
}  // namespace morpheus
