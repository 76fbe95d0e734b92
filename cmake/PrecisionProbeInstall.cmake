# Installation: the probe in bin/, the engine (and its stack cache) in libexec/precision-probe/,
# both with an RPATH to the LibTorch they were built against.
include(GNUInstallDirs)
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(precision-probe PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS precision-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET precision-probe-engine)
  set_target_properties(precision-probe-engine PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS precision-probe-engine RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/precision-probe)
  install(FILES "${CMAKE_BINARY_DIR}/bin/precision-probe-stack.json"
          DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/precision-probe OPTIONAL)
endif()
