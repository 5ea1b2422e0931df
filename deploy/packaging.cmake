# Installation rules, included by the top-level CMakeLists.txt after every
# target exists. They are also what the Debian packages are made of.
#
#   cmake --install BUILD --prefix /usr/local     # binaries, configs, units
#   deploy/build-debs.sh BUILD OUT                # morpheus-{common,rm,nm,inference,client}
#
# The packages reuse the build tree's binaries (deploy/debian/rules runs
# `cmake --install` on it; nothing is rebuilt) and split this layout between
# them (deploy/debian/*.install), adding man pages generated from the binaries:
#   /usr/bin/                morpheus-rm, -nm, -container-launch, -inference,
#                            -dag-am, -sim, morpheusctl
#   /etc/morpheus/           rm.yaml, nm.yaml, inference.yaml (conffiles):
#                            deploy/*.yaml with data-dir under /var/lib/morpheus
#   /lib/systemd/system/     morpheus-{rm,nm,inference}.service
#   /usr/share/bash-completion/completions/morpheusctl, zsh/site-functions/_morpheusctl,
#   fish/vendor_completions.d/morpheusctl.fish (src/cli)
#   /usr/share/doc/morpheus/ README.md and docs/ (without docs/tools)
# The web UI (src/rm/http/ui) is compiled into morpheus-rm and served by it, so no
# asset file is installed. Absolute destinations (/etc, /lib/systemd) are kept
# absolute under any prefix: a unit file elsewhere is never found by systemd.
include(GNUInstallDirs)
# `cmake --install` installs what is built and never starts a build (build
# first); so the package test does not rebuild the tree it packages.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

install(TARGETS morpheus-rm morpheus-nm morpheus-container-launch morpheus-inference
                morpheus-dag-am morpheus-sim
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The example configs with durable state where the units' StateDirectory= puts
# it (/var/lib/morpheus/<daemon>), made at configure time from deploy/*.yaml so
# both stay one source (tests/integration/foundation_test.cc checks those list
# every option).
foreach(daemon rm nm inference)
  set(src ${CMAKE_SOURCE_DIR}/deploy/${daemon}.yaml)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(READ ${src} text)
  string(REPLACE "data-dir: \"./var/${daemon}\"" "data-dir: \"/var/lib/morpheus/${daemon}\"" out
                 "${text}")
  if(out STREQUAL text)
    message(FATAL_ERROR "deploy/${daemon}.yaml: expected data-dir: \"./var/${daemon}\"")
  endif()
  string(REPLACE "as used by deploy/local-cluster.sh" "installed by the morpheus-${daemon} package" out
                 "${out}")
  file(WRITE ${CMAKE_BINARY_DIR}/etc/morpheus/${daemon}.yaml "${out}")
  install(FILES ${CMAKE_BINARY_DIR}/etc/morpheus/${daemon}.yaml DESTINATION /etc/morpheus)
endforeach()

install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/morpheus-rm.service
              ${CMAKE_SOURCE_DIR}/deploy/systemd/morpheus-nm.service
              ${CMAKE_SOURCE_DIR}/deploy/systemd/morpheus-inference.service
        DESTINATION /lib/systemd/system)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The documentation (docs/, without its generator) next to the README, so the
# units' Documentation= links and the README's links resolve on an installed
# machine.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR}
        PATTERN tools EXCLUDE)
