# Installation and packaging: the probe in bin/, the engine (and its stack cache) in
# libexec/precision-probe/, where the probe looks for it; the engine carries an RPATH to the
# LibTorch it was built against. `cpack -G DEB` builds a Debian package.
include(GNUInstallDirs)
set_target_properties(precision-probe PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS precision-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET precision-probe-engine)
  set_target_properties(precision-probe-engine PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS precision-probe-engine RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/precision-probe)
  install(FILES "${CMAKE_BINARY_DIR}/bin/precision-probe-stack.json"
          DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/precision-probe OPTIONAL)
endif()
install(FILES README.md LICENSE docs/report.schema.json DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The report library for other C++ programs: headers, the static library, a CMake package
# (find_package(precision-probe) -> precision_probe::report).
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

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "precision-probe")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Which numeric precisions can this machine really train in (FP32, TF32, FP16, BF16, FP8, FP4)")
set(CPACK_PACKAGE_CONTACT "precision-probe maintainers <maintainers@precision-probe.invalid>")
set(CPACK_DEBIAN_PACKAGE_SECTION "utils")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
# Dependencies from the binaries' shared libraries, where they come from Debian packages (a
# LibTorch from a Python wheel belongs to no package: then the dependency is the user's).
if(PP_TORCH_SOURCE STREQUAL "system" OR NOT PP_TORCH_FOUND)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
