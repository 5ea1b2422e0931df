#include "null_rm.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "morpheus/v1/resource_tracker.grpc.pb.h"

namespace morpheus::bench {
namespace {

class NullTracker final : public v1::ResourceTracker::CallbackService {
  grpc::ServerUnaryReactor* RegisterNode(grpc::CallbackServerContext* ctx,
                                         const v1::RegisterNodeRequest*,
                                         v1::RegisterNodeResponse* resp) override {
    resp->set_heartbeat_interval_ms(1000);
    resp->set_rm_epoch("null");
    auto* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
  grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext* ctx,
                                          const v1::NodeHeartbeatRequest*,
                                          v1::NodeHeartbeatResponse* resp) override {
    resp->set_action(v1::NodeHeartbeatResponse::ACTION_NORMAL);
    auto* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
};

[[noreturn]] void serve(int port_fd) {
  NullTracker tracker;
  grpc::ServerBuilder sb;
  int port = 0;
  sb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  sb.RegisterService(&tracker);
  auto server = sb.BuildAndStart();
  if (write(port_fd, &port, sizeof port) != sizeof port) _exit(1);
  close(port_fd);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  _exit(0);  // no orderly shutdown: calls in flight simply fail
}

}  // namespace

NullRm startNullRm() {
  int fds[2];
  if (pipe(fds) != 0) return {};
  // SIGTERM is blocked in the child before its gRPC threads start, so they
  // inherit the mask and sigwait receives it.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    serve(fds[1]);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(fds[1]);
  int port = 0;
  bool ok = pid > 0 && read(fds[0], &port, sizeof port) == sizeof port && port > 0;
  close(fds[0]);
  if (!ok) return {pid, ""};
  return {pid, "127.0.0.1:" + std::to_string(port)};
}

}  // namespace morpheus::bench
