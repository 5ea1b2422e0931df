// A small HTTP/1.1 server (Boost.Beast) for /healthz, /metrics and the REST
// endpoints of every daemon, hardened for an untrusted network (idle and
// slow connections, oversized requests; docs/operator/security.md).
//
// Threads: one I/O thread accepts, reads and writes every connection. A route
// registered with HandlerThread::kWorker (the default) runs on a small worker
// pool, so a slow handler (planning a huge reservation) never delays the I/O
// thread; a kIoThread route (/healthz, /metrics) runs on the I/O thread itself
// and must be cheap and never block. Handlers may run concurrently with each
// other and must be thread-safe.
//
// Limits (HttpServerOptions):
// - At most max_connections open connections, and at most
//   max_connections_per_client from one peer IP address. An excess connection
//   is answered "503" at once, without reading from it, and closed.
// - With a principal resolver (setPrincipalOf), a connection belongs to the
//   principal of its first request that authenticates, and one principal
//   holds at most max_connections_per_principal connections: the request
//   that would exceed it is answered 503 and its connection closed. (The IP
//   cap alone lets one user spread over a few addresses fill max_connections.)
// - A request's headers and body must arrive within header_timeout (counted
//   from accept for a connection's first request, from the request's first
//   byte for later ones), so a slow-loris sender is closed. A keep-alive
//   connection with no request for idle_timeout is closed. A client that does
//   not take its response within header_timeout is closed.
// - A body over max_body_bytes gets 413 before the body is read; headers over
//   max_header_bytes get 431; a malformed request gets 400. Each closes the
//   connection.
// - An accept error (EMFILE, ENFILE, ENOBUFS, ...) never stops accepting: it
//   is counted, logged at most once per log_interval, and accepting is retried
//   after a back-off (accept_backoff, doubling up to 1 s). So the server serves
//   again by itself once a descriptor flood stops.
//
// Every response carries Content-Security-Policy (kContentSecurityPolicy),
// X-Frame-Options: DENY, X-Content-Type-Options: nosniff and Referrer-Policy:
// no-referrer; every 401 carries a WWW-Authenticate challenge (RFC 9110
// requires one), kBearerChallenge unless the handler set its own.
//
// Answers the server makes itself to a well-formed request (RFC 9110):
// - 404 when no route serves the path for any method;
// - 405 with an Allow header listing the methods that do serve it (exactly
//   or through a subtree route) when only other methods do;
// - 400 naming the parameter when the target is not one the handlers can
//   read: a byte outside ASCII in it (a URI is ASCII, RFC 3986), a malformed
//   percent escape ('%' not followed by two hex digits) or a query name or
//   value that is not UTF-8 once decoded. A handler never sees such a
//   request, so the query text it echoes into a JSON answer is valid UTF-8.
// Their bodies are plain text, or what the ErrorFormat registered for the
// path's prefix makes of them (setErrorFormat: the YARN REST's JSON).
//
// Metrics (in the registry given to the constructor; HttpServerMetrics
// declares them, every counter present from start at 0):
//   morpheus_http_connections_open                     gauge
//   morpheus_http_connections_refused_total{reason}    counter, reason =
//       "max-connections" | "max-connections-per-client" |
//       "max-connections-per-principal"
//   morpheus_http_accept_errors_total                  counter
//   morpheus_http_connections_timed_out_total          counter
//   morpheus_http_requests_rejected_total{status}      counter, 400 | 413 | 431
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"

namespace morpheus {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  // The query's parameters, percent-decoded ('+' is a space); every name and
  // value is valid UTF-8 (the server answers 400 otherwise). A repeated name
  // keeps its last value.
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

// The Content-Security-Policy of every response: scripts, styles, images and
// fetches from this server only; never framed; no plugins, inline script or
// <base> rewriting.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

// The challenge of a 401 (RFC 9110 11.6.1, RFC 6750): every Morpheus HTTP
// surface that authenticates takes "Authorization: Bearer TOKEN".
inline constexpr const char* kBearerChallenge = "Bearer realm=\"morpheus\"";

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Further headers (name, value), e.g. Allow or WWW-Authenticate. The
  // server's own (Server, Content-Type, Content-Length, the security headers)
  // replace any of the same name.
  std::vector<std::pair<std::string, std::string>> headers{};
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// HTTP status for a non-OK Status (400, 404, 409, 403, 503, 500).
int httpStatusFor(const Status& s);
// `j` as an application/json answer with `status`. A string in `j` that is
// not UTF-8 never makes the encoding throw: each invalid byte becomes U+FFFD.
// Every JSON answer built from request text goes through this.
HttpResponse jsonAnswer(int status, const nlohmann::json& j);
// {"error": {"code": "...", "message": "..."}} with the matching HTTP status.
HttpResponse jsonError(const Status& s);

// Words an answer the server makes itself (see the file comment): `error`
// says what is wrong (INVALID_ARGUMENT naming the parameter, or "method" for
// a 405; NOT_FOUND for a 404) and `http_status` is the answer's status, which
// the server keeps whatever the formatter sets. Runs on the I/O thread: must
// be cheap, must not block or throw.
using ErrorFormat = std::function<HttpResponse(int http_status, const Status& error)>;

// Where a route's handler runs (see the file comment).
enum class HandlerThread {
  kWorker,    // the worker pool: may take long (planning, store access)
  kIoThread,  // the I/O thread: must be cheap and never block (/healthz)
};

// Limits of one HttpServer. Daemons take them from the http.* config keys
// (src/common/daemon.h); the defaults here are the same.
struct HttpServerOptions {
  // Open connections at most; the excess is refused with 503. Count.
  int max_connections = 1000;
  // Open connections from one peer IP address at most. Count.
  int max_connections_per_client = 100;
  // Open connections of one authenticated principal at most (see
  // setPrincipalOf). Count.
  int max_connections_per_principal = 50;
  // A request's headers and body must arrive within this; also the time a
  // client has to take a response.
  Millis header_timeout{10000};
  // A keep-alive connection idle this long between requests is closed.
  Millis idle_timeout{60000};
  // Largest request body; a larger one gets 413 before it is read. Bytes.
  int64_t max_body_bytes = 1 << 20;
  // Largest request line + headers; larger gets 431. Bytes.
  int64_t max_header_bytes = 16 << 10;
  // Threads running kWorker handlers. Count, >= 1.
  int worker_threads = 2;
  // First pause after an accept error; doubles per consecutive error, to 1 s.
  Millis accept_backoff{50};
  // Refused connections and accept errors are logged at most once per this.
  Millis log_interval{10000};
};

struct HttpServerMetrics {
  explicit HttpServerMetrics(MetricsRegistry& metrics);
  Gauge& open;
  Counter& refused_max_connections;
  Counter& refused_per_client;
  Counter& refused_per_principal;
  Counter& accept_errors;
  Counter& timed_out;
  Counter& rejected_400;
  Counter& rejected_413;
  Counter& rejected_431;
};

class HttpServer {
 public:
  // `metrics` must outlive the server.
  HttpServer(HttpServerOptions options, MetricsRegistry& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a handler for exact `method` + `path`, run where `where` says.
  // A path ending in "/*" ("/ws/v1/cluster/apps/*") is a subtree route: it
  // serves every longer path below it ("/ws/v1/cluster/apps/X", the handler
  // reads HttpRequest::path) that has no exact route; the deepest subtree
  // wins. Call before start().
  void route(const std::string& method, const std::string& path, HttpHandler handler,
             HandlerThread where = HandlerThread::kWorker);

  // The ErrorFormat of the server's own 400/404/405 answers for paths that
  // start with `prefix` ("/ws/"); the longest matching prefix wins, and paths
  // under none get plain text. Call before start().
  void setErrorFormat(const std::string& prefix, ErrorFormat format);

  // Who a request authenticates as: the principal's name, "" when the request
  // carries no valid credentials (it then counts only against the IP cap).
  // Runs on the I/O thread, so it must be cheap and never block (a token map
  // lookup). Optional; call before start().
  using PrincipalOf = std::function<std::string(const HttpRequest&)>;
  void setPrincipalOf(PrincipalOf principal_of);

  // Binds host:port (port 0 = any free port) and starts serving. Returns the
  // bound port; UNAVAILABLE naming the address when it is busy.
  Result<int> start(const std::string& host, int port);
  // Stops accepting, joins the I/O thread, then waits for running handlers
  // and drops queued ones; the port is free to bind again when it returns.
  // Idempotent.
  void stop();

  const HttpServerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Readiness of a daemon: named conditions that must all hold before it should
// get traffic (RM: "state-store" open and "plan" loaded; NM: "registered"
// with the RM; every daemon: "serving", cleared when shutdown begins).
// Liveness is separate: a live daemon that is not ready still answers.
// Thread-safe; set() is cheap and may be called from any thread.
class Readiness {
 public:
  // Declares a condition, unmet until set(name, true). Idempotent.
  void require(const std::string& name);
  // Sets a declared condition; a name never declared is declared by this.
  void set(const std::string& name, bool met);
  // The unmet conditions in name order; empty = ready.
  std::vector<std::string> unmet() const;

 private:
  mutable Mutex mu_;
  std::map<std::string, bool> conditions_ GUARDED_BY(mu_);
};

// Routes, both on the I/O thread (cheap, never queued behind a slow handler):
//   GET /healthz  liveness: 200 "ok" while the process serves HTTP.
//   GET /readyz   readiness: 200 "ready" when readiness.unmet() is empty,
//                 else 503 "not ready: <unmet conditions, comma-separated>".
// `readiness` must outlive the server. Call before server.start().
void registerHealthRoutes(HttpServer& server, const Readiness& readiness);

}  // namespace morpheus
