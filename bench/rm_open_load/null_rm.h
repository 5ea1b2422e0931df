// A trivial RM for checking the open-loop generator itself (can
// bench/rm_open_load offer 10,000 NMs at 1 s heartbeats?): a
// child process that serves ResourceTracker on gRPC's callback API and answers
// every registration and heartbeat at once, doing no work. Against it the
// generator's own send lag, latency floor and CPU show whether it could be
// the bottleneck of a run against the real RM.
#pragma once

#include <sys/types.h>

#include <string>

namespace morpheus::bench {

struct NullRm {
  pid_t pid = -1;
  std::string address;  // 127.0.0.1:<port>; "" when it did not start
};

// Forks the null RM. Call before this process creates any gRPC object (fork
// after gRPC has started threads is unsafe). The child exits on SIGTERM.
NullRm startNullRm();

}  // namespace morpheus::bench
