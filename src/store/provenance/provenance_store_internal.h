// Shared by the ProvenanceStore implementations (SQLite, PostgreSQL) and
// their conformance test; not part of the public contract
// (store/provenance/provenance_store.h).
//
// The two backends keep the same logical schema, versioned by the same
// number: migration N of SQLite and migration N of PostgreSQL produce the
// same tables and indexes in each dialect.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/provenance/provenance_store.h"

namespace morpheus::store {

// Schema version this code writes (the number of migrations it knows).
// 1: runs, events, proposals, reject_fingerprints.
// 2: secondary indexes for eventsOnPaths, eventsOfJob and listProposals.
// 3: runs.status (succeeded / failed / killed); existing runs become succeeded.
// 4: job_owners (job -> owner); each existing job's owner is the user of its
//    earliest run (submit time, then run id).
inline constexpr int kProvenanceSchemaVersion = 4;

// Validation done by every implementation before any write: INVALID_ARGUMENT
// naming the field ("runs[2].job", "events[0].path", "proposal.id").
Status validateIngest(const IngestBatch& batch);

// The job owners an ingest of `batch` records (jobs without one: the user of
// their first run, else the claimant of their events), given each job's
// stored owner (`stored`, called once per job). PERMISSION_DENIED as the
// contract says (runs of another user, claimed events of another's job).
// Run inside the ingest transaction, before anything is written.
using OwnerLookup = std::function<Result<std::optional<std::string>>(const JobKey&)>;
Result<std::vector<std::pair<JobKey, std::string>>> newJobOwners(const IngestBatch& batch,
                                                                 const OwnerLookup& stored);
Status validateProposal(const ProposalRecord& p);

// Skyline as compact text: shortest round-trip decimal of each sample,
// separated by ','; "" for an empty skyline.
std::string encodeSkyline(const std::vector<double>& skyline);
Result<std::vector<double>> decodeSkyline(std::string_view text);

// Container size as "memory=M,vcores=V[,name=value...]" (Resource::parse).
std::string encodeResource(const Resource& r);

// "read" / "write".
const char* toString(FileAccess a);
std::optional<FileAccess> parseFileAccess(std::string_view s);
// Inverse of toString(ProposalState).
std::optional<ProposalState> parseProposalState(std::string_view s);

// Open a store and migrate it to `target_version` (1..kProvenanceSchemaVersion).
// openProvenanceStore() uses kProvenanceSchemaVersion; tests use a lower
// target to create an old database and check that it migrates.
Result<std::unique_ptr<ProvenanceStore>> openSqliteProvenanceStore(const std::string& path,
                                                                   int target_version);
#ifdef MORPHEUS_HAVE_POSTGRES
Result<std::unique_ptr<ProvenanceStore>> openPostgresProvenanceStore(const std::string& conninfo,
                                                                     int target_version);
#endif

}  // namespace morpheus::store
