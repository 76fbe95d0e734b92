#include "precision_probe/report.hpp"

#include <fmt/format.h>

#include "precision_probe/build_info.hpp"

namespace precision_probe {

std::string DeviceReport::label() const {
  if (kind == DeviceKind::cpu) return "CPU";
  if (index >= 0) return fmt::format("GPU {}", index);
  // `arch CC`: the compute capability asked about.
  if (gpu && gpu->source == "arch" && gpu->cc) return "cc " + gpu->cc->to_string();
  return "GPU";
}

const PrecisionResult* DeviceReport::find(Mode mode) const {
  for (const auto& [m, p] : precisions) {
    if (m == mode) return &p;
  }
  return nullptr;
}

PrecisionResult* DeviceReport::find(Mode mode) {
  for (auto& [m, p] : precisions) {
    if (m == mode) return &p;
  }
  return nullptr;
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::info: return "info";
  }
  return "?";
}

std::string_view to_string(FailureKind kind) {
  switch (kind) {
    case FailureKind::usage: return "usage";
    case FailureKind::output: return "output";
    case FailureKind::internal: return "internal";
  }
  return "?";
}

bool has_findings(const Report& report) {
  return !report.error || report.error->kind == FailureKind::output;
}

ToolInfo this_tool() {
  ToolInfo tool;
  tool.version = build_info::kVersion;
  tool.built_with_libtorch = build_info::kLibTorchVersion;
  tool.built_with_cuda = build_info::kCudaVersion;
  return tool;
}

}  // namespace precision_probe
