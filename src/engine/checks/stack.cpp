#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <sstream>

#include "engine/engine.hpp"
#include "engine/error_text.hpp"
#include "common/arch.hpp"
#include "common/strings.hpp"

namespace precision_probe::engine {

namespace {

// "  - CUDA Runtime 13.0" -> "13.0"; the first token after `key` on its line.
std::string value_after(const std::string& config, const std::string& key) {
  std::istringstream lines(config);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t pos = line.find(key);
    if (pos == std::string::npos) continue;
    std::string rest = trim(std::string_view(line).substr(pos + key.size()));
    const std::size_t space = rest.find(' ');
    return space == std::string::npos ? rest : rest.substr(0, space);
  }
  return "";
}

std::string line_after(const std::string& config, const std::string& key) {
  std::istringstream lines(config);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t pos = line.find(key);
    if (pos != std::string::npos) return trim(std::string_view(line).substr(pos + key.size()));
  }
  return "";
}

}  // namespace

std::string format_cudnn_version(long version) {
  if (version <= 0) return "";
  if (version >= 90000) {
    return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
           std::to_string(version % 100);
  }
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 100) + "." +
         std::to_string(version % 100);
}

void parse_show_config(const std::string& config, StackInfo& stack) {
  const std::string runtime = value_after(config, "CUDA Runtime ");
  const std::string built = value_after(config, "Built with CUDA Runtime ");
  stack.cuda_version = !built.empty() ? built : runtime;
  stack.cudnn_version = value_after(config, "CuDNN ");
  if (stack.cudnn_version.empty()) stack.cudnn_version = value_after(config, "cuDNN ");
  std::vector<std::string> names;
  for (const ArchTarget& t : parse_arch_list(line_after(config, "NVCC architecture flags:"))) {
    names.push_back(t.to_string());
  }
  stack.arch_list = names;
}

StackInfo describe_stack(bool with_cuda_configuration) {
  StackInfo stack;
  stack.available = true;
  stack.source = "engine";
  stack.libtorch_version = TORCH_VERSION;
  stack.cpu_threads = at::get_num_threads();
#ifndef PP_TORCH_CUDA
  static_cast<void>(with_cuda_configuration);
#else
  stack.cuda_built = true;
  if (!with_cuda_configuration) return stack;
  try {
    // The CUDA part of the configuration: runtime version, NVCC arch flags, cuDNN. It needs no
    // device (cudaRuntimeGetVersion works without a driver).
    parse_show_config(at::detail::getCUDAHooks().showConfig(), stack);
    if (at::detail::getCUDAHooks().compiledWithCuDNN()) {
      stack.cudnn_version = format_cudnn_version(at::detail::getCUDAHooks().versionCuDNN());
    }
  } catch (const std::exception& e) {
    stack.error = "cannot read the CUDA configuration: " + error_text(e);
  }
#endif
  return stack;
}

}  // namespace precision_probe::engine
