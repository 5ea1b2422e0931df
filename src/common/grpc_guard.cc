#include "common/grpc_guard.h"

#include "common/hpack.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

namespace morpheus {

namespace {

using Steady = std::chrono::steady_clock;

constexpr char kHttp2Preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kHttp2PrefaceLen = sizeof(kHttp2Preface) - 1;
constexpr uint8_t kTlsHandshakeRecord = 0x16;
// Bytes buffered per direction before the guard stops reading the sender.
constexpr size_t kMaxBuffered = 256 * 1024;
// Open streams tracked per connection by the message check; gRPC allows far
// fewer concurrently (GRPC_ARG_MAX_CONCURRENT_STREAMS), so more is an attack.
constexpr size_t kMaxTrackedStreams = 4096;

// HTTP/2 frame types (RFC 9113 §6) and flags the check looks at.
constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kPushPromise = 5, kContinuation = 9;
constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriority = 0x20;
// A header block (HEADERS + CONTINUATION payloads) larger than this closes
// the connection; gRPC refuses metadata far smaller (GRPC_ARG_MAX_METADATA_SIZE).
constexpr size_t kMaxHeaderBlock = 64 * 1024;
constexpr size_t kKeptBuffer = 4096;

// Walks frame headers of one direction; the payload is handed over in pieces.
struct FrameWalker {
  uint8_t hdr[9] = {};
  size_t have = 0;
  uint32_t left = 0;  // payload bytes still to come
  uint32_t length = 0;
  uint8_t type = 0, flags = 0;
  uint32_t stream = 0;

  // Consumes header bytes; true when a frame header is complete.
  bool header(const uint8_t*& p, size_t& n) {
    size_t k = std::min(n, size_t{9} - have);
    std::memcpy(hdr + have, p, k);
    have += k;
    p += k;
    n -= k;
    if (have < 9) return false;
    length = (uint32_t{hdr[0]} << 16) | (uint32_t{hdr[1]} << 8) | hdr[2];
    left = length;
    type = hdr[3];
    flags = hdr[4];
    stream =
        ((uint32_t{hdr[5]} << 24) | (uint32_t{hdr[6]} << 16) | (uint32_t{hdr[7]} << 8) | hdr[8]) &
        0x7fffffffu;
    return true;
  }
};

}  // namespace

struct GrpcRequestCheck::State {
  struct Stream {
    int64_t limit = 0;
    bool unauthenticated = false;  // the limit is grpc.max-unauthenticated-message-bytes
    std::string method;
    uint8_t prefix[5] = {};
    size_t have = 0;
    uint64_t body_left = 0;
  };
  FrameWalker in, out;
  bool pad_known = true;
  uint32_t data_left = 0;  // DATA bytes of the current frame before its padding
  std::string payload;     // the current HEADERS/CONTINUATION frame's payload
  std::string block;       // the header block being collected
  uint32_t block_stream = 0;
  uint8_t block_flags = 0;  // of the HEADERS frame that began it
  bool in_block = false;
  uint32_t last_stream = 0;  // highest stream id the client opened
  HpackDecoder hpack{HpackDecoder::kDefaultTableSize, kMaxHeaderBlock};
  std::unordered_map<uint32_t, Stream> streams;
  bool failed = false;
};

GrpcRequestCheck::GrpcRequestCheck(const GrpcGuardOptions& opts)
    : opts_(opts), s_(std::make_unique<State>()) {}

GrpcRequestCheck::~GrpcRequestCheck() = default;

size_t GrpcRequestCheck::trackedStreams() const { return s_->streams.size(); }

int64_t GrpcRequestCheck::streamLimit(uint32_t stream) const {
  auto it = s_->streams.find(stream);
  return it == s_->streams.end() ? -1 : it->second.limit;
}

void GrpcRequestCheck::fromServer(const uint8_t* p, size_t n) {
  FrameWalker& w = s_->out;
  while (n > 0) {
    if (w.have < 9) {
      if (!w.header(p, n)) return;
      if (w.type == kRstStream) s_->streams.erase(w.stream);
      if (w.left == 0) w.have = 0;
      continue;
    }
    size_t k = std::min<size_t>(n, w.left);
    p += k;
    n -= k;
    w.left -= static_cast<uint32_t>(k);
    if (w.left == 0) w.have = 0;
  }
}

bool GrpcRequestCheck::fromClient(const uint8_t* p, size_t n) {
  State& s = *s_;
  if (s.failed) return false;
  auto refuse = [&](const char* reason, std::string what) {
    s.failed = true;
    reason_ = reason;
    error_ = std::move(what);
    return false;
  };
  // A new stream's limit, from its decoded header list.
  auto openStream = [&](uint32_t id, const std::vector<HpackField>& fields) {
    const std::string* path = nullptr;
    const std::string* authorization = nullptr;
    for (const auto& f : fields) {
      if (f.name == ":path" && path == nullptr) path = &f.value;
      if (f.name == "authorization" && authorization == nullptr) authorization = &f.value;
    }
    State::Stream st;
    st.method = path ? *path : "";
    GrpcMethodLimit m{opts_.default_method_bytes, GrpcCredentials::kMetadata};
    if (auto it = opts_.methods.find(st.method); it != opts_.methods.end()) m = it->second;
    st.limit = std::min(m.max_message_bytes, opts_.max_message_bytes);
    if (m.credentials == GrpcCredentials::kMetadata && st.limit > opts_.max_unauthenticated_bytes) {
      bool known =
          opts_.authenticates ? opts_.authenticates(authorization) : authorization != nullptr;
      if (!known) {
        st.limit = opts_.max_unauthenticated_bytes;
        st.unauthenticated = true;
      }
    }
    s.streams[id] = std::move(st);
  };
  // A complete header block of s.block_stream.
  auto endBlock = [&]() {
    auto fields = s.hpack.decode(reinterpret_cast<const uint8_t*>(s.block.data()), s.block.size());
    s.block.clear();
    s.in_block = false;
    // An idle connection keeps no large buffer (a block may reach 64 KiB).
    if (s.block.capacity() > kKeptBuffer) std::string().swap(s.block);
    if (s.payload.capacity() > kKeptBuffer) std::string().swap(s.payload);
    if (!fields.isOk()) return refuse("http2", fields.status().message());
    uint32_t id = s.block_stream;
    bool ends = (s.block_flags & kEndStream) != 0;
    if (id > s.last_stream) {  // a new stream (an older id is trailers or a closed stream)
      s.last_stream = id;
      if (!ends) {
        if (s.streams.size() >= kMaxTrackedStreams) {
          return refuse("http2",
                        "more than " + std::to_string(kMaxTrackedStreams) + " open streams");
        }
        openStream(id, *fields);
      }
    } else if (ends) {
      s.streams.erase(id);
    }
    return true;
  };
  // The end of a HEADERS or CONTINUATION frame whose payload is in s.payload.
  auto endHeaderFrame = [&]() {
    FrameWalker& w = s.in;
    size_t from = 0, to = s.payload.size();
    if (w.type == kHeaders) {
      if (w.flags & kPadded) {
        if (to < 1) return refuse("http2", "invalid HEADERS padding");
        size_t pad = static_cast<uint8_t>(s.payload[0]);
        from = 1;
        if (pad > to - from) return refuse("http2", "invalid HEADERS padding");
        to -= pad;
      }
      if (w.flags & kPriority) {
        if (to - from < 5) return refuse("http2", "HEADERS too short for its priority");
        from += 5;
      }
    }
    if (s.block.size() + (to - from) > kMaxHeaderBlock) {
      return refuse("http2",
                    "a header block larger than " + std::to_string(kMaxHeaderBlock) + " bytes");
    }
    s.block.append(s.payload, from, to - from);
    s.payload.clear();
    if (w.flags & kEndHeaders) return endBlock();
    return true;
  };
  // A complete frame header of the client.
  auto startFrame = [&]() {
    FrameWalker& w = s.in;
    if (s.in_block && (w.type != kContinuation || w.stream != s.block_stream)) {
      return refuse("http2", "a header block interrupted by another frame");
    }
    switch (w.type) {
      case kHeaders:
        if (w.stream == 0) return refuse("http2", "HEADERS on stream 0");
        if (w.length > kMaxHeaderBlock) {
          return refuse("http2",
                        "a header block larger than " + std::to_string(kMaxHeaderBlock) + " bytes");
        }
        s.in_block = true;
        s.block_stream = w.stream;
        s.block_flags = w.flags;
        break;
      case kContinuation:
        if (!s.in_block) return refuse("http2", "CONTINUATION without HEADERS");
        if (w.length > kMaxHeaderBlock) {
          return refuse("http2",
                        "a header block larger than " + std::to_string(kMaxHeaderBlock) + " bytes");
        }
        break;
      case kPushPromise:
        return refuse("http2", "PUSH_PROMISE from a client");
      case kData:
        if (w.stream == 0) return refuse("http2", "DATA on stream 0");
        s.pad_known = (w.flags & kPadded) == 0;
        s.data_left = s.pad_known ? w.length : 0;
        break;
      case kRstStream:
        s.streams.erase(w.stream);
        break;
      default:
        break;
    }
    return true;
  };
  auto endFrame = [&]() {
    FrameWalker& w = s.in;
    bool ok = true;
    if (w.type == kHeaders || w.type == kContinuation) {
      ok = endHeaderFrame();
    } else if (w.type == kData && (w.flags & kEndStream)) {
      s.streams.erase(w.stream);
    }
    w.have = 0;
    return ok;
  };
  // DATA payload bytes of the current frame.
  auto dataBytes = [&](const uint8_t* d, size_t m) {
    FrameWalker& w = s.in;
    if (!s.pad_known && m > 0) {
      uint32_t pad = *d;
      if (pad + 1 > w.length) return refuse("http2", "invalid DATA padding");
      s.pad_known = true;
      s.data_left = w.length - 1 - pad;
      d++;
      m--;
    }
    size_t k = std::min<size_t>(m, s.data_left);
    s.data_left -= static_cast<uint32_t>(k);
    auto it = s.streams.find(w.stream);
    if (it == s.streams.end()) return true;  // not open: gRPC discards it
    State::Stream& st = it->second;
    while (k > 0) {
      if (st.body_left > 0) {
        size_t j = static_cast<size_t>(std::min<uint64_t>(st.body_left, k));
        st.body_left -= j;
        d += j;
        k -= j;
        continue;
      }
      st.prefix[st.have++] = *d++;
      k--;
      if (st.have == 5) {
        uint64_t len = (uint64_t{st.prefix[1]} << 24) | (uint64_t{st.prefix[2]} << 16) |
                       (uint64_t{st.prefix[3]} << 8) | st.prefix[4];
        if (static_cast<int64_t>(len) > st.limit) {
          std::string method = st.method.empty() ? "a call" : st.method;
          if (st.unauthenticated) {
            return refuse("unauthenticated", "a message of " + std::to_string(len) + " bytes to " +
                                                 method +
                                                 " without valid credentials exceeds "
                                                 "grpc.max-unauthenticated-message-bytes " +
                                                 std::to_string(st.limit));
          }
          return refuse("message-size", "a message of " + std::to_string(len) + " bytes to " +
                                            method + " exceeds its limit of " +
                                            std::to_string(st.limit) + " bytes");
        }
        st.have = 0;
        st.body_left = len;
      }
    }
    return true;  // the rest is padding
  };

  FrameWalker& w = s.in;
  while (n > 0) {
    if (w.have < 9) {
      if (!w.header(p, n)) return true;
      if (!startFrame()) return false;
      if (w.left == 0 && !endFrame()) return false;
      continue;
    }
    size_t k = std::min<size_t>(n, w.left);
    if (w.type == kData) {
      if (!dataBytes(p, k)) return false;
    } else if (w.type == kHeaders || w.type == kContinuation) {
      s.payload.append(reinterpret_cast<const char*>(p), k);
    }
    p += k;
    n -= k;
    w.left -= static_cast<uint32_t>(k);
    if (w.left == 0 && !endFrame()) return false;
  }
  return true;
}

namespace {

struct Conn;
// epoll's data pointer: one per descriptor of a connection.
struct End {
  Conn* conn;
  bool upstream;
};

struct Conn {
  int ext = -1;
  int up = -1;
  std::string client;  // IP address
  Steady::time_point deadline;
  bool relaying = false;  // handshake bytes seen, upstream open
  std::string hello;      // first bytes, until the handshake check passed
  std::string to_up, to_ext;
  size_t to_up_off = 0, to_ext_off = 0;
  bool closing = false;
  std::unique_ptr<GrpcRequestCheck> check;
  End ext_end{this, false};
  End up_end{this, true};
  uint32_t ext_events = 0, up_events = 0;
};

std::string clientAddress(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  }
  return buf;
}

}  // namespace

GrpcGuard::GrpcGuard(GrpcGuardOptions opts, MetricsRegistry& metrics,
                     ConnectUpstream connect_upstream, OnAccepting on_accepting)
    : opts_(std::move(opts)),
      metrics_(metrics),
      connect_upstream_(std::move(connect_upstream)),
      on_accepting_(std::move(on_accepting)) {}

GrpcGuard::~GrpcGuard() { stop(); }

Result<int> GrpcGuard::start(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (int rc = ::getaddrinfo(h.empty() ? nullptr : h.c_str(), service.c_str(), &hints, &res);
      rc != 0) {
    return unavailable("cannot resolve gRPC address " + host + ": " + ::gai_strerror(rc));
  }
  std::string err;
  for (addrinfo* ai = res; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      err = std::strerror(errno);
      ::close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  ::freeaddrinfo(res);
  if (listen_fd_ < 0) {
    return unavailable("cannot listen on gRPC address " + host + ":" + service + ": " + err);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  int bound = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                             : reinterpret_cast<sockaddr_in&>(ss).sin_port);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    return unavailable(std::string("gRPC guard: eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
  return bound;
}

void GrpcGuard::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) {
    uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof one) < 0) {
      spdlog::warn("gRPC guard: cannot wake its thread: {}", std::strerror(errno));
    }
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

namespace {
Counter& grpcRefused(MetricsRegistry& m, const char* reason) {
  return m.counter("morpheus_grpc_connections_refused_total",
                   "gRPC connections closed by the connection guard, by reason",
                   {{"reason", reason}});
}
}  // namespace

GrpcGuardMetrics::GrpcGuardMetrics(MetricsRegistry& m)
    : open(
          m.gauge("morpheus_grpc_connections_open", "Client connections the gRPC port holds open")),
      refused_max_connections(grpcRefused(m, "max-connections")),
      refused_per_client(grpcRefused(m, "max-connections-per-client")),
      refused_handshake(grpcRefused(m, "handshake")),
      refused_message_size(grpcRefused(m, "message-size")),
      refused_unauthenticated(grpcRefused(m, "unauthenticated")),
      refused_http2(grpcRefused(m, "http2")),
      refused_descriptors(grpcRefused(m, "descriptors")),
      accept_errors(m.counter(
          "morpheus_grpc_accept_errors_total",
          "accept() failures on the gRPC port (descriptors exhausted); the guard recovers by "
          "itself")) {}

void GrpcGuard::run() {
  auto& open_gauge = metrics_.open;
  Counter& refused_total = metrics_.refused_max_connections;
  Counter& refused_client = metrics_.refused_per_client;
  Counter& refused_handshake = metrics_.refused_handshake;
  // The message check's refusals, by GrpcRequestCheck::reason().
  std::map<std::string, Counter*> refused_check = {
      {"message-size", &metrics_.refused_message_size},
      {"unauthenticated", &metrics_.refused_unauthenticated},
      {"http2", &metrics_.refused_http2}};
  auto refuseCheck = [&](Conn* c) {
    spdlog::warn("gRPC connection from {} closed: {}", c->client, c->check->error());
    refused_check[c->check->reason()]->inc();
    return false;
  };
  Counter& refused_descriptors = metrics_.refused_descriptors;
  Counter& accept_errors = metrics_.accept_errors;

  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    spdlog::error("gRPC guard: epoll_create1: {}; the gRPC port does not accept",
                  std::strerror(errno));
    on_accepting_(false);
    return;
  }
  int reserve = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns;
  std::map<std::string, int> per_client;
  bool accepting = true;
  bool listening = false;
  Steady::time_point resume_listen{};
  auto setAccepting = [&](bool now, const std::string& why) {
    if (now == accepting) return;
    accepting = now;
    if (now) {
      spdlog::info("gRPC port accepts connections again");
    } else {
      spdlog::warn("gRPC port cannot accept new connections: {}", why);
    }
    on_accepting_(now);
  };
  auto watch = [&](int fd, uint32_t events, void* tag, uint32_t* current) {
    if (*current == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = tag;
    ::epoll_ctl(ep, *current == UINT32_MAX ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
    *current = events;
  };
  auto setListening = [&](bool on) {
    if (on == listening) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    ::epoll_ctl(ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd_, &ev);
    listening = on;
  };
  // Closed connections stay allocated until the current batch of events is
  // handled, so a later event of the batch never sees freed or reused memory.
  std::vector<std::unique_ptr<Conn>> closed;
  auto closeConn = [&](Conn* c) {
    c->closing = true;
    if (c->ext >= 0) ::close(c->ext);  // also removes it from the epoll set
    if (c->up >= 0) ::close(c->up);
    c->ext = c->up = -1;
    auto it = per_client.find(c->client);
    if (it != per_client.end() && --it->second <= 0) per_client.erase(it);
    auto owned = conns.find(c);
    closed.push_back(std::move(owned->second));
    conns.erase(owned);
    open_gauge.set(static_cast<double>(conns.size()));
  };
  // Writes what is buffered for `fd`; false on a write error.
  auto flush = [](int fd, std::string& buf, size_t& off) {
    while (off < buf.size()) {
      ssize_t w = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
      if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      off += static_cast<size_t>(w);
    }
    buf.clear();
    off = 0;
    return true;
  };
  auto updateEvents = [&](Conn* c) {
    uint32_t ext_ev = 0;
    if (c->to_up.size() - c->to_up_off < kMaxBuffered) ext_ev |= EPOLLIN;
    if (c->to_ext_off < c->to_ext.size()) ext_ev |= EPOLLOUT;
    watch(c->ext, ext_ev, &c->ext_end, &c->ext_events);
    if (c->up >= 0) {
      uint32_t up_ev = 0;
      if (c->to_ext.size() - c->to_ext_off < kMaxBuffered) up_ev |= EPOLLIN;
      if (c->to_up_off < c->to_up.size()) up_ev |= EPOLLOUT;
      watch(c->up, up_ev, &c->up_end, &c->up_events);
    }
  };
  // Bytes from the client: the handshake check, then the message check, then
  // queued for gRPC. False = close the connection.
  auto fromClient = [&](Conn* c, const char* data, size_t n) {
    if (!c->relaying) {
      c->hello.append(data, n);
      if (opts_.tls) {
        if (static_cast<uint8_t>(c->hello[0]) != kTlsHandshakeRecord) {
          refused_handshake.inc();
          return false;
        }
      } else {
        size_t k = std::min(c->hello.size(), kHttp2PrefaceLen);
        if (c->hello.compare(0, k, kHttp2Preface, k) != 0) {
          refused_handshake.inc();
          return false;
        }
        if (c->hello.size() < kHttp2PrefaceLen) return true;
      }
      int up = connect_upstream_();
      if (up < 0) {
        int e = errno;
        refused_descriptors.inc();
        setAccepting(false, std::string("cannot connect to the gRPC server: ") + std::strerror(e));
        return false;
      }
      setAccepting(true, "");
      c->up = up;
      c->up_events = UINT32_MAX;
      c->relaying = true;
      std::string first = std::move(c->hello);
      c->hello.clear();
      if (!opts_.tls) {
        c->check = std::make_unique<GrpcRequestCheck>(opts_);
        const auto* rest = reinterpret_cast<const uint8_t*>(first.data()) + kHttp2PrefaceLen;
        if (!c->check->fromClient(rest, first.size() - kHttp2PrefaceLen)) return refuseCheck(c);
      }
      c->to_up.append(first);
      return true;
    }
    if (c->check && !c->check->fromClient(reinterpret_cast<const uint8_t*>(data), n)) {
      return refuseCheck(c);
    }
    c->to_up.append(data, n);
    return true;
  };
  auto acceptAll = [&] {
    while (true) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) return;
        if (e == EINTR || e == ECONNABORTED) continue;
        accept_errors.inc();
        setAccepting(false, std::string("accept: ") + std::strerror(e));
        if ((e == EMFILE || e == ENFILE) && reserve >= 0) {
          // Give the spare back to accept and close the waiting connection, so
          // the client is told at once and the backlog does not stay full.
          ::close(reserve);
          int drop = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
          if (drop >= 0) {
            ::close(drop);
            refused_descriptors.inc();
          }
          reserve = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
          if (drop >= 0 && reserve >= 0) continue;
        }
        // Nothing to accept with: listen again shortly instead of spinning.
        setListening(false);
        resume_listen = Steady::now() + std::chrono::milliseconds(100);
        return;
      }
      if (reserve < 0) reserve = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      std::string client = clientAddress(ss);
      int& mine = per_client[client];
      if (static_cast<int>(conns.size()) >= opts_.max_connections) {
        ::close(fd);
        if (mine == 0) per_client.erase(client);
        refused_total.inc();
        continue;
      }
      if (mine >= opts_.max_connections_per_client) {
        ::close(fd);
        refused_client.inc();
        continue;
      }
      mine++;
      auto conn = std::make_unique<Conn>();
      Conn* c = conn.get();
      c->ext = fd;
      c->client = client;
      c->deadline = Steady::now() + opts_.handshake_timeout;
      c->ext_events = UINT32_MAX;
      conns.emplace(c, std::move(conn));
      open_gauge.set(static_cast<double>(conns.size()));
      updateEvents(c);
    }
  };

  {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &wake_fd_;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd_, &ev);
  }
  setListening(true);
  std::vector<epoll_event> events(256);
  char buf[64 * 1024];
  while (!stopping_.load()) {
    int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 200);
    if (n < 0 && errno != EINTR) {
      spdlog::error("gRPC guard: epoll_wait: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; i++) {
      void* tag = events[i].data.ptr;
      if (tag == &wake_fd_) continue;
      if (tag == nullptr) {
        acceptAll();
        continue;
      }
      auto* end = static_cast<End*>(tag);
      Conn* c = end->conn;
      if (c->closing) continue;
      uint32_t ev = events[i].events;
      int fd = end->upstream ? c->up : c->ext;
      bool ok = true;
      if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r > 0) {
          if (end->upstream) {
            if (c->check)
              c->check->fromServer(reinterpret_cast<const uint8_t*>(buf), static_cast<size_t>(r));
            c->to_ext.append(buf, static_cast<size_t>(r));
          } else {
            ok = fromClient(c, buf, static_cast<size_t>(r));
          }
        } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          // One side is gone: pass on what the other is owed, then close.
          if (end->upstream) {
            flush(c->ext, c->to_ext, c->to_ext_off);
          } else if (c->up >= 0) {
            flush(c->up, c->to_up, c->to_up_off);
          }
          ok = false;
        }
      }
      if (ok && c->up >= 0) ok = flush(c->up, c->to_up, c->to_up_off);
      if (ok) ok = flush(c->ext, c->to_ext, c->to_ext_off);
      if (!ok) {
        closeConn(c);
        continue;
      }
      updateEvents(c);
    }
    auto now = Steady::now();
    std::vector<Conn*> expired;
    for (auto& [c, owned] : conns) {
      if (!c->relaying && now >= c->deadline) expired.push_back(c);
    }
    for (Conn* c : expired) {
      refused_handshake.inc();
      closeConn(c);
    }
    closed.clear();
    if (!listening && now >= resume_listen) setListening(true);
    if (!accepting && listening && reserve >= 0) {
      // Descriptors for one more relayed connection (two ends towards gRPC)?
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0) {
        ::close(pair[0]);
        ::close(pair[1]);
        setAccepting(true, "");
      }
    }
  }
  for (auto& [c, owned] : conns) {
    if (c->ext >= 0) ::close(c->ext);
    if (c->up >= 0) ::close(c->up);
  }
  conns.clear();
  open_gauge.set(0);
  if (reserve >= 0) ::close(reserve);
  ::close(ep);
}

}  // namespace morpheus
