// Shared state of morpheusctl subcommands: where the daemons are, output mode,
// and the error convention: one line on stderr starting "morpheusctl: ",
// exit code 2 for bad input, 1 for a failed call. A local error (a bad
// argument, a file that cannot be read) says what and names the option as
// the user typed it; a daemon's refusal carries its status code and address
// ("morpheusctl: NOT_FOUND: RM at h:p: ..."); a daemon that cannot be reached
// within --timeout says which address failed and how to name another.
#pragma once

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/format.h"
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
  // --timeout: how long to wait for a daemon to accept a connection before
  // giving up on it (a call, once connected, has its own longer deadline).
  // 1.5 s, so that with the process's start and exit a daemon that is down
  // is reported within 2 s.
  std::string timeout = "1500ms";
  // The command line as typed (argv[1..]), so errors name an option the way
  // the user wrote it (typedName).
  std::vector<std::string> args;
  // "now" of time arguments (now+1h) and relative times; nullptr = the wall
  // clock (main() passes none; tests pass their VirtualClock).
  const Clock* clock = nullptr;
  // --tls-ca/--tls-cert/--tls-key or $MORPHEUS_TLS_CA/CERT/KEY: TLS to daemons
  // configured with tls.* (loadClientTls: the CA alone, all three, or none =
  // plaintext).
  TlsFiles tls;
  // The failover channel over rm_address, made by rmChannel() on first use.
  mutable std::shared_ptr<FailoverChannel> rm_channel;
  // The inference channel, made by inferenceChannel() on first use.
  mutable std::shared_ptr<grpc::Channel> inference_channel;
};

// The bearer token to send: the first non-empty line of --token-file when
// given, else --token / $MORPHEUS_TOKEN ("" = none). A file that cannot be
// read fails the command (exit 2).
std::string bearerToken(const CliContext& ctx);

// Now in ms since the epoch, from ctx.clock (the wall clock when unset).
int64_t nowMs(const CliContext& ctx);

// Which of an option's `names` ("-f", "--file") the user typed last; the
// last name when none was typed (a default or an environment variable).
std::string typedName(const CliContext& ctx, const std::vector<std::string>& names);

// Fails (failWith, exit 2) unless `path` can be opened for reading:
// "[<option>: ]cannot read <what> <path>: No such file or directory". `what`
// says what the file is for ("job file"); `option` names the option that
// gave it, as typed ("" for a positional argument).
void requireReadable(const std::string& path, const std::string& what,
                     const std::string& option = "");

// The --timeout value; a bad one fails naming --timeout (exit 2).
Millis connectTimeout(const CliContext& ctx);

// A client context with deadline `timeout` that carries the bearer token as
// "authorization: Bearer TOKEN" metadata.
std::unique_ptr<grpc::ClientContext> authedContext(const CliContext& ctx, Millis timeout);

// Fails (one line on stderr, failRemote) unless `st` is OK. `daemon` names
// the callee ("RM at 127.0.0.1:8030"); a refused or missing token gets a
// one-line hint naming --token, --token-file and MORPHEUS_TOKEN.
void checkCall(const grpc::Status& st, const std::string& daemon);

// Runs `call` (a blocking RPC) on this thread; once it has taken 2 s, prints
// "<what>: still running (N s)" to stderr every 5 s until it returns, so a
// long call (slo refit on a large history) is never silent. Returns its status.
grpc::Status withProgress(const std::string& what, const std::function<grpc::Status()>& call);

// Thrown by subcommand callbacks after printing; main() turns it into the exit code.
struct CliExit {
  int code;
};

// A local error: prints "morpheusctl: <message>" (no status code: nothing
// was called) to stderr and throws CliExit: code 2 for INVALID_ARGUMENT, 1
// otherwise.
[[noreturn]] void failWith(const Status& st);

// A daemon's answer: prints "morpheusctl: <CODE>: <daemon>: <message>" (no
// "<daemon>: " when `daemon` is empty: the message names it) and throws
// CliExit: code 2 for INVALID_ARGUMENT, 1 otherwise.
[[noreturn]] void failRemote(const Status& st, const std::string& daemon);

// Waits up to --timeout for one of `addresses` to accept a gRPC connection
// (the channels gRPC makes for them with the context's TLS). When none does,
// fails (exit 1) with one line naming each address, why when it can tell (the
// host name does not resolve, nothing listens, no answer, a connection
// without a gRPC/TLS session) and how to choose another: `flag` and `env`
// ("--rm", "MORPHEUS_RM"). `what` names the daemon ("RM", "inference
// service"). Never a gRPC or resolver message.
void requireReachable(const CliContext& ctx, const std::vector<std::string>& addresses,
                      const std::string& what, const std::string& flag, const std::string& env);

// A gRPC channel to `address` with the context's TLS setting. An invalid
// setting (partial, unreadable or bad PEM) fails with the flag's name
// (failWith, exit 2).
std::shared_ptr<grpc::Channel> channelTo(const CliContext& ctx, const std::string& address);

// The channel to the RM: --rm may list every RM of an HA pair ("h:p,h:p")
// and calls follow the active one (common/rm_failover.h). A
// malformed list or TLS setting fails naming the flag (failWith, exit 2).
// The first use checks that one of the RMs is reachable (requireReachable).
FailoverChannel& rmChannel(const CliContext& ctx);

// The channel to the inference service (--inference), checked reachable on
// first use like the RM's.
std::shared_ptr<grpc::Channel> inferenceChannel(const CliContext& ctx);

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
