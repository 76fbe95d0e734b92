#include "probe/run/assemble.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "version/build_info.hpp"
#include "strings/strings.hpp"
#include "wire/worker_checks.hpp"
#include "probe/facts/cpu.hpp"
#include "probe/run/soak_plan.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/verdicts/gate.hpp"
#include "probe/verdicts/soak.hpp"
#include "probe/verdicts/verdict.hpp"

namespace precision_probe {

ToolInfo this_tool() {
  ToolInfo tool;
  tool.version = build_info::kVersion;
  tool.libtorch_floor = kEngineFloor;
  tool.libtorch_tested = kNewestTestedLibTorch;
  return tool;
}

Report usage_error_report(const std::string& message, const HostInfo& host) {
  Report report;
  const RunStamp stamp = stamp_now();
  report.started_at = stamp.started_at;
  report.report_id = stamp.report_id;
  report.tool = this_tool();
  report.host = host;
  report.error = RunFailure{FailureKind::usage, message};
  report.exit_code = exit_code::kUsage;
  report.exit_reason = message;
  return report;
}

Report usage_error_report(const std::string& message, const System& system) {
  return usage_error_report(message, collect_host(system));
}

namespace {

// A check its worker was asked for and did not answer: the worker's problem where it had one (a
// timeout, a crash), else a crash; `finished_without` says so where the worker said nothing.
template <typename Outcome>
Outcome unanswered(const WorkerResult* result, const char* finished_without) {
  const bool problem = result != nullptr && result->problem != ErrorKind::none;
  return did_not_run<Outcome>(problem ? result->problem : ErrorKind::crashed,
                              problem && !result->problem_message.empty()
                                  ? result->problem_message
                                  : std::string(finished_without));
}

// One check's answer: the worker's, or what kept it from answering (none where it was not asked).
template <typename Outcome>
std::optional<Outcome> answer_for(Mode mode, const std::vector<Mode>& asked,
                                  const PerMode<Outcome>& answers, const WorkerResult& result) {
  if (std::find(asked.begin(), asked.end(), mode) == asked.end()) return std::nullopt;
  if (const Outcome* answer = answers.find(mode)) return *answer;
  return unanswered<Outcome>(&result, "the engine finished without reporting this check");
}

// The outcome a check that never ran gets: none (skipped), or unavailable with the reason (on
// the modes the hardware has, or on all of them).
template <typename Outcome>
std::optional<Outcome> not_run_outcome(const NotRun& why, const HardwareVerdict& hardware) {
  const bool kept =
      why.kind == NotRun::Kind::unavailable_everywhere ||
      (why.kind == NotRun::Kind::unavailable && hardware.hardware != Hardware::unsupported);
  if (!kept) return std::nullopt;
  return did_not_run<Outcome>(ErrorKind::unavailable, why.reason);
}

// The benchmarks a worker answered; every passed smoke test was to be benchmarked, and one the
// worker did not answer says why.
PerMode<BenchOutcome> benchmarks(const WorkerPlan& plan, const WorkerResult& result) {
  PerMode<BenchOutcome> bench = result.bench;
  for (Mode mode : plan.smoke) {
    const SmokeOutcome* smoke = result.smoke.find(mode);
    if (smoke == nullptr || !smoke->ok || bench.contains(mode)) continue;
    bench.set(mode,
              unanswered<BenchOutcome>(&result, "the engine finished without this benchmark"));
  }
  return bench;
}

}  // namespace

void fill_precisions(DeviceReport& d, const SupportFn& support,
                     const std::optional<WorkerRun>& work, const NotRun& matmul,
                     const NotRun& training) {
  const WorkerResult* result = work && work->result ? &*work->result : nullptr;
  for (Mode mode : matmul_modes()) {
    std::optional<SmokeOutcome> outcome;
    if (result != nullptr) outcome = answer_for(mode, work->plan.smoke, result->smoke, *result);
    if (!outcome) outcome = not_run_outcome<SmokeOutcome>(matmul, support(mode));
    d.precisions.set(mode, combine_verdict(support(mode), outcome, matmul.reason));
  }
  for (Mode mode : training_modes()) {
    std::optional<AmpOutcome> outcome;
    if (result != nullptr) outcome = answer_for(mode, work->plan.amp, result->amp, *result);
    if (!outcome) outcome = not_run_outcome<AmpOutcome>(training, support(mode));
    d.precisions.set(mode, combine_amp_verdict(support(mode), outcome, training.reason));
  }
  if (result != nullptr && work->plan.bench_size > 0) {
    apply_bench(d, benchmarks(work->plan, *result));
  }
  d.recommendation = recommend(d);
}

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

namespace {

// --device as a user would write it.
std::string selection_text(const DeviceSelection& s) {
  if (s.all_gpus) return s.cpu ? "all" : "gpu";
  std::vector<std::string> parts;
  if (s.cpu) parts.emplace_back("cpu");
  for (int i : s.gpu_indices) parts.push_back(std::to_string(i));
  return join(parts, ",");
}

Report report_header(const Options& options, const StartFacts& facts, std::uint64_t seed) {
  Report report;
  report.started_at = facts.stamp.started_at;
  report.report_id = facts.stamp.report_id;
  report.tool = this_tool();
  report.host = facts.machine.host;
  report.image_stack = facts.image;
  RunInfo& run = report.run;
  run.command = Command::probe;
  run.quick = options.quick;
  run.bench = options.bench && !options.quick;
  run.soak_s = options.soak_s;
  run.seed = seed;
  run.timeout_s = options.timeout_s;
  for (Mode m : options.require) run.required.emplace_back(mode_key(m));
  run.devices = selection_text(options.devices);
  run.gpus_selected = options.devices.all_gpus || !options.devices.gpu_indices.empty();
  return report;
}

// Why a device's checks did not run, for the reasons that hold on any device: --quick, --device.
NotRun skipped(const Options& o, bool selected) {
  return {o.quick     ? "--quick: no kernels run"
          : !selected ? "not selected (--device)"
                      : "not run",
          NotRun::Kind::skipped};
}

// The training modes' reason: --no-amp skips them, whatever keeps the matmuls from running.
NotRun training_not_run(const Options& o, const NotRun& matmul) {
  return o.amp ? matmul : NotRun{"skipped (--no-amp)", NotRun::Kind::skipped};
}

// What keeps a GPU's checks from running when they were not run: a driver that did not answer,
// the stack's blocker, and under --quick what the stack alone says against the GPU.
std::pair<NotRun, NotRun> gpu_not_run(const Options& o, const DeviceReport& d, const Report& report,
                                      const std::string& blocker, const WorkerResult* result) {
  if (driver_faulted(report.driver) && (result == nullptr || result->smoke.empty())) {
    // The driver did not answer: nothing is known of this GPU, nothing was tested on it.
    const NotRun why{
        "not tested: " + report.driver.message,
        !d.gpu || !d.gpu->cc ? NotRun::Kind::unavailable_everywhere : NotRun::Kind::unavailable};
    return {why, why};
  }
  NotRun why = skipped(o, d.selected);
  if (result != nullptr && result->problem == ErrorKind::not_run) {
    why.reason = result->problem_message;
  }
  std::string blocked = blocker;
  if (blocked.empty() && o.quick) blocked = stack_says_against(d, report.stack);
  if (!blocked.empty() && d.selected) why = {blocked, NotRun::Kind::unavailable};
  return {why, training_not_run(o, why)};
}

// The CPU's checks and its benchmark (run alone after the GPUs') as one worker: the benchmark's
// answers with the checks'.
std::optional<WorkerRun> cpu_work(const RunResults& results) {
  if (!results.cpu) return std::nullopt;
  WorkerRun w = *results.cpu;
  const std::optional<WorkerRun>& bench = results.cpu_bench;
  if (!bench || !bench->result || !w.result) return w;
  w.result->bench = bench->result->bench;
  if (!w.result->rerun) w.result->rerun = bench->result->rerun;
  if (bench->result->problem != ErrorKind::none && w.result->problem == ErrorKind::none) {
    w.result->problem = bench->result->problem;
    w.result->problem_message = bench->result->problem_message;
  }
  w.plan.bench_size = bench->plan.bench_size;  // asked of the device, in a run of its own
  return w;
}

// The stack: the image's, with what the engine's workers said of the library they loaded (a GPU
// worker's, which loaded libtorch_cuda.so, before the CPU's). The release reported is the one that
// ran: the library's own word where it loaded and the files say another (the files' claim stays
// in image_stack, and libtorch-version-mismatch says both).
StackInfo stack_from(const StackInfo& at_start, const std::optional<WorkerRun>& cpu,
                     const std::vector<WorkerRun>& gpus) {
  StackInfo stack = at_start;
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
  if (said->load_error.empty() && !said->abi_version.empty() &&
      version_release(stack.libtorch_version) != said->abi_version) {
    stack.libtorch_version = said->abi_version;
  }
  if (cpu && cpu->result && cpu->result->stack && cpu->result->stack->cpu_threads > 0) {
    stack.cpu_threads = cpu->result->stack->cpu_threads;
  }
  return stack;
}

// A GPU's soak gets its telemetry, and its first mismatches the temperature at the time.
void add_telemetry(SoakReport& soak, const std::string& uuid, const RunResults& results) {
  SoakTelemetry summary = summarise(results.telemetry, uuid);
  if (!results.telemetry_note.empty()) summary.note = results.telemetry_note;
  for (auto [mode, o] : soak.modes) {
    if (o.first_mismatch) {
      o.first_mismatch->temperature_c =
          temperature_at(results.telemetry, uuid, o.first_mismatch->boot_s);
    }
  }
  soak.telemetry = summary;
}

// A GPU's worker run (none where no worker ran for it).
std::optional<WorkerRun> gpu_work_of(int index, const std::vector<WorkerRun>& runs) {
  for (const WorkerRun& w : runs) {
    if (w.plan.index == index) return w;
  }
  return std::nullopt;
}

DeviceReport gpu_device(const Report& report, const Options& options, const GpuInfo& gpu,
                        const std::vector<ArchTarget>& targets) {
  DeviceReport d;
  d.kind = DeviceKind::cuda;
  d.index = gpu.index;
  d.name = gpu.name;
  d.selected = gpu_selected(options, gpu.index);
  d.gpu = gpu;
  if (gpu.cc && report.stack.available && report.stack.cuda_built && !targets.empty()) {
    d.kernels = kernel_coverage(*gpu.cc, targets);
  }
  return d;
}

void add_gpu_devices(Report& report, const Options& options, const GpuFacts& facts,
                     const std::string& blocker, const RunResults& results) {
  const std::vector<ArchTarget> targets = parse_arch_list(join(report.stack.arch_list, " "));
  const bool interrupted = !results.interrupted.empty();
  for (const GpuInfo& gpu : facts.gpus) {
    DeviceReport d = gpu_device(report, options, gpu, targets);
    const std::optional<WorkerRun> work = gpu_work_of(gpu.index, results.gpus);
    // What the stack lacks is said of a selected GPU that nothing else keeps from running.
    const bool stack_layer = d.selected && blocker.empty();
    auto support = [&gpu, &report, stack_layer](Mode m) {
      if (!gpu.cc) return HardwareVerdict{Hardware::unsupported, "compute capability unknown"};
      return stack_layer ? gpu_support(*gpu.cc, m, report.stack) : gpu_hardware_support(*gpu.cc, m);
    };
    const WorkerResult* result = work && work->result ? &*work->result : nullptr;
    const auto [matmul, training] = gpu_not_run(options, d, report, blocker, result);
    fill_precisions(d, support, work, matmul, training);
    if (work) d.soak = soak_report(options, work->plan, result, interrupted);
    if (d.soak) add_telemetry(*d.soak, gpu.uuid, results);
    if (result != nullptr) d.engine_rerun = result->rerun;
    report.devices.push_back(std::move(d));
  }
}

void add_cpu_device(Report& report, const Options& options, const CpuInfo& cpu,
                    const StartPlan& start, const RunResults& results) {
  const std::string& blocker = start.stack.kernel_blocker;
  const std::optional<WorkerRun> work = cpu_work(results);
  DeviceReport d;
  d.kind = DeviceKind::cpu;
  d.name = cpu.model;
  d.selected = options.devices.cpu;
  d.cpu = cpu;
  NotRun why = skipped(options, true);
  if (!blocker.empty() && !options.quick) why = {blocker, NotRun::Kind::unavailable};
  if (!start.cpu_left_out.empty() && blocker.empty()) why.reason = start.cpu_left_out;
  const WorkerResult* result = work && work->result ? &*work->result : nullptr;
  if (result != nullptr && result->problem == ErrorKind::not_run) {
    why.reason = result->problem_message;
  }
  fill_precisions(
      d, [&cpu](Mode m) { return cpu_hardware_support(cpu, m); }, work, why,
      training_not_run(options, why));
  if (work) d.soak = soak_report(options, work->plan, result, !results.interrupted.empty());
  if (result != nullptr) d.engine_rerun = result->rerun;
  report.devices.push_back(std::move(d));
}

// Every all-reduce the check runs, over every GPU taking part, or it did not pass.
void judge_all_reduce(CollectivesReport& c, const WorkerResult& worker, std::size_t gpus) {
  if (worker.problem != ErrorKind::none && worker.collectives.size() < kAllReduceDTypes.size()) {
    c.status = worker.problem == ErrorKind::not_run ? Status::not_tested
                                                    : status_of_broken_check(worker.problem);
    c.failure = worker.problem;
    c.reason = worker.problem_message;
    return;
  }
  if (const std::string missing = collectives_problem(c.all_reduce, static_cast<int>(gpus));
      !missing.empty()) {
    c.status = Status::failed;
    c.failure = ErrorKind::wrong_result;
    c.reason = missing;
    return;
  }
  c.status = Status::native;
  for (const CollectiveOutcome& a : c.all_reduce) {
    if (a.ok) continue;
    c.status = a.error_kind == ErrorKind::not_supported ? Status::unsupported
                                                        : status_of_broken_check(a.error_kind);
    c.failure = a.error_kind == ErrorKind::not_supported ? ErrorKind::environment : a.error_kind;
    c.reason = std::string(to_string(a.dtype)) + " all-reduce: " + a.error;
    break;
  }
}

// A one-rank all-reduce moves no data: NCCL returns from it in place in about a microsecond, so
// its "bandwidth" (bytes over that time) says nothing of a link and is left out; its time stays.
void drop_one_rank_bandwidths(CollectivesReport& c) {
  for (CollectiveOutcome& a : c.all_reduce) {
    if (a.ranks != 1) continue;
    a.algbw_gbps.reset();
    a.busbw_gbps.reset();
  }
}

// The collectives section: present with --nccl, or whenever two or more GPUs can be asked about
// peer access.
std::optional<CollectivesReport> collectives_report(const Options& o, const GpuFacts& facts,
                                                    const std::vector<int>& gpus,
                                                    const std::optional<WorkerRun>& worker) {
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
  if (!worker || !worker->result) return c;
  c.nccl_version = worker->result->nccl_version;
  c.all_reduce = worker->result->collectives;
  judge_all_reduce(c, *worker->result, gpus.size());
  drop_one_rank_bandwidths(c);
  return c;
}

// Whether a worker was asked to inject PRECISION_PROBE_INJECT_FAULT's fault.
bool injection_planned(const RunResults& results) {
  const auto planned = [](const std::optional<WorkerRun>& w) {
    return w && w->plan.inject_iteration > 0;
  };
  return planned(results.cpu) ||
         std::any_of(results.gpus.begin(), results.gpus.end(),
                     [](const WorkerRun& w) { return w.plan.inject_iteration > 0; });
}

}  // namespace

Report assemble(const Options& options, const StartFacts& facts, const DriverAnswers& driver,
                const StartPlan& start, const GpuPlan& gpus, const RunResults& results) {
  Report report = report_header(options, facts, start.seed);
  report.run.unavailable_selection = gpus.unavailable_selection;
  report.run.interrupted = results.interrupted;
  const GpuFacts seen = gpus_to_report(driver, facts.machine);
  report.driver = seen.driver;
  report.stack = stack_from(start.stack.stack, results.cpu, results.gpus);
  add_gpu_devices(report, options, seen, start.stack.gpu_blocker, results);
  add_cpu_device(report, options, facts.machine.cpu, start, results);
  note_unplaced_injection(report.devices, start.inject, injection_planned(results));
  report.collectives = collectives_report(options, seen, gpus.collective_on, results.collective);
  return report;
}

void judge(Report& report, const Options& options, const DiagnosticFacts& facts) {
  judge_soak(report);
  report.requirements = evaluate_requirements(report, options.require, options.quick);
  report.diagnostics = diagnose(report, facts);
  const ExitDecision exit = decide_exit(report);
  report.exit_code = exit.code;
  report.exit_reason = exit.reason;
  make_printable(report);
}

}  // namespace precision_probe
