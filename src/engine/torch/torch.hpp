#pragma once
// A LibTorch loaded at run time: dlopen of the image's own libtorch_cpu.so (the CPU) or
// libtorch_cuda.so (GPUs), every function of c_api.hpp found with dlsym on that handle, the
// release it says it is (aoti_torch_abi_version), its dtype and device codes, and what this
// release's C ABI can do. Nothing else of LibTorch is reached (docs/engine.md).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/torch/c_api.hpp"
#include "precision_probe/expected.hpp"
#include "precision_probe/modes.hpp"

namespace precision_probe::engine {

// The oldest release the engine runs, and the newest it was tested against (newer ones run,
// marked "untested release").
inline constexpr Version kFloorRelease = kEngineFloor;
inline constexpr Version kNewestTestedRelease = kNewestTestedLibTorch;

// The element types the engine uses, as the report and the engine name them.
enum class Scalar { f64, f32, f16, bf16, e4m3, e5m2, e8m0, fp4x2, i8, u8, i16, i32, i64, boolean };

struct ScalarInfo {
  Scalar scalar;
  std::string_view name;
  int bytes;  // per element (fp4x2: two values per byte)
};
const ScalarInfo& scalar_info(Scalar scalar);

// LibTorch's code of each element type (aoti_torch_dtype_*; -1 where this release has no getter).
struct DtypeCodes {
  std::int32_t code[14] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  std::int32_t of(Scalar s) const { return code[static_cast<int>(s)]; }
  bool has(Scalar s) const { return of(s) >= 0; }
};

// What the loaded release's C ABI offers beyond the floor (each from dlsym, or taken away by
// PRECISION_PROBE_ENGINE_AS_RELEASE, a test knob that makes a newer LibTorch behave as an older).
struct Features {
  bool versioned_dispatcher = false;  // torch_call_dispatcher (2.10)
  bool lists = false;                 // list arguments to the dispatcher (2.10)
  bool exception_text = false;        // torch_exception_get_what_without_backtrace (2.13)
  bool num_threads = false;           // torch_get_num_threads (2.10)
};

class Torch {
 public:
  // How the library's own calls into its dependencies are bound: all at dlopen (a missing symbol
  // is dlopen's error) or at each one's first call (RTLD_LAZY, as a program linked with LibTorch
  // gets by default: less work at start; a missing symbol ends the process at that call).
  enum class Binding { now, lazy };

  // Loads the library at `path` with dlopen (RTLD_LOCAL) and finds the table's functions (the
  // CUDA ones where `cuda`). The error is dlerror()'s text, a release below the floor, or a
  // function of the floor it lacks.
  static Expected<std::unique_ptr<Torch>> open(const std::string& path, bool cuda,
                                               Binding binding = Binding::now);

  Torch(const Torch&) = delete;
  Torch& operator=(const Torch&) = delete;
  ~Torch() = default;  // never dlclose'd: LibTorch does not unload cleanly

  const torch_c::Functions& c() const { return functions_; }
  // Any other symbol of the library or what it loaded (cudaRuntimeGetVersion, cudnnGetVersion).
  void* symbol(const char* name) const;
  const std::string& path() const { return path_; }
  bool cuda() const { return cuda_; }
  // The release, from aoti_torch_abi_version(): "2.11.0".
  Version release() const { return release_; }
  int patch() const { return patch_; }
  std::string release_text() const;
  bool untested() const;
  const Features& features() const { return features_; }
  const DtypeCodes& dtypes() const { return dtypes_; }
  std::int32_t cpu_device() const { return cpu_device_; }
  std::int32_t cuda_device() const { return cuda_device_; }

  // The text of the last failure of a C function on this thread: LibTorch's own (2.13) or the
  // line it logged to stderr (engine/torch/stderr_log.hpp); `what` names the call where neither
  // says anything.
  std::string failure_text(std::string_view what) const;

  // Why the operator at `index` of ops.hpp's table must not be called: its schema in the image
  // differs (set by set_schema_problems; "" where it matches or the image has no yaml).
  const std::string& schema_problem(std::size_t index) const;
  void set_schema_problems(std::vector<std::string> problems) {
    schema_problems_ = std::move(problems);
  }

  // The release as if it were `as` (PRECISION_PROBE_ENGINE_AS_RELEASE, tests only): features of
  // later releases withdrawn. Never raises the release.
  void behave_as(Version as);

 private:
  Torch() = default;
  Expected<void> find_functions(void* handle);
  void read_codes();

  torch_c::Functions functions_;
  void* handle_ = nullptr;
  std::string path_;
  bool cuda_ = false;
  Version release_;
  int patch_ = 0;
  Features features_;
  DtypeCodes dtypes_;
  std::int32_t cpu_device_ = 0;
  std::int32_t cuda_device_ = 1;
  std::vector<std::string> schema_problems_;
};

// "this LibTorch (2.9.1) has no X (it came in 2.10)": why a check cannot run on this release.
std::string lacks(const Torch& torch, std::string_view what, Version since);

}  // namespace precision_probe::engine
