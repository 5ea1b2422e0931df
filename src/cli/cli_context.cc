// The shared helpers of morpheusctl's commands (cli_context.h).
#include "cli/cli_context.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/address_list.h"
#include "common/mutex.h"
#include "common/token.h"
#include "common/wire.h"

namespace morpheus::cli {

namespace {

int exitCodeOf(const Status& st) { return st.code() == StatusCode::kInvalidArgument ? 2 : 1; }

// What a plain TCP connection to an address found (requireReachable's "why").
enum class Tcp { kPending, kNoName, kRefused, kNoAnswer, kConnected, kUnknown };

struct TcpProbe {
  Mutex mu;
  Tcp result GUARDED_BY(mu) = Tcp::kPending;
};

// "host" and "port" of "host:port" or "[v6]:port"; false for another form.
bool splitHostPort(const std::string& a, std::string* host, std::string* port) {
  size_t colon = a.rfind(':');
  if (colon == std::string::npos || colon + 1 >= a.size()) return false;
  *host = a.substr(0, colon);
  *port = a.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return !host->empty() && host->find('/') == std::string::npos;
}

// Resolves `address` and connects to it over TCP (non-blocking, up to
// `timeout`) on a detached thread, so a slow resolver never holds the command
// past --timeout; the result says why gRPC could not connect.
std::shared_ptr<TcpProbe> startTcpProbe(const std::string& address, Millis timeout) {
  auto probe = std::make_shared<TcpProbe>();
  std::string host, port;
  if (!splitHostPort(address, &host, &port)) {
    MutexLock lk(probe->mu);
    probe->result = Tcp::kUnknown;
    return probe;
  }
  std::thread([probe, host, port, timeout] {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    Tcp result = Tcp::kUnknown;
    if (rc == EAI_NONAME || rc == EAI_FAIL) {
      result = Tcp::kNoName;
    } else if (rc == 0) {
      result = Tcp::kRefused;
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      for (addrinfo* ai = res; ai != nullptr && result != Tcp::kConnected; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          result = Tcp::kConnected;
        } else if (errno == EINPROGRESS) {
          auto left =
              std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
          pollfd pfd{fd, POLLOUT, 0};
          int n = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
          int err = 0;
          socklen_t len = sizeof err;
          if (n == 0) {
            result = Tcp::kNoAnswer;
          } else if (n == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
                     err == 0) {
            result = Tcp::kConnected;
          }
        }
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    MutexLock lk(probe->mu);
    probe->result = result;
  }).detach();
  return probe;
}

}  // namespace

void failWith(const Status& st) {
  std::cerr << "morpheusctl: " << st.message() << "\n";
  throw CliExit{exitCodeOf(st)};
}

void failRemote(const Status& st, const std::string& daemon) {
  std::cerr << "morpheusctl: " << (daemon.empty() ? st : st.withContext(daemon)).toString() << "\n";
  throw CliExit{exitCodeOf(st)};
}

int64_t nowMs(const CliContext& ctx) {
  if (ctx.clock != nullptr) return toEpochMs(ctx.clock->now());
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string typedName(const CliContext& ctx, const std::vector<std::string>& names) {
  for (auto it = ctx.args.rbegin(); it != ctx.args.rend(); ++it) {
    if (*it == "--") continue;
    for (const auto& n : names) {
      if (*it == n || it->rfind(n + "=", 0) == 0) return n;
    }
  }
  return names.empty() ? "" : names.back();
}

void requireReadable(const std::string& path, const std::string& what, const std::string& option) {
  std::ifstream in(path);
  if (in) return;
  const int err = errno;
  failWith(Status(StatusCode::kInvalidArgument, (option.empty() ? "" : option + ": ") +
                                                    "cannot read " + what + " " + path + ": " +
                                                    std::strerror(err)));
}

Millis connectTimeout(const CliContext& ctx) {
  auto t = parseDurationArg(ctx.timeout, "--timeout");
  if (!t.isOk()) failWith(t.status());
  return *t;
}

void requireReachable(const CliContext& ctx, const std::vector<std::string>& addresses,
                      const std::string& what, const std::string& flag, const std::string& env) {
  const Millis timeout = connectTimeout(ctx);
  auto tls = loadClientTls(ctx.tls, kTlsFlagNames);
  if (!tls.isOk()) failWith(tls.status());
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::shared_ptr<TcpProbe>> probes;
  for (const auto& a : addresses) {
    channels.push_back(makeChannel(a, *tls));
    probes.push_back(startTcpProbe(a, timeout));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (const auto& c : channels) {
      if (c->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    // A host name that does not resolve will not start answering: no wait.
    bool all_unnamed = true;
    for (const auto& p : probes) {
      MutexLock lk(p->mu);
      all_unnamed = all_unnamed && p->result == Tcp::kNoName;
    }
    if (all_unnamed) break;
    // gRPC deadlines are system_clock time points; 20 ms slices.
    channels[0]->WaitForStateChange(channels[0]->GetState(false),
                                    std::chrono::system_clock::now() + Millis(20));
  }
  std::string why;
  for (size_t i = 0; i < addresses.size(); i++) {
    Tcp r;
    {
      MutexLock lk(probes[i]->mu);
      r = probes[i]->result;
    }
    std::string host, port;
    splitHostPort(addresses[i], &host, &port);
    std::string reason;
    switch (r) {
      case Tcp::kNoName:
        reason = "the host name '" + host + "' does not resolve";
        break;
      case Tcp::kRefused:
        reason = "nothing listens there (connection refused)";
        break;
      case Tcp::kConnected:
        reason = tls->enabled()
                     ? "it accepts connections but no TLS session within " + ctx.timeout +
                           " (do --tls-ca, --tls-cert and --tls-key match the cluster's?)"
                     : "it accepts connections but no gRPC session within " + ctx.timeout +
                           " (if the cluster uses TLS, pass --tls-ca or set MORPHEUS_TLS_CA)";
        break;
      default:
        reason = "no answer within " + ctx.timeout;
        break;
    }
    why += (i == 0 ? "" : "; ") + addresses[i] + ": " + reason;
  }
  std::cerr << "morpheusctl: cannot reach the " << what << " at " << why << "; name the " << what
            << " with " << flag << " HOST:PORT or " << env << " (--timeout to wait longer)\n";
  throw CliExit{1};
}

std::shared_ptr<grpc::Channel> channelTo(const CliContext& ctx, const std::string& address) {
  auto tls = loadClientTls(ctx.tls, kTlsFlagNames);
  if (!tls.isOk()) failWith(tls.status());
  return makeChannel(address, *tls);
}

FailoverChannel& rmChannel(const CliContext& ctx) {
  if (!ctx.rm_channel) {
    auto tls = loadClientTls(ctx.tls, kTlsFlagNames);
    if (!tls.isOk()) failWith(tls.status());
    auto ch = FailoverChannel::create(ctx.rm_address, *tls, "--rm");
    if (!ch.isOk()) failWith(ch.status());
    requireReachable(ctx, (*ch)->addresses(), "RM", "--rm", "MORPHEUS_RM");
    ctx.rm_channel = *ch;
  }
  return *ctx.rm_channel;
}

std::shared_ptr<grpc::Channel> inferenceChannel(const CliContext& ctx) {
  if (!ctx.inference_channel) {
    auto list = splitAddressList(ctx.inference_address, "--inference");
    if (!list.isOk()) failWith(list.status());
    auto ch = channelTo(ctx, ctx.inference_address);
    requireReachable(ctx, {ctx.inference_address}, "inference service", "--inference",
                     "MORPHEUS_INFERENCE");
    ctx.inference_channel = ch;
  }
  return ctx.inference_channel;
}

std::string bearerToken(const CliContext& ctx) {
  if (ctx.token_file.empty()) return ctx.token;
  auto token = readSecretTokenFile(ctx.token_file, "--token-file");
  if (!token.isOk()) failWith(token.status());
  return *token;
}

std::unique_ptr<grpc::ClientContext> authedContext(const CliContext& ctx, Millis timeout) {
  auto c = makeContext(timeout);
  std::string token = bearerToken(ctx);
  if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
  return c;
}

void checkCall(const grpc::Status& st, const std::string& daemon) {
  if (st.ok()) return;
  if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    std::cerr << "morpheusctl: " << daemon << " refused the credentials (" << st.error_message()
              << "): pass a valid token with --token, --token-file or MORPHEUS_TOKEN\n";
    throw CliExit{1};
  }
  failRemote(fromGrpc(st), daemon);
}

grpc::Status withProgress(const std::string& what, const std::function<grpc::Status()>& call) {
  // Locals: the analysis guards members only, so `done` is checked by
  // reading: it is touched only with mu held.
  Mutex mu;
  CondVar cv;
  bool done = false;  // under mu
  auto t0 = std::chrono::steady_clock::now();
  std::thread ticker([&] {
    MutexLock lk(mu);
    auto next = t0 + std::chrono::seconds(2);
    while (!cv.waitUntil(mu, next, [&] { return done; })) {
      auto secs =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0)
              .count();
      std::fprintf(stderr, "%s: still running (%lld s)\n", what.c_str(),
                   static_cast<long long>(secs));
      next += std::chrono::seconds(5);
    }
  });
  grpc::Status st = call();
  {
    MutexLock lk(mu);
    done = true;
  }
  cv.notify_all();
  ticker.join();
  return st;
}

}  // namespace morpheus::cli
