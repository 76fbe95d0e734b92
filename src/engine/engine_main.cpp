// precision-probe-engine: the worker. `--worker` reads a plan (one JSON document) on stdin and
// answers in JSON lines on stdout, one line per finished check, flushed at once, so a worker that
// hangs or dies leaves every finished result behind. `--describe` prints the LibTorch stack.

#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>

#include "engine/engine.hpp"
#include "engine/error_text.hpp"
#include "common/protocol.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;

namespace {

void emit(const std::string& line) { std::cout << line << '\n' << std::flush; }

// Everything is said and flushed: leave without tearing down LibTorch and the CUDA context (tens
// of milliseconds the probe would wait for); the driver cleans up after the process.
[[noreturn]] void leave() {
  emit(pp::encode_done());
  pp::trace("done");
  std::cout.flush();
  std::_Exit(0);
}

// The worker may have been started before its GPU was known: narrow the GPUs CUDA will see now,
// before anything initialises CUDA (LibTorch does so lazily, on first use). A CPU worker sees
// none.
void see_only_the_plans_gpus(const pp::WorkerPlan& plan) {
  if (plan.kind == pp::DeviceKind::cpu) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): no other thread of the worker runs yet
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  } else if (!plan.cuda_visible_devices.empty()) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): no other thread of the worker runs yet
    ::setenv("CUDA_VISIBLE_DEVICES", plan.cuda_visible_devices.c_str(), 1);
  }
}

[[noreturn]] void run_collective(const pp::WorkerPlan& plan) {
  emit(pp::encode_hello(eng::describe_stack(false)));
  std::string version;
  for (const pp::CollectiveOutcome& o :
       eng::run_collectives(plan.collective_ranks, 256LL << 20U, version)) {
    emit(pp::encode_collective(o, version));
  }
  leave();
}

// What the checks need before the first one runs: the device ready, the inputs and references
// drawn, every kernel loaded, the training data on the device.
struct Prepared {
  std::vector<eng::PreparedSmoke> smoke;
  eng::AmpSetup amp;
};

Prepared prepare(const pp::WorkerPlan& plan, const eng::Target& target) {
  // The CUDA context and cuBLAS start in the background while the CPU prepares the inputs.
  std::thread warm([&target] {
    try {
      eng::warm_up(target);
    } catch (const std::exception& e) {
      // The checks meet the same error and report it; this only notes where it began.
      std::cerr << "precision-probe-engine: warm-up: " << eng::error_text(e) << '\n';
    }
  });
  emit(pp::encode_hello(eng::describe_stack(plan.describe)));
  pp::trace("hello sent");
  Prepared prepared;
  std::uint64_t salt = 0;
  for (pp::Mode mode : plan.smoke) {
    prepared.smoke.push_back(eng::prepare_smoke(mode, target, plan.seed * 1000003ULL + ++salt));
  }
  pp::trace("inputs and references prepared");
  warm.join();
  try {
    if (eng::unusable_reason(target).empty()) {
      emit(pp::encode_device(eng::device_name(target), eng::device_uuid(target)));
    }
  } catch (const std::exception& e) {
    std::cerr << "precision-probe-engine: " << eng::error_text(e) << '\n';
  }
  // Every kernel the checks will use, loaded at once (GPUs only), and alongside, the training
  // data drawn on the CPU and copied to the device.
  std::vector<eng::Preload> preloads = eng::smoke_preloads(prepared.smoke, target);
  for (eng::Preload& p : eng::amp_preloads(plan.amp, target)) preloads.push_back(std::move(p));
  if (!plan.amp.empty()) {
    preloads.emplace_back(
        [&] { prepared.amp = eng::prepare_amp(target, plan.seed * 1000003ULL + 1000); });
  }
  eng::run_preloads(preloads);
  pp::trace("kernels preloaded");
  return prepared;
}

// The smoke tests and the training runs; the modes whose smoke test passed (worth benchmarking).
std::vector<pp::Mode> run_checks(const pp::WorkerPlan& plan, Prepared& prepared,
                                 const eng::Target& target) {
  // The training runs go in a thread of their own (and threads of theirs), alongside the smoke
  // tests (autocast state is per thread). Only tf32, which changes the process-wide float32
  // matmul precision, waits for them: their fp32 references must run without TF32.
  std::vector<std::pair<pp::Mode, pp::AmpOutcome>> amp_results;
  std::thread amp_thread;
  if (!plan.amp.empty()) {
    amp_thread = std::thread([&] {
      amp_results = eng::run_amp(plan.amp, prepared.amp, target);
      pp::trace("training runs done");
    });
  }
  std::vector<pp::Mode> passed;
  auto run_smoke = [&](const eng::PreparedSmoke& p) {
    const pp::SmokeOutcome outcome = eng::execute_smoke(p, target);
    if (outcome.ok) passed.push_back(p.mode);
    emit(pp::encode_smoke(p.mode, outcome));
    pp::trace(pp::mode_key(p.mode));
  };
  for (const eng::PreparedSmoke& p : prepared.smoke) {
    if (p.mode != pp::Mode::tf32) run_smoke(p);
  }
  if (amp_thread.joinable()) amp_thread.join();
  for (const eng::PreparedSmoke& p : prepared.smoke) {
    if (p.mode == pp::Mode::tf32) run_smoke(p);
  }
  for (auto& [mode, outcome] : amp_results) {
    eng::measure_amp_memory(mode, outcome, prepared.amp, target);
    emit(pp::encode_amp(mode, outcome));
  }
  pp::trace("memory measured");
  return passed;
}

// Every precision that passed, right after warm-up first, then each under continuous load: the
// loads of the second kind would leave the GPU power-limited at the start of the next first kind.
void run_benches(const pp::WorkerPlan& plan, const std::vector<pp::Mode>& passed,
                 const eng::Target& target) {
  std::vector<std::pair<pp::Mode, pp::BenchOutcome>> bench;
  auto seed_of = [&plan](pp::Mode mode) {
    return plan.seed * 1000003ULL + 2000 + static_cast<int>(mode);
  };
  for (pp::Mode mode : plan.smoke) {
    if (std::find(passed.begin(), passed.end(), mode) == passed.end()) continue;
    bench.emplace_back(mode, eng::run_bench(mode, target, plan.bench_size, seed_of(mode)));
    emit(pp::encode_progress(std::string("bench ") + std::string(pp::mode_key(mode))));
    pp::trace(std::string("bench ") + std::string(pp::mode_key(mode)));
  }
  for (auto& [mode, outcome] : bench) {
    eng::measure_sustained(mode, target, seed_of(mode), outcome);
    emit(pp::encode_bench(mode, outcome));
    pp::trace(std::string("bench sustained ") + std::string(pp::mode_key(mode)));
  }
}

// --soak: the planned modes whose smoke test passed (a mode that failed it was not soaked: the
// report says so).
void run_soak_phase(const pp::WorkerPlan& plan, const std::vector<pp::Mode>& passed,
                    const eng::Target& target) {
  std::vector<pp::Mode> modes;
  for (pp::Mode mode : plan.soak_modes) {
    if (std::find(passed.begin(), passed.end(), mode) != passed.end()) modes.push_back(mode);
  }
  eng::run_soak(plan, modes, target, [](pp::Mode mode, const pp::SoakOutcome& outcome) {
    emit(pp::encode_soak(mode, outcome));
    pp::trace(std::string("soak ") + std::string(pp::mode_key(mode)));
  });
}

int run_worker() {
  pp::trace("main");
  const std::string input{std::istreambuf_iterator<char>(std::cin),
                          std::istreambuf_iterator<char>()};
  // Started ahead by a probe that then needed no worker of this kind: stdin closed unused.
  if (input.find_first_not_of(" \t\r\n") == std::string::npos) return 0;
  const pp::Expected<pp::WorkerPlan> decoded = pp::decode_plan(input);
  if (!decoded) {
    std::cerr << "precision-probe-engine: error: " << decoded.error() << '\n';
    return 2;
  }
  const pp::WorkerPlan& plan = *decoded;
  see_only_the_plans_gpus(plan);
  if (plan.collective_ranks > 0) run_collective(plan);
  eng::Target target;
  if (plan.kind == pp::DeviceKind::cuda) {
    target.cuda = true;
    target.device = at::Device(at::kCUDA, 0);  // the worker sees exactly one GPU
  }
  // One intra-op thread unless the CPU is benchmarked. A GPU worker's CPU side is small (inputs,
  // references): a thread pool per core costs more to start than the work. A CPU worker's checks
  // are small and its training runs go four at once: one thread each keeps it off the cores the
  // GPU workers' launching threads need.
  if (target.cuda || plan.bench_size == 0) at::set_num_threads(1);
  Prepared prepared = prepare(plan, target);
  const std::vector<pp::Mode> passed = run_checks(plan, prepared, target);
  if (plan.bench_size > 0) run_benches(plan, passed, target);
  if (plan.soak_seconds > 0.0) run_soak_phase(plan, passed, target);
  leave();
}

}  // namespace

// A worker (or a --describe) never outlives the probe that started it, even one killed with
// SIGKILL: the kernel kills the worker when the probe's thread that started it ends. A probe
// already gone (between the start and this line) ends the worker at once.
static void end_with_the_probe() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before any thread of the worker's own starts
  const char* parent = std::getenv("PRECISION_PROBE_PARENT");
  if (parent != nullptr && std::to_string(::getppid()) != parent) std::_Exit(1);
}

int main(int argc, char** argv) {
  const std::string verb = argc > 1 ? argv[1] : "";
  if (verb == "--worker" || verb == "--describe") end_with_the_probe();
  try {
    if (verb == "--worker" && argc == 2) return run_worker();
    if (verb == "--describe" && argc == 2) {
      std::cout << pp::encode_stack(eng::describe_stack(true)) << '\n';
      return 0;
    }
    if (verb == "--version" && argc == 2) {
      std::cout << "precision-probe-engine (LibTorch " << TORCH_VERSION << ")\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "precision-probe-engine: error: " << eng::error_text(e) << '\n';
    return 4;
  }
  std::cerr << "usage: precision-probe-engine --worker | --describe | --version\n"
               "(started by precision-probe; not meant to be run by hand)\n";
  return 2;
}
