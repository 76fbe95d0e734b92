#include "probe/run/probe.hpp"

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "process/process.hpp"
#include "probe/run/execute.hpp"
#include "probe/run/plan.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/verdicts/gate.hpp"

namespace precision_probe {

namespace {

DiagnosticFacts diagnostic_facts(const Options& o, const StartFacts& facts,
                                 const DriverAnswers& driver) {
  const bool gpus_named = !o.devices.gpu_indices.empty();
  const bool gpu_wanted = (!o.require.empty() && (o.devices.all_gpus || gpus_named)) || gpus_named;
  return {facts.machine,
          driver.nvml,
          driver.cuda,
          visible_devices(facts.machine),
          facts.engine_installed,
          gpu_wanted,
          o.quick ? "" : facts.engine_missing};
}

}  // namespace

Report run_probe(const Options& options, ProbeDeps deps, const RunClock& clock) {
  // Facts: what the start needs (the machine, the image's PyTorch, the engine); then its plan.
  const StartFacts facts = read_start_facts(deps.system, deps.engine, deps.find_torch);
  const Expected<StartPlan> start = plan_start(options, facts);
  if (!start) return usage_error_report(start.error(), facts.machine.host);

  // Workers started ahead (loading LibTorch is the longest wait) and the CPU's checks begun
  // before the driver is asked; the GPUs' plans once it has answered.
  Execution execution(deps.engine, deps.driver, options, clock);
  execution.start(*start);
  DriverAnswers driver = ask_driver(options, deps.driver, deps.system, facts.machine);
  driver.gpu_copies = start->gpu_copies;
  const GpuFacts seen = gpus_to_plan(driver, facts.machine);
  if (const Expected<void> selected = check_selection(options, seen); !selected) {
    execution.cancel();
    return usage_error_report(selected.error(), facts.machine.host);
  }
  const GpuPlan gpus = plan_gpus(options, seen, *start);
  if (driver.cuda_alongside) execution.ask_cuda_alongside(gpus);
  RunResults results = execution.finish(*start, gpus);
  if (results.cuda) driver.cuda = std::move(results.cuda);

  // The report, then its verdicts.
  Report report = assemble(options, facts, driver, *start, gpus, results);
  judge(report, options, diagnostic_facts(options, facts, driver));
  report.duration_ms = clock.elapsed_ms();
  return report;
}

Report run_probe(const Options& options, ProbeDeps deps) {
  return run_probe(options, std::move(deps), RunClock::start(options));
}

namespace {

DeviceReport arch_device(const ComputeCapability& cc, const StackInfo& stack) {
  DeviceReport d;
  d.kind = DeviceKind::cuda;
  d.name = fmt::format("compute capability {} ({})", cc.to_string(), architecture_name(cc));
  GpuInfo gpu;
  gpu.cc = cc;
  gpu.source = "arch";
  d.gpu = gpu;
  if (!stack.available) return d;
  if (!stack.cuda_built) {
    // A CUDA build without its library (missing, or a FIFO refused) says which: arch_note.
    d.kernels = KernelCoverage{
        false, "",
        !stack.cuda_version ? "this LibTorch build has no CUDA support at all" : stack.arch_note};
  } else {
    d.kernels = kernel_coverage(cc, parse_arch_list(join(stack.arch_list, " ")));
  }
  return d;
}

}  // namespace

Report run_arch(const Options& options, const ProbeDeps& deps, const RunClock& clock) {
  Report report;
  const RunStamp stamp = stamp_now();
  report.started_at = stamp.started_at;
  report.report_id = stamp.report_id;
  report.tool = this_tool();
  report.host = collect_host(deps.system);
  report.run.command = Command::arch;
  // In an image with a PyTorch of its own, "would this image run there?" is asked of that one.
  report.image_stack = deps.find_torch(deps.system);
  if (const std::string bad = bad_torch_dir(report.image_stack); !bad.empty()) {
    return usage_error_report(bad, report.host);
  }
  report.stack = stack_or_none(report.image_stack, torch_not_looked_for(deps.system));
  if (interrupt_requested()) report.run.interrupted = signal_name(interrupt_signal());
  const ComputeCapability cc =
      ComputeCapability::parse(options.arch_cc).value_or(ComputeCapability{});
  DeviceReport d = arch_device(cc, report.stack);
  // Gated when asked: a requirement is met by native hardware that this build's stack can run.
  d.selected = !options.require.empty();
  NotRun why{"offline (arch): no kernels run", NotRun::Kind::skipped};
  // The image's own stack needs no engine to be answered for.
  const std::string blocker = cuda_blocker(report.stack);
  const std::string blocked = !blocker.empty() ? blocker : stack_says_against(d, report.stack);
  if (!blocked.empty() && d.selected) why = {blocked, NotRun::Kind::unavailable};
  const bool stack_layer = blocked.empty();
  fill_precisions(
      d,
      [cc, &report, stack_layer](Mode m) {
        return stack_layer ? gpu_support(cc, m, report.stack) : gpu_hardware_support(cc, m);
      },
      std::nullopt, why, why);
  report.devices.push_back(std::move(d));
  for (Mode m : options.require) report.run.required.emplace_back(mode_key(m));
  report.requirements = evaluate_requirements(report, options.require, true);
  const ExitDecision exit = decide_exit(report);
  report.exit_code = exit.code;
  report.exit_reason =
      exit.code == exit_code::kOk && options.require.empty() ? "arch report" : exit.reason;
  report.duration_ms = clock.elapsed_ms();
  make_printable(report);
  return report;
}

Report run_arch(const Options& options, const ProbeDeps& deps) {
  return run_arch(options, deps, RunClock::start(options));
}

}  // namespace precision_probe
