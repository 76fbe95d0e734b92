#include "engine/torch/torch.hpp"

#include <dlfcn.h>

#include <array>
#include <type_traits>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "arch/arch.hpp"
#include "engine/torch/stderr_log.hpp"

namespace precision_probe::engine {

namespace {

constexpr std::array<ScalarInfo, 14> kScalars = {{
    {Scalar::f64, "float64", 8},
    {Scalar::f32, "float32", 4},
    {Scalar::f16, "float16", 2},
    {Scalar::bf16, "bfloat16", 2},
    {Scalar::e4m3, "float8_e4m3fn", 1},
    {Scalar::e5m2, "float8_e5m2", 1},
    {Scalar::e8m0, "float8_e8m0fnu", 1},
    {Scalar::fp4x2, "float4_e2m1fn_x2", 1},
    {Scalar::i8, "int8", 1},
    {Scalar::u8, "uint8", 1},
    {Scalar::i16, "int16", 2},
    {Scalar::i32, "int32", 4},
    {Scalar::i64, "int64", 8},
    {Scalar::boolean, "bool", 1},
}};

// dlerror()'s text for the last failure ("" when none).
std::string dl_error() {
  const char* text = ::dlerror();  // NOLINT(concurrency-mt-unsafe): glibc's is per thread
  return text != nullptr ? text : "";
}

}  // namespace

const ScalarInfo& scalar_info(Scalar scalar) {
  return kScalars.at(static_cast<std::size_t>(scalar));
}

Expected<std::unique_ptr<Torch>> Torch::open(const std::string& path, bool cuda, Binding binding) {
  ::dlerror();  // NOLINT(concurrency-mt-unsafe): clears this thread's (glibc's is per thread)
  void* handle =
      ::dlopen(path.c_str(), (binding == Binding::lazy ? RTLD_LAZY : RTLD_NOW) | RTLD_LOCAL);
  if (handle == nullptr) return Unexpected{"dlopen of " + path + " failed: " + dl_error()};
  std::unique_ptr<Torch> torch(new Torch());
  torch->handle_ = handle;
  torch->path_ = path;
  torch->cuda_ = cuda;
  if (Expected<void> found = torch->find_functions(handle); !found)
    return Unexpected{found.error()};
  const std::uint64_t abi = torch->functions_.aoti_torch_abi_version();
  torch->release_ = Version{torch_c::abi_major(abi), torch_c::abi_minor(abi)};
  torch->patch_ = torch_c::abi_patch(abi);
  if (torch->release_ < kFloorRelease) {
    return Unexpected{fmt::format(
        "this LibTorch ({}) is older than {}, the oldest release whose stable C ABI the engine "
        "uses",
        torch->release_text(), kFloorRelease.to_string())};
  }
  torch->read_codes();
  return torch;
}

Expected<void> Torch::find_functions(void* handle) {
  std::vector<std::string> missing;
  std::size_t row = 0;
  auto find = [&](auto& slot, const char* name) {
    const torch_c::FunctionInfo& info = torch_c::kFunctions[row++];
    if (info.cuda_only && !cuda_) return;
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(handle, name));
    if (slot == nullptr && info.need == torch_c::Need::floor) missing.emplace_back(name);
  };
#define PP_TORCH_C_FIND(name, ret, params, major, minor, need) find(functions_.name, #name);
  PP_TORCH_C_FUNCTIONS(PP_TORCH_C_FIND, PP_TORCH_C_FIND)
#undef PP_TORCH_C_FIND
  if (missing.empty()) return {};
  return Unexpected{fmt::format(
      "{} does not export {} of the stable C ABI (a LibTorch before {}, or not a LibTorch)", path_,
      missing.front(), kFloorRelease.to_string())};
}

void Torch::read_codes() {
  const torch_c::Functions& f = functions_;
  auto set = [this](Scalar s, std::int32_t (*getter)()) {
    if (getter != nullptr) dtypes_.code[static_cast<int>(s)] = getter();
  };
  set(Scalar::f64, f.aoti_torch_dtype_float64);
  set(Scalar::f32, f.aoti_torch_dtype_float32);
  set(Scalar::f16, f.aoti_torch_dtype_float16);
  set(Scalar::bf16, f.aoti_torch_dtype_bfloat16);
  set(Scalar::e4m3, f.aoti_torch_dtype_float8_e4m3fn);
  set(Scalar::e5m2, f.aoti_torch_dtype_float8_e5m2);
  set(Scalar::e8m0, f.torch_dtype_float8_e8m0fnu);
  set(Scalar::fp4x2, f.torch_dtype_float4_e2m1fn_x2);
  set(Scalar::i8, f.aoti_torch_dtype_int8);
  set(Scalar::u8, f.aoti_torch_dtype_uint8);
  set(Scalar::i16, f.aoti_torch_dtype_int16);
  set(Scalar::i32, f.aoti_torch_dtype_int32);
  set(Scalar::i64, f.aoti_torch_dtype_int64);
  set(Scalar::boolean, f.aoti_torch_dtype_bool);
  cpu_device_ = f.aoti_torch_device_type_cpu();
  cuda_device_ = f.aoti_torch_device_type_cuda();
  features_.versioned_dispatcher = f.torch_call_dispatcher != nullptr;
  features_.lists = f.torch_new_list_reserve_size != nullptr && f.torch_list_push_back != nullptr &&
                    f.torch_delete_list != nullptr && features_.versioned_dispatcher;
  features_.exception_text = f.torch_exception_get_what_without_backtrace != nullptr;
  features_.num_threads = f.torch_get_num_threads != nullptr;
}

void Torch::behave_as(Version as) {
  if (!(as < release_)) return;
  if (as < Version{2, 13}) {
    features_.exception_text = false;
  }
  if (as < Version{2, 11}) {
    dtypes_.code[static_cast<int>(Scalar::e8m0)] = -1;
    dtypes_.code[static_cast<int>(Scalar::fp4x2)] = -1;
  }
  if (as < Version{2, 10}) {
    features_.versioned_dispatcher = false;
    features_.lists = false;
    features_.num_threads = false;
  }
  release_ = as;
  patch_ = 0;
}

const std::string& Torch::schema_problem(std::size_t index) const {
  static const std::string kNone;
  return index < schema_problems_.size() ? schema_problems_[index] : kNone;
}

void* Torch::symbol(const char* name) const { return ::dlsym(handle_, name); }

std::string Torch::release_text() const {
  return fmt::format("{}.{}.{}", release_.major, release_.minor, patch_);
}

bool Torch::untested() const { return kNewestTestedRelease < release_; }

std::string Torch::failure_text(std::string_view what) const {
  std::string text;
  if (features_.exception_text) {
    const char* what_text = functions_.torch_exception_get_what_without_backtrace();
    if (what_text != nullptr) text = what_text;
  }
  if (text.empty()) text = take_logged_exception();
  if (text.empty()) text = std::string(what) + " failed (LibTorch gave no message)";
  const std::size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  return text;
}

std::string lacks(const Torch& torch, std::string_view what, Version since) {
  return fmt::format("this LibTorch ({}) has no {} in its stable C ABI (it came in {})",
                     torch.release_text(), what, since.to_string());
}

}  // namespace precision_probe::engine
