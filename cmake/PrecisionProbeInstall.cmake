# Installation and packaging: the probe in bin/, the engine in libexec/precision-probe/, where the
# probe looks for it. Neither links LibTorch: the engine loads the image's at run time.
# `cpack -G DEB` builds a Debian package, `cpack -G TGZ` a tree to mount into any image.
include(GNUInstallDirs)
install(TARGETS precision-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS precision-probe-engine RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/precision-probe)
install(FILES README.md LICENSE docs/report.schema.json DESTINATION ${CMAKE_INSTALL_DOCDIR})
# simdjson is compiled into both (and into the report's library): its licence goes with them.
install(FILES "${PP_SIMDJSON_DIR}/LICENSE" DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME LICENSE.simdjson)

# The report library for other C++ programs: headers, the static library, a CMake package
# (find_package(precision-probe) -> precision_probe::report). Not in the distribution's packages
# (./dev dist): built with zig's libc++, it would link into libc++ programs alone; a build with the
# system's compiler installs it.
if(NOT PP_ZIG_TOOLCHAIN)
  include(CMakePackageConfigHelpers)
  set_target_properties(pp_report PROPERTIES EXPORT_NAME report OUTPUT_NAME precision_probe_report)
  install(TARGETS pp_report EXPORT precision-probe-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY include/precision_probe DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set(PP_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/precision-probe)
  install(EXPORT precision-probe-targets NAMESPACE precision_probe:: DESTINATION ${PP_PACKAGE_DIR})
  configure_package_config_file(cmake/precision-probe-config.cmake.in
                                "${CMAKE_BINARY_DIR}/precision-probe-config.cmake"
                                INSTALL_DESTINATION ${PP_PACKAGE_DIR})
  write_basic_package_version_file("${CMAKE_BINARY_DIR}/precision-probe-config-version.cmake"
                                   COMPATIBILITY SameMinorVersion)
  install(FILES "${CMAKE_BINARY_DIR}/precision-probe-config.cmake"
                "${CMAKE_BINARY_DIR}/precision-probe-config-version.cmake"
          DESTINATION ${PP_PACKAGE_DIR})
endif()

# DEB for Debian and Ubuntu hosts; TGZ, a tree to mount into any image (docs/images.md):
#   docker run --gpus all -v /opt/precision-probe:/pp IMAGE /pp/bin/precision-probe --quick
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_PACKAGE_NAME "precision-probe")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Which numeric precisions can this machine really train in (FP32, TF32, FP16, BF16, FP8, FP4)")
set(CPACK_PACKAGE_CONTACT "precision-probe maintainers <maintainers@precision-probe.invalid>")
set(CPACK_DEBIAN_PACKAGE_SECTION "utils")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Per generator (cmake/cpack-options.cmake): the .deb installs under /usr, the tarball is the tree
# itself (precision-probe-VERSION-Linux/bin/precision-probe).
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_SOURCE_DIR}/cmake/cpack-options.cmake")
# The binaries need the C library alone, up to PP_GLIBC_FLOOR (Portable.* in tests/ holds them to
# it): 2.34 built with Debian 12's g++, 2.28 the distribution's zig build.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= ${PP_GLIBC_FLOOR})")
# The zig build is a cross build (from any host): the package's architecture is its target's, and
# the tarball is named by it (precision-probe-VERSION-Linux-aarch64.tar.gz).
if(PP_DIST_ARCH)
  set(CPACK_SYSTEM_NAME "Linux-${PP_DIST_ARCH}")
  if(PP_DIST_ARCH STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  else()
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
  endif()
endif()
include(CPack)
