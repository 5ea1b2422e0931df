// HttpServer under hostile load, with real
// loopback sockets: timeouts, connection caps, accept after EMFILE, handlers
// off the I/O thread, body and header limits.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace morpheus {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

// A client socket connected from `source` (any 127.x address: distinct
// clients for the per-client cap); -1 on failure.
int connectFrom(int port, const std::string& source = "127.0.0.1") {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool sendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads what arrives within `timeout`; stops early at EOF (*closed = true) or
// once `until` returns true on the data read so far.
std::string readFor(int fd, std::chrono::milliseconds timeout, bool* closed,
                    const std::function<bool(const std::string&)>& until = nullptr) {
  std::string out;
  *closed = false;
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (until && until(out)) return out;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = true;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// One complete response (status line, headers, Content-Length body) is in `s`.
bool hasFullResponse(const std::string& s) {
  auto end = s.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  auto cl = s.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return true;
  return s.size() >= end + 4 + std::stoul(s.substr(cl + 16));
}

int statusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

// GET `path` on a keep-alive connection; the status, 0 when none came in time.
int getOn(int fd, const std::string& path, std::chrono::milliseconds timeout = 2000ms) {
  if (!sendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n")) return 0;
  bool closed = false;
  return statusOf(readFor(fd, timeout, &closed, hasFullResponse));
}

// GET `path` on a fresh connection; the status (0 = none in time).
int get(int port, const std::string& path, const std::string& source = "127.0.0.1",
        std::chrono::milliseconds timeout = 2000ms) {
  int fd = connectFrom(port, source);
  if (fd < 0) return 0;
  int status = getOn(fd, path, timeout);
  ::close(fd);
  return status;
}

// `request` on a fresh connection; the whole response as sent ("" = none).
std::string answerTo(int port, const std::string& request) {
  int fd = connectFrom(port);
  if (fd < 0) return "";
  std::string out;
  if (sendAll(fd, request)) {
    bool closed = false;
    out = readFor(fd, 2000ms, &closed, hasFullResponse);
  }
  ::close(fd);
  return out;
}

// `method` `target` on a fresh connection; the whole response ("" = none).
std::string call(int port, const std::string& method, const std::string& target) {
  return answerTo(port,
                  method + " " + target + " HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
}

// The value of header `name` (as the server spells it) in `response`; "" when absent.
std::string headerOf(const std::string& response, const std::string& name) {
  auto end = response.find("\r\n\r\n");
  auto at = response.find("\r\n" + name + ": ");
  if (at == std::string::npos || at > end) return "";
  at += name.size() + 4;
  return response.substr(at, response.find("\r\n", at) - at);
}

std::string bodyOf(const std::string& response) {
  auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

class HttpServerTest : public ::testing::Test {
 protected:
  // Starts a server with the fixture's routes, after `configure` has added
  // its own (routes, error formats).
  void start(HttpServerOptions o, const std::function<void(HttpServer&)>& configure = nullptr) {
    server_ = std::make_unique<HttpServer>(o, metrics_);
    if (configure) configure(*server_);
    server_->route(
        "GET", "/healthz",
        [](const HttpRequest&) {
          return HttpResponse{200, "text/plain", "ok\n"};
        },
        HandlerThread::kIoThread);
    server_->route("POST", "/echo", [](const HttpRequest& r) {
      return HttpResponse{200, "text/plain", std::to_string(r.body.size())};
    });
    server_->route("GET", "/items/*", [](const HttpRequest& r) {
      return HttpResponse{r.path == "/items/a/b" ? 201 : 200, "text/plain", r.path};
    });
    server_->route("GET", "/items/special", [](const HttpRequest&) {
      return HttpResponse{202, "text/plain", "exact"};
    });
    // Blocks its worker until the test releases it (releaseSlow), at most 30 s.
    server_->route("GET", "/slow", [this](const HttpRequest&) {
      slow_entered_ = true;
      {
        std::unique_lock<std::mutex> lk(slow_mu_);
        slow_cv_.wait_for(lk, 30s, [this] { return slow_released_; });
      }
      slow_done_ = true;
      return HttpResponse{200, "text/plain", "slow\n"};
    });
    auto port = server_->start("127.0.0.1", 0);
    ASSERT_TRUE(port.isOk()) << port.status().message();
    port_ = *port;
  }
  void releaseSlow() {
    {
      std::lock_guard<std::mutex> lk(slow_mu_);
      slow_released_ = true;
    }
    slow_cv_.notify_all();
  }
  void TearDown() override {
    releaseSlow();
    for (int fd : fds_) ::close(fd);
    if (server_) server_->stop();
  }
  int keep(int fd) {
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  double metric(const std::string& name, const Labels& labels = {}) {
    return metrics_.valueOf(name, labels);
  }

  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::vector<int> fds_;
  std::atomic<bool> slow_entered_{false};
  std::atomic<bool> slow_done_{false};
  std::mutex slow_mu_;
  std::condition_variable slow_cv_;
  bool slow_released_ = false;
};

// /readyz answers 503 naming each unmet condition until all are set, while
// /healthz (liveness) answers 200 throughout; a condition cleared again
// makes it 503 again.
// stop() frees the port before it returns, while the server object lives on:
// an HA takeover binds the real servers on the standby's ports right away.
TEST(HttpServerStopTest, PortIsFreeAgainWhenStopReturns) {
  MetricsRegistry metrics;
  HttpServer first({}, metrics);
  auto port = first.start("127.0.0.1", 0);
  ASSERT_TRUE(port.isOk()) << port.status().message();
  first.stop();
  HttpServer second({}, metrics);
  auto again = second.start("127.0.0.1", *port);
  EXPECT_TRUE(again.isOk()) << again.status().message();
  second.stop();
}

TEST(HealthRoutesTest, ReadyzFollowsReadinessConditions) {
  MetricsRegistry metrics;
  Readiness readiness;
  readiness.require("plan");
  readiness.require("state-store");
  HttpServer server({}, metrics);
  registerHealthRoutes(server, readiness);
  auto port = server.start("127.0.0.1", 0);
  ASSERT_TRUE(port.isOk()) << port.status().message();
  int fd = connectFrom(*port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendAll(fd, "GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n"));
  bool closed = false;
  std::string first = readFor(fd, 2000ms, &closed, hasFullResponse);
  ::close(fd);
  EXPECT_EQ(statusOf(first), 503);
  EXPECT_NE(first.find("not ready: plan, state-store"), std::string::npos) << first;
  EXPECT_EQ(get(*port, "/healthz"), 200);
  readiness.set("state-store", true);
  EXPECT_EQ(get(*port, "/readyz"), 503);
  readiness.set("plan", true);
  EXPECT_EQ(get(*port, "/readyz"), 200);
  readiness.set("plan", false);
  EXPECT_EQ(get(*port, "/readyz"), 503);
  server.stop();
}

// A subtree route ("/items/*") serves every path below it; an exact route
// wins over it, and the subtree's own root is not part of it.
TEST_F(HttpServerTest, SubtreeRouteServesPathsBelowIt) {
  start({});
  EXPECT_EQ(get(port_, "/items/x"), 200);
  EXPECT_EQ(get(port_, "/items/a/b"), 201);
  EXPECT_EQ(get(port_, "/items/special"), 202);
  EXPECT_EQ(get(port_, "/items"), 404);
  EXPECT_EQ(get(port_, "/items/"), 404);
  EXPECT_EQ(get(port_, "/other/x"), 404);
}

// A method without a route for a path that other methods serve (exactly or
// through a subtree route) is 405 with Allow listing those methods, sorted
// (RFC 9110 requires Allow on a 405); a path no method serves is 404.
TEST_F(HttpServerTest, OtherMethodOnAServedPathIs405WithAllow) {
  start({}, [](HttpServer& s) {
    s.route("DELETE", "/items/*", [](const HttpRequest&) {
      return HttpResponse{202, "text/plain", "deleted"};
    });
  });
  struct Case {
    std::string method, target;
    int status;
    std::string allow;
  };
  for (const Case& c : std::vector<Case>{
           {"GET", "/echo", 405, "POST"},             // exact
           {"POST", "/healthz", 405, "GET"},          // exact, I/O-thread route
           {"POST", "/items/x", 405, "DELETE, GET"},  // subtree of two methods
           {"PUT", "/items/a/b", 405, "DELETE, GET"},
           {"PUT", "/items/special", 405, "DELETE, GET"},  // exact GET + subtree DELETE
           {"DELETE", "/items/x", 202, ""},
           {"GET", "/items/x", 200, ""},
           {"POST", "/items", 404, ""},  // the subtree's root is not in it
           {"POST", "/items/", 404, ""},
           {"PUT", "/other/x", 404, ""},
       }) {
    std::string r = call(port_, c.method, c.target);
    EXPECT_EQ(statusOf(r), c.status) << c.method << " " << c.target << ": " << r;
    EXPECT_EQ(headerOf(r, "Allow"), c.allow) << c.method << " " << c.target << ": " << r;
  }
  std::string r = call(port_, "PUT", "/items/x");
  EXPECT_EQ(bodyOf(r),
            "INVALID_ARGUMENT: method: PUT is not allowed on /items/x (allowed: DELETE, GET)\n");
  EXPECT_EQ(bodyOf(call(port_, "GET", "/nope")), "NOT_FOUND: no resource at /nope\n");
}

// Every 401 carries a WWW-Authenticate challenge (RFC 9110): the Bearer one
// unless the handler set its own; other statuses get none.
TEST_F(HttpServerTest, Every401CarriesAChallenge) {
  start({}, [](HttpServer& s) {
    s.route("GET", "/private", [](const HttpRequest&) {
      return HttpResponse{401, "text/plain", "who are you?\n"};
    });
    s.route("GET", "/private-basic", [](const HttpRequest&) {
      HttpResponse r{401, "text/plain", "who are you?\n"};
      r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"x\"");
      return r;
    });
    s.route("GET", "/forbidden", [](const HttpRequest&) {
      return HttpResponse{403, "text/plain", "no\n"};
    });
  });
  std::string r = call(port_, "GET", "/private");
  EXPECT_EQ(statusOf(r), 401) << r;
  EXPECT_EQ(headerOf(r, "WWW-Authenticate"), "Bearer realm=\"morpheus\"") << r;
  r = call(port_, "GET", "/private-basic");
  EXPECT_EQ(headerOf(r, "WWW-Authenticate"), "Basic realm=\"x\"") << r;
  r = call(port_, "GET", "/forbidden");
  EXPECT_EQ(statusOf(r), 403) << r;
  EXPECT_EQ(headerOf(r, "WWW-Authenticate"), "") << r;
}

// Query parameters reach the handler percent-decoded ('+' a space, hex of
// either case); a malformed escape, a name or value that is not UTF-8 once
// decoded, or a raw byte outside ASCII in the target is 400 naming the
// parameter before any handler runs, counted as rejected; the connection
// stays open for the next request.
TEST_F(HttpServerTest, QueryIsDecodedAndUndecodableQueryIs400) {
  std::atomic<int> handled{0};
  start({}, [&handled](HttpServer& s) {
    s.route("GET", "/query", [&handled](const HttpRequest& r) {
      handled++;
      std::string out;
      for (const auto& [k, v] : r.query) out += "[" + k + "]=[" + v + "]";
      return HttpResponse{200, "text/plain", out};
    });
  });
  std::string ok = call(port_, "GET", "/query?a=%C3%A9t%c3%a9&b=x+y%2Bz&flag&=v&&c%20d=%3D");
  EXPECT_EQ(statusOf(ok), 200) << ok;
  EXPECT_EQ(bodyOf(ok), "[]=[v][a]=[\xC3\xA9t\xC3\xA9][b]=[x y+z][c d]=[=][flag]=[]");
  EXPECT_EQ(handled, 1);

  const std::string rule = " (a '%' is followed by two hex digits)";
  struct Bad {
    std::string target, body;
  };
  for (const Bad& b : std::vector<Bad>{
           {"/query?limit=%zz", "limit: malformed percent escape '%zz' in '%zz'" + rule},
           {"/query?limit=1%4g", "limit: malformed percent escape '%4g' in '1%4g'" + rule},
           {"/query?limit=12%", "limit: malformed percent escape '%' in '12%'" + rule},
           {"/query?limit=%F", "limit: malformed percent escape '%F' in '%F'" + rule},
           {"/query?a=1&l%x=2", "l%x: malformed percent escape '%x' in the name" + rule},
           {"/query?states=%FF", "states: '%FF' is not UTF-8 once percent-decoded"},
           {"/query?states=%C3%28", "states: '%C3%28' is not UTF-8 once percent-decoded"},
           {"/query?s=%C0%AF", "s: '%C0%AF' is not UTF-8 once percent-decoded"},  // overlong '/'
           {"/query?%FF=1", "%FF: the name is not UTF-8 once percent-decoded"},
           {"/query?q=\xC3\xA9",
            "request target: byte 0xC3 at offset 9 is not ASCII; a URI percent-encodes it (RFC "
            "3986)"},
       }) {
    std::string r = call(port_, "GET", b.target);
    EXPECT_EQ(statusOf(r), 400) << b.target << ": " << r;
    EXPECT_EQ(bodyOf(r), "INVALID_ARGUMENT: " + b.body + "\n") << b.target;
  }
  EXPECT_EQ(handled, 1) << "no handler ran for a refused target";
  EXPECT_EQ(metric("morpheus_http_requests_rejected_total", {{"status", "400"}}), 10);
  // A path no route serves is 404 whatever its query.
  EXPECT_EQ(statusOf(call(port_, "GET", "/nope?limit=%zz")), 404);
  // Refused, yet the connection serves the next request.
  int fd = keep(connectFrom(port_));
  ASSERT_GE(fd, 0);
  EXPECT_EQ(getOn(fd, "/query?x=%zz"), 400);
  EXPECT_EQ(getOn(fd, "/query?x=1"), 200);
}

// The server's own 400/404/405 take the ErrorFormat of the longest
// registered prefix of the path (keeping the server's status and Allow),
// and plain text under none.
TEST_F(HttpServerTest, OwnErrorsTakeTheFormatOfTheLongestPrefix) {
  start({}, [](HttpServer& s) {
    auto format = [](const std::string& tag) {
      return [tag](int status, const Status& error) {
        return HttpResponse{299, "application/x-" + tag,
                            tag + " " + std::to_string(status) + " " + error.toString()};
      };
    };
    s.setErrorFormat("/items/", format("outer"));
    s.setErrorFormat("/items/deep/", format("inner"));
  });
  std::string r = call(port_, "POST", "/items/x");
  EXPECT_EQ(statusOf(r), 405) << r;
  EXPECT_EQ(headerOf(r, "Allow"), "GET") << r;
  EXPECT_EQ(headerOf(r, "Content-Type"), "application/x-outer") << r;
  EXPECT_EQ(bodyOf(r),
            "outer 405 INVALID_ARGUMENT: method: POST is not allowed on /items/x (allowed: GET)");
  r = call(port_, "POST", "/items/deep/x");
  EXPECT_EQ(headerOf(r, "Content-Type"), "application/x-inner") << r;
  r = call(port_, "GET", "/items/x?a=%zz");
  EXPECT_EQ(statusOf(r), 400) << r;
  EXPECT_EQ(bodyOf(r).substr(0, 16), "outer 400 INVALI") << r;
  r = call(port_, "GET", "/itemsx");
  EXPECT_EQ(statusOf(r), 404) << r;
  EXPECT_EQ(headerOf(r, "Content-Type"), "text/plain; charset=utf-8") << r;
  EXPECT_EQ(bodyOf(r), "NOT_FOUND: no resource at /itemsx\n");
  // A raw byte in an unrouted path is shown percent-encoded.
  EXPECT_EQ(bodyOf(call(port_, "GET", "/nope\xFF\x80")), "NOT_FOUND: no resource at /nope%FF%80\n");
}

// jsonAnswer encodes a string that is not UTF-8 instead of throwing: each
// invalid byte becomes U+FFFD, the rest is kept.
TEST(JsonAnswerTest, TextThatIsNotUtf8IsReplacedNotThrown) {
  nlohmann::json j = {{"id", "a\xff\xc3(b"}, {"ok", "\xc3\xa9"}};
  HttpResponse r = jsonAnswer(400, j);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, "{\"id\":\"a\xEF\xBF\xBD\xEF\xBF\xBD(b\",\"ok\":\"\xC3\xA9\"}");
  HttpResponse e = jsonError(invalidArgument("limit", "'\xff' is not a number"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.body,
            "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"limit: "
            "'\xEF\xBF\xBD' is not a number\"}}");
}

// A client that dribbles header lines forever is closed once header_timeout
// has passed since accept, though each line arrives well within it.
TEST_F(HttpServerTest, SlowLorisClosedAfterHeaderTimeout) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  start(o);
  int fd = keep(connectFrom(port_));
  ASSERT_GE(fd, 0);
  auto t0 = Clock::now();
  ASSERT_TRUE(sendAll(fd, "GET /healthz HTTP/1.1\r\n"));
  bool closed = false;
  while (!closed && Clock::now() - t0 < 5s) {
    readFor(fd, 50ms, &closed);
    if (!closed && !sendAll(fd, "X-Slow: a\r\n")) closed = true;
  }
  auto took = Clock::now() - t0;
  EXPECT_TRUE(closed) << "slow-loris connection still open after 5 s";
  EXPECT_GE(took, 250ms);
  // Beast's timer closes the socket before the read's completion handler
  // counts the timeout, so the client can see the close first.
  EXPECT_TRUE(waitFor([&] { return metric("morpheus_http_connections_timed_out_total") == 1; }, 2s))
      << metric("morpheus_http_connections_timed_out_total");
}

// A keep-alive connection serves several requests, then is closed after
// idle_timeout without a request (not earlier than the header timeout would).
TEST_F(HttpServerTest, IdleKeepAliveClosedAfterIdleTimeout) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  o.idle_timeout = 4000ms;
  start(o);
  int fd = keep(connectFrom(port_));
  ASSERT_GE(fd, 0);
  EXPECT_EQ(getOn(fd, "/healthz"), 200);
  // Idle longer than header_timeout and well within idle_timeout (3 s of
  // room for a loaded machine).
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(getOn(fd, "/healthz"), 200);
  auto t0 = Clock::now();
  bool closed = false;
  readFor(fd, 15000ms, &closed);
  EXPECT_TRUE(closed) << "idle keep-alive connection still open after 15 s";
  EXPECT_GE(Clock::now() - t0, 3500ms) << "closed before idle_timeout";
}

// Over max_connections_per_client from one IP, or over max_connections in
// total, a connection gets 503 at once; both are counted; a closed connection
// frees its slot and the client is served again.
TEST_F(HttpServerTest, ConnectionCapsRefuseExcessAndServeAgainAfterClose) {
  HttpServerOptions o;
  o.max_connections = 4;
  o.max_connections_per_client = 2;
  start(o);
  int a1 = keep(connectFrom(port_, "127.0.0.2"));
  int a2 = keep(connectFrom(port_, "127.0.0.2"));
  ASSERT_EQ(getOn(a1, "/healthz"), 200);
  ASSERT_EQ(getOn(a2, "/healthz"), 200);
  int a3 = keep(connectFrom(port_, "127.0.0.2"));
  bool closed = false;
  std::string refused = readFor(a3, 2000ms, &closed);
  EXPECT_EQ(statusOf(refused), 503) << refused;
  EXPECT_TRUE(closed);
  EXPECT_EQ(
      metric("morpheus_http_connections_refused_total", {{"reason", "max-connections-per-client"}}),
      1);

  int b1 = keep(connectFrom(port_, "127.0.0.3"));
  int b2 = keep(connectFrom(port_, "127.0.0.3"));
  ASSERT_EQ(getOn(b1, "/healthz"), 200);
  ASSERT_EQ(getOn(b2, "/healthz"), 200);
  EXPECT_EQ(get(port_, "/healthz", "127.0.0.4"), 503);  // total cap, a new client
  EXPECT_EQ(metric("morpheus_http_connections_refused_total", {{"reason", "max-connections"}}), 1);
  EXPECT_EQ(metric("morpheus_http_connections_open"), 4);

  ::close(a1);
  fds_.erase(std::find(fds_.begin(), fds_.end(), a1));
  // a1's slot is free once the server has seen it close: a new connection
  // from the same client is served and fills the server up again.
  int a4 = -1;
  EXPECT_TRUE(waitFor(
      [&] {
        if (a4 >= 0) ::close(a4);
        a4 = connectFrom(port_, "127.0.0.2");
        return getOn(a4, "/healthz") == 200;
      },
      3s));
  keep(a4);
  EXPECT_EQ(get(port_, "/healthz", "127.0.0.4"), 503);
}

// A handler blocking on the worker pool does not delay /healthz: five probes
// all answer while it still runs (it is released only after them). Latency
// figures: bench_http_latency.
TEST_F(HttpServerTest, SlowHandlerDoesNotDelayHealthz) {
  start(HttpServerOptions{});
  int slow_status = 0;
  std::thread slow([&] { slow_status = get(port_, "/slow", "127.0.0.1", 40s); });
  const bool entered = waitFor([&] { return slow_entered_.load(); }, 10s);
  if (entered) {
    for (int i = 0; i < 5; i++) EXPECT_EQ(get(port_, "/healthz"), 200) << "probe " << i;
    EXPECT_FALSE(slow_done_) << "the slow handler ended before it was released";
  }
  releaseSlow();
  slow.join();
  ASSERT_TRUE(entered) << "the slow handler never started";
  EXPECT_TRUE(slow_done_);
  EXPECT_EQ(slow_status, 200);
}

// A body over max_body_bytes gets 413 as soon as its Content-Length (or its
// chunks) exceed the limit, without the body being sent; headers over the
// header limit get 431; a body within the limit is served.
TEST_F(HttpServerTest, OversizedBodyGets413AndOversizedHeaders431) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  auto roundTrip = [&](const std::string& request) {
    int fd = connectFrom(port_);
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(sendAll(fd, request));
    bool closed = false;
    std::string r = readFor(fd, 2000ms, &closed, hasFullResponse);
    ::close(fd);
    return r;
  };
  EXPECT_EQ(
      statusOf(roundTrip("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n")),
      413);
  std::string chunk(2000, 'x');
  EXPECT_EQ(
      statusOf(roundTrip("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "7d0\r\n" +
                         chunk + "\r\n")),
      413);
  std::string big_header(64 * 1024, 'h');
  EXPECT_EQ(
      statusOf(roundTrip("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + big_header + "\r\n\r\n")),
      431);
  std::string ok = roundTrip("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" +
                             std::string(1000, 'y'));
  EXPECT_EQ(statusOf(ok), 200) << ok;
  EXPECT_NE(ok.find("\r\n\r\n1000"), std::string::npos) << ok;
  EXPECT_EQ(metric("morpheus_http_requests_rejected_total", {{"status", "413"}}), 2);
  EXPECT_EQ(metric("morpheus_http_requests_rejected_total", {{"status", "431"}}), 1);
}

// Restores RLIMIT_NOFILE's soft limit when the test ends.
class SoftFdLimit {
 public:
  SoftFdLimit() { ::getrlimit(RLIMIT_NOFILE, &saved_); }
  ~SoftFdLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  bool set(rlim_t soft) {
    rlimit l = saved_;
    l.rlim_cur = soft;
    return ::setrlimit(RLIMIT_NOFILE, &l) == 0;
  }

 private:
  rlimit saved_{};
};

// The RLIMIT_NOFILE soft limit under which exactly `free` more descriptors
// can be opened (descriptors take the lowest free number; open ones above the
// limit, e.g. inherited from the parent, stay usable).
rlim_t limitLeavingFree(int free) {
  std::set<int> open;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  int own = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.' && std::atoi(e->d_name) != own) open.insert(std::atoi(e->d_name));
  }
  ::closedir(d);
  int n = 0;
  for (; free > 0; n++) {
    if (!open.count(n)) free--;
  }
  return static_cast<rlim_t>(n);
}

// With the process out of descriptors the server's accept fails (EMFILE);
// once descriptors are free again it accepts and serves by itself.
TEST_F(HttpServerTest, AcceptResumesAfterDescriptorExhaustion) {
  start(HttpServerOptions{});
  // Client sockets are made before the limit drops, so only the server's
  // accepts run out of descriptors.
  std::vector<int> clients;
  for (int i = 0; i < 64; i++) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    clients.push_back(keep(fd));
  }
  {
    SoftFdLimit limit;
    ASSERT_TRUE(limit.set(limitLeavingFree(8)));
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(port_));
    ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    for (int fd : clients) {
      ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst), 0);
    }
    ASSERT_TRUE(waitFor([&] { return metric("morpheus_http_accept_errors_total") > 0; }, 5s))
        << "the server never ran out of descriptors";
    for (int fd : clients) ::close(fd);
    fds_.clear();
    // Still under the low limit: the server must accept again on its own.
    EXPECT_TRUE(waitFor([&] { return get(port_, "/healthz") == 200; }, 5s));
  }
  EXPECT_EQ(get(port_, "/healthz"), 200);
}

}  // namespace
}  // namespace morpheus
