// Shared state of morpheusctl subcommands: where the daemons are, output mode,
// and the error convention (one line on stderr, exit code 2 for bad input,
// 1 for a failed call).
#pragma once

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/tls.h"

namespace morpheus::cli {

struct CliContext {
  std::string rm_address;         // --rm or $MORPHEUS_RM, default 127.0.0.1:8030
  std::string rm_http_address;    // --rm-http or $MORPHEUS_RM_HTTP, default 127.0.0.1:8088
  std::string inference_address;  // --inference or $MORPHEUS_INFERENCE, default 127.0.0.1:8050
  std::string user;               // --user or $MORPHEUS_USER or $USER
  std::string token;              // --token or $MORPHEUS_TOKEN (bearer token for sign-off)
  // --tls-ca/--tls-cert/--tls-key or $MORPHEUS_TLS_CA/CERT/KEY: mutual TLS to
  // daemons configured with tls.* (all three or none; none = plaintext).
  TlsFiles tls;
};

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

}  // namespace morpheus::cli
