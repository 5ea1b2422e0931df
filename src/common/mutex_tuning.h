// Abseil's Mutex deadlock detection off (seen in RM profiles). Debian's abseil
// is built without NDEBUG, so its Mutex keeps a global lock-order graph on
// every Lock() unless told not to: every lock of gRPC's (call creation,
// completion queues, channels) then takes a process-wide lock and allocates
// graph nodes. Under load that serialised the open-loop generator (bench/
// rm_open_load) on that one lock while the RM itself was idle. Our own locks (morpheus::Mutex,
// common/mutex.h, over std::mutex) are not affected; this only stops gRPC's
// internal locks from paying for a debug check.
//
// Call once at start-up, before gRPC is used (daemons: via
// parseDaemonCommandLine; benches and tools that use gRPC call it in main).
#pragma once

namespace morpheus {

void disableAbseilDeadlockDetection();

}  // namespace morpheus
