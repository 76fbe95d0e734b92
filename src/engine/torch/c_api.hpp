#pragma once
// LibTorch's C functions the engine calls, one table: each function's prototype as LibTorch's own
// headers declare it (tests/engine/release-check.sh holds them to every tested release's headers),
// the release that first exported it, and whether the engine can do anything without it. The engine
// links no LibTorch and includes none of its headers: each function is found with dlsym on the
// library it loaded (docs/engine.md).
//
// Sources: torch/csrc/inductor/aoti_torch/c/shim.h (2.7 on), its
// generated/c_shim_{aten,cpu,cuda}.h, and torch/csrc/stable/c/shim.h (2.10 on), each read in
// the 2.9.1 to 2.15.0 wheels.

#include <cstddef>
#include <cstdint>

// LibTorch's opaque types, declared as its headers declare them (at global scope, so that a check
// compiled with those headers sees one type).
struct AtenTensorOpaque;
struct StableListOpaque;
struct CUDAGuardOpaque;

namespace precision_probe::engine::torch_c {

using AtenTensorHandle = ::AtenTensorOpaque*;
using StableListHandle = ::StableListOpaque*;
using CUDAGuardHandle = ::CUDAGuardOpaque*;
using AOTITorchError = std::int32_t;  // 0: success, 1: failure (the text went to stderr or, from
                                      // 2.13, to torch_exception_get_what_without_backtrace)
using StableIValue = std::uint64_t;

// What a missing function means.
enum class Need {
  floor,     // the engine runs nothing without it: a LibTorch without it is below the floor
  optional,  // a check that needs it says so; the others run
};

// X(name, return type, parameters, major, minor, need): major.minor is the oldest release of those
// read (2.9 to 2.15) that exports it; 2.9 means "2.9 or earlier". X_CUDA: exported by
// libtorch_cuda.so, looked up only where the engine loaded it.
// clang-format off
#define PP_TORCH_C_FUNCTIONS(X, X_CUDA)                                                            \
  X(aoti_torch_abi_version, std::uint64_t, (), 2, 9, Need::floor)                                   \
  X(aoti_torch_device_type_cpu, std::int32_t, (), 2, 9, Need::floor)                                \
  X(aoti_torch_device_type_cuda, std::int32_t, (), 2, 9, Need::floor)                               \
  X(aoti_torch_dtype_float32, std::int32_t, (), 2, 9, Need::floor)                                  \
  X(aoti_torch_dtype_float64, std::int32_t, (), 2, 9, Need::floor)                                  \
  X(aoti_torch_dtype_float16, std::int32_t, (), 2, 9, Need::floor)                                  \
  X(aoti_torch_dtype_bfloat16, std::int32_t, (), 2, 9, Need::floor)                                 \
  X(aoti_torch_dtype_float8_e4m3fn, std::int32_t, (), 2, 9, Need::floor)                            \
  X(aoti_torch_dtype_float8_e5m2, std::int32_t, (), 2, 9, Need::floor)                              \
  X(aoti_torch_dtype_int8, std::int32_t, (), 2, 9, Need::floor)                                     \
  X(aoti_torch_dtype_uint8, std::int32_t, (), 2, 9, Need::floor)                                    \
  X(aoti_torch_dtype_int16, std::int32_t, (), 2, 9, Need::floor)                                    \
  X(aoti_torch_dtype_int32, std::int32_t, (), 2, 9, Need::floor)                                    \
  X(aoti_torch_dtype_int64, std::int32_t, (), 2, 9, Need::floor)                                    \
  X(aoti_torch_dtype_bool, std::int32_t, (), 2, 9, Need::floor)                                     \
  X(torch_dtype_float8_e8m0fnu, std::int32_t, (), 2, 11, Need::optional)                            \
  X(torch_dtype_float4_e2m1fn_x2, std::int32_t, (), 2, 11, Need::optional)                          \
  X(aoti_torch_empty_strided, AOTITorchError,                                                       \
    (std::int64_t ndim, const std::int64_t* sizes, const std::int64_t* strides, std::int32_t dtype, \
     std::int32_t device_type, std::int32_t device_index, AtenTensorHandle* ret),                   \
    2, 9, Need::floor)                                                                              \
  X(aoti_torch_empty_strided_pinned, AOTITorchError,                                                \
    (std::int64_t ndim, const std::int64_t* sizes, const std::int64_t* strides, std::int32_t dtype, \
     std::int32_t device_type, std::int32_t device_index, AtenTensorHandle* ret),                   \
    2, 9, Need::optional)                                                                           \
  X(aoti_torch_create_tensor_from_blob, AOTITorchError,                                             \
    (void* data, std::int64_t ndim, const std::int64_t* sizes, const std::int64_t* strides,         \
     std::int64_t storage_offset, std::int32_t dtype, std::int32_t device_type,                     \
     std::int32_t device_index, AtenTensorHandle* ret),                                             \
    2, 9, Need::floor)                                                                              \
  X(aoti_torch__reinterpret_tensor, AOTITorchError,                                                 \
    (AtenTensorHandle self, std::int64_t ndim, const std::int64_t* sizes,                           \
     const std::int64_t* strides, std::int64_t storage_offset, AtenTensorHandle* ret),              \
    2, 9, Need::floor)                                                                              \
  X(aoti_torch_delete_tensor_object, AOTITorchError, (AtenTensorHandle tensor), 2, 9, Need::floor)  \
  X(aoti_torch_new_tensor_handle, AOTITorchError, (AtenTensorHandle orig, AtenTensorHandle* ret),   \
    2, 9, Need::floor)                                                                              \
  X(aoti_torch_copy_, AOTITorchError,                                                               \
    (AtenTensorHandle self, AtenTensorHandle src, std::int32_t non_blocking), 2, 9, Need::floor)    \
  X(aoti_torch_get_data_ptr, AOTITorchError, (AtenTensorHandle tensor, void** ret), 2, 9,           \
    Need::floor)                                                                                    \
  X(aoti_torch_get_dtype, AOTITorchError, (AtenTensorHandle tensor, std::int32_t* ret), 2, 9,       \
    Need::floor)                                                                                    \
  X(aoti_torch_get_dim, AOTITorchError, (AtenTensorHandle tensor, std::int64_t* ret), 2, 9,         \
    Need::floor)                                                                                    \
  X(aoti_torch_get_device_type, AOTITorchError, (AtenTensorHandle tensor, std::int32_t* ret), 2,  \
    9, Need::floor)                                                                                 \
  X(aoti_torch_get_device_index, AOTITorchError, (AtenTensorHandle tensor, std::int32_t* ret), 2, \
    9, Need::floor)                                                                                 \
  X(aoti_torch_get_sizes, AOTITorchError, (AtenTensorHandle tensor, std::int64_t** ret), 2, 9,      \
    Need::floor)                                                                                    \
  X(aoti_torch_get_strides, AOTITorchError, (AtenTensorHandle tensor, std::int64_t** ret), 2, 9,    \
    Need::floor)                                                                                    \
  X(aoti_torch_get_storage_offset, AOTITorchError, (AtenTensorHandle tensor, std::int64_t* ret),    \
    2, 9, Need::floor)                                                                              \
  X(aoti_torch_get_storage_size, AOTITorchError, (AtenTensorHandle tensor, std::int64_t* ret), 2,   \
     9, Need::floor)                                                                                 \
  X(aoti_torch_grad_mode_set_enabled, void, (bool enabled), 2, 9, Need::floor)                      \
  X(aoti_torch_aten_fill__Scalar, AOTITorchError, (AtenTensorHandle self, double value), 2, 9,      \
    Need::floor)                                                                                    \
  X(aoti_torch_cpu_add_Tensor, AOTITorchError,                                                      \
    (AtenTensorHandle self, AtenTensorHandle other, double alpha, AtenTensorHandle* ret), 2, 9,     \
    Need::floor)                                                                                    \
  X(aoti_torch_call_dispatcher, AOTITorchError,                                                     \
    (const char* op, const char* overload, StableIValue* stack), 2, 9, Need::floor)                 \
  X(torch_call_dispatcher, AOTITorchError,                                                          \
    (const char* op, const char* overload, StableIValue* stack, std::uint64_t build_version), 2,    \
    10, Need::optional)                                                                             \
  X(torch_new_list_reserve_size, AOTITorchError, (std::size_t size, StableListHandle* ret), 2, 10,  \
    Need::optional)                                                                                 \
  X(torch_list_push_back, AOTITorchError, (StableListHandle list, StableIValue element), 2, 10,     \
    Need::optional)                                                                                 \
  X(torch_delete_list, AOTITorchError, (StableListHandle list), 2, 10, Need::optional)              \
  X(torch_get_num_threads, AOTITorchError, (std::uint32_t* ret), 2, 10, Need::optional)             \
  X(torch_exception_get_what_without_backtrace, const char*, (), 2, 13, Need::optional)             \
  X_CUDA(aoti_torch_create_cuda_guard, AOTITorchError,                                              \
         (std::int32_t device_index, CUDAGuardHandle* ret), 2, 9, Need::floor)                      \
  X_CUDA(aoti_torch_delete_cuda_guard, AOTITorchError, (CUDAGuardHandle guard), 2, 9, Need::floor)  \
  X_CUDA(aoti_torch_get_current_cuda_stream, AOTITorchError,                                        \
         (std::int32_t device_index, void** ret), 2, 9, Need::floor)                                \
  X_CUDA(aoti_torch_cuda_add_Tensor, AOTITorchError,                                                \
         (AtenTensorHandle self, AtenTensorHandle other, double alpha, AtenTensorHandle* ret), 2,   \
          9, Need::floor)
// clang-format on

// The function pointers, found by dlsym; nullptr where the loaded LibTorch lacks one.
struct Functions {
// NOLINTNEXTLINE(bugprone-macro-parentheses): a declaration, its type and parameters as written
#define PP_TORCH_C_MEMBER(name, ret, params, major, minor, need) ret(*name) params = nullptr;
  PP_TORCH_C_FUNCTIONS(PP_TORCH_C_MEMBER, PP_TORCH_C_MEMBER)
#undef PP_TORCH_C_MEMBER
};

// A row of the table as data: for the loader, its messages and the tests.
struct FunctionInfo {
  const char* name;
  int major;
  int minor;
  Need need;
  bool cuda_only;  // exported by libtorch_cuda.so
};

#define PP_TORCH_C_INFO(name, ret, params, major, minor, need) {#name, major, minor, need, false},
#define PP_TORCH_C_INFO_CUDA(name, ret, params, major, minor, need) \
  {#name, major, minor, need, true},
inline constexpr FunctionInfo kFunctions[] = {
    PP_TORCH_C_FUNCTIONS(PP_TORCH_C_INFO, PP_TORCH_C_INFO_CUDA)};
#undef PP_TORCH_C_INFO
#undef PP_TORCH_C_INFO_CUDA

// The release the engine declares its operator stacks for (torch_call_dispatcher's
// extension_build_version): the schemas of ops.hpp are 2.10's, unchanged to 2.15.
inline constexpr std::uint64_t kBuildVersion =
    (std::uint64_t{2} << 56U) | (std::uint64_t{10} << 48U);

// aoti_torch_abi_version()'s encoding: major << 56 | minor << 48 | patch << 40.
constexpr int abi_major(std::uint64_t v) { return static_cast<int>(v >> 56U); }
constexpr int abi_minor(std::uint64_t v) { return static_cast<int>((v >> 48U) & 0xffU); }
constexpr int abi_patch(std::uint64_t v) { return static_cast<int>((v >> 40U) & 0xffU); }

}  // namespace precision_probe::engine::torch_c
