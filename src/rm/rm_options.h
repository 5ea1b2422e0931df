// Every option of morpheus-rm, with meaning, unit and default (declared in
// declareRmOptions). The YAML file uses the same dotted keys.
#pragma once

#include "common/config.h"
#include "common/daemon.h"

namespace morpheus::rm {

struct RmOptions {
  DaemonOptions daemon;
  Millis node_expiry{10000};        // rm.node-expiry
  Millis heartbeat_interval{1000};  // rm.heartbeat-interval
};

inline constexpr int64_t kDefaultRmGrpcPort = 8030;
inline constexpr int64_t kDefaultRmHttpPort = 8088;

inline void declareRmOptions(ConfigSchema& s, RmOptions* o) {
  addDaemonOptions(s, &o->daemon, kDefaultRmGrpcPort, kDefaultRmHttpPort, "./var/rm");
  s.addDuration("rm.node-expiry", &o->node_expiry, Millis(10000), Millis(100),
                "A node silent for longer than this is declared lost and its containers are "
                "reported lost to their AMs.");
  s.addDuration("rm.heartbeat-interval", &o->heartbeat_interval, Millis(1000), Millis(10),
                "Interval the RM tells node managers to heartbeat at.");
}

}  // namespace morpheus::rm
