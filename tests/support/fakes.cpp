#include "fakes.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "precision_probe/report_json.hpp"
#include "probe/verdicts/gate.hpp"

namespace precision_probe::testing {

FakeDriver no_driver() {
  FakeDriver d;
  d.nvml.loaded = false;
  d.nvml.load_error =
      "libnvidia-ml.so.1: cannot open shared object file: No such file or directory";
  d.cuda.loaded = false;
  d.cuda.load_error = "libcuda.so.1: cannot open shared object file: No such file or directory";
  return d;
}

FakeDriver driver_with(const std::vector<FakeGpu>& gpus, const std::string& version,
                       int cuda_version) {
  FakeDriver d;
  d.nvml.loaded = true;
  d.nvml.init_result = 0;
  d.nvml.driver_version = version;
  d.nvml.cuda_version = Version::from_cuda_number(cuda_version);
  d.cuda.loaded = true;
  d.cuda.library = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  d.cuda.init_result = 0;
  d.cuda.driver_cuda_version = Version::from_cuda_number(cuda_version);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const FakeGpu& g = gpus[i];
    const std::string uuid = fmt::format("GPU-{:08x}-0000-0000-0000-00000000000{}", 0xabc0 + i, i);
    const std::string bus = fmt::format("0000:{:02x}:00.0", 0x17 + i);
    const std::uint64_t bytes = static_cast<std::uint64_t>(g.memory_gib) << 30U;
    NvmlDevice n;
    n.name = g.name;
    n.uuid = uuid;
    n.pci_bus_id = "0000" + bus;
    n.cc = g.cc;
    n.memory_total = bytes;
    n.memory_used = bytes / 100;
    n.memory_free = bytes - bytes / 100;
    n.compute_mode = 0;
    d.nvml.devices.push_back(n);
    CudaDevice c;
    c.name = g.name;
    c.uuid = uuid;
    c.pci_bus_id = bus;
    c.cc = g.cc;
    c.sm_count = g.sms;
    c.memory_total = bytes;
    c.compute_mode = 0;
    c.clock_ghz = 1.98;
    d.cuda.devices.push_back(c);
  }
  if (gpus.empty()) {
    d.cuda.init_result = 100;
    d.cuda.init_error_name = "CUDA_ERROR_NO_DEVICE";
    d.cuda.init_error_string = "no CUDA-capable device is detected";
  }
  return d;
}

SmokeOutcome passed(double rel_error, double tolerance) {
  SmokeOutcome o;
  o.ran = true;
  o.ok = true;
  o.rel_error = rel_error;
  o.tolerance = tolerance;
  o.ms = 0.5;
  o.m = o.n = o.k = 256;
  o.method = "fake";
  return o;
}

AmpOutcome passed_amp(Mode mode) {
  AmpOutcome o;
  o.ran = true;
  o.ok = true;
  o.ms = 40.0;
  o.steps = 30;
  o.loss_start = 2.3;
  o.loss_end = 0.5;
  o.fp32_loss_end = 0.498;
  o.loss_rel_diff = 0.004;
  o.loss_tolerance = mode == Mode::amp_fp16 ? 0.02 : 0.05;
  o.params_changed = true;
  o.matmul_dtype = mode == Mode::amp_fp16 ? DType::fp16 : DType::bf16;
  o.layer_norm_dtype = o.softmax_dtype = o.loss_dtype = DType::fp32;
  if (mode == Mode::amp_fp16) {
    o.initial_scale = 65536.0;
    o.final_scale = 131072.0;
    o.skipped_steps = 1;
    o.injected_overflow_step = 3;
    o.overflow_handled = true;
  }
  o.peak_bytes = 60 << 20;
  o.fp32_peak_bytes = 110 << 20;
  return o;
}

StackInfo cuda_stack() {
  StackInfo s;
  s.available = true;
  s.source = "image files";
  s.location = "/image/torch";
  s.found_by = "PRECISION_PROBE_TORCH";
  s.libtorch_version = "2.11.0+cu130";
  s.cuda_built = true;
  s.cuda_version = Version{13, 0};
  s.cudnn_version = "9.13.0";
  s.arch_list = {"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"};
  return s;
}

StackInfo cpu_stack() {
  StackInfo s;
  s.available = true;
  s.source = "image files";
  s.location = "/image/torch";
  s.found_by = "PRECISION_PROBE_TORCH";
  s.libtorch_version = "2.11.0+cpu";
  s.cuda_built = false;
  return s;
}

std::function<std::optional<StackInfo>(const System&)> image_of(const StackInfo* stack) {
  return [stack](const System&) -> std::optional<StackInfo> {
    if (stack == nullptr || !stack->available) return std::nullopt;
    return *stack;
  };
}

FakeEngine::FakeEngine() {
  answer = [this](const WorkerPlan& plan) {
    WorkerResult r;
    r.kind = plan.kind;
    r.index = plan.index;
    StackInfo said;
    said.available = true;
    said.source = "engine";
    said.abi_version = abi;
    said.libtorch_version = abi;
    said.library =
        lib_dir + (plan.kind == DeviceKind::cpu ? "/libtorch_cpu.so" : "/libtorch_cuda.so");
    said.cpu_threads = 8;
    r.stack = said;
    r.finished = true;
    for (Mode m : plan.smoke) r.smoke[m] = passed(1e-4);
    for (Mode m : plan.amp) r.amp[m] = passed_amp(m);
    // Every mode soaked, its share of the time, without a mismatch.
    for (Mode m : plan.soak_modes) {
      SoakOutcome o;
      o.ran = true;
      o.ok = true;
      o.size = plan.soak_size;
      o.iterations = 100;
      o.golden_checksum = "00000000deadbeef";
      o.seconds = plan.soak_seconds / static_cast<double>(plan.soak_modes.size());
      o.tflops = 100.0;
      r.soak[m] = o;
    }
    return r;
  };
}

std::vector<WorkerResult> FakeEngine::run(const std::vector<WorkerPlan>& plans, Limits limits) {
  const std::lock_guard<std::mutex> lock(mutex);
  last_limits = limits;
  calls.push_back(plans);
  // In a stable order: the CPU's checks (the first call of one CPU plan) first, whenever it came.
  const auto cpu_call = std::find_if(calls.begin(), calls.end(), [](const auto& c) {
    return c.size() == 1 && c[0].kind == DeviceKind::cpu;
  });
  if (cpu_call != calls.end()) std::rotate(calls.begin(), cpu_call, cpu_call + 1);
  run_sizes.clear();
  plans_seen.clear();
  for (const auto& call : calls) {
    run_sizes.push_back(call.size());
    plans_seen.insert(plans_seen.end(), call.begin(), call.end());
  }
  std::vector<WorkerResult> results;
  results.reserve(plans.size());
  for (const WorkerPlan& p : plans) results.push_back(answer(p));
  return results;
}

int gated_again(const Report& report) {
  const Expected<Report> read = read_report_json(report_to_json(report));
  return read ? decide_exit(*read).code : -1;
}

std::optional<int> gated_again(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("schema_version") || !j.contains("tool")) {
    return std::nullopt;
  }
  const Expected<Report> read = read_report_json(text);
  if (!read) return -1;
  if (read->error && read->error->kind == FailureKind::output) return std::nullopt;
  return decide_exit(*read).code;
}

std::string cpuinfo_with_flags(const std::string& model, const std::string& flags, int cores) {
  std::string text;
  for (int i = 0; i < cores; ++i) {
    text += fmt::format(
        "processor\t: {}\nvendor_id\t: GenuineIntel\nmodel name\t: {}\nflags\t\t: {}\n\n", i, model,
        flags);
  }
  return text;
}

std::string grace_cpuinfo() {
  std::ifstream in(PP_SOURCE_DIR "/tests/unit/grace-cpuinfo.txt");
  std::string text;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) != 0) text += line + "\n";
  }
  return text;
}

}  // namespace precision_probe::testing
