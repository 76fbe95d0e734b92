# Finds LibTorch in this order:
#   1. Torch_DIR, or a CMAKE_PREFIX_PATH entry that holds a Torch package;
#   2. the torch package of python3 (torch.utils.cmake_prefix_path), so that inside a PyTorch
#      container the probe tests that container's own LibTorch;
#   3. the system's (Debian's libtorch-dev).
# Sets PP_TORCH_FOUND, PP_TORCH_CUDA (the build carries CUDA) and PP_TORCH_SOURCE (for --version).

set(PP_TORCH_FOUND OFF)
set(PP_TORCH_CUDA OFF)
set(PP_TORCH_SOURCE "none")

if(NOT PP_WITH_TORCH MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PP_WITH_TORCH must be AUTO, ON or OFF (got '${PP_WITH_TORCH}')")
endif()

if(NOT PP_WITH_TORCH STREQUAL "OFF")
  set(_pp_torch_hint "")
  if(Torch_DIR)
    set(PP_TORCH_SOURCE "Torch_DIR")
  else()
    find_path(_pp_torch_in_prefix NAMES TorchConfig.cmake
              PATHS ${CMAKE_PREFIX_PATH}
              PATH_SUFFIXES Torch share/cmake/Torch lib/cmake/Torch
              NO_DEFAULT_PATH NO_CACHE)
    if(_pp_torch_in_prefix)
      set(PP_TORCH_SOURCE "CMAKE_PREFIX_PATH")
    elseif(PP_USE_PYTHON_TORCH)
      find_program(PP_PYTHON3 NAMES python3)
      if(PP_PYTHON3)
        execute_process(
          COMMAND "${PP_PYTHON3}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
          OUTPUT_VARIABLE _pp_py_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
          ERROR_QUIET RESULT_VARIABLE _pp_py_rc TIMEOUT 120)
        if(_pp_py_rc EQUAL 0 AND EXISTS "${_pp_py_prefix}/Torch/TorchConfig.cmake")
          set(Torch_DIR "${_pp_py_prefix}/Torch" CACHE PATH "LibTorch's CMake package" FORCE)
          set(PP_TORCH_SOURCE "python3 torch package")
        endif()
      endif()
    endif()
  endif()

  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(PP_TORCH_FOUND ON)
    if(PP_TORCH_SOURCE STREQUAL "none")
      set(PP_TORCH_SOURCE "system")
    endif()
    if(CAFFE2_USE_CUDA OR TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
      set(PP_TORCH_CUDA ON)
    endif()
    message(STATUS "precision-probe: LibTorch ${Torch_VERSION} from ${PP_TORCH_SOURCE} "
                   "(CUDA: ${PP_TORCH_CUDA}) at ${Torch_DIR}")
  elseif(PP_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "PP_WITH_TORCH=ON but LibTorch was not found. Install libtorch-dev, "
                        "set Torch_DIR, or make 'import torch' work in python3.")
  else()
    message(WARNING "precision-probe: LibTorch not found; building without the kernel engine "
                    "(smoke tests will be reported as not_tested).")
  endif()
endif()
