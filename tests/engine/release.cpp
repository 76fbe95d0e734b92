#include "release.hpp"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "arch/arch.hpp"
#include "probe/facts/torch_files.hpp"

#include <fstream>
#include <iterator>
#include "engine/torch/ops.hpp"
#include "engine/torch/stderr_log.hpp"

namespace precision_probe::testing {

bool Release::has_cuda_library() const { return ::access(cuda_library().c_str(), R_OK) == 0; }

const Release* release() {
  static const std::unique_ptr<Release> given = []() -> std::unique_ptr<Release> {
    const char* site = std::getenv("PP_TEST_TORCH");
    if (site == nullptr || *site == '\0') return nullptr;
    auto r = std::make_unique<Release>();
    r->site = site;
    std::ifstream in(r->site + "/torch/version.py");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string version = version_py_value(text, "__version__").value_or("");
    r->version = version.substr(0, version.find('+'));
    r->release = Version::parse(r->version).value_or(Version{});
    return r;
  }();
  return given.get();
}

Expected<const engine::Torch*> cpu_torch() {
  static std::once_flag once;
  static std::unique_ptr<engine::Torch> torch;
  static std::string error;
  std::call_once(once, [] {
    const Release* r = release();
    if (r == nullptr) {
      error = "no LibTorch release named (PP_TEST_TORCH): ./dev test fetches them";
      return;
    }
    engine::capture_stderr();
    Expected<std::unique_ptr<engine::Torch>> loaded = engine::Torch::open(r->cpu_library(), false);
    if (!loaded) {
      error = "LibTorch " + r->version + " did not load: " + loaded.error();
      return;
    }
    torch = std::move(*loaded);
  });
  if (!torch) return Unexpected{error};
  return static_cast<const engine::Torch*>(torch.get());
}

engine::Target cpu_target(const engine::Torch& torch) {
  engine::Target t;
  t.torch = &torch;
  return t;
}

Expected<std::unique_ptr<engine::Torch>> torch_without(const std::string& library, bool cuda,
                                                       const std::string& name) {
  const Release* r = release();
  if (r == nullptr) return Unexpected{std::string("no LibTorch release named (PP_TEST_TORCH)")};
  std::ifstream in(r->site + "/torchgen/packaged/ATen/native/native_functions.yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (yaml.empty()) return Unexpected{"no native_functions.yaml beside " + r->site + "/torch"};
  const std::string func = "- func: " + name + "(";
  for (std::size_t at = yaml.find(func); at != std::string::npos; at = yaml.find(func, at)) {
    yaml.replace(at, 7, "- gone:");
  }
  Expected<std::unique_ptr<engine::Torch>> torch = engine::Torch::open(library, cuda);
  if (!torch) return Unexpected{torch.error()};
  const auto problems = engine::compare_schemas(yaml);
  (*torch)->set_schema_problems(std::vector<std::string>(problems.begin(), problems.end()));
  return torch;
}

}  // namespace precision_probe::testing
