// Submits signed-off SLOs to the RM as recurring reservations over gRPC
// (Morpheus §4 -> §6): period P, window [a, d] relative to the period start,
// the skyline as R_ORDER_NO_GAP one-step stages, the recurrence key = the job
// key so each run binds to its reservation automatically.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "common/rm_failover.h"
#include "common/status.h"
#include "common/tls.h"
#include "morpheus/v1/reservation.grpc.pb.h"

namespace morpheus::inference {

struct RecurringRequest {
  std::string job_key;
  std::string owner;
  std::string queue = "default";
  Millis period{0};
  Millis start_offset{0};     // a, from the period start (epoch-aligned)
  Millis deadline_offset{0};  // d, from the period start
  Millis step{60000};
  std::vector<int64_t> skyline;  // containers per step
  Resource container;
  int64_t budget_container_ms = 0;
  bool problematic = false;
  // proposal.skyline-steps: each step one gang of its height (whole, the
  // default: the planner holds the fitted shape or refuses it), or min
  // concurrency 1 (stretchable). Why: planner::SkylineSteps.
  bool whole_steps = true;
};

struct SubmittedReservation {
  std::string reservation_id;
  std::string placement_summary;  // human-readable allocations of the first instance
};

// One instance of a job whose period does not divide the plan's LCM
// (off-kilter, weekly, monthly): Morpheus §6 gives it a non-periodic (one-off)
// reservation per instance, window [period_start + a, period_start + d].
struct OneOffRequest {
  RecurringRequest slo;        // the signed-off SLO (period = the job's own)
  TimePoint period_start;      // the instance's period start, a multiple of the period
  std::string reservation_id;  // chosen by the caller, so a re-submission is detected
};

// The definition for the first instance whose window starts after `now`.
// INVALID_ARGUMENT naming the field when the SLO cannot hold the skyline.
Result<v1::ReservationDefinition> recurringDefinition(const RecurringRequest& r, TimePoint now);
// The one-off definition of one instance (period 0). Same validation.
Result<v1::ReservationDefinition> oneOffDefinition(const OneOffRequest& r);

// The RM as the inference core sees it: where signed-off SLOs become
// reservations. Implementations: RmReservationClient (gRPC); fakes in tests.
class ReservationClient {
 public:
  virtual ~ReservationClient() = default;
  // New + Submit of a recurring reservation; on FAILED_PRECONDITION the
  // status carries the RM's explanation. `existing_id` non-empty =
  // UpdateReservation of that reservation instead.
  virtual Result<SubmittedReservation> submit(const RecurringRequest& r, TimePoint now,
                                              const std::string& existing_id) = 0;
  // Submits one instance's one-off reservation under r.reservation_id;
  // ALREADY_EXISTS if that id was submitted before (e.g. before a restart).
  virtual Result<SubmittedReservation> submitOneOff(const OneOffRequest& r) = 0;
  // Deletes a reservation this service submitted (the RM's
  // DeleteReservation); NOT_FOUND when the RM has no such reservation.
  virtual Status cancel(const std::string& reservation_id) = 0;
  // After submitOneOff(r) was refused ALREADY_EXISTS: OK only when the RM's
  // reservation r.reservation_id is r's (owner, queue and the one-off
  // definition: sameOneOff), so an id taken by another user's or another
  // definition's reservation is never taken for this instance's;
  // PERMISSION_DENIED naming what differs, or the RM's error.
  virtual Status verifyOneOff(const OneOffRequest& r) = 0;
};

// OK when `held` (the RM's report of r.reservation_id) is r's one-off
// reservation: r's owner and queue, r's window, period 0, recurrence key and
// stages; else PERMISSION_DENIED naming the first field that differs. Pure.
Status sameOneOff(const v1::ReservationReport& held, const OneOffRequest& r);

class RmReservationClient final : public ReservationClient {
 public:
  // `rm_address`: the RM, or every RM of an HA pair ("h:p,h:p"):
  // calls follow the active one (common/rm_failover.h); a malformed list
  // fails every call INVALID_ARGUMENT naming inference.rm-address.
  // `tls`: the inference daemon's mutual-TLS setting (plaintext when off).
  // `token` non-empty: sent as "authorization: Bearer TOKEN"; it must be an
  // RM admin's, as reservations are submitted for their owners.
  RmReservationClient(std::string rm_address, TlsOptions tls, std::string token = "")
      : address_(std::move(rm_address)),
        rm_(FailoverChannel::create(address_, tls, "inference.rm-address")),
        token_(std::move(token)) {}
  Result<SubmittedReservation> submit(const RecurringRequest& r, TimePoint now,
                                      const std::string& existing_id) override;
  Result<SubmittedReservation> submitOneOff(const OneOffRequest& r) override;
  Status cancel(const std::string& reservation_id) override;
  Status verifyOneOff(const OneOffRequest& r) override;

 private:
  // Adds the bearer token to an RPC's context.
  void authorize(grpc::ClientContext* ctx) const;
  // One ReservationService call through the failover channel; errors name the RM.
  template <class Req, class Resp>
  Status callRm(grpc::Status (v1::ReservationService::Stub::*method)(grpc::ClientContext*,
                                                                     const Req&, Resp*),
                const Req& req, Resp* resp, Millis timeout, CallKind kind);

  std::string address_;
  Result<std::shared_ptr<FailoverChannel>> rm_;
  std::string token_;
};

}  // namespace morpheus::inference
