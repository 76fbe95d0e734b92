#include "engine/worker.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/arch.hpp"
#include "common/protocol.hpp"
#include "common/strings.hpp"
#include "common/threads.hpp"
#include "common/trace.hpp"
#include "engine/checks/checks.hpp"
#include "engine/torch/stderr_log.hpp"

namespace precision_probe::engine {

namespace {

void emit(const std::string& line) { std::cout << line << '\n' << std::flush; }

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// One line of stdin (the plan, or "go"); nullopt at its end.
std::optional<std::string> read_line() {
  std::string line;
  if (!std::getline(std::cin, line)) return std::nullopt;
  return line;
}

// The worker may have been started before its GPU was known: it narrows the GPUs CUDA will see
// now, before anything initialises CUDA or starts a thread (setenv is not safe beside getenv). A
// CPU worker sees none.
void see_only_the_plans_gpus(const WorkerPlan& plan) {
  if (plan.kind == DeviceKind::cpu) {
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);  // NOLINT(concurrency-mt-unsafe): no other thread
  } else if (!plan.cuda_visible_devices.empty()) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): no other thread of the worker runs yet
    ::setenv("CUDA_VISIBLE_DEVICES", plan.cuda_visible_devices.c_str(), 1);
  }
}

// The file at `path` if it is a regular one, read without blocking on a FIFO; "" otherwise.
std::string read_regular_file(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) <= limit) {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    text.resize(done);
  }
  ::close(fd);
  return text;
}

// The image's native_functions.yaml beside its torch package (a wheel ships it under torchgen/;
// a LibTorch archive does not): every operator's schema compared with the engine's.
void check_schemas(Torch& torch) {
  const std::string lib = directory_of(torch.path());
  const std::string site = directory_of(directory_of(lib));
  const std::string yaml = read_regular_file(
      site + "/torchgen/packaged/ATen/native/native_functions.yaml", std::size_t{64} << 20U);
  if (yaml.empty()) return;
  const auto problems = compare_schemas(yaml);
  torch.set_schema_problems(std::vector<std::string>(problems.begin(), problems.end()));
}

std::string format_cudnn_version(long version) {
  if (version <= 0) return "";
  if (version >= 90000) {
    return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
  }
  return fmt::format("{}.{}.{}", version / 1000, version % 1000 / 100, version % 100);
}

// The stack the kernels run on: the library loaded, its release, and the CUDA runtime and cuDNN
// it loaded (asked through their own C functions).
StackInfo stack_of(const Torch& torch) {
  StackInfo s;
  s.available = true;
  s.source = "engine";
  s.library = torch.path();
  s.abi_version = torch.release_text();
  s.libtorch_version = s.abi_version;
  s.cuda_built = torch.cuda();
  if (torch.untested()) {
    s.release_note = fmt::format(
        "untested release: newer than {}, the newest release the engine was tested with",
        kNewestTestedRelease.to_string());
  }
  if (auto* runtime = reinterpret_cast<int (*)(int*)>(torch.symbol("cudaRuntimeGetVersion"))) {
    int v = 0;
    if (runtime(&v) == 0 && v > 0) s.cuda_version = Version::from_cuda_number(v);
  }
  if (auto* cudnn = reinterpret_cast<std::size_t (*)()>(torch.symbol("cudnnGetVersion"))) {
    s.cudnn_version = format_cudnn_version(static_cast<long>(cudnn()));
  }
  std::uint32_t threads = 0;
  if (torch.features().num_threads && torch.c().torch_get_num_threads(&threads) == 0) {
    s.cpu_threads = static_cast<int>(threads);
  }
  return s;
}

// Every planned check answered as not run, with `why` (LibTorch or the GPU could not be had).
void answer_unavailable(const WorkerPlan& plan, const std::string& why) {
  for (Mode mode : plan.smoke) {
    SmokeOutcome o;
    o.tolerance = smoke_tolerance(mode);
    o.error_kind = ErrorKind::unavailable;
    o.error = why;
    emit(encode_smoke(mode, o));
  }
  for (Mode mode : plan.amp) {
    AmpOutcome o;
    o.loss_tolerance = amp_loss_tolerance(mode);
    o.error_kind = ErrorKind::unavailable;
    o.error = why;
    emit(encode_amp(mode, o));
  }
}

}  // namespace
}  // namespace precision_probe::engine

namespace precision_probe::engine {

namespace {

// What the worker loaded: the image's LibTorch and, on a GPU, the driver bound to its device.
struct Loaded {
  std::unique_ptr<Torch> torch;
  std::unique_ptr<CudaDriver> cuda;
  std::string error;  // why nothing can run
};

// What the checks need before the first one runs, drawn on the host while LibTorch loads.
struct Prepared {
  std::vector<PreparedSmoke> smoke;
  AmpSetup amp;
};

unsigned host_threads() { return std::max(1U, std::min(8U, std::thread::hardware_concurrency())); }

// How a worker starts (docs/engine.md, "How a worker starts"). The defaults are the fastest of
// those measured on the H200 (docs/performance.md); the variables choose another, for measuring:
// PRECISION_PROBE_ENGINE_START orders LibTorch's dlopen and the driver's start (..._START_TF32 in
// a TF32 process alone), ..._DLOPEN binds
// LibTorch's calls at their first call ("lazy") or at dlopen ("now"), ..._PRELOAD loads every
// check's kernels at once, each on a thread of its own, and starts each check as soon as its own
// are loaded ("overlap") or once all are ("first"), or lets each check load its own ("none").
enum class PreloadWay { overlap, first, none };

struct StartKnobs {
  // init-first | cuinit-beside | overlap | driver-first | libtorch-first
  std::string order = "init-first";
  Torch::Binding binding = Torch::Binding::lazy;
  PreloadWay preload = PreloadWay::overlap;
};

StartKnobs start_knobs(const WorkerPlan& plan) {
  StartKnobs k;
  k.order = env("PRECISION_PROBE_ENGINE_START").value_or(k.order);
  if (plan.tf32_process) k.order = env("PRECISION_PROBE_ENGINE_START_TF32").value_or(k.order);
  if (env("PRECISION_PROBE_ENGINE_DLOPEN").value_or("") == "now") k.binding = Torch::Binding::now;
  const std::string preload = env("PRECISION_PROBE_ENGINE_PRELOAD").value_or("");
  if (preload == "none") k.preload = PreloadWay::none;
  if (preload == "first") k.preload = PreloadWay::first;
  return k;
}

void load_torch(const WorkerArgs& args, Loaded& out, Torch::Binding binding) {
  Expected<std::unique_ptr<Torch>> torch =
      Torch::open(args.libtorch, args.kind == DeviceKind::cuda, binding);
  trace("LibTorch loaded");
  if (!torch) {
    out.error = torch.error();
    return;
  }
  out.torch = std::move(*torch);
  if (const auto as = env("PRECISION_PROBE_ENGINE_AS_RELEASE")) {
    if (const auto version = Version::parse(*as)) out.torch->behave_as(*version);
  }
  check_schemas(*out.torch);
}

// The driver's start in two steps: cuInit (which loads the driver's own libraries), then the
// GPU's primary context, bound where the first step succeeded.
Expected<std::unique_ptr<CudaDriver>> init_driver() {
  Expected<std::unique_ptr<CudaDriver>> driver = CudaDriver::open();
  trace("cuInit done");
  return driver;
}

// cuInit apart from libcuda's dlopen (CudaDriver::load).
Expected<void> start_driver_library(CudaDriver& driver) {
  Expected<void> started = driver.init();
  trace("cuInit done");
  return started;
}

Expected<void> bind_driver(Expected<std::unique_ptr<CudaDriver>> driver, Loaded& out) {
  if (!driver) return Unexpected{driver.error()};
  if (Expected<void> bound = (*driver)->bind(0); !bound) return bound;
  trace("primary context ready");
  out.cuda = std::move(*driver);
  return {};
}

// LibTorch loads, the driver starts and the host draws the inputs, at once or in the order
// StartKnobs says: "init-first" runs cuInit before LibTorch's dlopen (which holds the loader's lock
// that cuInit's own library loading waits for), then the primary context forms while LibTorch
// loads; "cuinit-beside" loads libcuda first, then runs cuInit and the context beside LibTorch's
// dlopen; "driver-first" and "libtorch-first" run the two one after the other.
Loaded load_and_prepare(const WorkerArgs& args, const WorkerPlan& plan, Prepared& prepared,
                        const StartKnobs& knobs) {
  Loaded loaded;
  Expected<void> driver_started;  // where the driver's start failed
  const bool gpu = args.kind == DeviceKind::cuda && plan.collective_ranks == 0;
  const std::string& order = knobs.order;
  auto start_torch = [&] { load_torch(args, loaded, knobs.binding); };
  auto start_driver = [&] {
    if (gpu) driver_started = bind_driver(init_driver(), loaded);
  };
  // init-first and cuinit-beside: the driver's first step here, the context to come.
  Expected<std::unique_ptr<CudaDriver>> initialised = Unexpected{"the driver was not started"};
  auto bind = [&] {
    if (gpu) driver_started = bind_driver(std::move(initialised), loaded);
  };
  Threads threads;
  if (order == "init-first") {
    if (gpu) initialised = init_driver();
    threads.start_or_run(start_torch);
    threads.start_or_run(bind);
  } else if (order == "cuinit-beside") {
    // libcuda's dlopen first (the loader's lock); cuInit and the context beside LibTorch's.
    if (gpu) initialised = CudaDriver::load();
    auto init_and_bind = [&] {
      if (!gpu) return;
      if (initialised) {
        if (Expected<void> started = start_driver_library(**initialised); !started) {
          initialised = Unexpected{started.error()};
        }
      }
      bind();
    };
    threads.start_or_run(start_torch);
    threads.start_or_run(init_and_bind);
  } else if (order == "driver-first") {
    start_driver();
    threads.start_or_run(start_torch);
  } else if (order == "libtorch-first") {
    threads.start_or_run([&] {
      start_torch();
      start_driver();
    });
  } else {
    threads.start_or_run(start_torch);
    threads.start_or_run(start_driver);
  }
  prepared.smoke = prepare_smoke(plan.smoke, gpu, plan.seed, host_threads());
  if (!plan.amp.empty()) prepared.amp = prepare_amp(gpu, plan.seed * 1000003ULL + 1000);
  trace("inputs and references prepared");
  threads.wait();
  if (loaded.error.empty() && !driver_started) loaded.error = driver_started.error();
  return loaded;
}

// Every check's kernels, loaded at once (PreloadWay): the smoke tests' first, one per test in
// their order, then the training steps'. Each check waits for its own (`overlap`) or for all
// (`first`) before it runs.
struct Preloading {
  std::optional<PreloadsUnderWay> under_way;
  std::size_t smoke = 0;  // preloads [0, smoke) are the smoke tests', the rest the training's
  std::size_t all = 0;
  bool each_its_own = false;

  void wait_smoke(std::size_t i) const {
    if (under_way && each_its_own && i < smoke) under_way->wait(i);
  }
  void wait_training() const {
    if (!under_way || !each_its_own) return;
    for (std::size_t i = smoke; i < all; ++i) under_way->wait(i);
  }
};

void start_preloads(const WorkerPlan& plan, const Prepared& prepared, const Target& target,
                    PreloadWay way, Preloading& out) {
  if (way == PreloadWay::none) return;
  std::vector<Preload> preloads = smoke_preloads(prepared.smoke, target);
  out.smoke = preloads.size();
  for (Preload& p : amp_preloads(plan.amp, prepared.amp, target)) preloads.push_back(std::move(p));
  out.all = preloads.size();
  if (way == PreloadWay::first) {
    run_preloads(preloads);
    trace("kernels preloaded");
    return;
  }
  out.each_its_own = true;
  out.under_way.emplace(std::move(preloads));
}

// The smoke tests and the training runs; the modes whose smoke test passed (worth measuring).
std::vector<Mode> run_checks(const WorkerPlan& plan, const Prepared& prepared, const Target& target,
                             PreloadWay way) {
  Preloading preloading;
  start_preloads(plan, prepared, target, way, preloading);
  // The training runs go on a thread of their own (and threads of theirs), beside the smoke tests.
  PerMode<AmpOutcome> amp;
  std::vector<Mode> passed;
  run_both(
      [&] {
        if (plan.amp.empty()) return;
        target.enter();
        preloading.wait_training();
        amp = run_amp(plan.amp, prepared.amp, target);
        trace("training runs done");
      },
      [&] {
        for (std::size_t i = 0; i < prepared.smoke.size(); ++i) {
          const PreparedSmoke& p = prepared.smoke[i];
          preloading.wait_smoke(i);
          const SmokeOutcome outcome = execute_smoke(p, target);
          if (outcome.ok) passed.push_back(p.mode);
          emit(encode_smoke(p.mode, outcome));
          trace(mode_key(p.mode));
        }
      });
  for (const auto& [mode, outcome] : amp) emit(encode_amp(mode, outcome));
  return passed;
}

// Every precision that passed, right after warm-up first, then each under continuous load: the
// loads of the second kind would leave the GPU power-limited at the start of the next first kind.
void run_benches(const WorkerPlan& plan, const std::vector<Mode>& passed, const Target& target) {
  PerMode<BenchOutcome> bench;
  for (Mode mode : plan.smoke) {
    if (std::find(passed.begin(), passed.end(), mode) == passed.end()) continue;
    bench.set(mode, run_bench(mode, target, plan.bench_size));
    emit(encode_progress(std::string("bench ") + std::string(mode_key(mode))));
    trace(std::string("bench ") + std::string(mode_key(mode)));
  }
  for (auto [mode, outcome] : bench) {
    measure_sustained(mode, target, outcome);
    emit(encode_bench(mode, outcome));
    trace(std::string("bench sustained ") + std::string(mode_key(mode)));
  }
}

void report_soak(Mode mode, const SoakOutcome& outcome) {
  emit(encode_soak(mode, outcome));
  trace(std::string("soak ") + std::string(mode_key(mode)));
}

// Benchmarks and the soak of the modes whose smoke test passed (a mode that failed it was not
// soaked: the report says so). A held worker computes its golden results first, then waits for
// the probe's "go" (or the end of stdin: nothing more to do).
void run_measurements(const WorkerPlan& plan, const std::vector<Mode>& passed,
                      const Target& target) {
  std::vector<Mode> soak_modes;
  for (Mode mode : plan.soak_modes) {
    if (std::find(passed.begin(), passed.end(), mode) != passed.end()) soak_modes.push_back(mode);
  }
  const bool soak = plan.soak_seconds > 0.0;
  std::shared_ptr<SoakState> state;
  if (soak && plan.hold) state = prepare_soak(plan, soak_modes, target, report_soak);
  if (plan.hold && (soak || plan.bench_size > 0)) {
    emit(encode_progress("holding"));
    const std::optional<std::string> go = read_line();
    if (!go || trim(*go) != "go") return;
  }
  if (plan.bench_size > 0) run_benches(plan, passed, target);
  if (soak && !state) state = prepare_soak(plan, soak_modes, target, report_soak);
  if (state) run_soak(*state, plan, target, report_soak);
}

// The plan's checks on the loaded LibTorch.
void run_plan(const WorkerPlan& plan, const Loaded& loaded, const Prepared& prepared,
              PreloadWay preload) {
  Target target;
  target.torch = loaded.torch.get();
  if (plan.kind == DeviceKind::cuda) {
    target.cuda = loaded.cuda.get();
    target.device = Device{true, 0};  // the worker sees exactly one GPU
    emit(encode_device(
        fmt::format("{} (cc {})", loaded.cuda->name(),
                    loaded.cuda->capability().value_or(ComputeCapability{}).to_string()),
        loaded.cuda->uuid()));
  }
  loaded.torch->c().aoti_torch_grad_mode_set_enabled(false);
  const std::vector<Mode> passed = run_checks(plan, prepared, target, preload);
  run_measurements(plan, passed, target);
}

void run_collective(const WorkerPlan& plan, const Loaded& loaded) {
  std::string version;
  Expected<std::unique_ptr<CudaDriver>> driver = CudaDriver::open();
  std::vector<CollectiveOutcome> outcomes;
  if (!driver) {
    for (DType dtype : kAllReduceDTypes) {
      CollectiveOutcome o;
      o.dtype = dtype;
      o.ranks = plan.collective_ranks;
      o.bytes = 256LL << 20U;
      o.error_kind = ErrorKind::unavailable;
      o.error = driver.error();
      outcomes.push_back(o);
    }
  } else {
    outcomes =
        run_collectives(*loaded.torch, **driver, plan.collective_ranks, 256LL << 20U, version);
  }
  for (const CollectiveOutcome& o : outcomes) emit(encode_collective(o, version));
}

// The environment the probe gives a worker agrees with its plan: TF32 on for the TF32 process
// alone (LibTorch reads the variable once per process).
std::string environment_problem(const WorkerPlan& plan) {
  const bool override_on = env("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE").value_or("0") == "1";
  const bool only_tf32 = plan.amp.empty() && std::all_of(plan.smoke.begin(), plan.smoke.end(),
                                                         [](Mode m) { return m == Mode::tf32; });
  if (plan.tf32_process && (!override_on || !only_tf32)) {
    return "a TF32 process needs TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 and a plan of tf32 alone";
  }
  if (!plan.tf32_process && override_on) {
    return "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 would make this worker's fp32 checks TF32";
  }
  if (!plan.tf32_process &&
      std::find(plan.smoke.begin(), plan.smoke.end(), Mode::tf32) != plan.smoke.end()) {
    return "tf32 is checked only in a TF32 process";
  }
  return "";
}

Expected<WorkerPlan> read_plan(const WorkerArgs& args) {
  const std::optional<std::string> line = read_line();
  // Started ahead by a probe that then needed no worker of this kind: stdin closed unused.
  if (!line || trim(*line).empty()) return Unexpected{""};
  Expected<WorkerPlan> plan = decode_plan(*line);
  if (!plan) return plan;
  if (plan->kind != args.kind) return Unexpected{"the plan is for another kind of device"};
  if (std::string problem = environment_problem(*plan); !problem.empty()) {
    return Unexpected{problem};
  }
  return plan;
}

}  // namespace

int run_worker(const WorkerArgs& args) {
  set_trace_fd(capture_stderr());
  trace("main");
  Expected<WorkerPlan> plan = read_plan(args);
  if (!plan) {
    if (plan.error().empty()) return 0;
    // fd 2 is the captured log: what is written there is passed on to the real stderr.
    std::cerr << "precision-probe-engine: error: " << plan.error() << '\n' << std::flush;
    forward_stderr();
    return 2;
  }
  see_only_the_plans_gpus(*plan);
  Prepared prepared;
  const StartKnobs knobs = start_knobs(*plan);
  const Loaded loaded = load_and_prepare(args, *plan, prepared, knobs);
  if (!loaded.torch) {
    StackInfo failed;
    failed.source = "engine";
    failed.library = args.libtorch;
    failed.load_error = loaded.error;
    emit(encode_hello(failed));
    answer_unavailable(*plan, loaded.error);
  } else {
    emit(encode_hello(stack_of(*loaded.torch)));
    trace("hello sent");
    if (plan->collective_ranks > 0) {
      run_collective(*plan, loaded);
    } else if (!loaded.error.empty()) {
      answer_unavailable(*plan, loaded.error);
    } else {
      run_plan(*plan, loaded, prepared, knobs.preload);
    }
  }
  emit(encode_done());
  trace("done");
  forward_stderr();
  return 0;
}

int describe(const WorkerArgs& args) {
  Expected<std::unique_ptr<Torch>> torch =
      Torch::open(args.libtorch, args.kind == DeviceKind::cuda);
  if (!torch) {
    std::cerr << "precision-probe-engine: " << torch.error() << '\n';
    return 3;
  }
  check_schemas(**torch);
  for (const OpInfo& op : kOps) {
    if (std::string p = op_problem(**torch, op.op); !p.empty()) std::cerr << p << '\n';
  }
  std::cout << encode_stack(stack_of(**torch)) << '\n';
  return 0;
}

}  // namespace precision_probe::engine
