#include "engine/worker.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "wire/protocol.hpp"
#include "strings/strings.hpp"
#include "threads/threads.hpp"
#include "trace/trace.hpp"
#include "engine/host/cpus.hpp"
#include "engine/plan_runner.hpp"
#include "engine/torch/stderr_log.hpp"

namespace precision_probe::engine {

namespace {

std::optional<std::string> env(const char* name) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the session never changes its environment
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// One line of stdin (a plan); nullopt at its end.
std::optional<std::string> read_line() {
  std::string line;
  if (!std::getline(std::cin, line)) return std::nullopt;
  return line;
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

}  // namespace

namespace {

// How long after their plan came the CPU's checks wait for the GPUs' at most
// (PRECISION_PROBE_ENGINE_CPU_CHECKS): the probe's per-check clock runs from there.
constexpr std::chrono::seconds kCpuChecksWaitAtMost{2};

// How a session starts (docs/engine.md, "How a session starts"). The defaults are the fastest of
// those measured (on the H200; the quota's CPUs on an H100: docs/performance.md); the variables
// choose another, for measuring:
// PRECISION_PROBE_ENGINE_START orders LibTorch's dlopen and the driver's start,
// ..._DLOPEN binds LibTorch's calls at their first call ("lazy") or at dlopen ("now"),
// ..._PRELOAD how each plan loads its checks' kernels and ..._CPU_TRAINING whether the CPU's
// training runs go in turn or at once (plan_runner.hpp), ..._CPUS=mask leaves a GPU session
// under a CPU quota on its whole mask while the CPU's checks run (by default it keeps to the
// quota's CPUs then: the fastest of three ways measured on an H100, docs/engine.md),
// ..._CPU_CHECKS whether the CPU's checks wait for the GPUs' (after-gpus, by default where one CPU
// is usable) or run beside them, ..._WAIT how a thread waits for its GPU (spin, yield or blocking;
// the driver's own choice spins).
struct StartKnobs {
  // init-first | driver-first | cuinit-beside | overlap | libtorch-first
  std::string order = "init-first";
  Torch::Binding binding = Torch::Binding::lazy;
  CheckWays checks;             // how the kernels are preloaded, how the CPU's training runs go
  bool keep_to_quota = true;    // a GPU session keeps to as many CPUs as its quota gives
  bool cpu_after_gpus = false;  // the CPU's checks wait for the GPU plans under way
  CudaDriver::Waiting waiting = CudaDriver::Waiting::automatic;
};

CudaDriver::Waiting waiting_named(const std::string& name) {
  if (name == "spin") return CudaDriver::Waiting::spin;
  if (name == "yield") return CudaDriver::Waiting::yield;
  if (name == "blocking") return CudaDriver::Waiting::blocking;
  return CudaDriver::Waiting::automatic;
}

const char* waiting_said(std::optional<CudaDriver::Waiting> waiting) {
  if (!waiting) return "as the driver does not say";
  switch (*waiting) {
    case CudaDriver::Waiting::spin: return "by spinning";
    case CudaDriver::Waiting::yield: return "by yielding";
    case CudaDriver::Waiting::blocking: return "by blocking";
    case CudaDriver::Waiting::automatic: break;
  }
  return "as the driver chooses";
}

StartKnobs start_knobs() {
  StartKnobs k;
  k.order = env("PRECISION_PROBE_ENGINE_START").value_or(k.order);
  if (env("PRECISION_PROBE_ENGINE_DLOPEN").value_or("") == "now") k.binding = Torch::Binding::now;
  const unsigned cpus = usable_cpus();
  k.checks.preload = preload_way(env("PRECISION_PROBE_ENGINE_PRELOAD"), cpus);
  k.checks.cpu_training = cpu_training_way(env("PRECISION_PROBE_ENGINE_CPU_TRAINING"), cpus);
  k.keep_to_quota = env("PRECISION_PROBE_ENGINE_CPUS").value_or("") != "mask";
  k.cpu_after_gpus = cpu_checks_after_gpus(env("PRECISION_PROBE_ENGINE_CPU_CHECKS"), cpus);
  k.waiting = waiting_named(env("PRECISION_PROBE_ENGINE_WAIT").value_or(""));
  return k;
}

// Unless PRECISION_PROBE_ENGINE_CPUS=mask: while a GPU session runs the CPU's checks under a CPU
// quota below its mask, every thread of it keeps to as many CPUs as the quota gives, the one it
// runs on first: on those CPUs' run queues the CPU's checks at nice 19 give way to the GPUs'
// (docs/engine.md, "Under a CPU quota"). Back on the mask once the CPU's checks are done, and for
// good once a plan measures (--bench, --soak): a GPU's thread that spins while it waits for its
// GPU would leave a CPU's measurement at nice 19 on the same CPU next to no time.
class QuotaCpus {
 public:
  QuotaCpus(std::optional<unsigned> quota, bool wanted) : quota_(wanted ? quota : std::nullopt) {}

  void keep() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!quota_ || !mask_.empty()) return;
    std::vector<int> mask = affinity_cpus();
    const std::vector<int> cpus = cpus_to_keep(mask, ::sched_getcpu(), *quota_);
    if (cpus.empty()) return;
    if (const std::string refused = set_every_thread_to(cpus); !refused.empty()) {
      trace("not kept to the quota's CPUs: " + refused);
      (void)set_every_thread_to(mask);  // none kept where one was refused
      return;
    }
    trace(fmt::format("kept to CPU {} (a quota of {} of {} CPUs)", names_of(affinity_cpus()),
                      *quota_, mask.size()));
    mask_ = std::move(mask);
  }

  // Back on the mask (where kept); `for_good`: never kept again.
  void release(std::string_view why, bool for_good) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (for_good) quota_.reset();
    if (mask_.empty()) return;
    const std::string refused = set_every_thread_to(mask_);
    trace(refused.empty() ? fmt::format("back on every CPU of the mask: {}", why)
                          : "not back on the mask: " + refused);
    mask_.clear();
  }

 private:
  static std::string names_of(const std::vector<int>& cpus) {
    std::vector<std::string> names;
    names.reserve(cpus.size());
    for (int cpu : cpus) names.push_back(std::to_string(cpu));
    return join(names, ",");
  }

  std::mutex mutex_;
  std::optional<unsigned> quota_;  // none: not kept (no quota, `mask`, or a plan measures)
  std::vector<int> mask_;          // the mask before, while kept
};

// What the session loaded once for all its plans: the image's LibTorch and, in a GPU session, the
// driver (cuInit); each plan binds its own GPU.
struct Loaded {
  std::unique_ptr<Torch> torch;
  std::string torch_error;  // why no plan can run
  Expected<std::unique_ptr<CudaDriver>> driver = Unexpected{std::string("no GPU in this session")};
};

void load_torch(const WorkerArgs& args, Loaded& out, Torch::Binding binding) {
  Expected<std::unique_ptr<Torch>> torch =
      Torch::open(args.libtorch, args.kind == DeviceKind::cuda, binding);
  trace("LibTorch loaded");
  if (!torch) {
    out.torch_error = torch.error();
    return;
  }
  out.torch = std::move(*torch);
  if (const auto as = env("PRECISION_PROBE_ENGINE_AS_RELEASE")) {
    if (const auto version = Version::parse(*as)) out.torch->behave_as(*version);
  }
  check_schemas(*out.torch);
}

// LibTorch's dlopen and the driver's start (cuInit, which loads the driver's own libraries), in
// the order the knobs say: "init-first" (and "driver-first") runs cuInit before LibTorch's dlopen,
// which holds the loader's lock that cuInit's own library loading waits for; "cuinit-beside"
// loads libcuda first, then runs cuInit beside LibTorch's dlopen; "overlap" runs the two at once;
// "libtorch-first" one after the other. `driver_ready` is called once the driver's start is over
// (a GPU session's plans bind their GPUs then, beside LibTorch's load).
void load_session(const WorkerArgs& args, const StartKnobs& knobs, Loaded& out,
                  const std::function<void(const Loaded&)>& driver_ready) {
  const bool gpu = args.kind == DeviceKind::cuda;
  auto start_torch = [&] { load_torch(args, out, knobs.binding); };
  auto start_driver = [&] {
    if (!gpu) return;
    out.driver = CudaDriver::open();
    trace("cuInit done");
    driver_ready(out);
  };
  Threads threads;
  if (knobs.order == "cuinit-beside" && gpu) {
    out.driver = CudaDriver::load();
    threads.start_or_run(start_torch);
    if (out.driver) {
      if (Expected<void> started = (*out.driver)->init(); !started) {
        out.driver = Unexpected{started.error()};
      }
      trace("cuInit done");
    }
    driver_ready(out);
  } else if (knobs.order == "overlap") {
    threads.start_or_run(start_torch);
    threads.start_or_run(start_driver);
  } else if (knobs.order == "libtorch-first") {
    start_torch();
    start_driver();
  } else {
    start_driver();
    threads.start_or_run(start_torch);
  }
  threads.wait();
}

// A GPU's plan binds its GPU: a handle on the driver the session started (or why it could not),
// the plan's ordinal, its primary context (the one LibTorch's runtime uses), waiting as it says.
Expected<std::unique_ptr<CudaDriver>> bind_gpu(const WorkerPlan& plan,
                                               Expected<std::unique_ptr<CudaDriver>> driver,
                                               CudaDriver::Waiting waiting) {
  if (!driver) return driver;
  if (Expected<void> bound = (*driver)->bind(plan.ordinals.at(0), plan.own_context, waiting);
      !bound) {
    return Unexpected{bound.error()};
  }
  trace(fmt::format("{} context ready: its threads wait for GPU {} {}",
                    plan.own_context ? "a" : "primary", plan.ordinals.at(0),
                    waiting_said((*driver)->waiting())));
  return driver;
}

// The session: LibTorch loaded once, each plan on a thread of its own as it arrives, the end of
// stdin the end of the plans.
class Session {
 public:
  Session(const WorkerArgs& args, const StartKnobs& knobs)
      : args_(args),
        knobs_(knobs),
        quota_cpus_(args.cpus.quota, args.kind == DeviceKind::cuda && knobs.keep_to_quota) {
    threads_.start_or_run([this] { load(); });
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { end(); }

  void start(const WorkerPlan& plan) {
    const bool measures = plan.bench_size > 0 || plan.soak_seconds > 0.0;
    if (measures) {
      quota_cpus_.release("a plan measures", true);
    } else if (plan.kind == DeviceKind::cpu) {
      quota_cpus_.keep();
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      gpu_plans_.measure = gpu_plans_.measure || measures;
      if (plan.kind == DeviceKind::cuda) {
        ++gpu_plans_.started;
        ++gpu_plans_.under_way;
      }
      changed_.notify_all();
    }
    threads_.start_or_run([this, plan] { run(plan); });
  }

  // No more plans: the plans under way finish.
  void end() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      no_more_plans_ = true;
      changed_.notify_all();
    }
    threads_.join();
  }

 private:
  void load() {
    Loaded loaded;
    load_session(args_, knobs_, loaded, [this](const Loaded& started) {
      // cuInit's answer first (about 1 ms of queries a GPU), so that the probe asks the driver's
      // agent for none; before the GPU plans bind their GPUs, so that the queries do not wait
      // behind a context being made.
      if (started.driver) {
        emit(encode_cuda_answer((*started.driver)->snapshot()));
        trace("cuInit's answer sent");
      }
      const std::lock_guard<std::mutex> lock(mutex_);
      keep_driver(started);  // the GPU plans bind their GPUs now
      changed_.notify_all();
    });
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!driver_) keep_driver(loaded);  // a GPU plan waits no longer, whatever the start did
    }
    if (loaded.torch) {
      emit(encode_hello(stack_of(*loaded.torch)));
      trace("hello sent");
    } else {
      StackInfo failed;
      failed.source = "engine";
      failed.library = args_.libtorch;
      failed.load_error = loaded.torch_error;
      emit(encode_hello(failed));
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    loaded_ = std::move(loaded);
    changed_.notify_all();
  }

  const Loaded& wait_loaded() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return loaded_.has_value(); });
    return *loaded_;
  }

  // The driver's start is over (under mutex_): a handle on it for the plans, or why it failed
  // (a CPU session's: "no GPU in this session").
  void keep_driver(const Loaded& started) {
    if (started.driver) {
      driver_.emplace((*started.driver)->another());
    } else {
      driver_.emplace(Unexpected{started.driver.error()});
    }
  }

  // Once the session's driver has started: a handle on it for one plan's GPU, taken without the
  // loader's lock (LibTorch's dlopen may hold it), or why the driver did not start.
  Expected<std::unique_ptr<CudaDriver>> wait_driver() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return driver_.has_value(); });
    if (!*driver_) return Unexpected{driver_->error()};
    return (**driver_)->another();
  }

  // A GPU plan's inputs and references made on another thread while this one binds its GPU, as
  // soon as the driver has started (beside LibTorch's load: the context is not made after it).
  std::pair<Prepared, Expected<std::unique_ptr<CudaDriver>>> prepare_and_bind(
      const WorkerPlan& plan) {
    Prepared prepared;
    Threads preparing;
    preparing.start_or_run([&] { prepared = prepare_plan(plan); });
    Expected<std::unique_ptr<CudaDriver>> cuda = bind_gpu(plan, wait_driver(), knobs_.waiting);
    preparing.wait();
    return {std::move(prepared), std::move(cuda)};
  }

  // A GPU plan has ended: the CPU's checks may no longer wait for it.
  void gpu_plan_ended() {
    const std::lock_guard<std::mutex> lock(mutex_);
    --gpu_plans_.under_way;
    changed_.notify_all();
  }

  // Where one CPU is usable (or ..._CPU_CHECKS=after-gpus): the CPU's checks wait until they may go
  // (cpu_checks_may_go), until `deadline` at most (a GPU that hangs holds no CPU verdict for long).
  void wait_for_gpu_plans(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool done = changed_.wait_until(lock, deadline, [this] {
      return cpu_checks_may_go(gpu_plans_, no_more_plans_ || (driver_ && !*driver_));
    });
    const std::string said =
        gpu_plans_.measure ? "go beside the GPUs': a plan measures"
                           : fmt::format("{} for {} GPU plan(s)",
                                         done ? "waited" : "waited their most", gpu_plans_.started);
    lock.unlock();
    trace("the CPU's checks " + said);
  }

  void run(const WorkerPlan& plan) {
    // However the plan ends (an exception is kept by the session's threads): no longer under way.
    struct Ended {
      Session* session;
      bool gpu;
      ~Ended() {
        if (gpu) {
          session->gpu_plan_ended();
        } else {
          session->quota_cpus_.release("the CPU's checks are done", false);
        }
      }
    } ended{this, plan.kind == DeviceKind::cuda};
    run_plan(plan);
  }

  void run_plan(const WorkerPlan& plan) {
    // The CPU's checks beside GPUs wait for theirs where CPUs are few: the lowest priority for
    // this thread and the threads it starts (LibTorch's pool inherits it). Nice orders one run
    // queue: under a CFS quota with every CPU in the mask it does not hold, hence QuotaCpus.
    const bool cpu_beside_gpus = plan.kind == DeviceKind::cpu && args_.kind == DeviceKind::cuda;
    if (cpu_beside_gpus) {
      (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    }
    const bool gpu = plan.kind == DeviceKind::cuda && plan.collective_ranks == 0;
    // Where the CPU's checks wait for the GPUs' (one usable CPU), their inputs wait too: prepared
    // beside the GPUs' checks they would take some of the one CPU's time from them.
    const auto received = std::chrono::steady_clock::now();
    const bool after_gpus = cpu_beside_gpus && knobs_.cpu_after_gpus;
    const bool prepare_now = !gpu && plan.collective_ranks == 0 && !after_gpus;
    auto [prepared, cuda] = gpu ? prepare_and_bind(plan)
                                : std::pair(prepare_now ? prepare_plan(plan) : Prepared{},
                                            Expected<std::unique_ptr<CudaDriver>>{nullptr});
    const Loaded& loaded = wait_loaded();
    if (after_gpus && loaded.torch) {
      // At most kCpuChecksWaitAtMost after the plan came: the probe's per-check clock runs since.
      wait_for_gpu_plans(received + kCpuChecksWaitAtMost);
      prepared = prepare_plan(plan);
    }
    if (!loaded.torch) {
      answer_unavailable(plan, ErrorKind::unavailable, loaded.torch_error);
    } else if (plan.collective_ranks > 0) {
      run_collective_plan(plan, *loaded.torch);
    } else if (!cuda) {
      answer_unavailable(plan, classify_error(cuda.error()), cuda.error());
    } else {
      if (*cuda) (*cuda)->make_current();  // on this thread, bound before LibTorch was there
      run_device_plan(plan, *loaded.torch, cuda->get(), prepared, knobs_.checks);
    }
    emit(encode_done(plan.slot));
    trace(fmt::format("plan {} done", plan.slot));
  }

  WorkerArgs args_;
  StartKnobs knobs_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Loaded> loaded_;
  // Once the driver's start is over: the started driver (a handle of its own), or why it did not
  // start.
  std::optional<Expected<std::unique_ptr<CudaDriver>>> driver_;
  GpuPlansSeen gpu_plans_;      // for the CPU's checks that wait for the GPUs'
  bool no_more_plans_ = false;  // stdin has ended
  QuotaCpus quota_cpus_;
  Threads threads_;  // last: joined before what the threads use goes
};

// One line of stdin, taken: a plan started. A line that is not one is the session's end with an
// error (a probe that does not speak its protocol).
Expected<void> take_line(const std::string& line, const WorkerArgs& args, Session& session) {
  if (trim(line).empty()) return {};
  Expected<WorkerPlan> plan = decode_plan(line);
  if (!plan) return Unexpected{plan.error()};
  if (std::string problem = plan_problem(*plan, args.kind); !problem.empty()) {
    return Unexpected{problem};
  }
  session.start(*plan);
  return {};
}

}  // namespace

int run_worker(const WorkerArgs& args) {
  set_trace_fd(capture_stderr());
  trace("main");
  Expected<void> taken;
  {
    Session session(args, start_knobs());
    for (std::optional<std::string> line = read_line(); line && taken; line = read_line()) {
      taken = take_line(*line, args, session);
    }
    if (!taken) {
      // fd 2 is the captured log: what is written there is passed on to the real stderr.
      std::cerr << "precision-probe-engine: error: " << taken.error() << '\n' << std::flush;
      forward_stderr();
      std::_Exit(2);  // the plans under way end with the process
    }
  }
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
