#include "probe/run/probe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <ctime>
#include <random>

#include <unistd.h>

#include <fmt/format.h>

#include "probe/verdicts/diagnostics.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/verdicts/gate.hpp"
#include "probe/platform/process.hpp"
#include "common/build_info.hpp"
#include "common/strings.hpp"
#include "probe/facts/cpu.hpp"
#include "probe/facts/torch_files.hpp"
#include "common/trace.hpp"
#include "common/worker_checks.hpp"
#include "probe/verdicts/verdict.hpp"
#include "probe/driver/telemetry.hpp"
#include "probe/run/soak_plan.hpp"
#include "probe/verdicts/soak.hpp"

namespace precision_probe {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTorchNotLookedFor = "PRECISION_PROBE_TORCH=none";

std::uint64_t fresh_seed() {
  return random_u64() & ((std::uint64_t{1} << 48U) - 1);  // exact in every JSON reader
}

std::string os_pretty_name(const System& system) {
  const auto text = system.read_file("/etc/os-release");
  if (!text) return "";
  for (const std::string& line : split(*text, '\n')) {
    if (starts_with(line, "PRETTY_NAME=")) {
      std::string value = line.substr(12);
      value.erase(std::remove(value.begin(), value.end(), '"'), value.end());
      return value;
    }
  }
  return "";
}

bool in_container(const System& system) {
  if (system.exists("/.dockerenv") || system.exists("/run/.containerenv")) return true;
  if (system.getenv("KUBERNETES_SERVICE_HOST") || system.getenv("container")) return true;
  const auto cgroup = system.read_file("/proc/1/cgroup").value_or("");
  for (const char* marker : {"docker", "kubepods", "containerd", "libpod", "lxc"}) {
    if (cgroup.find(marker) != std::string::npos) return true;
  }
  return false;
}

// Names the processes NVML lists, where /proc shows them, and leaves out the probe's own workers
// (started ahead, they may hold a context by the time NVML answers).
void name_gpu_processes(std::vector<GpuInfo>& gpus, const System& system) {
  const std::string self = std::to_string(::getpid());
  for (GpuInfo& g : gpus) {
    std::vector<GpuProcess> kept;
    for (GpuProcess p : g.processes) {
      const std::string proc = "/proc/" + std::to_string(p.pid);
      const std::string stat = system.read_file(proc + "/stat").value_or("");
      const std::size_t paren = stat.rfind(')');
      // Field 4 of /proc/PID/stat is the parent's PID.
      const auto fields = paren == std::string::npos ? std::vector<std::string>{}
                                                     : split(stat.substr(paren + 2), ' ');
      if (fields.size() > 1 && fields[1] == self) continue;
      p.name = trim(system.read_file(proc + "/comm").value_or(""));
      kept.push_back(p);
    }
    g.processes = std::move(kept);
  }
}

CpuInfo collect_cpu(const System& system) {
  return parse_cpuinfo(system.read_file("/proc/cpuinfo").value_or(""), system.machine());
}

bool gpu_selected(const Options& o, int index) {
  if (o.devices.all_gpus) return true;
  return std::find(o.devices.gpu_indices.begin(), o.devices.gpu_indices.end(), index) !=
         o.devices.gpu_indices.end();
}

// The modes worth running a kernel for: everything the hardware does not rule out.
template <typename Modes, typename SupportFn>
std::vector<Mode> runnable_modes(const Modes& candidates, SupportFn support) {
  std::vector<Mode> modes;
  for (Mode m : candidates) {
    const HardwareVerdict verdict = support(m);
    if (verdict.hardware != Hardware::unsupported && verdict.stack_lacks.empty()) {
      modes.push_back(m);
    }
  }
  return modes;
}

// One worker of the run: what it is asked and, once run, what it answered. A result stays with
// its plan; nothing is matched by position.
struct WorkerRun {
  WorkerPlan plan;
  std::string uuid;  // the GPU it runs on ("" for the CPU and the collective)
  std::optional<WorkerResult> result;
};

// One check's outcome on one device: the worker's answer, or what stopped it. `planned_modes`
// and `answers` are the plan's and the result's lists of that kind (smoke or amp).
template <typename Outcome>
std::optional<Outcome> outcome_for(Mode mode, const std::vector<Mode>* planned_modes,
                                   const std::map<Mode, Outcome>* answers,
                                   const WorkerResult* result) {
  if (planned_modes == nullptr || answers == nullptr || result == nullptr) return std::nullopt;
  if (std::find(planned_modes->begin(), planned_modes->end(), mode) == planned_modes->end()) {
    return std::nullopt;
  }
  if (auto it = answers->find(mode); it != answers->end()) return it->second;
  Outcome o;
  if (result->problem != ErrorKind::none) {
    o.error_kind = result->problem;
    o.error = result->problem_message;
  } else {
    o.error_kind = ErrorKind::crashed;
    o.error = "the engine finished without reporting this check";
  }
  return o;
}

// Why the checks of a device did not run, when they did not: skipped on purpose (--quick,
// --no-amp, not selected), or kept from running by the machine (`unavailable`: no engine, a
// LibTorch without CUDA, no kernels for the GPU), which a requirement counts as an environment
// problem.
struct NotRun {
  std::string reason;
  bool unavailable = false;
  std::string amp_reason;     // the training modes' own reason, when it differs (--no-amp)
  bool any_hardware = false;  // unavailable whatever the hardware (its verdict is not known)
};

// The outcome a check that never ran gets: none (skipped), or unavailable with the reason, for
// the modes the hardware has.
template <typename Outcome>
std::optional<Outcome> not_run_outcome(const NotRun& why, const HardwareVerdict& hardware) {
  if (!why.unavailable || (hardware.hardware == Hardware::unsupported && !why.any_hardware)) {
    return std::nullopt;
  }
  Outcome o;
  o.error_kind = ErrorKind::unavailable;
  o.error = why.reason;
  return o;
}

template <typename SupportFn>
void fill_precisions(DeviceReport& d, SupportFn support, const WorkerRun* run, const NotRun& why) {
  const bool known = run != nullptr && run->result.has_value();
  const WorkerPlan* planned = known ? &run->plan : nullptr;
  const WorkerResult* result = known ? &*run->result : nullptr;
  for (Mode mode : matmul_modes()) {
    auto outcome = outcome_for(mode, known ? &planned->smoke : nullptr,
                               known ? &result->smoke : nullptr, result);
    if (!outcome) outcome = not_run_outcome<SmokeOutcome>(why, support(mode));
    d.precisions.emplace_back(mode, combine_verdict(support(mode), outcome, why.reason));
  }
  for (Mode mode : training_modes()) {
    auto outcome =
        outcome_for(mode, known ? &planned->amp : nullptr, known ? &result->amp : nullptr, result);
    if (!outcome && why.amp_reason.empty())
      outcome = not_run_outcome<AmpOutcome>(why, support(mode));
    d.precisions.emplace_back(
        mode, combine_amp_verdict(support(mode), outcome,
                                  why.amp_reason.empty() ? why.reason : why.amp_reason));
  }
  if (known && planned->bench_size > 0) {
    // Every passed smoke test was to be benchmarked: one the worker did not answer says why.
    std::map<Mode, BenchOutcome> bench = result->bench;
    for (Mode mode : planned->smoke) {
      const auto smoke = result->smoke.find(mode);
      if (smoke == result->smoke.end() || !smoke->second.ok || bench.count(mode) != 0) continue;
      BenchOutcome missing;
      missing.error_kind =
          result->problem != ErrorKind::none ? result->problem : ErrorKind::crashed;
      missing.error = result->problem != ErrorKind::none
                          ? result->problem_message
                          : "the engine finished without this benchmark";
      bench[mode] = missing;
    }
    apply_bench(d, bench);
  }
  d.recommendation = recommend(d);
}

// --device as a user would write it.
std::string selection_text(const DeviceSelection& s) {
  if (s.all_gpus) return s.cpu ? "all" : "gpu";
  std::vector<std::string> parts;
  if (s.cpu) parts.emplace_back("cpu");
  for (int i : s.gpu_indices) parts.push_back(std::to_string(i));
  return join(parts, ",");
}

NotRun not_run(const Options& o, bool selected) {
  NotRun why;
  why.reason = o.quick     ? "--quick: no kernels run"
               : !selected ? "not selected (--device)"
                           : "not run";
  if (!o.amp) why.amp_reason = "skipped (--no-amp)";
  return why;
}

// Why a stack runs nothing on GPUs, from its files alone ("" when nothing says so).
std::string cuda_blocker(const StackInfo& stack) {
  if (stack.available && !stack.cuda_built && !stack.cuda_version.empty()) {
    // A CUDA build without its CUDA library: a partial install, or ./dev's cache of the CPU one.
    return fmt::format(
        "this LibTorch ({}) is a CUDA {} build, but its libtorch_cuda.so is not in {}/lib: no GPU "
        "kernel can run; use a complete install (pip install torch) or the image you train with",
        stack.libtorch_version, stack.cuda_version, stack.location);
  }
  if (stack.available && !stack.cuda_built) {
    return fmt::format(
        "this LibTorch ({}) was built without CUDA: no GPU kernel can run; use a CUDA build of "
        "PyTorch or LibTorch",
        stack.libtorch_version);
  }
  return "";
}

// The stack a run was told not to look for (PRECISION_PROBE_TORCH=none): the hardware alone.
bool not_looked_for(const StackInfo& stack) { return stack.found_by == kTorchNotLookedFor; }

// Where no kernel runs (--quick, arch), what the stack alone says against a GPU: not known, or
// no kernels for it ("" when nothing, or when no stack was to be looked for).
std::string stack_says_against(const DeviceReport& d, const StackInfo& stack) {
  if (!stack.available) {
    if (not_looked_for(stack)) return "";
    return "the LibTorch stack is not known (" + stack.error +
           "), so whether it runs here is not known";
  }
  if (d.kernels && !d.kernels->covered) {
    return "no kernels for this GPU in this LibTorch build: " + d.kernels->reason;
  }
  return "";
}

// What keeps a GPU's checks from running when they were not run: the stack's blocker, and under
// --quick, what the stack alone says against the GPU.
NotRun gpu_not_run(const Options& o, const DeviceReport& d, const Report& report,
                   const std::string& blocker, const WorkerResult* result) {
  const StackInfo& stack = report.stack;
  NotRun why = not_run(o, d.selected);
  if (driver_faulted(report.driver) && (result == nullptr || result->smoke.empty())) {
    // The driver did not answer: nothing is known of this GPU, nothing was tested on it.
    why.reason = "not tested: " + report.driver.message;
    why.unavailable = true;
    why.any_hardware = !d.gpu || !d.gpu->cc;
    why.amp_reason.clear();
    return why;
  }
  if (result != nullptr && result->problem == ErrorKind::not_run)
    why.reason = result->problem_message;
  std::string blocked = blocker;
  if (blocked.empty() && o.quick) blocked = stack_says_against(d, stack);
  if (!blocked.empty() && d.selected) {
    why.reason = blocked;
    why.unavailable = true;
  }
  return why;
}

}  // namespace

namespace {

// A driver that hung or crashed lists no GPU: the device nodes say how many there are, so that
// the report shows each as not tested rather than none at all.
void add_unanswered_gpus(GpuFacts& facts, const System& system, const VisibleDevicesSpec& visible) {
  if (!driver_faulted(facts.driver) || !facts.gpus.empty()) return;
  const int count = expected_gpu_workers(system, visible, DeviceSelection{});
  const std::vector<std::string> nodes = gpu_device_nodes(system);
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = i;
    g.name = fmt::format("GPU behind /dev/{}", nodes[static_cast<std::size_t>(i)]);
    g.source = "device node";
    facts.gpus.push_back(g);
  }
}

}  // namespace

int expected_gpu_workers(const System& system, const VisibleDevicesSpec& visible,
                         const DeviceSelection& selection) {
  std::size_t guess = gpu_device_nodes(system).size();
  if (visible.set) guess = std::min(guess, visible.entries.size());
  if (!selection.all_gpus) guess = std::min(guess, selection.gpu_indices.size());
  return static_cast<int>(guess);
}

namespace {

// The engine's limits for what is left of the run's time budget.
Limits limits_within(const Options& o, std::chrono::milliseconds left) {
  Limits limits;
  limits.total = std::max(left, std::chrono::milliseconds(1));
  limits.timeout_s = o.timeout_s;
  limits.per_check = std::chrono::milliseconds(static_cast<long long>(o.check_timeout_s * 1000.0));
  return limits;
}

// The collectives section: present with --nccl, or whenever two or more GPUs can be asked about
// peer access.
std::optional<CollectivesReport> collectives_report(const Options& o, const GpuFacts& facts,
                                                    const std::vector<int>& gpus,
                                                    const std::optional<WorkerResult>& worker) {
  if (!o.nccl && facts.gpus.size() < 2) return std::nullopt;
  CollectivesReport c;
  c.requested = o.nccl;
  c.devices = gpus;
  c.peers = facts.peers;
  if (!o.nccl) {
    c.reason = "not requested (--nccl)";
    return c;
  }
  if (o.quick) {
    c.reason = "--quick: no kernels run";
    return c;
  }
  // One GPU is a one-rank all-reduce: NCCL's set-up and its kernels, checked like any other.
  if (gpus.empty()) {
    c.status = Status::unsupported;
    c.failure = ErrorKind::environment;
    c.reason = "--nccl needs a selected GPU; none is usable";
    return c;
  }
  if (!worker) return c;
  c.nccl_version = worker->nccl_version;
  c.all_reduce = worker->collectives;
  if (worker->problem != ErrorKind::none && worker->collectives.size() < kAllReduceDTypes.size()) {
    c.status = worker->problem == ErrorKind::not_run ? Status::not_tested : Status::failed;
    c.failure = worker->problem;
    c.reason = worker->problem_message;
    return c;
  }
  // Every all-reduce the check runs, over every GPU taking part, or it did not pass.
  if (const std::string missing = collectives_problem(c.all_reduce, static_cast<int>(gpus.size()));
      !missing.empty()) {
    c.status = Status::failed;
    c.failure = ErrorKind::wrong_result;
    c.reason = missing;
    return c;
  }
  c.status = Status::native;
  for (const CollectiveOutcome& a : c.all_reduce) {
    if (a.ok) continue;
    c.status = a.error_kind == ErrorKind::not_supported ? Status::unsupported : Status::failed;
    c.failure = a.error_kind == ErrorKind::not_supported ? ErrorKind::environment : a.error_kind;
    c.reason = std::string(to_string(a.dtype)) + " all-reduce: " + a.error;
    break;
  }
  return c;
}

void finish_report(Report& report, const Options& options, const DiagnosticContext& context,
                   Clock::time_point started) {
  report.requirements = evaluate_requirements(report, options.require, options.quick);
  report.diagnostics = diagnose(report, context);
  const ExitDecision exit = decide_exit(report);
  report.exit_code = exit.code;
  report.exit_reason = exit.reason;
  report.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  make_printable(report);
}

}  // namespace

ToolInfo this_tool() {
  ToolInfo tool;
  tool.version = build_info::kVersion;
  tool.libtorch_floor = fmt::format("{}.{}", kEngineFloor.major, kEngineFloor.minor);
  tool.libtorch_tested =
      fmt::format("{}.{}", kNewestTestedLibTorch.major, kNewestTestedLibTorch.minor);
  return tool;
}

// When and which: the run's start (RFC 3339, UTC, milliseconds) and a random id of 32 hex digits.
void stamp(Report& report) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  report.started_at =
      fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  report.report_id = fmt::format("{:016x}{:016x}", random_u64(), random_u64());
}

HostInfo collect_host(const System& system) {
  HostInfo host;
  host.hostname = system.hostname();
  host.os = os_pretty_name(system);
  host.kernel = system.kernel_release();
  host.machine = system.machine();
  host.container = in_container(system);
  return host;
}

Report usage_error_report(const std::string& message, const System& system) {
  Report report;
  stamp(report);
  report.tool = this_tool();
  report.host = collect_host(system);
  report.error = RunFailure{FailureKind::usage, message};
  report.exit_code = exit_code::kUsage;
  report.exit_reason = message;
  return report;
}

namespace {

// PRECISION_PROBE_TORCH naming no PyTorch: bad input (its one line), else "".
std::string bad_torch_dir(const std::optional<StackInfo>& image) {
  const bool bad = image && !image->available && image->found_by == "PRECISION_PROBE_TORCH";
  return bad ? image->error : "";
}

// The image's PyTorch, read from its files.
std::optional<StackInfo> image_stack(const ProbeDeps& deps) {
  std::optional<StackInfo> image = deps.find_torch(deps.system);
  trace("image stack read");
  return image;
}

// The stack before anything runs: the image's PyTorch, read from its files (the engine loads
// its LibTorch), and what keeps kernels from running at all.
struct StackAtStart {
  StackInfo stack;
  bool engine_installed = false;
  std::string engine_missing;  // why there is no engine (engine_installed false)
  std::string kernel_blocker;  // why no kernel can run, on the CPU or GPUs ("" when nothing)
  std::string gpu_blocker;     // why no GPU kernel can run ("" when nothing says so)
};

// The image's stack, or one that is not available, saying why.
StackInfo stack_or_none(const System& sys, const std::optional<StackInfo>& image) {
  if (image && image->available) return *image;
  StackInfo s;
  s.source = "none";
  if (sys.getenv("PRECISION_PROBE_TORCH").value_or("") == "none") {
    s.found_by = kTorchNotLookedFor;
    s.error = "not looked for (PRECISION_PROBE_TORCH=none)";
  } else if (image && !image->error.empty()) {
    s.error = image->error;  // found but not read: a file refused, a reading out of time
  } else {
    s.error = "no PyTorch or LibTorch found";
  }
  return s;
}

// Why the engine cannot load the image's LibTorch at all ("" when it can try).
std::string libtorch_blocker(const StackInfo& stack) {
  if (!stack.available) {
    return "no PyTorch or LibTorch was found for the engine to load (PRECISION_PROBE_TORCH, the "
           "torch package of the python3 on PATH, a LibTorch on LD_LIBRARY_PATH), so no kernel "
           "ran";
  }
  const std::optional<Version> release = parse_version(stack.libtorch_version);
  if (release && *release < kEngineFloor) {
    return fmt::format(
        "this image's PyTorch {} is older than {}.{}, the oldest release whose stable C ABI the "
        "engine uses, so no kernel ran (--quick answers for it from its files)",
        stack.libtorch_version, kEngineFloor.major, kEngineFloor.minor);
  }
  return "";
}

StackAtStart stack_at_start(Engine& engine, const Options& o, const System& sys,
                            const std::optional<StackInfo>& image) {
  StackAtStart s;
  s.stack = stack_or_none(sys, image);
  if (o.quick) {
    // No kernel runs: what the stack's files say against GPUs is all.
    s.engine_installed = engine.installed();
    s.gpu_blocker = cuda_blocker(s.stack);
    return s;
  }
  s.engine_installed = engine.installed();
  s.engine_missing = s.engine_installed ? "" : engine.not_installed_reason();
  s.kernel_blocker = libtorch_blocker(s.stack);
  if (s.kernel_blocker.empty() && !s.engine_installed) s.kernel_blocker = s.engine_missing;
  if (s.kernel_blocker.empty()) engine.use_libtorch(s.stack.location + "/lib");
  s.gpu_blocker = s.kernel_blocker.empty() ? cuda_blocker(s.stack) : s.kernel_blocker;
  return s;
}

// What the driver said: NVML at once, cuInit now when its answer is needed to plan, else in the
// background while the workers run.
struct DriverAnswers {
  NvmlSnapshot nvml;
  std::optional<CudaSnapshot> cuda;
  std::future<CudaSnapshot> pending_cuda;
  GpuFacts facts;
};

DriverAnswers ask_driver(const Options& options, DriverApi& driver,
                         const VisibleDevicesSpec& visible, const System& sys,
                         const std::optional<std::string>& proc_version) {
  DriverAnswers a;
  a.nvml = driver.query_nvml();
  trace("NVML answered");
  const bool nvml_ok = a.nvml.fault == QueryFault::none && a.nvml.loaded && a.nvml.init_result == 0;
  a.facts = merge_gpu_facts(a.nvml, std::nullopt, visible, proc_version);
  if (a.nvml.fault != QueryFault::none) {
    // A driver that hangs or crashes in NVML is not asked again through CUDA: the GPUs its
    // device nodes show are reported, not tested.
    add_unanswered_gpus(a.facts, sys, visible);
  } else if (!nvml_ok || !a.facts.order_is_reliable) {
    a.cuda = driver.query_cuda();
    a.facts = merge_gpu_facts(a.nvml, a.cuda, visible, proc_version);
  } else if (!options.quick) {
    a.pending_cuda = std::async(std::launch::async, [&driver] {
      CudaSnapshot snapshot = driver.query_cuda();
      trace("cuInit done (in the background)");
      return snapshot;
    });
  }
  return a;
}

// cuInit's answer, once the workers are done, merged into the facts.
void finish_driver(DriverAnswers& a, const VisibleDevicesSpec& visible, const System& sys,
                   const std::optional<std::string>& proc_version) {
  if (a.pending_cuda.valid()) {
    a.cuda = a.pending_cuda.get();
    trace("cuInit answered");
    a.facts = merge_gpu_facts(a.nvml, a.cuda, visible, proc_version);
  }
  if (a.nvml.fault == QueryFault::none) add_unanswered_gpus(a.facts, sys, visible);
  name_gpu_processes(a.facts.gpus, sys);
}

// A --device index the driver does not know: a usage error, unless no GPU is visible at all
// (then an environment problem the report carries). "" when every index exists.
std::string check_selection(const Options& options, const GpuFacts& facts, Report& report) {
  for (int index : options.devices.gpu_indices) {
    if (index < static_cast<int>(facts.gpus.size())) continue;
    if (facts.gpus.empty()) {
      report.run.unavailable_selection =
          fmt::format("--device {}: no GPU is visible ({})", index, facts.driver.message);
      return "";
    }
    return fmt::format("--device: GPU {} does not exist ({} visible: 0-{})", index,
                       facts.gpus.size(), facts.gpus.size() - 1);
  }
  return "";
}

// The CPU's checks: they need nothing from the driver, so they start before it is asked. With
// `bench_later`, its benchmark is left for a run of its own after the GPUs' (its threads would
// starve the GPU workers' launching threads).
WorkerRun plan_cpu(const Options& options, const CpuInfo& cpu, std::uint64_t seed, bool bench_later,
                   const std::optional<FaultInjection>& inject) {
  auto support = [&cpu](Mode m) { return cpu_hardware_support(cpu, m); };
  WorkerRun w;
  w.plan.kind = DeviceKind::cpu;
  w.plan.smoke = runnable_modes(matmul_modes(), support);
  if (options.amp) w.plan.amp = runnable_modes(training_modes(), support);
  w.plan.seed = seed;
  if (options.bench && !bench_later) w.plan.bench_size = options.bench_size.value_or(1024);
  if (options.devices.cpu) plan_soak(w.plan, options, support, inject, seed);
  return w;
}

// A GPU's tf32 check runs in a process of its own (LibTorch reads the TF32 override once per
// process): its smoke test, benchmark and share of the soak move from `main` to a plan of their
// own, held before its measurements until the main worker is done.
std::optional<WorkerRun> split_tf32(WorkerRun& main) {
  WorkerPlan& p = main.plan;
  const auto at = std::find(p.smoke.begin(), p.smoke.end(), Mode::tf32);
  if (at == p.smoke.end()) return std::nullopt;
  p.smoke.erase(at);
  WorkerRun t;
  t.uuid = main.uuid;
  t.plan = p;
  t.plan.tf32_process = true;
  t.plan.smoke = {Mode::tf32};
  t.plan.amp.clear();
  t.plan.soak_modes.clear();
  t.plan.soak_seconds = 0.0;
  t.plan.inject_iteration = 0;
  const auto soaked = std::find(p.soak_modes.begin(), p.soak_modes.end(), Mode::tf32);
  if (p.soak_seconds > 0.0 && soaked != p.soak_modes.end()) {
    const double share = p.soak_seconds / static_cast<double>(p.soak_modes.size());
    p.soak_modes.erase(soaked);
    p.soak_seconds = p.soak_modes.empty() ? 0.0 : p.soak_seconds - share;
    t.plan.soak_modes = {Mode::tf32};
    t.plan.soak_seconds = share;
    if (p.inject_iteration > 0 && p.inject_mode == Mode::tf32) {
      t.plan.inject_iteration = p.inject_iteration;
      p.inject_iteration = 0;
    }
  }
  t.plan.hold = t.plan.bench_size > 0 || t.plan.soak_seconds > 0.0;
  return t;
}

// A GPU's two workers as one: the main worker's plan and answers with the TF32 process's tf32
// put back, as if one worker had run them all.
WorkerRun merged_gpu_run(const WorkerRun& main, const WorkerRun* tf32) {
  WorkerRun w = main;
  if (tf32 == nullptr) return w;
  const WorkerPlan& tp = tf32->plan;
  w.plan.smoke.insert(w.plan.smoke.begin() + (w.plan.smoke.empty() ? 0 : 1), Mode::tf32);
  if (tp.soak_seconds > 0.0) {
    w.plan.soak_modes.insert(w.plan.soak_modes.begin() + (w.plan.soak_modes.empty() ? 0 : 1),
                             Mode::tf32);
    w.plan.soak_seconds += tp.soak_seconds;
    if (tp.inject_iteration > 0) {
      w.plan.inject_mode = Mode::tf32;
      w.plan.inject_iteration = tp.inject_iteration;
    }
  }
  if (!w.result) return w;
  WorkerResult& r = *w.result;
  const WorkerResult* t = tf32->result ? &*tf32->result : nullptr;
  if (t != nullptr && t->smoke.count(Mode::tf32) != 0) {
    r.smoke[Mode::tf32] = t->smoke.at(Mode::tf32);
  } else {
    SmokeOutcome o;
    o.error_kind = t != nullptr && t->problem != ErrorKind::none ? t->problem : ErrorKind::crashed;
    o.error = t != nullptr && !t->problem_message.empty()
                  ? t->problem_message
                  : "the TF32 process finished without reporting this check";
    r.smoke[Mode::tf32] = o;
  }
  if (t != nullptr) {
    for (const auto& [mode, bench] : t->bench) r.bench[mode] = bench;
    for (const auto& [mode, soak] : t->soak) r.soak[mode] = soak;
  }
  return w;
}

std::vector<WorkerRun> plan_gpus(const Options& options, const GpuFacts& facts,
                                 const StackAtStart& stack, std::uint64_t seed,
                                 const std::optional<FaultInjection>& inject) {
  const std::string& blocker = stack.gpu_blocker;
  std::vector<WorkerRun> runs;
  for (const GpuInfo& gpu : facts.gpus) {
    if (!gpu_selected(options, gpu.index) || !gpu.cc || !blocker.empty()) continue;
    // What the image's stack lacks (its release, its CUDA) is not asked of the engine.
    auto support = [&gpu, &stack](Mode m) { return gpu_support(*gpu.cc, m, stack.stack); };
    WorkerRun w;
    w.uuid = gpu.uuid;
    w.plan.kind = DeviceKind::cuda;
    w.plan.index = gpu.index;
    w.plan.cuda_visible_devices = !gpu.uuid.empty() ? gpu.uuid : std::to_string(gpu.index);
    w.plan.smoke = runnable_modes(matmul_modes(), support);
    if (options.amp) w.plan.amp = runnable_modes(training_modes(), support);
    w.plan.seed = seed + static_cast<std::uint64_t>(gpu.index) + 1;
    if (options.bench) w.plan.bench_size = options.bench_size.value_or(8192);
    plan_soak(w.plan, options, support, inject, seed, gpu.memory_total);
    std::optional<WorkerRun> tf32 = split_tf32(w);
    runs.push_back(w);
    if (tf32) runs.push_back(*tf32);
  }
  return runs;
}

// The GPUs the collective spans: every selected one the driver knows.
std::vector<int> collective_gpus(const Options& options, const GpuFacts& facts) {
  std::vector<int> gpus;
  for (const GpuInfo& gpu : facts.gpus) {
    if (gpu_selected(options, gpu.index) && gpu.cc) gpus.push_back(gpu.index);
  }
  return gpus;
}

std::optional<WorkerRun> plan_collective(const Options& options, const GpuFacts& facts,
                                         const std::vector<int>& gpus, std::uint64_t seed) {
  if (!options.nccl || options.quick || gpus.empty()) return std::nullopt;
  WorkerRun w;
  w.plan.kind = DeviceKind::cuda;
  w.plan.collective_ranks = static_cast<int>(gpus.size());
  std::vector<std::string> ids;
  for (int index : gpus) {
    const GpuInfo& g = facts.gpus[static_cast<std::size_t>(index)];
    ids.push_back(!g.uuid.empty() ? g.uuid : std::to_string(index));
  }
  w.plan.cuda_visible_devices = join(ids, ",");
  w.plan.seed = seed;
  return w;
}

// Runs the workers together; each gets its result.
void run_workers(Engine& engine, const std::vector<WorkerRun*>& runs, const Limits& limits) {
  if (runs.empty()) return;
  std::vector<WorkerPlan> plans;
  plans.reserve(runs.size());
  for (const WorkerRun* w : runs) plans.push_back(w->plan);
  std::vector<WorkerResult> results = engine.run(plans, limits);
  for (std::size_t i = 0; i < runs.size() && i < results.size(); ++i) {
    runs[i]->result = std::move(results[i]);
  }
}

// The run's clock: what is left of --timeout, and the limits for workers started now.
struct RunClock {
  const Options& options;
  Clock::time_point started;
  const std::atomic<bool>* cancelled;

  Limits limits() const {
    // --timeout bounds the run apart from the soak, whose length it adds.
    const auto left = std::chrono::milliseconds(
                          static_cast<long long>((options.timeout_s + options.soak_s) * 1000.0)) -
                      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    Limits limits = limits_within(options, left);
    const std::atomic<bool>* flag = cancelled;
    limits.stop = [flag] { return interrupt_requested() || flag->load(); };
    return limits;
  }
};

Report probe_report_header(const Options& options, const System& sys) {
  Report report;
  stamp(report);
  report.tool = this_tool();
  report.host = collect_host(sys);
  report.run.command = Command::probe;
  report.run.quick = options.quick;
  report.run.bench = options.bench && !options.quick;
  report.run.soak_s = options.soak_s;
  report.run.seed = options.seed.value_or(fresh_seed());
  report.run.timeout_s = options.timeout_s;
  for (Mode m : options.require) report.run.required.emplace_back(mode_key(m));
  report.run.devices = selection_text(options.devices);
  report.run.gpus_selected = options.devices.all_gpus || !options.devices.gpu_indices.empty();
  return report;
}

// The CPU's benchmark, alone after the GPUs', into the CPU worker's result.
void run_cpu_bench(Engine& engine, WorkerRun& cpu, const RunClock& clock) {
  WorkerRun bench;
  bench.plan = cpu.plan;
  bench.plan.amp.clear();
  bench.plan.soak_seconds = 0.0;  // the CPU soaked in its first run
  bench.plan.soak_modes.clear();
  bench.plan.inject_iteration = 0;
  bench.plan.bench_size = clock.options.bench_size.value_or(1024);
  run_workers(engine, {&bench}, clock.limits());
  if (!bench.result || !cpu.result) return;
  cpu.result->bench = bench.result->bench;
  if (bench.result->problem != ErrorKind::none && cpu.result->problem == ErrorKind::none) {
    cpu.result->problem = bench.result->problem;
    cpu.result->problem_message = bench.result->problem_message;
  }
  cpu.plan.bench_size = bench.plan.bench_size;  // read as benchmarked
}

// The stack: the image's, with what the engine's workers said of the library they loaded (a GPU
// worker's, which loaded libtorch_cuda.so, before the CPU's).
StackInfo stack_from(const StackAtStart& at_start, const std::optional<WorkerRun>& cpu,
                     const std::vector<WorkerRun>& gpus) {
  StackInfo stack = at_start.stack;
  const StackInfo* said = nullptr;
  auto consider = [&said](const WorkerRun& w) {
    if (!w.result || !w.result->stack) return;
    if (said == nullptr ||
        (said->load_error.empty() == false && w.result->stack->load_error.empty())) {
      said = &*w.result->stack;
    }
  };
  for (const WorkerRun& w : gpus) consider(w);
  if (cpu) consider(*cpu);
  if (said == nullptr) return stack;
  stack.library = said->library;
  stack.abi_version = said->abi_version;
  stack.release_note = said->release_note;
  stack.load_error = said->load_error;
  if (cpu && cpu->result && cpu->result->stack && cpu->result->stack->cpu_threads > 0) {
    stack.cpu_threads = cpu->result->stack->cpu_threads;
  }
  return stack;
}

// The soak's telemetry of a run, and why there is none.
struct Telemetry {
  std::vector<TelemetrySample> samples;
  std::string error;
};

// A GPU's soak gets its telemetry, and its first mismatches the temperature at the time.
void add_telemetry(SoakReport& soak, const std::string& uuid, const Telemetry& t) {
  SoakTelemetry summary = summarise(t.samples, uuid);
  if (!t.error.empty()) summary.note = t.error;
  for (auto& [mode, o] : soak.modes) {
    if (o.first_mismatch) {
      o.first_mismatch->temperature_c = temperature_at(t.samples, uuid, o.first_mismatch->boot_s);
    }
  }
  soak.telemetry = summary;
}

void add_gpu_devices(Report& report, const Options& options, const GpuFacts& facts,
                     const std::vector<WorkerRun>& runs, const std::string& blocker,
                     const Telemetry& telemetry) {
  const std::vector<ArchTarget> targets = parse_arch_list(join(report.stack.arch_list, " "));
  for (const GpuInfo& gpu : facts.gpus) {
    DeviceReport d;
    d.kind = DeviceKind::cuda;
    d.index = gpu.index;
    d.name = gpu.name;
    d.selected = gpu_selected(options, gpu.index);
    d.gpu = gpu;
    if (gpu.cc && report.stack.available && report.stack.cuda_built && !targets.empty()) {
      d.kernels = kernel_coverage(*gpu.cc, targets);
    }
    const WorkerRun* main = nullptr;
    const WorkerRun* tf32 = nullptr;
    for (const WorkerRun& w : runs) {
      if (w.plan.index == gpu.index) (w.plan.tf32_process ? tf32 : main) = &w;
    }
    const std::optional<WorkerRun> merged =
        main != nullptr ? std::optional<WorkerRun>(merged_gpu_run(*main, tf32)) : std::nullopt;
    const WorkerRun* run = merged ? &*merged : nullptr;
    // What the stack lacks is said of a selected GPU that nothing else keeps from running.
    const bool stack_layer = d.selected && blocker.empty();
    auto support = [&gpu, &report, stack_layer](Mode m) {
      if (!gpu.cc) return HardwareVerdict{Hardware::unsupported, "compute capability unknown"};
      return stack_layer ? gpu_support(*gpu.cc, m, report.stack) : gpu_hardware_support(*gpu.cc, m);
    };
    const WorkerResult* result = run != nullptr && run->result ? &*run->result : nullptr;
    fill_precisions(d, support, run, gpu_not_run(options, d, report, blocker, result));
    if (run != nullptr) d.soak = soak_report(options, run->plan, result, interrupt_requested());
    if (d.soak) add_telemetry(*d.soak, gpu.uuid, telemetry);
    report.devices.push_back(std::move(d));
  }
}

void add_cpu_device(Report& report, const Options& options, const CpuInfo& cpu,
                    const std::optional<WorkerRun>& run, const std::string& blocker) {
  DeviceReport d;
  d.kind = DeviceKind::cpu;
  d.name = cpu.model;
  d.selected = options.devices.cpu;
  d.cpu = cpu;
  NotRun why = not_run(options, true);
  if (!blocker.empty() && !options.quick) {
    why.reason = blocker;
    why.unavailable = true;
  }
  if (run && run->result && run->result->problem == ErrorKind::not_run) {
    why.reason = run->result->problem_message;
  }
  fill_precisions(
      d, [&cpu](Mode m) { return cpu_hardware_support(cpu, m); }, run ? &*run : nullptr, why);
  if (run) {
    d.soak = soak_report(options, run->plan, run->result ? &*run->result : nullptr,
                         interrupt_requested());
  }
  report.devices.push_back(std::move(d));
}

// PRECISION_PROBE_INJECT_FAULT, read only with --soak (a malformed one is a usage error).
Expected<std::optional<FaultInjection>> fault_to_inject(const Options& options, const System& sys) {
  const auto spec = sys.getenv(std::string(kInjectFaultVariable));
  if (!spec || options.soak_s <= 0.0) return std::optional<FaultInjection>{};
  Expected<FaultInjection> parsed = parse_fault_injection(*spec);
  if (!parsed) return Unexpected{parsed.error()};
  return std::optional<FaultInjection>{*parsed};
}

// The soak's telemetry: NVML sampled by the driver agent while the GPUs' workers run.
std::unique_ptr<TelemetryRecording> start_telemetry(DriverApi& driver,
                                                    const std::vector<WorkerRun>& gpu_runs) {
  const bool soak = std::any_of(gpu_runs.begin(), gpu_runs.end(),
                                [](const WorkerRun& w) { return w.plan.soak_seconds > 0.0; });
  return soak ? driver.record_telemetry() : nullptr;
}

}  // namespace

Report run_probe(const Options& options, ProbeDeps deps) {
  const System& sys = deps.system;
  std::atomic<bool> cancelled{false};
  const RunClock clock{options, Clock::now(), &cancelled};
  Report report = probe_report_header(options, sys);
  const VisibleDevicesSpec visible = parse_cuda_visible_devices(sys.getenv("CUDA_VISIBLE_DEVICES"));
  const auto proc_version = sys.read_file("/proc/driver/nvidia/version");
  trace("probe start");
  const Expected<std::optional<FaultInjection>> inject = fault_to_inject(options, sys);
  if (!inject) return usage_error_report(inject.error(), sys);
  report.image_stack = image_stack(deps);
  const std::string bad_torch = bad_torch_dir(report.image_stack);
  if (!bad_torch.empty()) return usage_error_report(bad_torch, sys);
  const StackAtStart stack = stack_at_start(deps.engine, options, sys, report.image_stack);

  // --- Workers started ahead (loading LibTorch is the longest wait); the CPU's checks begin now
  const int expected_gpus =
      stack.gpu_blocker.empty() ? expected_gpu_workers(sys, visible, options.devices) : 0;
  const CpuInfo cpu = collect_cpu(sys);
  std::optional<WorkerRun> cpu_run;
  std::future<void> cpu_done;
  if (!options.quick && stack.kernel_blocker.empty()) {
    // A GPU's TF32 process with its main worker: both load LibTorch at once.
    deps.engine.prestart({true, expected_gpus, expected_gpus});
    cpu_run = plan_cpu(options, cpu, report.run.seed, expected_gpus > 0, *inject);
    cpu_done = std::async(std::launch::async,
                          [&] { run_workers(deps.engine, {&*cpu_run}, clock.limits()); });
  }

  // --- Driver facts, then the GPUs' plans ---
  DriverAnswers driver = ask_driver(options, deps.driver, visible, sys, proc_version);
  if (const std::string bad = check_selection(options, driver.facts, report); !bad.empty()) {
    cancelled = true;
    if (cpu_done.valid()) cpu_done.wait();
    deps.engine.stop_spares();
    return usage_error_report(bad, sys);
  }
  std::vector<WorkerRun> gpu_runs =
      options.quick ? std::vector<WorkerRun>{}
                    : plan_gpus(options, driver.facts, stack, report.run.seed, *inject);
  const std::vector<int> collective_on = collective_gpus(options, driver.facts);
  std::optional<WorkerRun> collective =
      plan_collective(options, driver.facts, collective_on, report.run.seed);

  std::unique_ptr<TelemetryRecording> telemetry = start_telemetry(deps.driver, gpu_runs);

  // --- Kernels: every GPU at once (and the collective, unless measurements run alone) ---
  std::vector<WorkerRun*> together;
  together.reserve(gpu_runs.size() + 1);
  for (WorkerRun& w : gpu_runs) together.push_back(&w);
  const bool alone = options.bench;  // the collective measures bandwidth: alone with --bench
  if (collective && !alone) together.push_back(&*collective);
  run_workers(deps.engine, together, clock.limits());
  const Telemetry samples{telemetry ? telemetry->stop() : std::vector<TelemetrySample>{},
                          telemetry ? telemetry->error : "NVML telemetry is not offered here"};
  deps.engine.stop_spares();
  if (cpu_done.valid()) cpu_done.get();
  if (cpu_run && options.bench && expected_gpus > 0) run_cpu_bench(deps.engine, *cpu_run, clock);
  if (collective && alone) run_workers(deps.engine, {&*collective}, clock.limits());
  trace("workers finished");
  finish_driver(driver, visible, sys, proc_version);
  report.driver = driver.facts.driver;

  // --- The report ---
  report.stack = stack_from(stack, cpu_run, gpu_runs);
  add_gpu_devices(report, options, driver.facts, gpu_runs, stack.gpu_blocker, samples);
  add_cpu_device(report, options, cpu, cpu_run, stack.kernel_blocker);
  report.collectives =
      collectives_report(options, driver.facts, collective_on,
                         collective ? collective->result : std::optional<WorkerResult>{});
  const bool gpu_wanted = (!options.require.empty() &&
                           (options.devices.all_gpus || !options.devices.gpu_indices.empty())) ||
                          !options.devices.gpu_indices.empty();
  if (interrupt_requested()) report.run.interrupted = signal_name(interrupt_signal());
  judge_soak(report);
  const DiagnosticContext context{
      sys,        driver.nvml,         driver.cuda, visible, stack.engine_installed,
      gpu_wanted, stack.engine_missing};
  finish_report(report, options, context, clock.started);
  return report;
}

Report run_arch(const Options& options, const ProbeDeps& deps) {
  const auto started = Clock::now();
  Report report;
  stamp(report);
  report.tool = this_tool();
  report.host = collect_host(deps.system);
  report.run.command = Command::arch;
  // In an image with a PyTorch of its own, "would this image run there?" is asked of that one.
  report.image_stack = image_stack(deps);
  if (const std::string bad = bad_torch_dir(report.image_stack); !bad.empty()) {
    return usage_error_report(bad, deps.system);
  }
  report.stack = stack_or_none(deps.system, report.image_stack);
  if (interrupt_requested()) report.run.interrupted = signal_name(interrupt_signal());
  const ComputeCapability cc =
      parse_compute_capability(options.arch_cc).value_or(ComputeCapability{});

  DeviceReport d;
  d.kind = DeviceKind::cuda;
  d.name = fmt::format("compute capability {} ({})", cc.to_string(), architecture_name(cc));
  GpuInfo gpu;
  gpu.cc = cc;
  gpu.source = "arch";
  d.gpu = gpu;
  if (report.stack.available) {
    if (!report.stack.cuda_built) {
      // A CUDA build without its library (missing, or a FIFO refused) says which: arch_note.
      d.kernels = KernelCoverage{false, "",
                                 report.stack.cuda_version.empty()
                                     ? "this LibTorch build has no CUDA support at all"
                                     : report.stack.arch_note};
    } else {
      d.kernels = kernel_coverage(cc, parse_arch_list(join(report.stack.arch_list, " ")));
    }
  }
  // Gated when asked: a requirement is met by native hardware that this build's stack can run.
  d.selected = !options.require.empty();
  NotRun why{"offline (arch): no kernels run", false, ""};
  // The image's own stack needs no engine to be answered for.
  const std::string blocker = cuda_blocker(report.stack);
  const std::string blocked = !blocker.empty() ? blocker : stack_says_against(d, report.stack);
  if (!blocked.empty() && d.selected) why = NotRun{blocked, true, ""};
  const bool stack_layer = blocked.empty();
  fill_precisions(
      d,
      [cc, &report, stack_layer](Mode m) {
        return stack_layer ? gpu_support(cc, m, report.stack) : gpu_hardware_support(cc, m);
      },
      nullptr, why);
  report.devices.push_back(std::move(d));
  for (Mode m : options.require) report.run.required.emplace_back(mode_key(m));
  report.requirements = evaluate_requirements(report, options.require, true);
  const ExitDecision exit = decide_exit(report);
  report.exit_code = exit.code;
  report.exit_reason =
      exit.code == exit_code::kOk && options.require.empty() ? "arch report" : exit.reason;
  report.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  make_printable(report);
  return report;
}

}  // namespace precision_probe
