#include "process/process.hpp"
#include "process/io.hpp"
#include "strings/strings.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <fstream>
#include <iterator>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <thread>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace precision_probe {

namespace {

volatile sig_atomic_t g_interrupt_signal = 0;

// The process groups of the children alive now, for the second signal's handler to kill.
// A slot per child alive at once: a worker per GPU, the driver agent, their spares.
constexpr int kMaxGroups = 4096;
std::array<std::atomic<pid_t>, kMaxGroups> g_groups{};

int register_group(pid_t pgid) {
  for (int i = 0; i < kMaxGroups; ++i) {
    pid_t expected = 0;
    if (g_groups[i].compare_exchange_strong(expected, pgid)) return i;
  }
  return -1;
}

void unregister_group(int& slot) {
  if (slot >= 0) g_groups[slot].store(0);
  slot = -1;
}

void kill_every_group() noexcept {
  for (auto& group : g_groups) {
    const pid_t pgid = group.load();
    if (pgid > 0) ::kill(-pgid, SIGKILL);
  }
}

constexpr std::array<int, 4> kInterruptSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void on_interrupt(int signal) {
  if (g_interrupt_signal != 0) {
    // The second signal: end now, as the default action would, leaving no worker and no
    // temporary file behind.
    kill_every_group();
    remove_pending_temporaries();
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  g_interrupt_signal = signal;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ChildProcess::~ChildProcess() {
  if (running()) {
    kill_group();
    wait_for(std::chrono::seconds(2));  // a child stuck in the kernel is left, not waited for
  }
  unregister_group(group_slot_);
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(exit_fd_);
}

Expected<void> ChildProcess::start(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env, const std::string& input) {
  Expected<void> started = start(argv, env);
  if (started) send_input(input);
  return started;
}

Expected<void> ChildProcess::start(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env) {
  if (argv.empty()) return Unexpected{"no command"};
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const std::string error = "pipe: " + error_string(errno);
    for (int* p : {in_pipe, out_pipe, err_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return Unexpected{error};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ}) {
    sigaddset(&default_signals, s);
  }
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const int rc = ::posix_spawn(&pid_, argv[0].c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close_fd(in_pipe[0]);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  if (rc != 0) {
    pid_ = -1;
    close_fd(in_pipe[1]);
    close_fd(out_pipe[0]);
    close_fd(err_pipe[0]);
    return Unexpected{"cannot start " + argv[0] + ": " + error_string(rc)};
  }
  reaped_ = false;
  in_fd_ = in_pipe[1];
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  group_slot_ = register_group(pid_);
  // Through syscall(): the C library's wrapper is newer than some systems the probe runs on.
  exit_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (exit_fd_ >= 0) ::fcntl(exit_fd_, F_SETFD, FD_CLOEXEC);
  return {};
}

void ChildProcess::send_input(const std::string& input) {
  write_input(input);
  close_fd(in_fd_);
}

void ChildProcess::write_input(const std::string& input) {
  if (in_fd_ < 0) return;
  // The input is small (a plan of a few hundred bytes): it fits the pipe buffer. A child that
  // exits without reading it gives EPIPE (SIGPIPE is ignored), which is not an error here.
  std::size_t written = 0;
  while (written < input.size()) {
    const ssize_t n = ::write(in_fd_, input.data() + written, input.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
}

void ChildProcess::close_stdout() { close_fd(out_fd_); }
void ChildProcess::close_stderr() { close_fd(err_fd_); }

void ChildProcess::kill_group() {
  if (running()) ::kill(-pid_, SIGKILL);
}

int ChildProcess::wait() {
  if (pid_ <= 0 || reaped_) return status_;
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  ::kill(-pid_, SIGKILL);  // what it left running in its group
  while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  unregister_group(group_slot_);
  return status_;
}

void ChildProcess::release() {
  if (!try_reap()) reaped_ = true;
  unregister_group(group_slot_);
}

bool ChildProcess::try_reap() {
  if (pid_ <= 0 || reaped_) return true;
  // Exited? Looked at without reaping: until it is reaped its PID, and so its group's, cannot be
  // reused, so whatever it left running in its group can be ended first.
  siginfo_t info{};
  const int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  if (rc == 0 && info.si_pid == 0) return false;  // still running
  if (rc == 0) {
    ::kill(-pid_, SIGKILL);
  } else if (errno != ECHILD) {
    return false;
  }
  const pid_t got = ::waitpid(pid_, &status_, WNOHANG);
  if (got == pid_ || (got < 0 && errno == ECHILD)) {
    reaped_ = true;
    unregister_group(group_slot_);
  }
  return reaped_;
}

bool ChildProcess::wait_for(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!try_reap()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int slice = static_cast<int>(std::min<long long>(left.count(), 20));
    if (exit_fd_ >= 0) {
      pollfd p{exit_fd_, POLLIN, 0};
      ::poll(&p, 1, slice);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(slice));
    }
  }
  return true;
}

char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2] : '?';
}

bool drain_available(int fd, std::string& sink, std::size_t max) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buffer[8192];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) sink.append(buffer, static_cast<std::size_t>(n));
    if (sink.size() > max) {
      sink.resize(max);
      return false;
    }
  }
  return true;
}

namespace {

// Reads one ready stream of a child: what it holds (up to 64 KiB), or its end.
void read_stream(Watched& w, bool is_stdout, ChildOutput& got) {
  const int fd = is_stdout ? w.child->stdout_fd() : w.child->stderr_fd();
  std::string& sink = is_stdout ? got.out : got.err;
  char buffer[16384];
  for (int chunk = 0; chunk < 4; ++chunk) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      sink.append(buffer, static_cast<std::size_t>(n));
      if (static_cast<std::size_t>(n) < sizeof buffer) return;
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    (is_stdout ? got.out_ended : got.err_ended) = true;
    (is_stdout ? w.out : w.err) = false;
    if (is_stdout) {
      w.child->close_stdout();
    } else {
      w.child->close_stderr();
    }
    return;
  }
}

}  // namespace

std::vector<ChildOutput> read_children(std::vector<Watched>& watched,
                                       std::chrono::milliseconds slice) {
  struct Owner {
    std::size_t index;
    int which;  // 0 stdout, 1 stderr, 2 exit
  };
  std::vector<pollfd> fds;
  std::vector<Owner> owners;
  for (std::size_t i = 0; i < watched.size(); ++i) {
    const Watched& w = watched[i];
    if (w.out) {
      fds.push_back({w.child->stdout_fd(), POLLIN, 0});
      owners.push_back({i, 0});
    }
    if (w.err) {
      fds.push_back({w.child->stderr_fd(), POLLIN, 0});
      owners.push_back({i, 1});
    }
    // Its exit is noticed by itself, not by its pipes closing: a process it started may hold them.
    if (w.exit && w.child->exit_fd() >= 0) {
      fds.push_back({w.child->exit_fd(), POLLIN, 0});
      owners.push_back({i, 2});
    }
  }
  std::map<std::size_t, ChildOutput> got;
  const int timeout = static_cast<int>(std::max<long long>(slice.count(), 0));
  const int ready =
      fds.empty() ? (::poll(nullptr, 0, timeout), 0) : ::poll(fds.data(), fds.size(), timeout);
  for (std::size_t f = 0; ready > 0 && f < fds.size(); ++f) {
    if ((fds[f].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    ChildOutput& out = got[owners[f].index];
    out.index = owners[f].index;
    Watched& w = watched[owners[f].index];
    if (owners[f].which == 2) {
      out.exited = true;
      w.exit = false;
    } else if (owners[f].which == 0 ? w.out : w.err) {
      read_stream(w, owners[f].which == 0, out);
    }
  }
  // Without a pidfd, an exit is looked for.
  for (std::size_t i = 0; i < watched.size(); ++i) {
    Watched& w = watched[i];
    if (w.exit && w.child->exit_fd() < 0 && w.child->try_reap()) {
      got[i].index = i;
      got[i].exited = true;
      w.exit = false;
    }
  }
  std::vector<ChildOutput> list;
  list.reserve(got.size());
  for (auto& [index, out] : got) list.push_back(std::move(out));
  return list;
}

void LineBuffer::append(std::string_view data) {
  while (skipping_ && !data.empty()) {
    const std::size_t nl = data.find('\n');
    if (nl == std::string_view::npos) return;
    data.remove_prefix(nl + 1);
    skipping_ = false;
  }
  pending_.append(data);
  // The line not yet ended, past the limit: dropped now, not held until its newline comes.
  const std::size_t last = pending_.rfind('\n');
  const std::size_t tail = last == std::string::npos ? 0 : last + 1;
  if (pending_.size() - tail > max_) {
    pending_.resize(tail);
    skipping_ = true;
    ++dropped_;
  }
}

std::optional<std::string> LineBuffer::next() {
  for (;;) {
    const std::size_t nl = pending_.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    if (nl > max_) {
      pending_.erase(0, nl + 1);
      ++dropped_;
      continue;
    }
    std::string line = pending_.substr(0, nl);
    pending_.erase(0, nl + 1);
    return line;
  }
}

ProcessOutput run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& input, std::chrono::milliseconds timeout,
                          std::size_t max_output, std::chrono::milliseconds reap_limit) {
  ProcessOutput result;
  ChildProcess child;
  if (Expected<void> started = child.start(argv, env, input); !started) {
    result.start_error = started.error();
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<Watched> watched = {{&child, true, true}};
  while (watched[0].out || watched[0].err) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || interrupt_requested()) {
      (left.count() <= 0 ? result.timed_out : result.interrupted) = true;
      child.kill_group();
      break;
    }
    if (child.try_reap()) {
      // Exited: what it wrote is in the pipes; a process it left behind may hold them open.
      if (watched[0].out && !drain_available(child.stdout_fd(), result.out, max_output)) {
        result.overflowed = true;
      }
      if (watched[0].err && !drain_available(child.stderr_fd(), result.err, max_output)) {
        result.overflowed = true;
      }
      break;
    }
    // Short slices, so that an interrupt (and, without a pidfd, an exit) is seen promptly.
    for (const ChildOutput& got :
         read_children(watched, std::min(left, std::chrono::milliseconds(100)))) {
      result.out += got.out;
      result.err += got.err;
    }
    if (result.out.size() > max_output || result.err.size() > max_output) {
      // Output without end (a library that floods stdout): stopped, not collected.
      result.out.resize(std::min(result.out.size(), max_output));
      result.err.resize(std::min(result.err.size(), max_output));
      result.overflowed = true;
      child.kill_group();
      break;
    }
  }
  child.kill_group();  // whatever it left running
  if (!child.wait_for(reap_limit)) {
    result.start_error = fmt::format("process {} could not be ended (state {})", child.pid(),
                                     process_state(child.pid()));
    child.release();  // not waited for again on the way out
    return result;
  }
  const int status = child.status();
  const bool ended_by_us = result.timed_out || result.interrupted || result.overflowed;
  if (WIFEXITED(status) && !ended_by_us) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !ended_by_us) {
    result.term_signal = WTERMSIG(status);
  }
  return result;
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const std::string& o : overrides) {
    const std::size_t eq = o.find('=');
    if (eq == std::string::npos) {
      vars.erase(o);
    } else {
      vars[o.substr(0, eq)] = o.substr(eq + 1);
    }
  }
  std::vector<std::string> env;
  env.reserve(vars.size());
  for (const auto& [key, value] : vars) {
    std::string entry = key;
    entry += '=';
    entry += value;
    env.push_back(std::move(entry));
  }
  return env;
}

std::string self_executable_path() {
  char buffer[PATH_MAX + 1] = {};
  const ssize_t n = ::readlink("/proc/self/exe", buffer, PATH_MAX);
  if (n <= 0) return "";
  return std::string(buffer, static_cast<std::size_t>(n));
}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (int s : kInterruptSignals) sigaddset(&action.sa_mask, s);
  action.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR at once
  for (int s : kInterruptSignals) ::sigaction(s, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
}

bool interrupt_requested() { return g_interrupt_signal != 0; }
int interrupt_signal() { return g_interrupt_signal; }

namespace {

// Linux's signals, by name: sigabbrev_np would say the same, but it came in glibc 2.32 and the
// distribution's binaries need 2.28 at most (docs/images.md).
struct SignalName {
  int signal;
  const char* name;
};
constexpr std::array<SignalName, 31> kSignalNames = {{
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGSTKFLT, "SIGSTKFLT"},
    {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},
    {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
    {SIGPOLL, "SIGPOLL"}, {SIGPWR, "SIGPWR"},       {SIGSYS, "SIGSYS"},
}};

}  // namespace

std::string signal_name(int signal) {
  for (const SignalName& s : kSignalNames) {
    if (s.signal == signal) return s.name;
  }
  return "signal " + std::to_string(signal);
}

}  // namespace precision_probe
