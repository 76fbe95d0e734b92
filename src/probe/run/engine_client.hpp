#pragma once
// The kernel engine, seen from the probe: a worker process per device loads the image's LibTorch,
// runs its checks and answers in JSON lines (protocol.hpp). Behind an interface so tests can use
// a fake engine.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wire/cuda_snapshot.hpp"
#include "wire/worker.hpp"
#include "precision_probe/expected.hpp"

namespace precision_probe {

class System;

// How long workers may take: all of them together, and any one check (a worker that says
// nothing for that long is stopped: a hung kernel cannot be cancelled from inside its process).
struct Limits {
  std::chrono::milliseconds total{60000};  // what is left of the run's time
  std::chrono::milliseconds per_check{45000};
  double timeout_s = 60.0;  // --timeout as given, for messages
  // Asked often: true when the workers are to stop now (an interrupt, a run given up). None: they
  // stop only at the limits.
  std::function<bool()> stop;
};

// Workers worth starting before their plans are known: one for the CPU, `gpus` for GPUs.
struct Prestart {
  bool cpu = false;
  int gpus = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Starts workers ahead of run() so that their LibTorch load overlaps the driver queries; run()
  // hands its plans to them, kind by kind, and stops those left over. Optional: an engine that
  // ignores it starts every worker in run().
  virtual void prestart(const Prestart& /*what*/) {}
  // Runs every plan, in parallel, within `limits`; one result per plan, in the same order. Two
  // calls may run at once (the CPU's checks start before the GPUs are known).
  virtual std::vector<WorkerResult> run(const std::vector<WorkerPlan>& plans, Limits limits) = 0;
  // Stops the workers started ahead that no plan took.
  virtual void stop_spares() {}
  // The run has no more plans: every worker still there is ended.
  virtual void finish() {}
  // Whether a GPU's plan starts a session that sends cuInit's answer (protocol.hpp): the driver's
  // agent need not be asked where one does.
  virtual bool answers_cuda() const { return false; }
  // cuInit's answer as the shared GPU session sent it (the probe's CUDA_VISIBLE_DEVICES), once its
  // driver had started; nullopt where no such session sent one (none ran, its cuInit failed, hung
  // or crashed before).
  virtual std::optional<CudaSnapshot> cuda_answer() { return std::nullopt; }
  // Whether there is an engine to run at all.
  virtual bool installed() const { return true; }
  // Why there is none, with what to do (installed() false): the probe's messages say it.
  virtual std::string not_installed_reason() const {
    return "the kernel engine (precision-probe-engine) is not installed next to the probe, so no "
           "kernel ran; install the whole package (bin/ and libexec/), or set "
           "PRECISION_PROBE_ENGINE";
  }
  // The directory of the image's LibTorch (its libtorch_cpu.so and libtorch_cuda.so), which the
  // workers load: call it before prestart() and run(). Without it no worker can run.
  virtual void use_libtorch(const std::string& /*lib_dir*/) {}
};

// The real engine: spawns the precision-probe-engine executable. It is looked for in
// $PRECISION_PROBE_ENGINE, next to `self_exe`, then in ../libexec/precision-probe/.
std::unique_ptr<Engine> make_process_engine(const System& system, const std::string& self_exe);

// Where the engine executable is, or why it is not there.
Expected<std::string> find_engine_executable(const System& system, const std::string& self_exe);

}  // namespace precision_probe
