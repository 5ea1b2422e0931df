#include "common/http_server.h"

#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>

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

HttpResponse jsonError(const Status& s) {
  nlohmann::json j = {{"error", {{"code", statusCodeName(s.code())}, {"message", s.message()}}}};
  return HttpResponse{httpStatusFor(s), "application/json", j.dump()};
}

namespace {

std::string urlDecode(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); i++) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%' && i + 2 < in.size()) {
      out += static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

void parseTarget(const std::string& target, HttpRequest* req) {
  auto q = target.find('?');
  req->path = target.substr(0, q);
  if (q == std::string::npos) return;
  std::string qs = target.substr(q + 1);
  size_t pos = 0;
  while (pos <= qs.size()) {
    auto amp = qs.find('&', pos);
    std::string kv = qs.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!kv.empty()) {
      auto eq = kv.find('=');
      try {
        if (eq == std::string::npos) {
          req->query[urlDecode(kv)] = "";
        } else {
          req->query[urlDecode(kv.substr(0, eq))] = urlDecode(kv.substr(eq + 1));
        }
      } catch (const std::exception&) {
        // malformed escape: keep the raw text
        req->query[kv] = "";
      }
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
}

}  // namespace

struct HttpServer::Impl {
  asio::io_context io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::map<std::pair<std::string, std::string>, HttpHandler> routes;
  std::thread thread;
  bool running = false;

  HttpResponse dispatch(const HttpRequest& req) {
    auto it = routes.find({req.method, req.path});
    if (it == routes.end()) {
      bool path_known = false;
      for (const auto& [k, _] : routes) path_known |= k.second == req.path;
      if (path_known) return HttpResponse{405, "text/plain", "method not allowed\n"};
      return HttpResponse{404, "text/plain", "not found: " + req.path + "\n"};
    }
    try {
      return it->second(req);
    } catch (const std::exception& e) {
      spdlog::error("http handler {} {} threw: {}", req.method, req.path, e.what());
      return jsonError(internalError(e.what()));
    }
  }

  void session(std::shared_ptr<tcp::socket> sock) {
    auto buf = std::make_shared<beast::flat_buffer>();
    auto parser = std::make_shared<http::request_parser<http::string_body>>();
    parser->body_limit(16 * 1024 * 1024);
    http::async_read(*sock, *buf, *parser, [this, sock, buf, parser](beast::error_code ec, size_t) {
      if (ec) return;
      auto& r = parser->get();
      HttpRequest req;
      req.method = std::string(r.method_string());
      parseTarget(std::string(r.target()), &req);
      for (const auto& f : r) {
        std::string name(f.name_string());
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        req.headers[name] = std::string(f.value());
      }
      req.body = r.body();
      HttpResponse resp = dispatch(req);
      auto res = std::make_shared<http::response<http::string_body>>(
          static_cast<http::status>(resp.status), r.version());
      res->set(http::field::server, "morpheus");
      res->set(http::field::content_type, resp.content_type);
      res->keep_alive(r.keep_alive());
      res->body() = std::move(resp.body);
      res->prepare_payload();
      http::async_write(*sock, *res, [this, sock, res](beast::error_code ec2, size_t) {
        if (ec2) return;
        if (res->keep_alive()) {
          session(sock);
        } else {
          beast::error_code ignored;
          sock->shutdown(tcp::socket::shutdown_send, ignored);
        }
      });
    });
  }

  void accept() {
    acceptor->async_accept([this](beast::error_code ec, tcp::socket sock) {
      if (ec) return;  // acceptor closed
      session(std::make_shared<tcp::socket>(std::move(sock)));
      accept();
    });
  }
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer() { stop(); }

void HttpServer::route(const std::string& method, const std::string& path, HttpHandler handler) {
  impl_->routes[{method, path}] = std::move(handler);
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
  impl_->accept();
  impl_->running = true;
  impl_->thread = std::thread([this] { impl_->io.run(); });
  return bound;
}

void HttpServer::stop() {
  if (!impl_->running) return;
  impl_->running = false;
  asio::post(impl_->io, [this] {
    beast::error_code ec;
    impl_->acceptor->close(ec);
  });
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace morpheus
