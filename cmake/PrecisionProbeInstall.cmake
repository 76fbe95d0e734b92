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
