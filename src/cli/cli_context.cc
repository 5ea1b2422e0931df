// The shared helpers of morpheusctl's commands (cli_context.h).
#include "cli/cli_context.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/token.h"
#include "common/wire.h"

namespace morpheus::cli {

void failWith(const Status& st) {
  std::cerr << "morpheusctl: " << st.toString() << "\n";
  throw CliExit{st.code() == StatusCode::kInvalidArgument ? 2 : 1};
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
    ctx.rm_channel = *ch;
  }
  return *ctx.rm_channel;
}

std::string formatTime(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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
  failWith(fromGrpc(st).withContext(daemon));
}

grpc::Status withProgress(const std::string& what, const std::function<grpc::Status()>& call) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // GUARDED_BY(mu)
  auto t0 = std::chrono::steady_clock::now();
  std::thread ticker([&] {
    std::unique_lock<std::mutex> lk(mu);
    auto next = t0 + std::chrono::seconds(2);
    while (!cv.wait_until(lk, next, [&] { return done; })) {
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
    std::lock_guard<std::mutex> lk(mu);
    done = true;
  }
  cv.notify_all();
  ticker.join();
  return st;
}

}  // namespace morpheus::cli
