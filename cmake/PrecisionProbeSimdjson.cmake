# simdjson reads every JSON document the project reads (src/report/json_document.cpp). Its
# amalgamation, simdjson.h and simdjson.cpp, comes from Debian's source package (the `singleheader/`
# of its orig tarball): `./dev` fetches it, checks it against Debian's hashes, keeps it in
# ~/.cache/precision-probe/simdjson/VERSION and names it here (PP_SIMDJSON_DIR); `./dev stage-deps`
# copies it into .device-deps/simdjson for a machine without package access. It is compiled into
# the report's library, never linked as a shared library: the probe and the engine need the C
# library alone (docs/images.md), and Debian's libsimdjson-dev ships only a shared one.
#
# Without PP_SIMDJSON_DIR, .device-deps/simdjson and the cache are looked in.
set(_pp_simdjson_hints "${PROJECT_SOURCE_DIR}/.device-deps/simdjson")
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_pp_cache "$ENV{XDG_CACHE_HOME}")
else()
  set(_pp_cache "$ENV{HOME}/.cache")
endif()
file(GLOB _pp_cached LIST_DIRECTORIES true "${_pp_cache}/precision-probe/simdjson/*")
list(SORT _pp_cached COMPARE NATURAL ORDER DESCENDING)
list(APPEND _pp_simdjson_hints ${_pp_cached})
find_path(PP_SIMDJSON_DIR simdjson.cpp PATHS ${_pp_simdjson_hints} NO_DEFAULT_PATH
          DOC "The directory of simdjson's amalgamation (simdjson.h, simdjson.cpp)")
if(NOT PP_SIMDJSON_DIR OR NOT EXISTS "${PP_SIMDJSON_DIR}/simdjson.h")
  message(FATAL_ERROR "simdjson's amalgamation (simdjson.h and simdjson.cpp) was not found: "
                      "`./dev build` fetches it (docs/development.md), or name its directory "
                      "with -DPP_SIMDJSON_DIR=DIR")
endif()
file(STRINGS "${PP_SIMDJSON_DIR}/simdjson.h" _pp_simdjson_version
     REGEX "^#define SIMDJSON_VERSION \"?[0-9.]+" LIMIT_COUNT 1)
string(REGEX REPLACE "^#define SIMDJSON_VERSION \"?([0-9.]+).*" "\\1" PP_SIMDJSON_VERSION
       "${_pp_simdjson_version}")
if(PP_SIMDJSON_VERSION VERSION_LESS 3.0)
  message(FATAL_ERROR "simdjson ${PP_SIMDJSON_VERSION} in ${PP_SIMDJSON_DIR}: 3.0 or newer is needed")
endif()
message(STATUS "simdjson ${PP_SIMDJSON_VERSION}: ${PP_SIMDJSON_DIR}")
unset(_pp_simdjson_hints)
unset(_pp_cached)
unset(_pp_cache)
unset(_pp_simdjson_version)
