// The build's identity for `--version` of every binary and the RM's
// /ws/v1/cluster/info. The git revision is taken on every build
// (`git describe --always --dirty --tags`, src/common/git_revision.cmake): a
// tree with uncommitted changes reports "<rev>-dirty"; a source tree without
// .git (a tarball) reports "unknown".
#pragma once

#include <string>

namespace morpheus {

// The project version from CMake's project() ("0.1.0").
const char* projectVersion();
// `git describe` of the source tree at the last build, or "unknown".
const char* gitRevision();
// "<program> <version> (git <revision>)": the one line `--version` prints.
std::string versionLine(const std::string& program);

}  // namespace morpheus
