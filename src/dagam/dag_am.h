// The thin gRPC driver of morpheus-dag-am: registers with the RM's
// ApplicationMaster service, runs the allocate loop, starts tasks through the
// NMs' ContainerManager, and finishes the application. All decisions are the
// DagJob's; this class only moves messages (docs/design/architecture.md: thin edge + core).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/tls.h"
#include "dagam/dag_job.h"

namespace morpheus::dagam {

struct AmOptions {
  // host:port of the RM's ApplicationMaster gRPC service ($MORPHEUS_RM_AM_ADDRESS).
  std::string rm_am_address;
  std::string app_id;  // $MORPHEUS_APP_ID
  std::string
      am_token;  // from $MORPHEUS_AM_TOKEN_FILE; sent as am_token and "authorization: Bearer"
  // Interval between Allocate calls. Default 300 ms.
  Millis heartbeat{300};
  // Deadline of one RPC. Default 10 s.
  Millis rpc_timeout{10000};
  // How long the RM may stay unreachable (e.g. while it restarts) before the
  // AM gives up. Default 60 s.
  Millis rm_retry_window{60000};
  // Interval of the periodic progress line while nothing changes. Default 10 s.
  Millis progress_log_interval{10000};
  std::string tracking_url;  // optional, sent at registration
  // TLS towards the RM and the NMs: the CA ($MORPHEUS_TLS_CA, which the NM
  // sets in AM containers when it runs with TLS) and, optionally, a client
  // certificate ($MORPHEUS_TLS_CERT/KEY, never set by the NM); plaintext when
  // off. Without a certificate the AM authenticates by its tokens alone.
  TlsOptions tls;
};

class DagAmDriver {
 public:
  // `job` and `stop` must outlive the driver. Setting `stop` (e.g. from a
  // SIGTERM handler) ends the loop without finishing the application.
  DagAmDriver(AmOptions options, DagJob& job, const std::atomic<bool>& stop);
  ~DagAmDriver();

  // Runs the job to its end. Returns the process exit code: 0 when the job
  // succeeded and was reported, 1 when it failed or the RM was unreachable
  // past the retry window (or the AM was stopped).
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace morpheus::dagam
