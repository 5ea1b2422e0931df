# Installation and the Debian package, included by the top-level
# CMakeLists.txt after every target exists.
#
#   cmake --install BUILD --prefix /usr/local     # binaries, configs, units
#   cpack --config BUILD/CPackConfig.cmake -G DEB  # morpheus_<version>_<arch>.deb
#
# The package reuses the build tree's binaries (cpack runs the install rules
# on it; nothing is rebuilt). Layout in the package:
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
# `cmake --install` and cpack install what is built and never start a build
# (build first); so the package test does not rebuild the tree it packages.
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
  string(REPLACE "as used by deploy/local-cluster.sh" "installed by the morpheus package" out
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

# CPack DEB. Runtime dependencies come from dpkg-shlibdeps on the binaries.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "morpheus")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Morpheus maintainers <morpheus@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Morpheus cluster resource manager: RM, node manager, inference service and CLI")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Debug info stays in the build tree; the packaged binaries are stripped.
set(CPACK_STRIP_FILES ON)
# postinst creates the morpheus system user the units run as and reloads
# systemd; conffiles keeps an operator's edits of /etc/morpheus/*.yaml.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst
                                       ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
