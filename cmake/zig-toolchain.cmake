# The distribution's build (`./dev dist`, docs/development.md): zig's clang, its libc++ linked in
# statically, against the glibc of a version given, for x86_64 or aarch64, from any Linux host.
# The binaries then ask the C library for no symbol newer than that version (PyTorch's wheels'
# floor, manylinux_2_28: glibc 2.28) and need no libstdc++; the engine meets LibTorch through its
# C ABI alone, so its C++ runtime need not be LibTorch's.
#
#   cmake -S . -B build-dist-aarch64 --toolchain cmake/zig-toolchain.cmake \
#         -DPP_ZIG_BIN=DIR -DPP_DIST_ARCH=aarch64 -DPP_GLIBC_FLOOR=2.28
#
# PP_ZIG_BIN: a directory holding zig-c++, zig-ar and zig-ranlib, each running `zig c++` (`ar`,
# `ranlib`) with its arguments (./dev writes them beside the ziglang it installs).
foreach(_pp_var PP_ZIG_BIN PP_DIST_ARCH PP_GLIBC_FLOOR)
  if(NOT ${_pp_var})
    message(FATAL_ERROR "zig-toolchain.cmake needs -D${_pp_var}=... (./dev dist gives them)")
  endif()
endforeach()
if(NOT PP_DIST_ARCH MATCHES "^(x86_64|aarch64)$")
  message(FATAL_ERROR "PP_DIST_ARCH=${PP_DIST_ARCH}: x86_64 or aarch64")
endif()
# try_compile's projects read this file again: they are given the same.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PP_ZIG_BIN PP_DIST_ARCH PP_GLIBC_FLOOR)

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${PP_DIST_ARCH})
set(CMAKE_C_COMPILER "${PP_ZIG_BIN}/zig-cc")
set(CMAKE_CXX_COMPILER "${PP_ZIG_BIN}/zig-c++")
set(CMAKE_C_COMPILER_TARGET "${PP_DIST_ARCH}-linux-gnu.${PP_GLIBC_FLOOR}")
set(CMAKE_CXX_COMPILER_TARGET "${PP_DIST_ARCH}-linux-gnu.${PP_GLIBC_FLOOR}")
set(CMAKE_AR "${PP_ZIG_BIN}/zig-ar" CACHE FILEPATH "zig's ar")
set(CMAKE_RANLIB "${PP_ZIG_BIN}/zig-ranlib" CACHE FILEPATH "zig's ranlib")
# Nothing of the host's: its headers and libraries are another glibc's (and architecture's).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Without debug information (zig's libc++ carries some: 40 MB of the probe's 42).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--strip-debug")
set(PP_ZIG_TOOLCHAIN ON)
