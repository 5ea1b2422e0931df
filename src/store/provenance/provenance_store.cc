// ProvenanceStore factory, validation and value encodings shared by the
// SQLite and PostgreSQL implementations.
#include <charconv>
#include <cmath>
#include <map>
#include <system_error>

#include "store/provenance/provenance_store.h"
#include "store/provenance/provenance_store_internal.h"

namespace morpheus::store {

const char* toString(ProposalState s) {
  switch (s) {
    case ProposalState::kPending:
      return "pending";
    case ProposalState::kAccepted:
      return "accepted";
    case ProposalState::kRejected:
      return "rejected";
    case ProposalState::kSuperseded:
      return "superseded";
  }
  return "unknown";
}

std::optional<ProposalState> parseProposalState(std::string_view s) {
  for (ProposalState st : {ProposalState::kPending, ProposalState::kAccepted,
                           ProposalState::kRejected, ProposalState::kSuperseded}) {
    if (s == toString(st)) return st;
  }
  return std::nullopt;
}

const char* toString(FileAccess a) { return a == FileAccess::kWrite ? "write" : "read"; }

std::optional<FileAccess> parseFileAccess(std::string_view s) {
  if (s == "read") return FileAccess::kRead;
  if (s == "write") return FileAccess::kWrite;
  return std::nullopt;
}

std::string encodeSkyline(const std::vector<double>& skyline) {
  std::string out;
  out.reserve(skyline.size() * 4);
  char buf[32];
  for (size_t i = 0; i < skyline.size(); ++i) {
    if (i) out.push_back(',');
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, skyline[i]);
    MORPHEUS_CHECK(ec == std::errc(), "to_chars of a double cannot overflow 32 bytes");
    out.append(buf, end);
  }
  return out;
}

Result<std::vector<double>> decodeSkyline(std::string_view text) {
  std::vector<double> out;
  if (text.empty()) return out;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (true) {
    double v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) return internalError("corrupt skyline in provenance store");
    out.push_back(v);
    if (next == end) break;
    if (*next != ',') return internalError("corrupt skyline in provenance store");
    p = next + 1;
  }
  return out;
}

std::string encodeResource(const Resource& r) {
  std::string out =
      "memory=" + std::to_string(r.memoryMib()) + ",vcores=" + std::to_string(r.vcores());
  for (const auto& [name, v] : r.extended()) out += "," + name + "=" + std::to_string(v);
  return out;
}

namespace {

std::string at(const char* list, size_t i, const char* field) {
  return std::string(list) + "[" + std::to_string(i) + "]." + field;
}

}  // namespace

Result<std::vector<std::pair<JobKey, std::string>>> newJobOwners(const IngestBatch& batch,
                                                                 const OwnerLookup& stored) {
  std::map<JobKey, std::optional<std::string>> owners;  // stored or recorded by this batch
  std::vector<std::pair<JobKey, std::string>> added;
  auto ownerOf = [&](const JobKey& job) -> Result<std::optional<std::string>*> {
    auto it = owners.find(job);
    if (it == owners.end()) {
      MORPHEUS_ASSIGN_OR_RETURN(auto o, stored(job));
      it = owners.emplace(job, std::move(o)).first;
    }
    return &it->second;
  };
  for (size_t i = 0; i < batch.runs.size(); i++) {
    const RunRecord& r = batch.runs[i];
    MORPHEUS_ASSIGN_OR_RETURN(std::optional<std::string> * owner, ownerOf(r.job));
    if (!*owner) {
      *owner = r.user;
      added.emplace_back(r.job, r.user);
    } else if (**owner != r.user) {
      return permissionDenied("runs[" + std::to_string(i) + "].user: job " + r.job.value() +
                              " belongs to " + **owner + ", not to " + r.user +
                              " (a job's runs are its owner's)");
    }
  }
  for (size_t i = 0; i < batch.events.size(); i++) {
    const FileEvent& e = batch.events[i];
    MORPHEUS_ASSIGN_OR_RETURN(std::optional<std::string> * owner, ownerOf(e.job));
    if (batch.claimant.empty()) continue;
    if (!*owner) {
      *owner = batch.claimant;
      added.emplace_back(e.job, batch.claimant);
    } else if (**owner != batch.claimant) {
      return permissionDenied("events[" + std::to_string(i) + "].job: job " + e.job.value() +
                              " belongs to " + **owner + ", not to " + batch.claimant);
    }
  }
  return added;
}

Status validateIngest(const IngestBatch& batch) {
  for (size_t i = 0; i < batch.runs.size(); ++i) {
    const RunRecord& r = batch.runs[i];
    if (r.job.empty()) return invalidArgument(at("runs", i, "job"), "must not be empty");
    if (r.run.empty()) return invalidArgument(at("runs", i, "run"), "must not be empty");
    if (r.start < r.submit) return invalidArgument(at("runs", i, "start"), "is before submit");
    if (r.end < r.start) return invalidArgument(at("runs", i, "end"), "is before start");
    if (r.step <= Millis(0)) return invalidArgument(at("runs", i, "step"), "must be > 0");
    for (size_t j = 0; j < r.skyline.size(); ++j) {
      if (!std::isfinite(r.skyline[j]) || r.skyline[j] < 0) {
        return invalidArgument(at("runs", i, "skyline") + "[" + std::to_string(j) + "]",
                               "must be a finite number >= 0");
      }
    }
    if (r.container.anyNegative()) {
      return invalidArgument(at("runs", i, "container"), "must not be negative");
    }
    if (!parseRunStatus(toString(r.status))) {
      return invalidArgument(at("runs", i, "status"), "must be succeeded, failed or killed");
    }
    // Extended resource names must survive the text encoding ("gpu", not "a,b=").
    auto back = Resource::parse(encodeResource(r.container), at("runs", i, "container"));
    if (!back.isOk() || !(*back == r.container)) {
      return invalidArgument(at("runs", i, "container"),
                             "resource names must be non-empty without ',' or '='");
    }
  }
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const FileEvent& e = batch.events[i];
    if (e.job.empty()) return invalidArgument(at("events", i, "job"), "must not be empty");
    if (e.path.empty()) return invalidArgument(at("events", i, "path"), "must not be empty");
    if (e.kind != FileAccess::kRead && e.kind != FileAccess::kWrite) {
      return invalidArgument(at("events", i, "kind"), "must be read or write");
    }
  }
  return Status::ok();
}

Status validateProposal(const ProposalRecord& p) {
  if (p.id.empty()) return invalidArgument("proposal.id", "must not be empty");
  if (p.job.empty()) return invalidArgument("proposal.job", "must not be empty");
  if (!parseProposalState(toString(p.state))) {
    return invalidArgument("proposal.state", "is not a known state");
  }
  if (p.updated < p.created) return invalidArgument("proposal.updated", "is before created");
  return Status::ok();
}

Result<std::unique_ptr<ProvenanceStore>> openProvenanceStore(const std::string& kind,
                                                             const std::string& location) {
  if (kind == "sqlite") {
    if (location.empty()) {
      return invalidArgument("provenance-store.location", "is required for sqlite (a file)");
    }
    return openSqliteProvenanceStore(location, kProvenanceSchemaVersion);
  }
  if (kind == "postgres") {
#ifdef MORPHEUS_HAVE_POSTGRES
    return openPostgresProvenanceStore(location, kProvenanceSchemaVersion);
#else
    return invalidArgument("provenance-store.kind",
                           "'postgres' is not available: this build has no libpq (install "
                           "libpq-dev and rebuild); available: sqlite");
#endif
  }
#ifdef MORPHEUS_HAVE_POSTGRES
  const char* available = "sqlite, postgres";
#else
  const char* available = "sqlite";
#endif
  return invalidArgument("provenance-store.kind",
                         "unknown kind '" + kind + "' (available: " + available + ")");
}

}  // namespace morpheus::store
