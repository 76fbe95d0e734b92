#include "probe/run/execute.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <thread>

#include "trace/trace.hpp"
#include "process/process.hpp"

namespace precision_probe {

Execution::Execution(Engine& engine, DriverApi& driver, const Options& options,
                     const RunClock& clock)
    : engine_(engine),
      driver_(driver),
      timeout_s_(options.timeout_s),
      check_timeout_s_(options.check_timeout_s),
      clock_(clock) {}

Execution::~Execution() {
  // Left early (an exception): the threads end before what they use does.
  cancelled_ = true;
  release_cpu_thread();
  cpu_checks_.join();
  cuda_query_.join();
}

void Execution::cpu_done_then_wait() {
  std::unique_lock<std::mutex> lock(cpu_mutex_);
  cpu_done_ = true;
  cpu_changed_.notify_all();
  cpu_changed_.wait(lock, [this] { return engine_done_; });
}

void Execution::wait_for_cpu() {
  std::unique_lock<std::mutex> lock(cpu_mutex_);
  cpu_changed_.wait(lock, [this] { return cpu_done_ || !cpu_; });
}

void Execution::release_cpu_thread() {
  const std::lock_guard<std::mutex> lock(cpu_mutex_);
  engine_done_ = true;
  cpu_changed_.notify_all();
}

// The engine's limits for what is left of the run's budget.
Limits Execution::limits() const {
  Limits limits;
  limits.total = std::max(clock_.left(), std::chrono::milliseconds(1));
  limits.timeout_s = timeout_s_;
  limits.per_check = std::chrono::milliseconds(static_cast<long long>(check_timeout_s_ * 1000.0));
  const std::atomic<bool>* flag = &cancelled_;
  limits.stop = [flag] { return interrupt_requested() || flag->load(); };
  return limits;
}

// Runs the workers together; each gets its result.
void Execution::run_workers(const std::vector<WorkerRun*>& runs) {
  if (runs.empty()) return;
  std::vector<WorkerPlan> plans;
  plans.reserve(runs.size());
  for (const WorkerRun* w : runs) plans.push_back(w->plan);
  std::vector<WorkerResult> results = engine_.run(plans, limits());
  for (std::size_t i = 0; i < runs.size() && i < results.size(); ++i) {
    runs[i]->result = std::move(results[i]);
  }
}

void Execution::start(const StartPlan& plan) {
  if (!plan.stack.libtorch_dir.empty()) engine_.use_libtorch(plan.stack.libtorch_dir);
  if (plan.prestart) engine_.prestart(*plan.prestart);
  if (!plan.cpu) return;
  cpu_ = WorkerRun{*plan.cpu, std::nullopt};
  // Where no thread can be started, the CPU's checks run now, before the driver is asked (on this
  // thread, which outlives the engine's workers anyway).
  const bool on_a_thread = static_cast<bool>(cpu_checks_.start([this] {
    std::exception_ptr error;  // passed on by cpu_checks_.wait(), once the thread may end
    try {
      run_workers({&*cpu_});
    } catch (...) {
      error = std::current_exception();
    }
    cpu_done_then_wait();
    if (error) std::rethrow_exception(error);
  }));
  if (!on_a_thread) {
    cpu_checks_.run_instead([this] { run_workers({&*cpu_}); });
    const std::lock_guard<std::mutex> lock(cpu_mutex_);
    cpu_done_ = true;
  }
}

void Execution::ask_cuda_alongside(const GpuPlan& gpus) {
  // A GPU's plan (GpuPlan::gpus holds nothing else) starts the engine's GPU session.
  const bool from_engine = !gpus.gpus.empty() && engine_.answers_cuda();
  // Where no thread can be started, the agent is asked now, on this thread (nothing reads the
  // session's lines while this thread waits).
  const bool on_a_thread = static_cast<bool>(cuda_query_.start([this, from_engine] {
    if (from_engine) {
      cuda_ = wait_for_engines_cuda();
      if (cuda_) {
        trace("cuInit answered by the engine's GPU session");
        return;
      }
      if (cancelled_) return;
      trace("the engine's GPU session did not answer for cuInit: the driver's agent is asked");
    }
    ask_agent_for_cuda();
  }));
  if (!on_a_thread) cuda_query_.run_instead([this] { ask_agent_for_cuda(); });
}

std::optional<CudaSnapshot> Execution::wait_for_engines_cuda() {
  const auto until = std::chrono::steady_clock::now() + kEngineCudaGrace;
  for (;;) {
    const bool last_look = gpus_done_ || cancelled_ || std::chrono::steady_clock::now() >= until;
    if (std::optional<CudaSnapshot> answer = engine_.cuda_answer()) return answer;
    if (last_look) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Execution::ask_agent_for_cuda() {
  cuda_ = driver_.query_cuda_within(clock_.left());
  trace("cuInit done (the driver's agent)");
}

void Execution::cancel() {
  cancelled_ = true;
  wait_for_cpu();
  engine_.finish();
  release_cpu_thread();
  cpu_checks_.join();
}

RunResults Execution::finish(const StartPlan& start, const GpuPlan& gpus) {
  RunResults r;
  Expected<std::unique_ptr<TelemetryRecording>> telemetry =
      Unexpected{"NVML telemetry is not offered here"};
  if (gpus.telemetry) telemetry = driver_.record_telemetry();
  // Every GPU at once, and the collective with them unless measurements run alone.
  for (const WorkerPlan& p : gpus.gpus) r.gpus.push_back({p, std::nullopt});
  if (gpus.collective) r.collective = WorkerRun{*gpus.collective, std::nullopt};
  std::vector<WorkerRun*> together;
  together.reserve(r.gpus.size() + 1);
  for (WorkerRun& w : r.gpus) together.push_back(&w);
  if (r.collective && !gpus.collective_alone) together.push_back(&*r.collective);
  run_workers(together);
  gpus_done_ = true;  // the session's answer, sent before its plans' lines, is in by now
  if (telemetry) {
    r.telemetry = (*telemetry)->stop();
  } else {
    r.telemetry_note = telemetry.error();
  }
  engine_.stop_spares();
  wait_for_cpu();
  r.cpu = cpu_;
  // The measurements that run alone: the CPU's benchmark, then the collective's bandwidth.
  if (start.cpu_bench && r.cpu) {
    r.cpu_bench = WorkerRun{*start.cpu_bench, std::nullopt};
    run_workers({&*r.cpu_bench});
  }
  if (r.collective && gpus.collective_alone) run_workers({&*r.collective});
  engine_.finish();
  release_cpu_thread();
  cpu_checks_.wait();
  trace("workers finished");
  cuda_query_.wait();
  if (cuda_) {
    r.cuda = std::move(cuda_);
    trace("cuInit answered");
  }
  if (interrupt_requested()) r.interrupted = signal_name(interrupt_signal());
  return r;
}

}  // namespace precision_probe
