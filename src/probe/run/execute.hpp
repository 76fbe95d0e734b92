#pragma once
// The run's third phase, and the only place of the run with threads: the plans (plan.hpp) handed
// to the engine's workers within the run's one budget (clock.hpp), and what they answered, each
// answer beside its plan. The CPU's checks begin as soon as the start's plan is there, on a
// thread of their own while the driver is asked; the GPUs' workers, cuInit where it is asked
// alongside, and the soak's telemetry run together; the measurements that must run alone come
// last. Where no thread can be started, what would have run on one runs on this thread in its
// turn: the run takes longer and reports the same.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "threads/threads.hpp"
#include "wire/worker.hpp"
#include "probe/driver/driver.hpp"
#include "probe/driver/telemetry.hpp"
#include "probe/run/clock.hpp"
#include "probe/run/engine_client.hpp"
#include "probe/run/plan.hpp"

namespace precision_probe {

// One worker of the run: its plan and, once run, its answer.
struct WorkerRun {
  WorkerPlan plan;
  std::optional<WorkerResult> result;
};

// What the workers answered, and what was seen while they ran.
struct RunResults {
  std::optional<WorkerRun> cpu;
  std::optional<WorkerRun> cpu_bench;  // the CPU's benchmark, run alone
  std::vector<WorkerRun> gpus;         // as GpuPlan::gpus
  std::optional<WorkerRun> collective;
  std::vector<TelemetrySample> telemetry;  // the soak's, NVML's samples
  std::string telemetry_note;              // why there are none
  std::optional<CudaSnapshot> cuda;        // cuInit's answer, where it was asked alongside
  std::string interrupted;                 // the signal that interrupted the run ("" when none)
};

// How long the engine's GPU session may take to send cuInit's answer, from the GPUs' plans,
// before the driver's agent is asked: its cuInit answered within 0.25 s of the session's start on
// one CPU's quota (performance.md); a driver starting its GPUs without persistence mode may take
// 1-3 s a GPU, and is asked twice then, as before the session answered.
inline constexpr std::chrono::milliseconds kEngineCudaGrace{2000};

class Execution {
 public:
  Execution(Engine& engine, DriverApi& driver, const Options& options, const RunClock& clock);
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;
  ~Execution();  // what still runs is told to stop, and waited for

  // The start: the image's LibTorch named to the engine, the workers started ahead, the CPU's
  // checks begun.
  void start(const StartPlan& plan);
  // cuInit's answer while the GPUs' workers run: from the engine's GPU session where `gpus` starts
  // one that answers (engine_client.hpp), else from the driver's agent, beside the workers. Where
  // the session has not answered within kEngineCudaGrace (its cuInit hangs or is slow, it broke
  // first), or by the end of the GPUs' plans, the agent is asked then, on the same thread: a hung
  // driver is told by the agent's own limit, as where no session runs.
  void ask_cuda_alongside(const GpuPlan& gpus);
  // The rest of the run: the GPUs' workers and the collective, the CPU's checks joined, the
  // measurements that run alone; then what every worker answered.
  RunResults finish(const StartPlan& start, const GpuPlan& gpus);
  // The run is given up (bad input found once the driver answered): the CPU's checks are stopped
  // and the workers started ahead with them.
  void cancel();

 private:
  Limits limits() const;
  void run_workers(const std::vector<WorkerRun*>& runs);
  // The CPU's thread, its checks done, waits for the engine's end before it ends: a worker it
  // started (an engine session, one run again in isolation) ends with the thread that started it
  // (PR_SET_PDEATHSIG follows the thread).
  void cpu_done_then_wait();
  void wait_for_cpu();
  void release_cpu_thread();

  Engine& engine_;
  DriverApi& driver_;
  double timeout_s_;
  double check_timeout_s_;
  RunClock clock_;
  std::atomic<bool> cancelled_{false};
  std::optional<WorkerRun> cpu_;
  // The GPU session's cuInit answer, waited for up to kEngineCudaGrace, and no longer once the
  // GPUs' plans are done or the run is given up; none where it did not come.
  std::optional<CudaSnapshot> wait_for_engines_cuda();
  // cuInit asked of the driver's agent, within what is left of the run.
  void ask_agent_for_cuda();
  std::optional<CudaSnapshot> cuda_;    // cuInit's answer, once cuda_query_ is done
  std::atomic<bool> gpus_done_{false};  // the GPUs' plans (and the collective with them) are done
  std::mutex cpu_mutex_;
  std::condition_variable cpu_changed_;
  bool cpu_done_ = false;     // the CPU's checks answered (cpu_ holds them)
  bool engine_done_ = false;  // the engine's workers are ended: the CPU's thread may end
  // The run's threads (threads/threads.hpp), each joined by the destructor at the latest.
  Threads cpu_checks_;
  Threads cuda_query_;
};

}  // namespace precision_probe
