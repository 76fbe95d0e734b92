// The real engine client: one precision-probe-engine worker per device, all in parallel, each
// pinned to its GPU through CUDA_VISIBLE_DEVICES. The parent owns the clock: a worker past the
// deadline is killed and its unfinished checks are reported as timed out.

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "probe/run/engine_client.hpp"
#include "probe/platform/process.hpp"
#include "common/protocol.hpp"
#include "common/strings.hpp"
#include "probe/platform/system.hpp"
#include "common/trace.hpp"

namespace precision_probe {
namespace {

constexpr const char* kEngineName = "precision-probe-engine";
constexpr std::size_t kStderrTail = 2048;
// LibTorch reads it once per process: on in a GPU's TF32 process, off in every other worker.
constexpr const char* kTf32Override = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE";

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) trimmed.pop_back();
  const std::size_t nl = trimmed.rfind('\n');
  return nl == std::string::npos ? trimmed : trimmed.substr(nl + 1);
}

// The longest result line a worker may send (the longest real one is a few hundred bytes).
constexpr std::size_t kMaxLine = 1U << 20U;

enum class Stream { out, err, exit };

struct Worker {
  std::unique_ptr<ChildProcess> child;
  std::string pending;  // stdout bytes after the last newline
  std::string err_tail;
  bool out_open = false;
  bool err_open = false;
  std::chrono::steady_clock::time_point last_line;  // a result line resets the per-check clock
  bool held = false;     // its plan holds it before its measurements until "go" is sent
  bool holding = false;  // it said it is waiting (the per-check clock does not run meanwhile)
};

// The kind of worker a spare was started as: its device kind, and the TF32 process or not.
struct WorkerKind {
  DeviceKind kind = DeviceKind::cpu;
  bool tf32 = false;
  friend bool operator==(WorkerKind a, WorkerKind b) {
    return a.kind == b.kind && a.tf32 == b.tf32;
  }
};

WorkerKind kind_of(const WorkerPlan& plan) { return {plan.kind, plan.tf32_process}; }

class ProcessEngine final : public Engine {
 public:
  ProcessEngine(const System& system, Expected<std::string> engine)
      : system_(system), engine_(std::move(engine)) {}

  void prestart(const Prestart& what) override {
    if (!engine_ || lib_dir_.empty()) return;
    auto spawn = [this](WorkerKind kind) {
      // A worker that cannot be started here is started (and its error reported) in run().
      if (Expected<std::unique_ptr<ChildProcess>> child = start_worker(kind, std::nullopt)) {
        const std::lock_guard<std::mutex> lock(spares_mutex_);
        spares_.push_back({kind, std::move(*child)});
      }
    };
    if (what.cpu) spawn({DeviceKind::cpu, false});
    for (int i = 0; i < what.gpus; ++i) spawn({DeviceKind::cuda, false});
    for (int i = 0; i < what.tf32_gpus; ++i) spawn({DeviceKind::cuda, true});
    trace(fmt::format("{} worker(s) started ahead", spares_.size()));
  }

  std::vector<WorkerResult> run(const std::vector<WorkerPlan>& plans, Limits limits) override {
    std::vector<WorkerResult> results(plans.size());
    std::vector<Worker> workers(plans.size());
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + limits.total;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      results[i].kind = plans[i].kind;
      results[i].index = plans[i].index;
      if (!engine_ || lib_dir_.empty()) {
        results[i].problem = ErrorKind::unavailable;
        results[i].problem_message = !engine_ ? engine_.error() : "no LibTorch to load was found";
        continue;
      }
      std::unique_ptr<ChildProcess> child = take_spare(kind_of(plans[i]));
      if (!child) {
        auto started = start_worker(kind_of(plans[i]), plans[i].cuda_visible_devices);
        if (!started) {
          // An engine that cannot be started is a broken installation, not a failed check.
          results[i].problem = ErrorKind::unavailable;
          results[i].problem_message = "the kernel engine cannot be started: " + started.error();
          continue;
        }
        child = std::move(*started);
      }
      // A held worker's stdin stays open for its "go".
      if (plans[i].hold) {
        child->write_input(encode_plan(plans[i]) + "\n");
      } else {
        child->send_input(encode_plan(plans[i]) + "\n");
      }
      workers[i].child = std::move(child);
      workers[i].out_open = true;
      workers[i].err_open = true;
      workers[i].held = plans[i].hold;
      workers[i].last_line = std::chrono::steady_clock::now();
    }
    stop_spares_of(plans);
    pump(plans, workers, results, deadline, limits);
    // Killed workers get two seconds together to go; one that does not is named.
    const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (std::size_t i = 0; i < plans.size(); ++i) {
      finish(workers[i], results[i], grace);
      check_device(plans[i], results[i]);
    }
    return results;
  }

  bool installed() const override { return static_cast<bool>(engine_); }
  std::string not_installed_reason() const override { return engine_ ? "" : engine_.error(); }

  void use_libtorch(const std::string& lib_dir) override { lib_dir_ = lib_dir; }

  void stop_spares() override {
    const std::lock_guard<std::mutex> lock(spares_mutex_);
    spares_.clear();
  }

 private:
  // Reads every worker's output until all are done, the deadline passes, or a signal arrives.
  void pump(const std::vector<WorkerPlan>& plans, std::vector<Worker>& workers,
            std::vector<WorkerResult>& results, std::chrono::steady_clock::time_point deadline,
            const Limits& limits) {
    while (true) {
      release_held(plans, workers);
      std::vector<pollfd> fds;
      std::vector<std::pair<std::size_t, Stream>> owners;
      for (std::size_t i = 0; i < workers.size(); ++i) {
        const Worker& w = workers[i];
        if (w.out_open) {
          fds.push_back({w.child->stdout_fd(), POLLIN, 0});
          owners.emplace_back(i, Stream::out);
        }
        if (w.err_open) {
          fds.push_back({w.child->stderr_fd(), POLLIN, 0});
          owners.emplace_back(i, Stream::err);
        }
        // Its exit is noticed by itself, not by its pipes closing: a process it started may hold
        // them open.
        if ((w.out_open || w.err_open) && w.child->exit_fd() >= 0) {
          fds.push_back({w.child->exit_fd(), POLLIN, 0});
          owners.emplace_back(i, Stream::exit);
        }
      }
      if (fds.empty()) return;
      const auto now = std::chrono::steady_clock::now();
      const bool stopped = limits.stop && limits.stop();
      if (stopped || now >= deadline) {
        const auto [kind, why] = cut_off(stopped, limits);
        for (std::size_t i = 0; i < workers.size(); ++i) {
          stop(workers[i], results[i], kind, why);
        }
        return;
      }
      watch(workers, results, now, limits);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      // Short slices so that a signal arriving just before poll() is seen promptly.
      const int wait_ms = static_cast<int>(std::min<long long>(left.count(), 100));
      const int ready = ::poll(fds.data(), fds.size(), std::max(wait_ms, 1));
      if (ready <= 0) continue;
      for (std::size_t f = 0; f < fds.size(); ++f) {
        if ((fds[f].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const auto [i, stream] = owners[f];
        if (stream == Stream::exit) {
          exited(workers[i], results[i]);
        } else {
          read_from(workers[i], results[i], stream == Stream::out);
        }
      }
    }
  }

  // The per-check watchdog (a worker silent for longer than one check may take is hung), and,
  // where the kernel has no pidfd, the check for workers that exited.
  void watch(std::vector<Worker>& workers, std::vector<WorkerResult>& results,
             std::chrono::steady_clock::time_point now, const Limits& limits) {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      if (!w.out_open && !w.err_open) continue;
      if (!w.holding && now - w.last_line > limits.per_check) {
        stop(w, results[i], ErrorKind::timed_out,
             fmt::format("timed out: a check did not finish within {:g} s (--check-timeout)",
                         static_cast<double>(limits.per_check.count()) / 1000.0));
      } else if (w.child->exit_fd() < 0 && w.child->try_reap()) {
        exited(w, results[i]);
      }
    }
  }

  // A GPU's TF32 process measures after the GPU's main worker: it is sent "go" once that one is
  // done (or gone), and at once where the run has none.
  static void release_held(const std::vector<WorkerPlan>& plans, std::vector<Worker>& workers) {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      if (!w.held || !w.child) continue;
      bool partner_running = false;
      for (std::size_t j = 0; j < workers.size(); ++j) {
        const bool partner = j != i && plans[j].kind == plans[i].kind &&
                             plans[j].index == plans[i].index && !plans[j].tf32_process &&
                             plans[j].collective_ranks == 0;
        if (partner && workers[j].child && (workers[j].out_open || workers[j].err_open)) {
          partner_running = true;
        }
      }
      if (partner_running) continue;
      w.child->send_input("go\n");
      w.held = false;
      w.holding = false;
      w.last_line = std::chrono::steady_clock::now();
    }
  }

  static bool is_holding(const std::string& line) {
    return line.find("\"type\":\"progress\"") != std::string::npos &&
           line.find("\"what\":\"holding\"") != std::string::npos;
  }

  // What cut the workers off: a signal, the run given up (a --device found missing), or the run's
  // deadline. None of them is the check's fault.
  static std::pair<ErrorKind, std::string> cut_off(bool stopped, const Limits& limits) {
    if (!stopped) {
      return {ErrorKind::out_of_time,
              fmt::format("out of time: the run's --timeout of {:g} s ran out before it finished",
                          limits.timeout_s)};
    }
    if (interrupt_requested()) {
      return {ErrorKind::interrupted,
              fmt::format("interrupted by {}", signal_name(interrupt_signal()))};
    }
    return {ErrorKind::not_run, "stopped: the run was given up"};
  }

  // Kills a worker that is still running; its unfinished checks will say `why`, of `kind`.
  static void stop(Worker& w, WorkerResult& result, ErrorKind kind, const std::string& why) {
    if (!w.out_open && !w.err_open) return;
    w.child->kill_group();
    if (!result.finished && result.problem == ErrorKind::none) {
      result.problem = kind;
      result.problem_message = why;
    }
    close_streams(w);
  }

  // The worker exited: what it wrote before is read, whatever still holds its pipes.
  void exited(Worker& w, WorkerResult& result) {
    w.child->try_reap();  // ends what it left running in its group, too
    for (Stream stream : {Stream::out, Stream::err}) {
      const bool open = stream == Stream::out ? w.out_open : w.err_open;
      if (!open) continue;
      std::string rest;
      // A line past the limit is caught by consume(); more than that is not read.
      drain_available(stream == Stream::out ? w.child->stdout_fd() : w.child->stderr_fd(), rest,
                      2 * kMaxLine);
      consume(w, result, rest, stream == Stream::out);
    }
    close_streams(w);
  }

  void read_from(Worker& w, WorkerResult& result, bool is_stdout) {
    char buffer[16384];
    const int fd = is_stdout ? w.child->stdout_fd() : w.child->stderr_fd();
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      if (is_stdout) {
        w.child->close_stdout();
        w.out_open = false;
      } else {
        w.child->close_stderr();
        w.err_open = false;
      }
      return;
    }
    consume(w, result, std::string_view(buffer, static_cast<std::size_t>(n)), is_stdout);
  }

  // Takes what a worker wrote: stderr's tail is kept (and traced), stdout's lines applied.
  void consume(Worker& w, WorkerResult& result, std::string_view data, bool is_stdout) {
    if (!is_stdout) {
      // Tracing: the workers' phase timings go through to our stderr.
      if (tracing()) std::fwrite(data.data(), 1, data.size(), stderr);
      w.err_tail.append(data);
      if (w.err_tail.size() > kStderrTail) w.err_tail.erase(0, w.err_tail.size() - kStderrTail);
      return;
    }
    if (!w.out_open) return;
    w.pending.append(data);
    std::size_t nl = 0;
    while ((nl = w.pending.find('\n')) != std::string::npos) {
      const std::string line = w.pending.substr(0, nl);
      w.pending.erase(0, nl + 1);
      if (line.empty()) continue;
      w.last_line = std::chrono::steady_clock::now();
      if (w.held && is_holding(line)) w.holding = true;
      const Expected<void> applied = apply_result_line(line, result);
      if (applied && result.finished) {
        trace(fmt::format("worker {} done", result.kind == DeviceKind::cuda
                                                ? "GPU " + std::to_string(result.index)
                                                : std::string("CPU")));
        // All said: whatever it does now (its exit, a process it left) is ended, not awaited.
        w.child->kill_group();
        close_streams(w);
        return;
      }
      if (!applied) {
        return violation(w, result, "the engine sent a malformed line (" + applied.error() + ")");
      }
    }
    if (w.pending.size() > kMaxLine) {
      violation(w, result,
                fmt::format("the engine sent a line longer than {} MiB (a protocol "
                            "violation)",
                            kMaxLine >> 20U));
    }
  }

  // A worker that broke the protocol: stopped, its unfinished checks failed with `why`.
  static void violation(Worker& w, WorkerResult& result, const std::string& why) {
    if (result.problem == ErrorKind::none) {
      result.problem = ErrorKind::crashed;
      result.problem_message = why;
    }
    w.pending.clear();
    w.child->kill_group();
    close_streams(w);
  }

  static void close_streams(Worker& w) {
    w.child->close_stdout();
    w.child->close_stderr();
    w.out_open = false;
    w.err_open = false;
  }

  // The end of a worker: reaped (a killed one given until `grace` to go), and, if it did not
  // finish, why. A worker stuck in the kernel cannot be killed: it is named instead.
  static void finish(Worker& w, WorkerResult& result, std::chrono::steady_clock::time_point grace) {
    if (!w.child) return;
    if (result.finished) {
      w.child->release();  // killed at "done": its teardown is not the probe's to wait for
      return;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        grace - std::chrono::steady_clock::now());
    if (!w.child->wait_for(std::max(left, std::chrono::milliseconds(0)))) {
      const char state = process_state(w.child->pid());
      if (result.problem == ErrorKind::none) result.problem = ErrorKind::crashed;
      result.problem_message += fmt::format(
          "{}the engine worker (PID {}) could not be ended{}",
          result.problem_message.empty() ? "" : "; ", w.child->pid(),
          state == 'D' ? ": it is stuck in the kernel (uninterruptible sleep, usually inside the "
                         "driver); the GPU needs a reset"
                       : fmt::format(" (state {})", state));
      return;
    }
    if (result.problem != ErrorKind::none) return;
    const int status = w.child->status();
    const std::string detail = last_line(w.err_tail);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
        classify_error(detail) == ErrorKind::unavailable) {
      // The loader could not map LibTorch (a memory limit, a missing library): the machine's
      // set-up, not a crash.
      result.problem = ErrorKind::unavailable;
      result.problem_message = "the kernel engine could not load its libraries: " + detail;
      return;
    }
    result.problem = ErrorKind::crashed;
    if (WIFSIGNALED(status)) {
      result.problem_message =
          fmt::format("the engine worker crashed ({})", signal_name(WTERMSIG(status)));
    } else {
      result.problem_message = fmt::format("the engine worker exited with code {} before finishing",
                                           WEXITSTATUS(status));
    }
    if (!detail.empty()) result.problem_message += ": " + detail;
  }

  // Starts a worker, its plan to follow on stdin, loading the image's LibTorch: libtorch_cpu.so
  // for the CPU, libtorch_cuda.so for GPUs. A CPU worker never sees a GPU. A GPU worker sees `gpu`
  // when it is known; started ahead (nullopt), it inherits the environment and narrows
  // CUDA_VISIBLE_DEVICES from its plan, before it touches CUDA. TF32 is on in a TF32 process and
  // off in every other. Where it cannot be started, why.
  Expected<std::unique_ptr<ChildProcess>> start_worker(
      WorkerKind kind, const std::optional<std::string>& gpu) const {
    // The worker ends with the probe (PR_SET_PDEATHSIG), and at once if the probe is already gone.
    std::vector<std::string> overrides = {"PRECISION_PROBE_PARENT=" + std::to_string(::getpid())};
    const bool cpu = kind.kind == DeviceKind::cpu;
    if (cpu) overrides.emplace_back("CUDA_VISIBLE_DEVICES=");
    if (!cpu && gpu) overrides.push_back("CUDA_VISIBLE_DEVICES=" + *gpu);
    overrides.emplace_back(kind.tf32 ? std::string(kTf32Override) + "=1" : kTf32Override);
    const std::string library = lib_dir_ + (cpu ? "/libtorch_cpu.so" : "/libtorch_cuda.so");
    const std::vector<std::string> argv = {*engine_, "--worker", cpu ? "cpu" : "gpu", "--libtorch",
                                           library};
    auto child = std::make_unique<ChildProcess>();
    if (Expected<void> started = child->start(argv, environment_with(overrides)); !started) {
      return Unexpected{started.error()};
    }
    return child;
  }

  // A worker started ahead for plans of this kind, or nullptr. One that died meanwhile is still
  // handed out: its run reports what happened to it, as a freshly started one's would.
  std::unique_ptr<ChildProcess> take_spare(WorkerKind kind) {
    const std::lock_guard<std::mutex> lock(spares_mutex_);
    const auto it = std::find_if(spares_.begin(), spares_.end(),
                                 [kind](const Spare& s) { return s.kind == kind; });
    if (it == spares_.end()) return nullptr;
    std::unique_ptr<ChildProcess> child = std::move(it->child);
    spares_.erase(it);
    return child;
  }

  // A GPU worker reports the UUID of the GPU it ran on: anything but the planned one means
  // CUDA_VISIBLE_DEVICES was not honoured, and its results belong to another GPU.
  static void check_device(const WorkerPlan& plan, WorkerResult& result) {
    if (plan.kind != DeviceKind::cuda || plan.collective_ranks > 0) return;
    if (plan.cuda_visible_devices.rfind("GPU-", 0) != 0 || result.device_uuid.empty()) return;
    if (result.device_uuid == plan.cuda_visible_devices) return;
    result.smoke.clear();
    result.amp.clear();
    result.bench.clear();
    result.problem = ErrorKind::environment;
    result.problem_message = fmt::format(
        "the engine worker ran on {} instead of {}: CUDA_VISIBLE_DEVICES was not "
        "honoured, so its results were discarded",
        result.device_uuid, plan.cuda_visible_devices);
  }

  struct Spare {
    WorkerKind kind;
    std::unique_ptr<ChildProcess> child;
  };

  // The workers started ahead of the kinds `plans` ran that none of them took: stopped (killed
  // and reaped). A kind no plan ran keeps its spares for a run still to come.
  void stop_spares_of(const std::vector<WorkerPlan>& plans) {
    const std::lock_guard<std::mutex> lock(spares_mutex_);
    spares_.erase(std::remove_if(spares_.begin(), spares_.end(),
                                 [&plans](const Spare& s) {
                                   return std::any_of(
                                       plans.begin(), plans.end(),
                                       [&s](const WorkerPlan& p) { return kind_of(p) == s.kind; });
                                 }),
                  spares_.end());
  }

  const System& system_;
  const Expected<std::string> engine_;  // the engine executable's path, or why there is none
  std::string lib_dir_;                 // the image's torch/lib (use_libtorch)
  std::mutex spares_mutex_;             // the CPU's run and the GPUs' run may take spares at once
  std::vector<Spare> spares_;
};

}  // namespace

Expected<std::string> find_engine_executable(const System& system, const std::string& self_exe) {
  // An empty variable is unset.
  const std::string configured = system.getenv("PRECISION_PROBE_ENGINE").value_or("");
  if (!configured.empty()) {
    if (system.exists(configured)) return configured;
    return Unexpected{
        fmt::format("PRECISION_PROBE_ENGINE={} names no file, so no kernel ran; name the "
                    "engine executable (precision-probe-engine), or unset it to use the "
                    "one installed next to the probe",
                    printable_path(configured))};
  }
  const std::string dir = self_exe.empty() ? "" : directory_of(self_exe);
  for (const std::string& candidate :
       {dir + "/" + kEngineName, dir + "/../libexec/precision-probe/" + kEngineName}) {
    if (!dir.empty() && system.exists(candidate)) return candidate;
  }
  return Unexpected{
      fmt::format("the kernel engine ({}) is not installed next to the probe, so no "
                  "kernel ran; install the whole package (bin/ and libexec/), or set "
                  "PRECISION_PROBE_ENGINE",
                  kEngineName)};
}

std::unique_ptr<Engine> make_process_engine(const System& system, const std::string& self_exe) {
  return std::make_unique<ProcessEngine>(system, find_engine_executable(system, self_exe));
}

}  // namespace precision_probe
