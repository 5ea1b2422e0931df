// A small HTTP/1.1 server (Boost.Beast) for /healthz, /metrics and REST
// endpoints. One I/O thread; handlers run on it and must not block for long.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace morpheus {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // without the query string
  std::map<std::string, std::string> query;    // decoded query parameters
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// HTTP status for a non-OK Status (400, 404, 409, 403, 503, 500).
int httpStatusFor(const Status& s);
// {"error": {"code": "...", "message": "..."}} with the matching HTTP status.
HttpResponse jsonError(const Status& s);

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a handler for exact `method` + `path`. Call before start().
  void route(const std::string& method, const std::string& path, HttpHandler handler);

  // Binds host:port (port 0 = any free port) and starts serving. Returns the
  // bound port; UNAVAILABLE naming the address when it is busy.
  Result<int> start(const std::string& host, int port);
  // Stops accepting and joins the I/O thread. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace morpheus
