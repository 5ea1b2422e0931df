// Shared state of morpheusctl subcommands: where the daemons are, output mode,
// and the error convention (one line on stderr, exit code 2 for bad input,
// 1 for a failed call).
#pragma once

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/rm_failover.h"
#include "common/status.h"
#include "common/tls.h"

namespace morpheus::cli {

struct CliContext {
  std::string rm_address;         // --rm or $MORPHEUS_RM, default 127.0.0.1:8030
  std::string rm_http_address;    // --rm-http or $MORPHEUS_RM_HTTP, default 127.0.0.1:8088
  std::string inference_address;  // --inference or $MORPHEUS_INFERENCE, default 127.0.0.1:8050
  // --user: an admin's "act for USER" ("" = the token's own user). The RM and
  // inference take the caller's identity from the token only and refuse a
  // different user unless the token is an admin's.
  std::string user;
  std::string token;       // --token or $MORPHEUS_TOKEN: bearer token for the RM and inference
  std::string token_file;  // --token-file: read the token from this file (wins over --token)
  bool json = false;       // --json: every command prints format.h's JSON object instead of text
  // --tls-ca/--tls-cert/--tls-key or $MORPHEUS_TLS_CA/CERT/KEY: TLS to daemons
  // configured with tls.* (loadClientTls: the CA alone, all three, or none =
  // plaintext).
  TlsFiles tls;
  // The failover channel over rm_address, made by rmChannel() on first use.
  mutable std::shared_ptr<FailoverChannel> rm_channel;
};

// The bearer token to send: the first non-empty line of --token-file when
// given, else --token / $MORPHEUS_TOKEN ("" = none). A file that cannot be
// read fails the command (exit 2).
std::string bearerToken(const CliContext& ctx);

// An epoch-ms time as RFC 3339 UTC, whole seconds ("2026-11-24T04:51:48Z").
std::string formatTime(int64_t ms);

// A client context with deadline `timeout` that carries the bearer token as
// "authorization: Bearer TOKEN" metadata.
std::unique_ptr<grpc::ClientContext> authedContext(const CliContext& ctx, Millis timeout);

// Fails (one line on stderr) unless `st` is OK. `daemon` names the callee
// ("RM at 127.0.0.1:8030"); a refused or missing token gets a one-line hint
// naming --token, --token-file and MORPHEUS_TOKEN.
void checkCall(const grpc::Status& st, const std::string& daemon);

// Runs `call` (a blocking RPC) on this thread; once it has taken 2 s, prints
// "<what>: still running (N s)" to stderr every 5 s until it returns, so a
// long call (slo refit on a large history) is never silent. Returns its status.
grpc::Status withProgress(const std::string& what, const std::function<grpc::Status()>& call);

// Thrown by subcommand callbacks after printing; main() turns it into the exit code.
struct CliExit {
  int code;
};

// Prints "morpheusctl: <status>" to stderr and throws CliExit: code 2 for
// INVALID_ARGUMENT, 1 otherwise.
[[noreturn]] void failWith(const Status& st);

// A gRPC channel to `address` with the context's TLS setting. An invalid
// setting (partial, unreadable or bad PEM) fails with the flag's name
// (failWith, exit 2).
std::shared_ptr<grpc::Channel> channelTo(const CliContext& ctx, const std::string& address);

// The channel to the RM: --rm may list every RM of an HA pair ("h:p,h:p")
// and calls follow the active one (common/rm_failover.h). A
// malformed list or TLS setting fails naming the flag (failWith, exit 2).
FailoverChannel& rmChannel(const CliContext& ctx);

// One RM call with the bearer token (authedContext's metadata) through
// rmChannel; `kind` says whether it may be repeated after an in-flight
// failure (see the list in common/rm_failover.h).
template <class Stub, class Req, class Resp>
grpc::Status callRm(const CliContext& ctx,
                    grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* resp, Millis timeout, CallKind kind) {
  const std::string token = bearerToken(ctx);
  return rmChannel(ctx).unary(method, req, resp, timeout, kind, [&token](grpc::ClientContext* c) {
    if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
  });
}

}  // namespace morpheus::cli
