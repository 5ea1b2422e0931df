#include "common/http_server.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>

#include "common/validate.h"

namespace morpheus {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

int httpStatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kInfeasible:
      return 409;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

HttpResponse jsonAnswer(int status, const nlohmann::json& j) {
  return HttpResponse{status, "application/json",
                      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

HttpResponse jsonError(const Status& s) {
  nlohmann::json j = {{"error", {{"code", statusCodeName(s.code())}, {"message", s.message()}}}};
  return jsonAnswer(httpStatusFor(s), j);
}

namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Ends the message of a malformed percent escape.
constexpr const char* kEscapeRule = " (a '%' is followed by two hex digits)";

// `in` percent-decoded, '+' as a space. nullopt at a malformed escape (a '%'
// not followed by two hex digits), whose text goes to *bad.
std::optional<std::string> percentDecode(std::string_view in, std::string* bad) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); i++) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] != '%') {
      out += in[i];
    } else {
      int hi = i + 1 < in.size() ? hexDigit(in[i + 1]) : -1;
      int lo = hi >= 0 && i + 2 < in.size() ? hexDigit(in[i + 2]) : -1;
      if (lo < 0) {
        *bad = std::string(in.substr(i, 3));
        return std::nullopt;
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

// `text` for an error message: every byte outside printable ASCII
// percent-encoded, so an echoed path is ASCII whatever the client sent.
std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

// Splits `target` into req->path and req->query (see HttpRequest). The path
// is set even when the target is refused: INVALID_ARGUMENT naming the
// parameter (or "request target") when a handler could not read it.
Status parseTarget(const std::string& target, HttpRequest* req) {
  auto q = target.find('?');
  req->path = target.substr(0, q);
  for (size_t i = 0; i < target.size(); i++) {
    auto c = static_cast<unsigned char>(target[i]);
    if (c > 0x7e) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", c);
      return invalidArgument("request target",
                             "byte " + std::string(byte) + " at offset " + std::to_string(i) +
                                 " is not ASCII; a URI percent-encodes it (RFC 3986)");
    }
  }
  if (q == std::string::npos) return Status::ok();
  std::string_view qs = std::string_view(target).substr(q + 1);
  size_t pos = 0;
  while (pos <= qs.size()) {
    auto amp = qs.find('&', pos);
    std::string_view kv = qs.substr(pos, amp == std::string_view::npos ? amp : amp - pos);
    if (!kv.empty()) {
      auto eq = kv.find('=');
      std::string raw_name(kv.substr(0, eq));
      std::string raw_value(eq == std::string_view::npos ? "" : kv.substr(eq + 1));
      std::string bad;
      auto name = percentDecode(raw_name, &bad);
      if (!name) {
        return invalidArgument(raw_name,
                               "malformed percent escape '" + bad + "' in the name" + kEscapeRule);
      }
      if (!validUtf8(*name)) {
        return invalidArgument(raw_name, "the name is not UTF-8 once percent-decoded");
      }
      auto value = percentDecode(raw_value, &bad);
      if (!value) {
        return invalidArgument(
            *name, "malformed percent escape '" + bad + "' in '" + raw_value + "'" + kEscapeRule);
      }
      if (!validUtf8(*value)) {
        return invalidArgument(*name, "'" + raw_value + "' is not UTF-8 once percent-decoded");
      }
      req->query[*name] = std::move(*value);
    }
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return Status::ok();
}

// Logs at most once per interval; counts what it held back. One thread only.
class LogLimiter {
 public:
  explicit LogLimiter(Millis interval) : interval_(interval) {}
  // True when a line may be logged now; *suppressed is how many were held
  // back since the last one.
  bool allow(uint64_t* suppressed) {
    auto now = std::chrono::steady_clock::now();
    if (logged_once_ && now - last_ < interval_) {
      held_++;
      return false;
    }
    logged_once_ = true;
    last_ = now;
    *suppressed = held_;
    held_ = 0;
    return true;
  }

 private:
  Millis interval_;
  bool logged_once_ = false;
  std::chrono::steady_clock::time_point last_;
  uint64_t held_ = 0;
};

constexpr Millis kMaxAcceptBackoff{1000};
constexpr size_t kReadChunk = 4096;
// Answer to a connection over a cap; written without reading the request.
constexpr std::string_view kRefusedResponse =
    "HTTP/1.1 503 Service Unavailable\r\nServer: morpheus\r\nContent-Type: text/plain\r\n"
    "Content-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n";

}  // namespace

namespace {
Counter& httpRefused(MetricsRegistry& m, const char* reason) {
  return m.counter("morpheus_http_connections_refused_total",
                   "HTTP connections refused at accept because a connection cap was reached",
                   {{"reason", reason}});
}
Counter& httpRejected(MetricsRegistry& m, const char* status) {
  return m.counter("morpheus_http_requests_rejected_total",
                   "HTTP requests rejected before dispatch", {{"status", status}});
}
}  // namespace

HttpServerMetrics::HttpServerMetrics(MetricsRegistry& metrics)
    : open(metrics.gauge("morpheus_http_connections_open", "Open HTTP connections")),
      refused_max_connections(httpRefused(metrics, "max-connections")),
      refused_per_client(httpRefused(metrics, "max-connections-per-client")),
      refused_per_principal(httpRefused(metrics, "max-connections-per-principal")),
      accept_errors(metrics.counter("morpheus_http_accept_errors_total",
                                    "Failed accepts on the HTTP port (e.g. EMFILE); retried")),
      timed_out(metrics.counter("morpheus_http_connections_timed_out_total",
                                "HTTP connections closed by the header, idle or write timeout")),
      rejected_400(httpRejected(metrics, "400")),
      rejected_413(httpRejected(metrics, "413")),
      rejected_431(httpRejected(metrics, "431")) {}

struct HttpServer::Impl {
  struct Route {
    HttpHandler handler;
    HandlerThread where;
  };
  class Connection;

  Impl(HttpServerOptions o, MetricsRegistry& metrics)
      : opts(std::move(o)),
        m(metrics),
        open_gauge(m.open),
        refused_total(m.refused_max_connections),
        refused_per_client(m.refused_per_client),
        refused_per_principal(m.refused_per_principal),
        accept_errors(m.accept_errors),
        timed_out(m.timed_out),
        rejected_400(m.rejected_400),
        rejected_413(m.rejected_413),
        rejected_431(m.rejected_431),
        refused_log(opts.log_interval),
        accept_error_log(opts.log_interval),
        backoff(opts.accept_backoff) {}

  // Constant after start().
  const HttpServerOptions opts;
  std::map<std::pair<std::string, std::string>, Route> routes;
  std::set<std::string> methods;                     // of `routes`
  std::map<std::string, ErrorFormat> error_formats;  // by path prefix
  HttpServerMetrics m;
  Gauge& open_gauge;
  Counter& refused_total;
  Counter& refused_per_client;
  Counter& refused_per_principal;
  Counter& accept_errors;
  HttpServer::PrincipalOf principal_of;  // constant after start()
  Counter& timed_out;
  Counter& rejected_400;
  Counter& rejected_413;
  Counter& rejected_431;

  // Connection slots: taken on the I/O thread, released wherever a
  // connection's last reference drops, hence the lock.
  Mutex slots_mu;
  int open_connections GUARDED_BY(slots_mu) = 0;
  std::map<asio::ip::address, int> per_client GUARDED_BY(slots_mu);
  std::map<std::string, int> per_principal GUARDED_BY(slots_mu);

  // I/O thread only. Declared before `io`/`pool` so they outlive the
  // connections those destroy.
  LogLimiter refused_log;
  LogLimiter accept_error_log;
  Millis backoff;

  asio::io_context io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> backoff_timer;
  std::thread thread;
  // Destroyed before `io`: queued work holds connections whose sockets use it.
  std::unique_ptr<asio::thread_pool> pool;
  bool running = false;

  // The route serving `method` on `path`: the exact one, else the deepest
  // subtree route strictly above the path; null when none.
  const Route* match(const std::string& method, const std::string& path) const {
    auto it = routes.find({method, path});
    if (it != routes.end()) return &it->second;
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
      if (slash + 1 == path.size()) continue;
      auto sub = routes.find({method, path.substr(0, slash) + "/*"});
      if (sub != routes.end()) return &sub->second;
    }
    return nullptr;
  }

  // The route for a request, or the 404/405 answer when there is none: 405
  // with Allow when another method has a route for the path.
  const Route* find(const HttpRequest& req, HttpResponse* miss) const {
    if (const Route* r = match(req.method, req.path)) return r;
    std::string allowed;
    for (const auto& m : methods) {
      if (match(m, req.path) != nullptr) allowed += (allowed.empty() ? "" : ", ") + m;
    }
    if (allowed.empty()) {
      *miss = errorAnswer(req.path, 404, notFound("no resource at " + printable(req.path)));
    } else {
      *miss = errorAnswer(
          req.path, 405,
          invalidArgument("method", printable(req.method) + " is not allowed on " +
                                        printable(req.path) + " (allowed: " + allowed + ")"));
      miss->headers.emplace_back("Allow", allowed);
    }
    return nullptr;
  }

  // An answer of the server's own for `path`: the ErrorFormat of the longest
  // registered prefix of the path, else plain text.
  HttpResponse errorAnswer(const std::string& path, int status, const Status& error) const {
    const ErrorFormat* format = nullptr;
    size_t longest = 0;
    for (const auto& [prefix, f] : error_formats) {
      if (path.compare(0, prefix.size(), prefix) == 0 && (!format || prefix.size() > longest)) {
        format = &f;
        longest = prefix.size();
      }
    }
    HttpResponse r =
        format ? (*format)(status, error)
               : HttpResponse{status, "text/plain; charset=utf-8", error.toString() + "\n"};
    r.status = status;
    return r;
  }

  static HttpResponse invoke(const HttpHandler& handler, const HttpRequest& req) {
    try {
      return handler(req);
    } catch (const std::exception& e) {
      spdlog::error("http handler {} {} threw: {}", req.method, req.path, e.what());
      return jsonError(internalError(e.what()));
    }
  }

  // Takes a connection slot for `peer`; false (and counted) when a cap is
  // reached. Called on the I/O thread.
  bool acquireSlot(const asio::ip::address& peer) {
    Counter* refused = nullptr;
    {
      MutexLock lk(slots_mu);
      int& mine = per_client[peer];
      if (open_connections >= opts.max_connections) {
        refused = &refused_total;
      } else if (mine >= opts.max_connections_per_client) {
        refused = &refused_per_client;
      } else {
        mine++;
        open_connections++;
        open_gauge.set(open_connections);
        return true;
      }
      if (mine == 0) per_client.erase(peer);
    }
    refused->inc();
    uint64_t held = 0;
    if (refused_log.allow(&held)) {
      spdlog::warn(
          "http: refusing connections over the cap (max-connections {}, per client {}); "
          "latest from {}; {} more refused since the last line",
          opts.max_connections, opts.max_connections_per_client, peer.to_string(), held);
    }
    return false;
  }

  void releaseSlot(const asio::ip::address& peer) {
    MutexLock lk(slots_mu);
    auto it = per_client.find(peer);
    if (it != per_client.end() && --it->second <= 0) per_client.erase(it);
    open_connections--;
    open_gauge.set(open_connections);
  }

  // Counts a connection for `principal`; false (and counted) at its cap.
  bool acquirePrincipal(const std::string& principal) {
    {
      MutexLock lk(slots_mu);
      int& mine = per_principal[principal];
      if (mine < opts.max_connections_per_principal) {
        mine++;
        return true;
      }
    }
    refused_per_principal.inc();
    uint64_t held = 0;
    if (refused_log.allow(&held)) {
      spdlog::warn(
          "http: refusing connections of {} over http.max-connections-per-principal {}; {} more "
          "refused since the last line",
          principal, opts.max_connections_per_principal, held);
    }
    return false;
  }

  void releasePrincipal(const std::string& principal) {
    MutexLock lk(slots_mu);
    auto it = per_principal.find(principal);
    if (it != per_principal.end() && --it->second <= 0) per_principal.erase(it);
  }

  void accept();
  void onAcceptError(const beast::error_code& ec);
  void onAccepted(tcp::socket sock);
  void refuse(tcp::socket sock);
};

// One HTTP connection. Reads, writes and timers run on the I/O thread; only a
// kWorker handler runs elsewhere, on a copy of the request, and posts its
// response back. Holds a connection slot until destroyed.
// Every response: no framing by other sites (clickjacking), no content-type
// sniffing, and a policy that lets a page load scripts, styles and data only
// from this server (no inline script, no plugins, no <base> rewriting).
template <class Message>
void setSecurityHeaders(Message& m) {
  m.set("Content-Security-Policy", kContentSecurityPolicy);
  m.set("X-Frame-Options", "DENY");
  m.set("X-Content-Type-Options", "nosniff");
  m.set("Referrer-Policy", "no-referrer");
}

class HttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer::Impl& server, tcp::socket sock, asio::ip::address peer)
      : server_(server), stream_(std::move(sock)), peer_(std::move(peer)) {}
  ~Connection() {
    if (!principal_.empty()) server_.releasePrincipal(principal_);
    server_.releaseSlot(peer_);
  }

  // The first request: header_timeout runs from accept.
  void start() { readRequest(); }

 private:
  const HttpServerOptions& opts() const { return server_.opts; }

  void readRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(opts().max_header_bytes));
    parser_->body_limit(static_cast<uint64_t>(opts().max_body_bytes));
    stream_.expires_after(opts().header_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->onRequest(ec); });
  }

  // Keep-alive: waits up to idle_timeout for the next request's first byte,
  // then gives the whole request header_timeout.
  void awaitNextRequest() {
    if (buffer_.size() > 0) return readRequest();  // pipelined bytes already here
    stream_.expires_after(opts().idle_timeout);
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->onReadError(ec);
                              self->buffer_.commit(n);
                              self->readRequest();
                            });
  }

  void onReadError(const beast::error_code& ec) {
    if (ec == beast::error::timeout) server_.timed_out.inc();
    close();
  }

  void onRequest(const beast::error_code& ec) {
    if (!ec) return dispatch();
    if (ec == http::error::body_limit) {
      server_.rejected_413.inc();
      return reject(413, "request body larger than " + std::to_string(opts().max_body_bytes) +
                             " bytes (http.max-body-bytes)\n");
    }
    if (ec == http::error::header_limit) {
      server_.rejected_431.inc();
      return reject(431, "request headers larger than " + std::to_string(opts().max_header_bytes) +
                             " bytes\n");
    }
    if (isMalformed(ec)) {
      server_.rejected_400.inc();
      return reject(400, "malformed request: " + ec.message() + "\n");
    }
    onReadError(ec);
  }

  // A parse error of the request itself (not the peer closing or a timeout).
  static bool isMalformed(const beast::error_code& ec) {
    return ec.category() == beast::http::make_error_code(http::error::bad_method).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
  }

  // The request as handlers see it; not OK (and the query incomplete) when
  // its target is refused (parseTarget).
  static Status toRequest(const http::request<http::string_body>& r, HttpRequest* req) {
    req->method = std::string(r.method_string());
    Status target = parseTarget(std::string(r.target()), req);
    for (const auto& f : r) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      req->headers[name] = std::string(f.value());
    }
    req->body = r.body();
    return target;
  }

  void dispatch() {
    auto& r = parser_->get();
    keep_alive_ = r.keep_alive();
    version_ = r.version();
    HttpRequest req;
    Status target = toRequest(r, &req);
    if (principal_.empty() && server_.principal_of) {
      std::string who = server_.principal_of(req);
      if (!who.empty()) {
        if (!server_.acquirePrincipal(who)) {
          return reject(503, "too many connections of " + who +
                                 " (http.max-connections-per-principal " +
                                 std::to_string(opts().max_connections_per_principal) + ")\n");
        }
        principal_ = std::move(who);
      }
    }
    stream_.expires_never();  // no I/O while the handler runs
    HttpResponse miss;
    const Route* route = server_.find(req, &miss);
    if (route == nullptr) return respond(std::move(miss));
    if (!target.isOk()) {
      server_.rejected_400.inc();
      return respond(server_.errorAnswer(req.path, 400, target));
    }
    if (route->where == HandlerThread::kIoThread) {
      return respond(HttpServer::Impl::invoke(route->handler, req));
    }
    asio::post(*server_.pool, [self = shared_from_this(), handler = &route->handler,
                               req = std::move(req)]() mutable {
      HttpResponse resp = HttpServer::Impl::invoke(*handler, req);
      auto ex = self->stream_.get_executor();
      // The last reference moves back to the I/O thread with the response.
      asio::post(ex, [self = std::move(self), resp = std::move(resp)]() mutable {
        self->respond(std::move(resp));
      });
    });
  }

  void respond(HttpResponse resp) {
    res_.emplace(static_cast<http::status>(resp.status), version_);
    for (const auto& [name, value] : resp.headers) res_->set(name, value);
    if (resp.status == 401 && res_->find(http::field::www_authenticate) == res_->end()) {
      res_->set(http::field::www_authenticate, kBearerChallenge);
    }
    res_->set(http::field::server, "morpheus");
    res_->set(http::field::content_type, resp.content_type);
    setSecurityHeaders(*res_);
    res_->keep_alive(keep_alive_);
    res_->body() = std::move(resp.body);
    res_->prepare_payload();
    stream_.expires_after(opts().header_timeout);
    http::async_write(stream_, *res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->onReadError(ec);
      if (!self->keep_alive_) return self->close();
      self->awaitNextRequest();
    });
  }

  // Answers `status` with Connection: close without reading the rest of the
  // request, then closes gracefully.
  void reject(int status, std::string body) {
    res_.emplace(static_cast<http::status>(status), 11);
    res_->set(http::field::server, "morpheus");
    res_->set(http::field::content_type, "text/plain");
    setSecurityHeaders(*res_);
    res_->keep_alive(false);
    res_->body() = std::move(body);
    res_->prepare_payload();
    stream_.expires_after(opts().header_timeout);
    http::async_write(stream_, *res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->onReadError(ec);
      self->lingerClose();
    });
  }

  // Half-closes, then discards what the client still sends (bounded by
  // header_timeout) so our answer is read before the socket is closed: closing
  // with unread data would reset the connection and lose the answer.
  void lingerClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(opts().header_timeout);
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->close();
                              self->drain();
                            });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  asio::ip::address peer_;
  std::string principal_;  // "" until a request authenticated (setPrincipalOf)
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> res_;
  bool keep_alive_ = false;
  unsigned version_ = 11;
  std::array<char, kReadChunk> discard_{};
};

void HttpServer::Impl::accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket sock) {
    if (!acceptor->is_open()) return;  // stopped
    if (ec) return onAcceptError(ec);
    backoff = opts.accept_backoff;
    onAccepted(std::move(sock));
    accept();
  });
}

void HttpServer::Impl::onAcceptError(const beast::error_code& ec) {
  accept_errors.inc();
  uint64_t held = 0;
  if (accept_error_log.allow(&held)) {
    spdlog::warn(
        "http: accept failed: {}; retrying in {} ms ({} more failures since the last line)",
        ec.message(), backoff.count(), held);
  }
  if (ec == asio::error::connection_aborted) return accept();  // that peer gave up; not ours
  // Out of descriptors or buffers: pause so the loop does not spin, then retry.
  backoff_timer->expires_after(backoff);
  backoff = std::min(backoff * 2, kMaxAcceptBackoff);
  backoff_timer->async_wait([this](beast::error_code wait_ec) {
    if (wait_ec || !acceptor->is_open()) return;
    accept();
  });
}

// Answers 503 without waiting: one non-blocking write, then a half-close.
// What the client already sent is discarded first, as closing a socket with
// unread data resets the connection and the client could lose the answer.
void HttpServer::Impl::refuse(tcp::socket sock) {
  beast::error_code ec;
  sock.non_blocking(true, ec);
  sock.write_some(asio::buffer(kRefusedResponse.data(), kRefusedResponse.size()), ec);
  sock.shutdown(tcp::socket::shutdown_send, ec);
  std::array<char, kReadChunk> discard;
  for (int i = 0; i < 16 && !ec; i++) sock.read_some(asio::buffer(discard), ec);
  sock.close(ec);
}

void HttpServer::Impl::onAccepted(tcp::socket sock) {
  beast::error_code ec;
  auto peer = sock.remote_endpoint(ec);
  if (ec) return;  // already gone
  if (!acquireSlot(peer.address())) {
    refuse(std::move(sock));
    return;
  }
  std::make_shared<Connection>(*this, std::move(sock), peer.address())->start();
}

HttpServer::HttpServer(HttpServerOptions options, MetricsRegistry& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), metrics)) {}
HttpServer::~HttpServer() { stop(); }

const HttpServerOptions& HttpServer::options() const { return impl_->opts; }

void HttpServer::setPrincipalOf(PrincipalOf principal_of) {
  impl_->principal_of = std::move(principal_of);
}

void HttpServer::route(const std::string& method, const std::string& path, HttpHandler handler,
                       HandlerThread where) {
  impl_->routes[{method, path}] = Impl::Route{std::move(handler), where};
  impl_->methods.insert(method);
}

void HttpServer::setErrorFormat(const std::string& prefix, ErrorFormat format) {
  impl_->error_formats[prefix] = std::move(format);
}

Result<int> HttpServer::start(const std::string& host, int port) {
  beast::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return invalidArgument("http.host", "'" + host + "' is not an IP address");
  tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  auto acc = std::make_unique<tcp::acceptor>(impl_->io);
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return unavailable("cannot listen on HTTP address " + host + ":" + std::to_string(port) + ": " +
                       ec.message());
  }
  int bound = acc->local_endpoint().port();
  impl_->acceptor = std::move(acc);
  impl_->backoff_timer = std::make_unique<asio::steady_timer>(impl_->io);
  impl_->pool = std::make_unique<asio::thread_pool>(std::max(1, impl_->opts.worker_threads));
  impl_->accept();
  impl_->running = true;
  impl_->thread = std::thread([this] { impl_->io.run(); });
  return bound;
}

void HttpServer::stop() {
  if (!impl_->running) return;
  impl_->running = false;
  impl_->io.stop();
  impl_->thread.join();
  // The I/O thread is gone, so the acceptor is closed here: a handler posted
  // to the stopped loop would never run and the port would stay bound until
  // the destructor (an HA takeover rebinds the standby's ports at once).
  beast::error_code ec;
  impl_->acceptor->close(ec);
  impl_->backoff_timer->cancel();
  impl_->pool->stop();
  impl_->pool->join();
}

void Readiness::require(const std::string& name) {
  MutexLock lk(mu_);
  conditions_.emplace(name, false);
}

void Readiness::set(const std::string& name, bool met) {
  MutexLock lk(mu_);
  conditions_[name] = met;
}

std::vector<std::string> Readiness::unmet() const {
  MutexLock lk(mu_);
  std::vector<std::string> out;
  for (const auto& [name, met] : conditions_) {
    if (!met) out.push_back(name);
  }
  return out;
}

void registerHealthRoutes(HttpServer& server, const Readiness& readiness) {
  server.route(
      "GET", "/healthz",
      [](const HttpRequest&) {
        return HttpResponse{200, "text/plain", "ok\n"};
      },
      HandlerThread::kIoThread);
  server.route(
      "GET", "/readyz",
      [&readiness](const HttpRequest&) {
        std::vector<std::string> unmet = readiness.unmet();
        if (unmet.empty()) return HttpResponse{200, "text/plain", "ready\n"};
        std::string body = "not ready:";
        for (size_t i = 0; i < unmet.size(); i++) body += (i ? ", " : " ") + unmet[i];
        return HttpResponse{503, "text/plain", body + "\n"};
      },
      HandlerThread::kIoThread);
}

}  // namespace morpheus
