#include "common/version.h"

#include "morpheus_version_generated.h"

namespace morpheus {

const char* projectVersion() { return MORPHEUS_PROJECT_VERSION; }

const char* gitRevision() { return MORPHEUS_GIT_REVISION; }

std::string versionLine(const std::string& program) {
  return program + " " + projectVersion() + " (git " + gitRevision() + ")";
}

}  // namespace morpheus
