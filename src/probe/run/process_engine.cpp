// The real engine client: engine sessions. One precision-probe-engine process loads the image's
// LibTorch once and runs every device's plan at once, a thread each (the CPU's too, below the
// GPUs' priority), tf32 included (cuBLAS asked for TF32 by name: no process has LibTorch's TF32
// override on). A run therefore loads LibTorch once whatever its GPU count. The probe owns the
// clock: a plan silent for longer than a check may take hung, and the session holding it is ended;
// what the session's other plans left unfinished, and what a session that died left, runs again in
// isolated sessions of one plan each (narrowed to its GPU through CUDA_VISIBLE_DEVICES), so that a
// GPU that hangs or crashes costs only its own verdicts. docs/architecture.md, "One LibTorch per
// run".

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "wire/protocol.hpp"
#include "strings/strings.hpp"
#include "trace/trace.hpp"
#include "process/process.hpp"
#include "probe/platform/cgroup.hpp"
#include "probe/platform/system.hpp"
#include "probe/run/engine_client.hpp"

namespace precision_probe {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kEngineName = "precision-probe-engine";
constexpr std::size_t kStderrTail = 2048;
// LibTorch reads it once per process: off in every session, so that fp32 is proven as fp32.
constexpr const char* kTf32Override = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE";
// The longest result line a session may send (the longest real one is a few hundred bytes).
constexpr std::size_t kMaxLine = 1U << 20U;
// How long a killed session is given to go before it is named as stuck.
constexpr auto kGrace = std::chrono::seconds(2);

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) trimmed.pop_back();
  const std::size_t nl = trimmed.rfind('\n');
  return nl == std::string::npos ? trimmed : trimmed.substr(nl + 1);
}

// What a session loads and how it is started: LibTorch's CPU library (a session of the CPU
// alone) or its CUDA one; shared by every plan of its kind, or isolated (one plan, its GPUs alone
// visible).
struct SessionKind {
  bool gpu = false;
  friend bool operator==(SessionKind a, SessionKind b) { return a.gpu == b.gpu; }
};

struct Session {
  SessionKind kind;
  bool isolated = false;
  std::unique_ptr<ChildProcess> child;
  LineBuffer lines{kMaxLine};  // its stdout, cut into lines
  std::string err_tail;
  bool out_open = true;
  bool err_open = true;
  bool used = false;        // a plan was sent to it
  bool broken = false;      // killed, died or broke the protocol: no plan goes to it any more
  std::string lost_why;     // what broke it, for the plans it leaves that cannot run again
  std::string lost_signal;  // the signal it died of, where it crashed
  std::string hung_device;  // the device whose hung check it was ended for
  std::optional<bool> oom_killer;  // killed: whether the cgroup's OOM killer count rose
  std::optional<Clock::time_point> killed_at;
  SessionFacts said;  // its hello, and cuInit's answer in a GPU session
};

// One plan under way, and the result its caller waits for.
struct Slot {
  WorkerPlan plan;
  WorkerResult* result = nullptr;
  Session* session = nullptr;
  Clock::time_point last_line;  // a line of the plan resets its per-check clock
  bool hung = false;            // silent past --check-timeout: its session was ended
  bool settled = false;         // done, or given up with its result saying why
};

class ProcessEngine final : public Engine {
 public:
  ProcessEngine(Expected<std::string> engine, const System& system)
      : engine_(std::move(engine)), system_(system) {}
  ProcessEngine(const ProcessEngine&) = delete;
  ProcessEngine& operator=(const ProcessEngine&) = delete;
  ~ProcessEngine() override { finish(); }

  void prestart(const Prestart& what) override {
    if (!engine_ || lib_dir_.empty()) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (what.gpus > 0) {
      (void)session_of({true});
    } else if (what.cpu) {
      (void)session_of({false});
    }
    trace(fmt::format("{} engine session(s) started ahead", sessions_.size()));
  }

  std::vector<WorkerResult> run(const std::vector<WorkerPlan>& plans, Limits limits) override {
    std::vector<WorkerResult> results(plans.size());
    std::unique_lock<std::mutex> lock(mutex_);
    const Clock::time_point deadline = Clock::now() + limits.total;
    // A run stopped, or out of time, already starts no session.
    const bool stopped = limits.stop && limits.stop();
    const bool late = stopped || limits.total <= std::chrono::milliseconds(1);
    std::vector<int> mine;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      results[i].kind = plans[i].kind;
      results[i].index = plans[i].index;
      if (late) {
        std::tie(results[i].problem, results[i].problem_message) = cut_off(stopped, limits);
      } else if (std::optional<int> slot = submit(plans[i], results[i])) {
        mine.push_back(*slot);
      }
    }
    while (!all_settled(mine)) {
      if (pumping_) {
        changed_.wait_for(lock, std::chrono::milliseconds(50));
        continue;
      }
      pumping_ = true;
      look_after(deadline, limits);
      pump(lock);
      pumping_ = false;
      changed_.notify_all();
    }
    for (int slot : mine) slots_.erase(slot);
    for (std::size_t i = 0; i < plans.size(); ++i) check_device(plans[i], results[i]);
    return results;
  }

  bool installed() const override { return static_cast<bool>(engine_); }

  bool answers_cuda() const override { return engine_ && !lib_dir_.empty(); }

  // The shared GPU session's: an isolated one sees its plan's GPUs alone.
  std::optional<CudaSnapshot> cuda_answer() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& s : sessions_) {
      if (s->kind.gpu && !s->isolated && s->said.cuda) return s->said.cuda;
    }
    return std::nullopt;
  }
  std::string not_installed_reason() const override { return engine_ ? "" : engine_.error(); }

  void use_libtorch(const std::string& lib_dir) override { lib_dir_ = lib_dir; }

  void stop_spares() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : sessions_) {
      if (!s->used) end_session(*s);
    }
  }

  // The run has no more plans: every session ended. Their exits (the kernel and the driver
  // tearing down their memory and CUDA contexts) are not waited for.
  void finish() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : sessions_) {
      end_session(*s);
      s->child->release();
    }
  }

 private:
  // --- Sessions ----------------------------------------------------------------------------

  // Starts a session: LibTorch's CUDA library in a GPU session, its CPU one alone; LibTorch's TF32
  // override off; an isolated session sees `visible` alone (its plan's GPUs, or none for the
  // CPU). Where it cannot be started, why.
  Expected<Session*> start_session(SessionKind kind, const std::optional<std::string>& visible) {
    // A session ends with the probe (PR_SET_PDEATHSIG), and at once if the probe is already gone.
    std::vector<std::string> overrides = {"PRECISION_PROBE_PARENT=" + std::to_string(::getpid())};
    if (!kind.gpu) overrides.emplace_back("CUDA_VISIBLE_DEVICES=");
    if (kind.gpu && visible) overrides.push_back("CUDA_VISIBLE_DEVICES=" + *visible);
    overrides.emplace_back(kTf32Override);
    const std::string library = lib_dir_ + (kind.gpu ? "/libtorch_cuda.so" : "/libtorch_cpu.so");
    const std::vector<std::string> argv = {*engine_, "--worker", kind.gpu ? "gpu" : "cpu",
                                           "--libtorch", library};
    // What the cgroup's OOM killer had done before any session: a SIGKILL later is told by it.
    if (sessions_.empty()) oom_before_ = read_cgroup_memory(system_);
    auto session = std::make_unique<Session>();
    session->kind = kind;
    session->isolated = visible.has_value();
    session->child = std::make_unique<ChildProcess>();
    if (Expected<void> started = session->child->start(argv, environment_with(overrides));
        !started) {
      return Unexpected{started.error()};
    }
    trace(fmt::format("engine session started ({}{})", kind.gpu ? "GPU" : "CPU",
                      session->isolated ? ", isolated" : ""));
    sessions_.push_back(std::move(session));
    return sessions_.back().get();
  }

  // The shared session of `kind`: the one running, else a new one.
  Expected<Session*> session_of(SessionKind kind) {
    for (auto& s : sessions_) {
      if (!s->isolated && !s->broken && s->kind == kind) return s.get();
    }
    return start_session(kind, std::nullopt);
  }

  // Where a plan runs: a GPU's in the GPU session, the CPU's in the GPU session where there is one
  // (its LibTorch carries the CPU's), else in a session of its own.
  Expected<Session*> shared_session_for(const WorkerPlan& plan) {
    if (plan.kind == DeviceKind::cuda) return session_of({true});
    for (auto& s : sessions_) {
      if (!s->isolated && !s->broken && s->kind == SessionKind{true}) return s.get();
    }
    return session_of({false});
  }

  // Ends a session: killed with its group, its pipes closed; no plan goes to it any more.
  void end_session(Session& s) {
    if (!s.killed_at && s.child->running()) {
      s.child->kill_group();
      s.killed_at = Clock::now();
    }
    if (s.out_open || s.err_open) {
      s.child->close_stdout();
      s.child->close_stderr();
      s.out_open = s.err_open = false;
    }
    s.broken = true;
  }

  // --- Plans ------------------------------------------------------------------------------

  // Sends a plan to its shared session; where none can run it, its result says why (nullopt).
  std::optional<int> submit(const WorkerPlan& plan, WorkerResult& result) {
    if (!engine_ || lib_dir_.empty()) {
      result.problem = ErrorKind::unavailable;
      result.problem_message = !engine_ ? engine_.error() : "no LibTorch to load was found";
      return std::nullopt;
    }
    Expected<Session*> session = shared_session_for(plan);
    if (!session) {
      // An engine that cannot be started is a broken installation, not a failed check.
      result.problem = ErrorKind::unavailable;
      result.problem_message = "the kernel engine cannot be started: " + session.error();
      return std::nullopt;
    }
    // A shared session sees the probe's GPUs, numbered as CUDA numbers them (as the report does):
    // the plan's ordinals are its GPUs' indices.
    const int id = next_slot_++;
    Slot& slot = slots_[id];
    slot.plan = plan;
    slot.plan.slot = id;
    slot.result = &result;
    if ((*session)->said.hello) result.stack = (*session)->said.hello;
    send(slot, **session);
    return id;
  }

  void send(Slot& slot, Session& session) {
    slot.session = &session;
    slot.last_line = Clock::now();
    session.used = true;
    session.child->write_input(encode_plan(slot.plan) + "\n");
  }

  bool all_settled(const std::vector<int>& ids) const {
    return std::all_of(ids.begin(), ids.end(), [this](int id) { return slots_.at(id).settled; });
  }

  // The run's clock, the per-check watchdog and the sessions lost.
  void look_after(Clock::time_point deadline, const Limits& limits) {
    const bool stopped = limits.stop && limits.stop();
    if (stopped || Clock::now() >= deadline) {
      cut_everything(stopped, limits);
      return;
    }
    watch(limits);
    rerun_what_was_lost();
  }

  // What cut the plans off: a signal, the run given up (a --device found missing), or the run's
  // deadline. None of them is a check's fault.
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

  // Every session ended, every plan not done said to be cut off (a session stuck in the kernel
  // named, where it did not go within the grace).
  void cut_everything(bool stopped, const Limits& limits) {
    const auto [kind, why] = cut_off(stopped, limits);
    for (auto& s : sessions_) end_session(*s);
    for (auto& [id, slot] : slots_) {
      if (slot.settled) continue;
      give_up(slot, slot.hung ? slot.result->problem : kind,
              slot.hung ? slot.result->problem_message : why);
    }
    name_stuck_sessions(Clock::now() + kGrace);
  }

  // The per-check watchdog: a plan silent for longer than one check may take hung. Its session is
  // ended (a hung kernel cannot be cancelled from inside its process); its other plans run again
  // in isolated sessions.
  void watch(const Limits& limits) {
    const Clock::time_point now = Clock::now();
    for (auto& [id, slot] : slots_) {
      if (slot.settled || slot.hung || slot.session == nullptr) continue;
      if (now - slot.last_line <= limits.per_check) continue;
      slot.hung = true;
      slot.result->problem = ErrorKind::timed_out;
      slot.result->problem_message =
          fmt::format("timed out: a check did not finish within {:g} s (--check-timeout)",
                      static_cast<double>(limits.per_check.count()) / 1000.0);
      slot.session->lost_why =
          fmt::format("{}'s check hung ({})", device_of(slot.plan), slot.result->problem_message);
      slot.session->hung_device = device_of(slot.plan);
      end_session(*slot.session);
    }
    // A hung plan's session gone (or past its grace: named as stuck), the plan is given up.
    for (auto& [id, slot] : slots_) {
      if (!slot.hung || slot.settled) continue;
      Session& s = *slot.session;
      const bool gone = s.child->try_reap();
      if (gone || now - *s.killed_at > kGrace) {
        if (!gone) slot.result->problem_message += stuck_note(s);
        give_up(slot, slot.result->problem, slot.result->problem_message);
      }
    }
  }

  // The plans a lost session left: in an isolated session each, with what they had not answered;
  // a plan that was isolated already (or has nothing left) ends with why its session was lost.
  void rerun_what_was_lost() {
    for (auto& [id, slot] : slots_) {
      if (slot.settled || slot.hung || slot.session == nullptr || !slot.session->broken) continue;
      Session& lost = *slot.session;
      // Not ended by the probe: its exit (still to come) says why it went.
      if (!lost.killed_at && !lost.child->try_reap()) continue;
      std::optional<WorkerPlan> rest = rest_of(slot.plan, *slot.result);
      if (lost.isolated || !rest) {
        if (!rest) slot.result->finished = true;
        give_up(slot, ErrorKind::crashed, lost_reason(lost));
        // Killed again alone by the OOM killer: the memory's fault, not the device's.
        if (slot.result->rerun && lost.oom_killer == std::optional<bool>(true)) {
          slot.result->rerun->oom_killer = true;
        }
        continue;
      }
      const std::optional<std::string> visible = slot.plan.kind == DeviceKind::cuda
                                                     ? std::optional(slot.plan.cuda_visible_devices)
                                                     : std::optional(std::string());
      Expected<Session*> isolated = start_session(lost.kind, visible);
      if (!isolated) {
        give_up(slot, ErrorKind::crashed,
                lost_reason(lost) + "; no isolated session could be started: " + isolated.error());
        continue;
      }
      trace(fmt::format("plan {} runs again in an isolated session ({})", id, lost_reason(lost)));
      if (!slot.result->rerun) {
        slot.result->rerun =
            EngineRerun{lost_reason(lost), lost.lost_signal, lost.hung_device, lost.oom_killer};
      }
      slot.plan = *rest;
      // Its GPUs alone are visible there: CUDA numbers them from 0.
      for (std::size_t i = 0; i < slot.plan.ordinals.size(); ++i) {
        slot.plan.ordinals[i] = static_cast<int>(i);
      }
      send(slot, **isolated);
    }
  }

  // A plan ends without finishing: its result says what kept it (the first problem stands).
  static void give_up(Slot& slot, ErrorKind kind, const std::string& why) {
    WorkerResult& r = *slot.result;
    if (!r.finished && r.problem == ErrorKind::none) {
      r.problem = kind;
      r.problem_message = why;
    }
    slot.settled = true;
  }

  // What a plan has left to do: the checks it did not answer, with the smoke tests a benchmark or
  // the soak still owed needs run again (they measure only what passed in their own process);
  // nullopt where it answered everything. A soak's lines are its progress: only its plan's "done"
  // says it ended, so a soak is always owed here.
  static std::optional<WorkerPlan> rest_of(const WorkerPlan& plan, const WorkerResult& result) {
    if (plan.collective_ranks > 0) {
      if (result.collectives.size() >= kAllReduceDTypes.size()) return std::nullopt;
      return plan;
    }
    WorkerPlan rest = plan;
    rest.smoke.clear();
    rest.amp.clear();
    for (Mode mode : plan.smoke) {
      const SmokeOutcome* smoke = result.smoke.find(mode);
      const bool owed = smoke != nullptr && smoke->ok &&
                        ((plan.bench_size > 0 && !result.bench.contains(mode)) ||
                         (plan.soak_seconds > 0.0 && contains(plan.soak_modes, mode)));
      if (smoke == nullptr || owed) rest.smoke.push_back(mode);
    }
    for (Mode mode : plan.amp) {
      if (!result.amp.contains(mode)) rest.amp.push_back(mode);
    }
    if (rest.smoke.empty() && rest.amp.empty()) return std::nullopt;
    return rest;
  }

  static bool contains(const std::vector<Mode>& modes, Mode mode) {
    return std::find(modes.begin(), modes.end(), mode) != modes.end();
  }

  // --- Reading the sessions ----------------------------------------------------------------

  // Reads what every session wrote within a slice of 100 ms (without the lock: only the pumping
  // caller reads), then applies it.
  void pump(std::unique_lock<std::mutex>& lock) {
    std::vector<Watched> watched;
    std::vector<Session*> owners;
    for (auto& s : sessions_) {
      if (!s->out_open && !s->err_open) continue;
      watched.push_back({s->child.get(), s->out_open, s->err_open});
      owners.push_back(s.get());
    }
    lock.unlock();
    std::vector<ChildOutput> got =
        read_children(watched, std::chrono::milliseconds(watched.empty() ? 20 : 100));
    lock.lock();
    for (ChildOutput& out : got) {
      Session& s = *owners[out.index];
      consume(s, out.out, true);
      consume(s, out.err, false);
      // A violation found in what it wrote may have closed its pipes already.
      s.out_open = s.out_open && watched[out.index].out;
      s.err_open = s.err_open && watched[out.index].err;
      if (out.exited) {
        exited(s);
      } else if (!s.out_open && !s.err_open) {
        lose(s);
      }
    }
  }

  // The session exited: what it wrote before is read, whatever still holds its pipes.
  void exited(Session& s) {
    s.child->try_reap();  // ends what it left running in its group, too
    for (bool is_stdout : {true, false}) {
      if (!(is_stdout ? s.out_open : s.err_open)) continue;
      std::string rest;
      // A line past the limit is caught by consume(); more than that is not read.
      drain_available(is_stdout ? s.child->stdout_fd() : s.child->stderr_fd(), rest, 2 * kMaxLine);
      consume(s, rest, is_stdout);
    }
    lose(s);
  }

  // A session no plan can use any more: its pipes closed; its plans not done are rerun or given
  // up (rerun_what_was_lost) once it has exited, which says why.
  void lose(Session& s) {
    if (s.out_open || s.err_open) {
      s.child->close_stdout();
      s.child->close_stderr();
      s.out_open = s.err_open = false;
    }
    s.broken = true;
  }

  // Takes what a session wrote: stderr's tail is kept (and traced), stdout's lines applied.
  void consume(Session& s, std::string_view data, bool is_stdout) {
    if (!is_stdout) {
      // Tracing: the sessions' phase timings go through to our stderr.
      if (tracing()) std::fwrite(data.data(), 1, data.size(), stderr);
      s.err_tail.append(data);
      if (s.err_tail.size() > kStderrTail) s.err_tail.erase(0, s.err_tail.size() - kStderrTail);
      return;
    }
    if (!s.out_open) return;
    s.lines.append(data);
    while (std::optional<std::string> line = s.lines.next()) {
      if (line->empty()) continue;
      if (Expected<void> applied = apply(s, *line); !applied) {
        return violation(s, "the engine sent a malformed line (" + applied.error() + ")");
      }
      if (!s.out_open) return;
    }
    if (s.lines.dropped() > 0) {
      violation(s, fmt::format("the engine sent a line longer than {} MiB (a protocol violation)",
                               kMaxLine >> 20U));
    }
  }

  // One line of a session: the hello is every plan's there; a plan's line goes to its result.
  Expected<void> apply(Session& s, const std::string& line) {
    auto result_of = [this, &s](int id) -> WorkerResult* {
      const auto it = slots_.find(id);
      if (it == slots_.end() || it->second.session != &s || it->second.settled) return nullptr;
      return it->second.result;
    };
    const Expected<LineNote> note = apply_engine_line(line, result_of, s.said);
    if (!note) return Unexpected{note.error()};
    if (!note->slot) {
      for (auto& [id, slot] : slots_) {
        if (slot.session == &s) slot.result->stack = s.said.hello;
      }
      return {};
    }
    Slot& slot = slots_.at(*note->slot);
    if (!slot.result->stack) slot.result->stack = s.said.hello;
    slot.last_line = Clock::now();
    if (note->done) {
      slot.settled = true;
      trace(fmt::format("plan {} ({}) done", *note->slot, device_of(slot.plan)));
    }
    return {};
  }

  static std::string device_of(const WorkerPlan& plan) {
    return plan.kind == DeviceKind::cuda ? "GPU " + std::to_string(plan.index) : "CPU";
  }

  // A session that broke the protocol: ended; its plans not done run again in isolation, where
  // the one that breaks it again is named with `why`.
  void violation(Session& s, const std::string& why) {
    s.lost_why = why;
    end_session(s);
  }

  // Why a session went away, from its exit: a crash, a kill (by the OOM killer where the cgroup's
  // count of its kills rose), or an exit before its plans were done.
  std::string exit_reason(Session& s) {
    if (!s.child->try_reap()) return "the engine session went away";
    const int status = s.child->status();
    const std::string detail = last_line(s.err_tail);
    std::string why =
        fmt::format("the engine worker exited with code {} before finishing", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
      // A SIGKILL the probe did not send is no crash: something ended it (the OOM killer, most
      // often).
      s.lost_signal = signal_name(WTERMSIG(status));
      why = fmt::format("the engine worker {} ({})",
                        WTERMSIG(status) == SIGKILL ? "was killed" : "crashed", s.lost_signal);
      if (WTERMSIG(status) == SIGKILL) why += oom_note(s);
    }
    if (!detail.empty()) why += ": " + detail;
    return why;
  }

  // Whether the OOM killer ended a killed session: the cgroup's kills since the run's first
  // session that no session killed before accounts for, and the cgroup's limit (its ancestors'
  // included); "" where the cgroup does not say.
  std::string oom_note(Session& s) {
    const std::optional<CgroupMemory> now = read_cgroup_memory(system_);
    if (!oom_before_ || !now || now->events != oom_before_->events) return "";
    const std::uint64_t since =
        now->oom_kills > oom_before_->oom_kills ? now->oom_kills - oom_before_->oom_kills : 0;
    s.oom_killer = since > oom_attributed_;
    if (!*s.oom_killer) {
      return since == 0 ? fmt::format(
                              ", not by the OOM killer (the count of its kills in {} "
                              "stayed at {})",
                              now->events, now->oom_kills)
                        : fmt::format(
                              ", not by the OOM killer (the {} kill(s) in {} since the "
                              "run started were of sessions lost before)",
                              since, now->events);
    }
    ++oom_attributed_;
    const std::string limit =
        now->limit ? fmt::format("{:.0f} MiB", static_cast<double>(*now->limit) / (1U << 20U))
                   : std::string("none");
    return fmt::format(" by the kernel's OOM killer ({}: oom_kill {} -> {}; the cgroup's limit {})",
                       now->events, oom_before_->oom_kills, now->oom_kills, limit);
  }

  std::string lost_reason(Session& s) {
    if (s.lost_why.empty()) s.lost_why = exit_reason(s);
    return s.lost_why;
  }

  static std::string stuck_note(const Session& s) {
    const char state = process_state(s.child->pid());
    return fmt::format(
        "; the engine worker (PID {}) could not be ended{}", s.child->pid(),
        state == 'D' ? ": it is stuck in the kernel (uninterruptible sleep, usually inside the "
                       "driver); the GPU needs a reset"
                     : fmt::format(" (state {})", state));
  }

  // The sessions ended at the deadline: each given until `grace` to go; one that does not is
  // named in the plans it held.
  void name_stuck_sessions(Clock::time_point grace) {
    for (auto& s : sessions_) {
      if (!s->killed_at || !s->used) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(grace - Clock::now());
      if (s->child->wait_for(std::max(left, std::chrono::milliseconds(0)))) continue;
      for (auto& [id, slot] : slots_) {
        if (slot.session == s.get() && !slot.result->finished) {
          slot.result->problem_message += stuck_note(*s);
        }
      }
      s->child->release();
    }
  }

  // A GPU's plan reports the UUID of the GPU it ran on: anything but the planned one means the
  // GPU was not the one planned, and its results belong to another GPU.
  static void check_device(const WorkerPlan& plan, WorkerResult& result) {
    if (plan.kind != DeviceKind::cuda || plan.collective_ranks > 0) return;
    if (plan.cuda_visible_devices.rfind("GPU-", 0) != 0 || result.device_uuid.empty()) return;
    if (result.device_uuid == plan.cuda_visible_devices) return;
    result.smoke.clear();
    result.amp.clear();
    result.bench.clear();
    result.problem = ErrorKind::environment;
    result.problem_message = fmt::format(
        "the engine ran GPU {}'s checks on {} instead of {}: the GPU it was given was not the one "
        "planned (CUDA numbers the GPUs otherwise than the probe, or CUDA_VISIBLE_DEVICES was not "
        "honoured), so its results were discarded",
        plan.index, result.device_uuid, plan.cuda_visible_devices);
  }

  const Expected<std::string> engine_;      // the engine executable's path, or why there is none
  const System& system_;                    // the cgroup's files
  std::optional<CgroupMemory> oom_before_;  // the cgroup's, before the run's first session
  std::uint64_t oom_attributed_ = 0;        // its OOM kills since, said of a session already
  std::string lib_dir_;                     // the image's torch/lib (use_libtorch)
  // The CPU's run and the GPUs' run may be under way at once: one caller reads the sessions at a
  // time (pumping_), every caller waits for its own plans.
  std::mutex mutex_;
  std::condition_variable changed_;
  bool pumping_ = false;
  std::list<std::unique_ptr<Session>> sessions_;
  std::map<int, Slot> slots_;
  int next_slot_ = 0;
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
  return std::make_unique<ProcessEngine>(find_engine_executable(system, self_exe), system);
}

}  // namespace precision_probe
