// A node's record as the wire's NodeReport (ClientService ListNodes,
// AdminService's node replies).
#pragma once

#include "morpheus/v1/client.pb.h"
#include "rm/core/node_registry.h"

namespace morpheus::rm {

// A node's record with its state (NodeReport.state: RUNNING, LOST,
// DECOMMISSIONING, DECOMMISSIONED; drained for every admin state but in
// service). The harvest class is the caller's. A pure function: thread-safe.
void nodeReport(const NodeInfo& n, v1::NodeReport* out);

}  // namespace morpheus::rm
