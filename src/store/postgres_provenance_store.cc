// PostgreSQL implementation of ProvenanceStore (in progress).
#include "store/provenance_store_internal.h"

namespace morpheus::store {

Result<std::unique_ptr<ProvenanceStore>> openPostgresProvenanceStore(const std::string&, int) {
  return unavailable("postgres provenance store: not implemented yet");
}

}  // namespace morpheus::store
