// Shared by the RM runtime unit tests: a node registered with both the core
// and the runtime, as the NM's registration does.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/wire.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// Registers node `id` with `vcores` vcores and 1 GiB per vcore at a
// container-manager address nothing listens on. Fails the test on an error.
inline void registerTestNode(RmCore& core, RmRuntime& rt, const std::string& id, int vcores) {
  v1::RegisterNodeRequest r;
  r.set_node_id(id);
  r.set_container_manager_address("127.0.0.1:1");
  toProto(Resource(1024 * vcores, vcores), r.mutable_total());
  NodeInfo info;
  info.id = NodeId(id);
  info.total = Resource(1024 * vcores, vcores);
  info.container_manager_address = "127.0.0.1:1";
  ASSERT_TRUE(core.registerNode(info).isOk());
  rt.onNodeRegistered(r);
}

}  // namespace morpheus::rm
