// morpheus-inference: provenance store, SLO/skyline inference, sign-off.
#include <spdlog/spdlog.h>

#include <iostream>

#include "common/daemon.h"
#include "common/logging.h"
#include "inference/inference_options.h"
#include "morpheus/v1/inference.grpc.pb.h"

using namespace morpheus;

int main(int argc, char** argv) {
  blockTerminationSignals();
  inference::InferenceOptions opts;
  ConfigSchema schema("morpheus-inference");
  inference::declareInferenceOptions(schema, &opts);
  std::vector<FlagAlias> extra = {{"--rm", "inference.rm-address", "RM gRPC address HOST:PORT"}};
  if (int rc = parseDaemonCommandLine(argc, argv, "morpheus-inference", schema, extra); rc >= 0) {
    return rc;
  }
  if (Status st = setupLogging("inference", opts.daemon.log_level, opts.daemon.log_file);
      !st.isOk()) {
    std::cerr << "morpheus-inference: " << st.message() << "\n";
    return 2;
  }
  if (Status st = prepareDataDir(opts.daemon.data_dir); !st.isOk()) {
    std::cerr << "morpheus-inference: " << st.message() << "\n";
    return 2;
  }
  MetricsRegistry metrics;
  // The inference RPCs arrive with issue #5; until then UNIMPLEMENTED.
  v1::InferenceService::Service service;
  DaemonServer server("inference", opts.daemon, metrics);
  server.addService(&service);
  if (Status st = server.start(); !st.isOk()) {
    std::cerr << "morpheus-inference: " << st.message() << "\n";
    return 2;
  }
  int sig = waitForTerminationSignal();
  spdlog::info("morpheus-inference stopping on signal {}", sig);
  server.shutdown();
  return 0;
}
