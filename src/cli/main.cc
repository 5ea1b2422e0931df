// morpheusctl: the CLI for operators and job owners. main() only takes the
// defaults from the environment; the command line is cli.h's.
#include <cstdlib>
#include <string>

#include "cli/cli.h"
#include "common/logging.h"

namespace {

std::string envOr(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace morpheus::cli;
  // Library and gRPC log lines: "morpheusctl: ..." on stderr, never gRPC's raw format.
  morpheus::setupToolLogging("morpheusctl");
  CliContext ctx;
  ctx.rm_address = envOr("MORPHEUS_RM", "127.0.0.1:8030");
  ctx.rm_http_address = envOr("MORPHEUS_RM_HTTP", "127.0.0.1:8088");
  ctx.inference_address = envOr("MORPHEUS_INFERENCE", "127.0.0.1:8050");
  ctx.token = envOr("MORPHEUS_TOKEN", "");
  ctx.tls = morpheus::tlsFilesFromEnvironment();
  return runMorpheusctl(argc, argv, ctx);
}
