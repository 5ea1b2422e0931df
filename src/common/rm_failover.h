// Client-side failover over the RMs of an active/standby pair
// (docs/design/ha.md; YARN's RMProxy with its FailoverProxyProvider).
//
// A FailoverChannel holds the configured list "h:p,h:p" and one gRPC channel
// per address (each verifies TLS against its own host name), and remembers
// which address answered last. A call goes to that address; when it fails
// UNAVAILABLE the channel moves on and retries within the call's deadline:
//  - refused by a standby: the standby answers every RM RPC UNAVAILABLE with
//    trailing metadata `morpheus-leader: <active's gRPC host:port>` ("" while
//    no RM is active). The call was not executed, so it is always retried, at
//    once on the hinted address when it is in the list, else on the next one.
//  - no connection ("failed to connect to all addresses": nothing was sent):
//    always retried on the next address.
//  - any other UNAVAILABLE (the connection broke in flight at a dying active,
//    an overloaded RM) or CANCELLED (never done by this client: a server
//    shutting down as the call arrived, e.g. a standby handing its ports to
//    the real servers): the call may have been executed, so it is retried only
//    when the caller declared it CallKind::kIdempotent.
// After every address of the list has been tried without success the next
// round waits a backoff (initial_backoff, doubling to max_backoff, never past
// the deadline). Other codes and OK are returned at once.
// Giving up: when the deadline leaves no room for another round, or passes
// while the call is still moving between addresses (also when the last
// attempt itself ran out of time after a failover), the call ends with the
// code of the last failover ("no active RM in N address(es), last ADDR: why").
//
// Idempotent RM calls (safe to repeat after an in-flight failure):
//   ResourceTracker: RegisterNode (a re-registration replaces the node's
//     record), NodeHeartbeat (the next heartbeat carries the full status).
//   ApplicationMaster: RegisterApplicationMaster (a resync), Allocate (the
//     response_id detects a duplicate), FinishApplicationMaster.
//   ClientService and ReservationService reads: Get*, List*, GetPlan.
// Not idempotent: SubmitApplication, KillApplication, NewReservation,
// SubmitReservation, UpdateReservation, DeleteReservation — an in-flight
// failure is returned to the caller, who can look the outcome up.
//
// Thread-safe: calls may run concurrently; they share the current address.
// Backoff waits are real time, bounded by the gRPC deadline (wall clock).
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/tls.h"

namespace morpheus {

// Trailing-metadata key of a standby RM's refusal: the active's address.
inline constexpr char kLeaderMetadataKey[] = "morpheus-leader";

// Whether a call may be repeated after failing in flight (file comment).
enum class CallKind { kIdempotent, kNotIdempotent };

struct FailoverOptions {
  Millis initial_backoff{50};  // first wait after a round of failed addresses
  Millis max_backoff{1000};    // the wait doubles up to this
};

class FailoverChannel {
 public:
  // One channel per entry of `list` (common/address_list.h). INVALID_ARGUMENT
  // naming `field` for a malformed list.
  static Result<std::shared_ptr<FailoverChannel>> create(const std::string& list,
                                                         const TlsOptions& tls,
                                                         const std::string& field,
                                                         FailoverOptions opts = {});

  using Attempt =
      std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&, grpc::ClientContext*)>;
  using Prepare = std::function<void(grpc::ClientContext*)>;

  // Runs `attempt` on the current address with a fresh context (deadline
  // `timeout` from now for the whole call, then `prepare`d: metadata) and
  // follows the rules of the file comment. Returns the last attempt's status.
  grpc::Status call(Millis timeout, CallKind kind, const Attempt& attempt,
                    const Prepare& prepare = nullptr);

  // A unary call through a stub made on the chosen channel, e.g.
  //   fc->unary(&v1::ClientService::Stub::ListNodes, req, &resp, 5s, CallKind::kIdempotent);
  template <class Stub, class Req, class Resp>
  grpc::Status unary(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                     const Req& req, Resp* resp, Millis timeout, CallKind kind,
                     const Prepare& prepare = nullptr) {
    return call(
        timeout, kind,
        [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* ctx) {
          resp->Clear();
          Stub stub(ch);
          return (stub.*method)(ctx, req, resp);
        },
        prepare);
  }

  // The address the next call goes to first.
  std::string current() const;
  const std::vector<std::string>& addresses() const { return addresses_; }

 private:
  FailoverChannel(std::vector<std::string> addresses,
                  std::vector<std::shared_ptr<grpc::Channel>> channels, FailoverOptions opts)
      : addresses_(std::move(addresses)), channels_(std::move(channels)), opts_(opts) {}
  // Moves the current address on from `from` (unless another call already
  // did): to `hint` when it is in the list, else to the next one. Returns the
  // new current index.
  size_t moveOn(size_t from, const std::string& hint);

  const std::vector<std::string> addresses_;
  const std::vector<std::shared_ptr<grpc::Channel>> channels_;
  const FailoverOptions opts_;
  mutable Mutex mu_;
  size_t current_ GUARDED_BY(mu_) = 0;
};

// The leader hint of a finished call: the `morpheus-leader` trailing metadata
// (possibly ""), nullopt when the server sent none (not a standby refusal).
std::optional<std::string> leaderHint(const grpc::ClientContext& ctx);

// Whether an UNAVAILABLE status means no connection could be made, so the
// request never left the client.
bool neverSent(const grpc::Status& st);

}  // namespace morpheus
