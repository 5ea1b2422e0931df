// morpheus-rm: the central resource manager daemon. main() only wires.
#include <spdlog/spdlog.h>

#include <iostream>

#include "common/daemon.h"
#include "common/logging.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/reservation.grpc.pb.h"
#include "rm/rm_core.h"
#include "rm/services.h"

using namespace morpheus;

int main(int argc, char** argv) {
  blockTerminationSignals();
  rm::RmOptions opts;
  ConfigSchema schema("morpheus-rm");
  rm::declareRmOptions(schema, &opts);
  if (int rc = parseDaemonCommandLine(argc, argv, "morpheus-rm", schema, {}); rc >= 0) return rc;
  if (Status st = setupLogging("rm", opts.daemon.log_level, opts.daemon.log_file); !st.isOk()) {
    std::cerr << "morpheus-rm: " << st.message() << "\n";
    return 2;
  }
  if (Status st = prepareDataDir(opts.daemon.data_dir); !st.isOk()) {
    std::cerr << "morpheus-rm: " << st.message() << "\n";
    return 2;
  }
  auto secret = rm::loadOrCreateSecret(opts.daemon.data_dir);
  if (!secret.isOk()) {
    std::cerr << "morpheus-rm: " << secret.status().message() << "\n";
    return 2;
  }
  RealClock clock;
  MetricsRegistry metrics;
  rm::RmCore core(opts, clock, metrics, *secret);
  rm::ResourceTrackerService tracker(core);
  rm::ClientServiceImpl client(core);
  // Not yet implemented by this build: answer UNIMPLEMENTED (generated defaults).
  v1::ApplicationMaster::Service am_service;
  v1::ReservationService::Service reservation_service;
  DaemonServer server("rm", opts.daemon, metrics);
  server.addService(&tracker);
  server.addService(&client);
  server.addService(&am_service);
  server.addService(&reservation_service);
  if (Status st = server.start(); !st.isOk()) {
    std::cerr << "morpheus-rm: " << st.message() << "\n";
    return 2;
  }
  core.start();
  spdlog::info("morpheus-rm started (epoch {})", core.epoch());
  int sig = waitForTerminationSignal();
  spdlog::info("morpheus-rm stopping on signal {}", sig);
  core.stop();
  server.shutdown();
  spdlog::info("morpheus-rm stopped");
  return 0;
}
