// Every option of morpheus-inference, with meaning, unit and default.
#pragma once

#include "common/config.h"
#include "common/daemon.h"

namespace morpheus::inference {

struct InferenceOptions {
  DaemonOptions daemon;
  std::string rm_address;  // inference.rm-address
};

inline constexpr int64_t kDefaultInferenceGrpcPort = 8050;
inline constexpr int64_t kDefaultInferenceHttpPort = 8051;

inline void declareInferenceOptions(ConfigSchema& s, InferenceOptions* o) {
  addDaemonOptions(s, &o->daemon, kDefaultInferenceGrpcPort, kDefaultInferenceHttpPort,
                   "./var/inference");
  s.addString("inference.rm-address", &o->rm_address, "127.0.0.1:8030",
              "host:port of the RM's gRPC endpoint, where accepted proposals are submitted "
              "as recurring reservations.");
}

}  // namespace morpheus::inference
