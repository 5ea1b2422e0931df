// gRPC edge of morpheus-inference: validates requests (INVALID_ARGUMENT
// naming the field, nothing stored on rejection), identifies the caller, and
// translates between protobuf and the core's types.
#pragma once

#include "common/auth.h"
#include "inference/service/inference_core.h"
#include "morpheus/v1/inference.grpc.pb.h"

namespace morpheus::inference {

class InferenceServiceImpl final : public v1::InferenceService::Service {
 public:
  InferenceServiceImpl(InferenceCore& core, const Authenticator& auth,
                       InferenceCoreOptions fit_defaults)
      : core_(core), auth_(auth), fit_defaults_(std::move(fit_defaults)) {}

  grpc::Status IngestRuns(grpc::ServerContext*, const v1::IngestRunsRequest*,
                          v1::IngestResponse*) override;
  grpc::Status IngestProvenance(grpc::ServerContext*, const v1::IngestProvenanceRequest*,
                                v1::IngestResponse*) override;
  grpc::Status ListProposals(grpc::ServerContext*, const v1::ListProposalsRequest*,
                             v1::ListProposalsResponse*) override;
  grpc::Status GetProposal(grpc::ServerContext*, const v1::GetProposalRequest*,
                           v1::Proposal*) override;
  grpc::Status AcceptProposal(grpc::ServerContext*, const v1::AcceptProposalRequest*,
                              v1::SignOffResponse*) override;
  grpc::Status OverrideProposal(grpc::ServerContext*, const v1::OverrideProposalRequest*,
                                v1::SignOffResponse*) override;
  grpc::Status RejectProposal(grpc::ServerContext*, const v1::RejectProposalRequest*,
                              v1::SignOffResponse*) override;
  grpc::Status FitSkyline(grpc::ServerContext*, const v1::FitSkylineRequest*,
                          v1::FitSkylineResponse*) override;
  grpc::Status Refit(grpc::ServerContext*, const v1::RefitRequest*, v1::RefitResponse*) override;
  grpc::Status ListRuns(grpc::ServerContext*, const v1::ListRunsRequest*,
                        v1::ListRunsResponse*) override;

 private:
  InferenceCore& core_;
  const Authenticator& auth_;
  const InferenceCoreOptions fit_defaults_;
};

// Validates wire runs into store records; errors name "runs[i].field".
Result<std::vector<store::RunRecord>> runsFromProto(
    const google::protobuf::RepeatedPtrField<v1::Run>& runs, const std::string& field);
Result<std::vector<store::FileEvent>> eventsFromProto(
    const google::protobuf::RepeatedPtrField<v1::ProvenanceEvent>& events,
    const std::string& field);
// `now` places the next instance of a job with per-instance reservations.
void toProto(const Proposal& p, TimePoint now, v1::Proposal* out);

}  // namespace morpheus::inference
