# Writes the version header for --version (common/version.h) on every build,
# so a commit or an edit after configuring shows in the next build's binaries.
# configure_file leaves the header untouched when the revision is unchanged, so
# nothing is recompiled then. Run as: cmake -DSRC=... -DIN=... -DOUT=...
# -DPROJECT_VERSION=... -P git_revision.cmake
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE MORPHEUS_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR MORPHEUS_GIT_REVISION STREQUAL "")
  set(MORPHEUS_GIT_REVISION "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
