// A fake precision-probe-engine for the CLI tests: speaks the worker protocol without LibTorch,
// through the same encoders as the real engine (wire/protocol.hpp), so the two cannot drift.
// Like the real one, it is given the image's library (--worker KIND --libtorch LIB) and says it
// loaded it: the release is the first three numbers of the version.py beside LIB.
//   FAKE_ENGINE        ok (default) | hang | crash | soakcrash | soakhang | soakbad:N |
//                      soakslow:N |
//                      garbage | wrong:MODE | nan:MODE |
//                      unsupported:MODE | noimage | busy (the compute mode refuses a
//                      context) | slow | stall:MODE | slowbf16 |
//                      oom:MODE (CUDA out of memory in MODE's smoke test, training run or
//                      benchmark) | inexact:DTYPE | nonccl | wronggpu |
//                      killed (the session SIGKILLed after the plan's first check where others
//                      are left, as the OOM killer ends a process) |
//                      orphan (leaves a process holding its stdout, exits 1) | linger (says done,
//                      then stays) | flood (an endless line) | loadfail (LIB cannot be loaded:
//                      every check answered unavailable) | abi:X.Y.Z (LIB says it is X.Y.Z) |
//                      schema:MODE (MODE's operator has another schema in the image) |
//                      near:MODE (MODE's smoke test right, its error half its tolerance)
//   FAKE_ENGINE_ON     cpu | cuda | any (default) | gpu:N (GPU N's only): which plans misbehave
//                      (loadfail: the sessions of that kind's library)
//   FAKE_ENGINE_ONCE   a file: the first plan to misbehave creates it, and none misbehaves where
//                      it exists (a fault that does not come again when the plan runs again)
//   FAKE_ENGINE_PATCH  a JSON object from line type to a JSON merge patch applied to every line of
//                      that type (null: such lines are not sent), for hostile workers:
//                      {"amp":{"loss_rel_diff":-1},"collective":null}
//   FAKE_ENGINE_LOG    a file each plan appends "KIND ARGS tf32=OVERRIDE" to, once it runs
//                      (OVERRIDE: its session's TORCH_ALLOW_TF32_CUBLAS_OVERRIDE, "-" where unset)
//   FAKE_ENGINE_PIDS   a file each plan appends its session's PID to (and an orphan's)
//   FAKE_ENGINE_SESSIONS a file each session appends "PID KIND ARGS" to when it starts
// Like the real engine, a session runs every plan it is given at once, a thread each: a hang is
// that plan's (its thread sleeps), a crash the whole session's.
//   FAKE_ENGINE_HOLD_MS each session waits this long before its hello, as a real one loads
//                      LibTorch (bench/startup.py's test samples its memory)
// Like the real engine, a GPU session starts the driver at once, where PRECISION_PROBE_LIBCUDA
// names one (the fake driver; never the machine's: none named, no driver), through the real
// engine's own code (engine/cuda/driver.hpp), on a thread of its own: once cuInit has answered it
// sends cuInit's answer (protocol 8), and its GPU plans wait for that start as the real ones bind
// their GPU after it (a cuInit that hangs, FAKE_CUINIT_FAULT=hang, hangs them; one that crashes
// the process, the session). FAKE_ENGINE_PATCH='{"cuda":null}' leaves the answer out;
//   FAKE_ENGINE_CUDA   isolated: only an isolated session (started with its plan's GPU in
//                      CUDA_VISIBLE_DEVICES) sends it, a session that sees the probe's GPUs none

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <mutex>

#include <nlohmann/json.hpp>

#include "arch/arch.hpp"
#include "engine/cuda/driver.hpp"
#include "wire/protocol.hpp"
#include "strings/strings.hpp"
#include "probe/facts/torch_files.hpp"

namespace pp = precision_probe;
using pp::Mode;

namespace {

std::string env(const char* name, const std::string& fallback = "") {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): one thread
  return value != nullptr ? value : fallback;
}

[[noreturn]] void sleep_forever() {
  std::this_thread::sleep_for(std::chrono::seconds(1000));
  std::_Exit(0);
}

void append(const std::string& file, const std::string& line) {
  if (file.empty()) return;
  std::ofstream(file, std::ios::app) << line << '\n';
}

// What LIB is, as the real engine would find: its release from the version.py beside it.
pp::StackInfo stack(const std::string& library, const std::string& behaviour) {
  pp::StackInfo s;
  s.source = "engine";
  s.library = library;
  if (behaviour == "loadfail") {
    s.load_error =
        "dlopen of " + library + " failed: libcudnn.so.9: cannot open shared object file";
    return s;
  }
  s.available = true;
  const std::string torch_dir = pp::directory_of(pp::directory_of(library));
  std::ifstream in(torch_dir + "/version.py");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string version = pp::version_py_value(text, "__version__").value_or("");
  s.abi_version =
      behaviour.rfind("abi:", 0) == 0 ? behaviour.substr(4) : version.substr(0, version.find('+'));
  s.libtorch_version = s.abi_version;
  s.cuda_version = pp::Version::parse(pp::version_py_value(text, "cuda").value_or(""));
  s.cuda_built = library.find("libtorch_cuda.so") != std::string::npos;
  s.cpu_threads = 4;
  return s;
}

// The slot of the plan this thread runs (each plan of the session has a thread of its own).
thread_local int t_slot = 0;
int slot() { return t_slot; }

std::mutex g_stdout;

// Sends a line, changed by FAKE_ENGINE_PATCH for its type; whole, whatever the other plans send.
void emit(const std::string& line) {
  const std::lock_guard<std::mutex> lock(g_stdout);
  const std::string patch_text = env("FAKE_ENGINE_PATCH");
  if (patch_text.empty()) {
    std::cout << line << '\n' << std::flush;
    return;
  }
  const auto patches = nlohmann::json::parse(patch_text);
  auto j = nlohmann::json::parse(line);
  const std::string type = j.at("type");
  if (patches.contains(type)) {
    if (patches.at(type).is_null()) return;
    j.merge_patch(patches.at(type));
  }
  std::cout << j.dump() << '\n' << std::flush;
}

// The compute capability of the GPU a plan names, from the fake driver's FAKE_NVIDIA_GPUS (the
// plan's UUID ends with the GPU's index in hex, as the fake driver makes them).
std::optional<pp::ComputeCapability> planned_cc(const pp::WorkerPlan& plan) {
  if (plan.kind != pp::DeviceKind::cuda) return std::nullopt;
  const std::string& visible = plan.cuda_visible_devices;
  const std::size_t index = visible.rfind("GPU-", 0) == 0 && visible.size() > 8
                                ? std::stoul(visible.substr(visible.size() - 8), nullptr, 16)
                                : std::strtoul(visible.c_str(), nullptr, 10);
  std::vector<std::string> gpus;
  std::stringstream spec(env("FAKE_NVIDIA_GPUS"));
  for (std::string entry; std::getline(spec, entry, ';');) gpus.push_back(entry);
  if (index >= gpus.size()) return std::nullopt;
  const std::size_t colon = gpus[index].find(':');
  return colon == std::string::npos ? std::nullopt
                                    : pp::ComputeCapability::parse(gpus[index].substr(
                                          colon + 1, gpus[index].find(':', colon + 1) - colon - 1));
}

// What the real engine refuses before calling LibTorch (its mode table, for the library's stack).
std::string refused(Mode mode, const pp::WorkerPlan& plan, const pp::StackInfo& s) {
  const auto libtorch = pp::Version::parse(s.libtorch_version);
  if (!libtorch) return "";
  return pp::missing_for(mode, *libtorch, s.cuda_built ? s.cuda_version : std::nullopt,
                         planned_cc(plan));
}

// A soak as the real engine reports it: FAKE_ENGINE=soakbad:N gives GPU N another golden result,
// soakslow:N half the throughput; an injected fault in the plan is caught.
pp::SoakOutcome soak(Mode mode, const pp::WorkerPlan& plan, const std::string& behaviour) {
  pp::SoakOutcome o;
  o.ran = o.ok = true;
  o.size = plan.soak_size;
  o.iterations = 1000;  // an injection beyond is never reached
  o.full_compares = o.iterations / 16;
  const bool bad = behaviour == "soakbad:" + std::to_string(plan.index);
  char checksum[32];
  std::snprintf(checksum, sizeof checksum, "%016x",
                0xabc0 + static_cast<int>(mode) + (bad ? 1 : 0));
  o.golden_checksum = checksum;
  o.seconds = plan.soak_seconds;
  o.tflops = behaviour == "soakslow:" + std::to_string(plan.index) ? 50.0 : 100.0;
  if (plan.inject_iteration > 0 && plan.inject_iteration <= o.iterations &&
      plan.inject_mode == mode) {
    o.injected = true;
    o.ok = false;
    o.mismatches = 1;
    pp::SoakMismatch first;
    first.iteration = plan.inject_iteration;
    first.seconds = 0.5;
    first.elements = 1;
    first.max_abs_error = 0.0625;
    o.first_mismatch = first;
    o.error_kind = pp::ErrorKind::wrong_result;
    o.error = "silent data corruption: an injected fault";
  }
  return o;
}

pp::SmokeOutcome smoke(Mode mode, const std::string& behaviour) {
  pp::SmokeOutcome o;
  o.m = o.n = o.k = 256;
  const std::string key(pp::mode_key(mode));
  if (behaviour == "wrong:" + key || behaviour == "nan:" + key) {
    o.ran = true;
    o.rel_error = behaviour == "wrong:" + key ? std::optional<double>(0.5) : std::nullopt;
    o.ms = 0.1;
    o.method = "fake";
    o.error_kind = pp::ErrorKind::wrong_result;
    o.error = o.rel_error ? "wrong result: relative error 0.5 exceeds the tolerance 0.01"
                          : "wrong result: the output contains NaN or Inf";
  } else if (behaviour == "unsupported:" + key) {
    o.error_kind = pp::ErrorKind::not_supported;
    o.error = "\"addmm_impl_cpu_\" not implemented for 'Half'";
  } else if (behaviour == "oom:" + key) {
    o.error_kind = pp::ErrorKind::unavailable;
    o.error = "CUDA out of memory. Tried to allocate 2.00 MiB";
  } else if (behaviour == "noimage") {
    o.error_kind = pp::ErrorKind::environment;
    o.error = "CUDA error: no kernel image is available for execution on the device";
  } else if (behaviour == "busy") {
    // What a GPU in compute mode Prohibited (or Exclusive Process, held) answers, sorted as the
    // real engine sorts it.
    o.error = "CUDA error: CUDA-capable device(s) is/are busy or unavailable";
    o.error_kind = pp::classify_error(o.error);
  } else {
    o.ran = o.ok = true;
    o.rel_error = pp::smoke_tolerance(mode) > 0.0 ? 1e-6 : 0.0;  // int8 is exact
    if (behaviour == "near:" + key) o.rel_error = pp::smoke_tolerance(mode) / 2.0;
    o.ms = 0.25;
    o.method = "fake";
  }
  return o;
}

pp::AmpOutcome amp(Mode mode, const std::string& behaviour) {
  const std::string key(pp::mode_key(mode));
  pp::AmpOutcome o;
  o.steps = 30;
  if (behaviour == "oom:" + key || behaviour == "unsupported:" + key) {
    o.error_kind =
        behaviour == "oom:" + key ? pp::ErrorKind::unavailable : pp::ErrorKind::not_supported;
    o.error = behaviour == "oom:" + key
                  ? "CUDA out of memory. Tried to allocate 2.00 GiB"
                  : "Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype";
    return o;
  }
  if (behaviour == "noimage" || behaviour == "busy") {  // as its smoke tests
    const pp::SmokeOutcome as_smoke = smoke(Mode::fp32, behaviour);
    o.error_kind = as_smoke.error_kind;
    o.error = as_smoke.error;
    return o;
  }
  o.ran = true;
  o.ms = 40;
  o.loss_start = 2.3026;
  o.loss_end = 0.5021;
  o.fp32_loss_end = 0.5003;
  o.params_changed = true;
  o.matmul_dtype = mode == Mode::amp_fp16 ? pp::DType::fp16 : pp::DType::bf16;
  o.layer_norm_dtype = o.softmax_dtype = o.loss_dtype = pp::DType::fp32;
  if (mode == Mode::amp_fp16) {
    o.initial_scale = 65536;
    o.final_scale = 131072;
    o.skipped_steps = 1;
    o.injected_overflow_step = 3;
    o.overflow_handled = true;
  }
  o.peak_bytes = 62914560;
  o.fp32_peak_bytes = 115343360;
  if (behaviour == "wrong:" + key) {
    o.loss_end = 2.31;
    o.error_kind = pp::ErrorKind::wrong_result;
    o.error = "wrong result: the loss did not go down (2.3026 -> 2.3100)";
  }
  o.ok = o.error.empty();
  o.loss_rel_diff = std::abs(*o.loss_end - *o.fp32_loss_end) / *o.fp32_loss_end;
  return o;
}

// Throughput: fp32 1x; bf16 15x, or no faster than fp32 with FAKE_ENGINE=slowbf16.
pp::BenchOutcome bench(Mode mode, std::int64_t size, const std::string& behaviour) {
  pp::BenchOutcome o;
  o.size = size;
  o.timer = "cuda events";
  if (behaviour == "oom:" + std::string(pp::mode_key(mode))) {
    o.error_kind = pp::ErrorKind::unavailable;
    o.error = "CUDA out of memory. Tried to allocate 4.00 GiB";
    return o;
  }
  double tflops = 700;
  if (mode == Mode::fp32) tflops = 50;
  if (mode == Mode::tf32) tflops = 400;
  if (mode == Mode::bf16) tflops = behaviour == "slowbf16" ? 40 : 750;
  o.ran = o.ok = true;
  o.reps = 20;
  o.tflops = tflops;
  o.ms = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size) /
         (tflops * 1e9);
  return o;
}

// The NCCL all-reduce: exact unless FAKE_ENGINE=inexact:DTYPE; FAKE_ENGINE=nonccl: no NCCL.
void collectives(int ranks, const std::string& behaviour) {
  for (pp::DType dtype : pp::kAllReduceDTypes) {
    pp::CollectiveOutcome o;
    o.dtype = dtype;
    o.ranks = ranks;
    o.bytes = 268435456;
    if (behaviour == "nonccl") {
      o.error_kind = pp::ErrorKind::not_supported;
      o.error = "this LibTorch loads no NCCL (libnccl.so.2 not found)";
      emit(pp::encode_collective(slot(), o, ""));
      continue;
    }
    // Bandwidths as nccl-tests defines them, from the size, the time and the ranks.
    o.ran = true;
    o.time_ms = 1.5;
    o.algbw_gbps = static_cast<double>(o.bytes) / 1.5e-3 / 1e9;
    o.busbw_gbps = *o.algbw_gbps * 2.0 * (ranks - 1) / ranks;
    o.ok = behaviour != "inexact:" + std::string(pp::to_string(dtype));
    if (!o.ok) {
      o.error_kind = pp::ErrorKind::wrong_result;
      o.error = "wrong result: the all-reduce sum is not exact on every rank";
    }
    emit(pp::encode_collective(slot(), o, "2.27.7"));
  }
}

// The behaviours that end the worker before its checks: nothing returns from these.
void misbehave_early(const std::string& behaviour) {
  if (behaviour == "garbage") {
    std::cout << "this is not json\n" << std::flush;
    std::_Exit(0);
  }
  if (behaviour == "flood") {
    std::cout << std::string(2100000, 'x') << '\n' << std::flush;
    std::_Exit(0);
  }
  if (behaviour == "orphan") {
    const pid_t child = ::fork();
    if (child == 0) sleep_forever();
    append(env("FAKE_ENGINE_PIDS"), std::to_string(child));
    std::_Exit(1);
  }
  if (behaviour == "hang") sleep_forever();
}

// A smoke test, as the real engine would answer it for this library and behaviour.
pp::SmokeOutcome answered_smoke(Mode mode, const pp::WorkerPlan& plan, const pp::StackInfo& s,
                                const std::string& behaviour) {
  pp::SmokeOutcome outcome = smoke(mode, behaviour);
  if (const std::string why = refused(mode, plan, s); !why.empty()) {
    outcome = pp::SmokeOutcome{};
    outcome.error_kind = pp::ErrorKind::not_supported;
    outcome.error = why;
  }
  if (behaviour == "schema:" + std::string(pp::mode_key(mode))) {
    outcome = pp::SmokeOutcome{};
    outcome.error_kind = pp::ErrorKind::not_run;
    outcome.error =
        "the image's schema of aten::_scaled_mm is `_scaled_mm(Tensor self)`; the "
        "engine calls `_scaled_mm(Tensor self, Tensor mat2, ...)`";
  }
  return outcome;
}

// A worker whose library cannot be loaded answers every check as not run, and says why.
void answer_unloaded(const pp::WorkerPlan& plan, const pp::StackInfo& s) {
  for (Mode mode : plan.smoke) {
    pp::SmokeOutcome o;
    o.error_kind = pp::ErrorKind::unavailable;
    o.error = s.load_error;
    emit(pp::encode_smoke(slot(), mode, o));
  }
  for (Mode mode : plan.amp) {
    pp::AmpOutcome o;
    o.error_kind = pp::ErrorKind::unavailable;
    o.error = s.load_error;
    emit(pp::encode_amp(slot(), mode, o));
  }
}

// Benchmarks and the soak.
void measurements(const pp::WorkerPlan& plan, const std::string& behaviour) {
  if (plan.bench_size > 0) {
    for (Mode mode : plan.smoke) {
      emit(pp::encode_bench(slot(), mode, bench(mode, plan.bench_size, behaviour)));
    }
  }
  if (!plan.soak_modes.empty()) {  // the time a soak takes, up to 3 s
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(plan.soak_seconds, 3.0)));
  }
  for (Mode mode : plan.soak_modes)
    emit(pp::encode_soak(slot(), mode, soak(mode, plan, behaviour)));
  if (behaviour == "soakcrash" && !plan.soak_modes.empty()) {  // dies before it says done
    std::signal(SIGSEGV, SIG_DFL);
    std::raise(SIGSEGV);
  }
  if (behaviour == "soakhang" && !plan.soak_modes.empty()) {  // its results said, never done
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// Whether this plan may misbehave under FAKE_ENGINE_ONCE: it is the first of the run to.
bool first_to_misbehave() {
  const std::string once = env("FAKE_ENGINE_ONCE");
  if (once.empty()) return true;
  const int fd = ::open(once.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// One plan of the session, on its thread: as a real engine runs it, but for its behaviour.
// The GPU session's driver start (see the top): its GPU plans wait for it.
std::shared_future<void> g_driver_started;

void run_plan(const pp::WorkerPlan& plan, const std::string& args, const pp::StackInfo& s) {
  t_slot = plan.slot;
  const std::string kind(pp::to_string(plan.kind));
  append(env("FAKE_ENGINE_LOG"),
         kind + " " + args + " tf32=" + env("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "-"));
  append(env("FAKE_ENGINE_PIDS"), std::to_string(::getpid()));
  std::string behaviour = env("FAKE_ENGINE", "ok");
  const std::string on = env("FAKE_ENGINE_ON", "any");
  const bool this_gpu =
      plan.kind == pp::DeviceKind::cuda && on == "gpu:" + std::to_string(plan.index);
  if (on != "any" && on != kind && !this_gpu) behaviour = "ok";
  // (killed: where it kills, once more checks are left.)
  if (behaviour != "ok" && behaviour != "killed" && !first_to_misbehave()) behaviour = "ok";

  if (plan.kind == pp::DeviceKind::cuda && g_driver_started.valid()) g_driver_started.wait();
  if (!s.load_error.empty()) {
    answer_unloaded(plan, s);
    emit(pp::encode_done(slot()));
    return;
  }
  if (plan.collective_ranks > 0) {
    collectives(plan.collective_ranks, behaviour);
    emit(pp::encode_done(slot()));
    return;
  }
  misbehave_early(behaviour);
  // The GPU it runs on: the plan's, as a real engine would find it, or another one
  // (FAKE_ENGINE=wronggpu), as one whose CUDA numbered the GPUs otherwise would.
  emit(pp::encode_device(slot(), "fake " + kind,
                         behaviour == "wronggpu" ? "GPU-00000000-0000-0000-0000-000000000bad"
                                                 : plan.cuda_visible_devices));
  for (std::size_t i = 0; i < plan.smoke.size(); ++i) {
    const Mode mode = plan.smoke[i];
    if (behaviour == "slow") std::this_thread::sleep_for(std::chrono::seconds(1));
    if (behaviour == "stall:" + std::string(pp::mode_key(mode))) sleep_forever();
    emit(pp::encode_smoke(slot(), mode, answered_smoke(mode, plan, s, behaviour)));
    if (behaviour == "crash" && i == 0) {
      std::signal(SIGSEGV, SIG_DFL);  // a real crash, even where a sanitizer catches SIGSEGV
      std::raise(SIGSEGV);
    }
    if (behaviour == "killed" && i == 0 && plan.smoke.size() > 1 && first_to_misbehave()) {
      std::raise(SIGKILL);
    }
  }
  for (Mode mode : plan.amp) emit(pp::encode_amp(slot(), mode, amp(mode, behaviour)));
  measurements(plan, behaviour);
  emit(pp::encode_done(slot()));
  if (behaviour == "linger") sleep_forever();
}

void start_driver() {
  if (env("PRECISION_PROBE_LIBCUDA").empty()) return;
  auto started = std::make_shared<std::promise<void>>();
  g_driver_started = started->get_future().share();
  // Detached: a cuInit that never returns must not keep the session from exiting.
  std::thread([started] {
    const auto driver = pp::engine::CudaDriver::open();
    const bool silent =
        env("FAKE_ENGINE_CUDA") == "isolated" && std::getenv("CUDA_VISIBLE_DEVICES") == nullptr;
    if (driver && !silent) emit(pp::encode_cuda_answer((*driver)->snapshot()));
    started->set_value();
  }).detach();
}

// A session, as the real engine's: its library "loaded" (the hello), then every plan on a thread
// of its own as it comes; the end of stdin ends it once its plans are done.
int run_worker(const std::string& args, const std::string& library) {
  // As the real engine (engine_main.cpp): a session never outlives the probe that started it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::string parent = env("PRECISION_PROBE_PARENT");
  if (!parent.empty() && std::to_string(::getppid()) != parent) return 1;
  const std::string on = env("FAKE_ENGINE_ON", "any");
  const std::string session_kind =
      library.find("libtorch_cuda.so") != std::string::npos ? "cuda" : "cpu";
  // A load that fails fails the session's library: its kind's, or any.
  const std::string behaviour =
      on == "any" || on == session_kind ? env("FAKE_ENGINE", "ok") : std::string("ok");
  append(env("FAKE_ENGINE_SESSIONS"), std::to_string(::getpid()) + " " + session_kind + " " + args);
  const long hold_ms = std::strtol(env("FAKE_ENGINE_HOLD_MS", "0").c_str(), nullptr, 10);
  if (session_kind == "cuda") start_driver();
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  const pp::StackInfo s = stack(library, behaviour);
  emit(pp::encode_hello(s));
  std::vector<std::thread> plans;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    const pp::Expected<pp::WorkerPlan> decoded = pp::decode_plan(line);
    if (!decoded) {
      std::cerr << "fake-engine: " << decoded.error() << '\n';
      std::_Exit(2);
    }
    plans.emplace_back([plan = *decoded, args, s] { run_plan(plan, args, s); });
  }
  for (std::thread& t : plans) t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string verb = argc > 1 ? argv[1] : "";
  std::string args;
  for (int i = 1; i < argc; ++i) args += (i > 1 ? " " : "") + std::string(argv[i]);
  if (verb == "--worker" && argc == 5 && std::string(argv[3]) == "--libtorch") {
    return run_worker(args, argv[4]);
  }
  std::cerr << "usage: fake-engine --worker cpu|gpu --libtorch LIB\n";
  return 2;
}
