// morpheusctl: the CLI for operators and job owners.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/cli_context.h"
#include "cli/cmd_app.h"
#include "cli/cmd_cluster.h"
#include "cli/cmd_queue.h"
#include "cli/cmd_reservation.h"
#include "cli/cmd_skyline.h"
#include "cli/cmd_slo.h"
#include "cli/completion.h"
#include "common/token.h"
#include "common/version.h"
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

namespace {
std::string envOr(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}
}  // namespace

}  // namespace morpheus::cli

int main(int argc, char** argv) {
  using namespace morpheus::cli;
  CliContext ctx;
  ctx.rm_address = envOr("MORPHEUS_RM", "127.0.0.1:8030");
  ctx.rm_http_address = envOr("MORPHEUS_RM_HTTP", "127.0.0.1:8088");
  ctx.inference_address = envOr("MORPHEUS_INFERENCE", "127.0.0.1:8050");
  ctx.token = envOr("MORPHEUS_TOKEN", "");
  ctx.tls = morpheus::tlsFilesFromEnvironment();

  CLI::App app{"morpheusctl: operate a Morpheus cluster and sign off SLOs", "morpheusctl"};
  app.require_subcommand(1);
  app.set_version_flag("--version", morpheus::versionLine("morpheusctl"),
                       "Print the version and git revision");
  app.add_option(
      "--rm", ctx.rm_address,
      "RM gRPC address HOST:PORT, or HOST:PORT,HOST:PORT of active/standby RMs (env MORPHEUS_RM)");
  app.add_option("--rm-http", ctx.rm_http_address,
                 "RM HTTP address HOST:PORT (env MORPHEUS_RM_HTTP)");
  app.add_option("--inference", ctx.inference_address,
                 "Inference service address HOST:PORT (env MORPHEUS_INFERENCE)");
  app.add_option("--user", ctx.user,
                 "Act for this user (admins only; default: the token's own user)");
  app.add_option("--token", ctx.token,
                 "Bearer token for the RM and inference (env MORPHEUS_TOKEN)");
  app.add_option("--token-file", ctx.token_file, "Read the bearer token from this file");
  app.add_option("--tls-ca", ctx.tls.ca_file,
                 "CA certificate(s) of the cluster's TLS, PEM (env MORPHEUS_TLS_CA); alone: "
                 "TLS without a client certificate (token authentication)");
  app.add_option("--tls-cert", ctx.tls.cert_file,
                 "Client certificate signed by that CA, PEM (env MORPHEUS_TLS_CERT); needed "
                 "for daemons with tls.client-certs: require");
  app.add_option("--tls-key", ctx.tls.key_file,
                 "Private key of --tls-cert, PEM (env MORPHEUS_TLS_KEY)");
  addClusterCommands(app, ctx);
  addAppCommands(app, ctx);
  addReservationCommands(app, ctx);
  addSloCommands(app, ctx);
  addSkylineCommands(app, ctx);
  addQueueCommands(app, ctx);
  addCompletionCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad usage (unknown option, missing argument, bad value): exit 2 as
    // README states, not CLI11's own codes (105-109).
    app.exit(e);
    return 2;
  } catch (const CliExit& e) {
    return e.code;
  }
  return 0;
}
