#pragma once
// Child processes: spawn with pipes, read with a deadline, kill a whole process group.
// Used by the engine client (one worker per device) and by the tests that run the binary.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precision_probe/expected.hpp"

namespace precision_probe {

// A spawned child. Its stdin receives `input` and is then closed; stdout and stderr are pipes.
// A child can also be started before its input is known (start without input, send_input later):
// the engine's workers load LibTorch while the probe is still asking the driver what to plan.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&&) = delete;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();  // kills a child still running with its group, and reaps it (waiting 2 s at
                    // most)

  // Starts `argv[0]` (a path) with `env` (KEY=VALUE entries) in its own process group; where it
  // cannot be started, why.
  Expected<void> start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& input);
  // The same with stdin left open until send_input().
  Expected<void> start(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  // Writes `input` to the child's stdin and closes it (once; later calls do nothing). A child that
  // has exited without reading it is not an error: its output says what happened.
  void send_input(const std::string& input);
  // Writes `input` to the child's stdin and leaves it open for more (an engine session gets each
  // plan as it comes); send_input("") closes it.
  void write_input(const std::string& input);

  pid_t pid() const { return pid_; }
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  // Readable once the child has exited (a pidfd), so that its exit is seen even when a grandchild
  // holds its pipes open; -1 where the kernel has no pidfd_open (then poll try_reap()).
  int exit_fd() const { return exit_fd_; }
  void close_stdout();
  void close_stderr();

  // Sends SIGKILL to the child's process group (the child and whatever it started).
  void kill_group();
  // Reaps the child if it has exited, without waiting; true once it is reaped.
  bool try_reap();
  // Waits up to `limit` for the child to exit; true once it is reaped. A child stuck in the
  // kernel (uninterruptible sleep) may never exit, even after SIGKILL.
  bool wait_for(std::chrono::milliseconds limit);
  // Waits for the child to exit; returns the raw wait status (see exit_code/term_signal).
  int wait();
  int status() const { return status_; }
  // Stops tracking a child that has been killed (kill_group): its exit (the kernel and the driver
  // tearing down its memory and CUDA context) is not waited for; the system reaps it.
  void release();
  bool running() const { return pid_ > 0 && !reaped_; }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int exit_fd_ = -1;
  int group_slot_ = -1;  // in the table the signal handler kills from
  bool reaped_ = false;
  int status_ = 0;
};

// Reads what `fd` holds now, without waiting (it is made non-blocking), appending to `sink` up to
// `max` bytes in all; false when there was more.
bool drain_available(int fd, std::string& sink, std::size_t max);

// Reading children's output: the one loop of the program's callers (the engine's sessions, a driver
// agent's telemetry, run_process) is theirs, the waiting and reading in it this. A child's streams
// that are open, watched.
struct Watched {
  ChildProcess* child = nullptr;
  bool out = true;   // its stdout is open (cleared, and the pipe closed, at its end)
  bool err = true;   // its stderr is open
  bool exit = true;  // its exit not yet reported (looked for even once both streams ended)
};
// What one watched child had: bytes of its streams, the end of one (EOF or an error), its exit.
struct ChildOutput {
  std::size_t index = 0;  // in `watched`
  std::string out, err;
  bool out_ended = false, err_ended = false;
  bool exited = false;  // its pidfd says it exited (where the kernel has one; else try_reap)
};
// Waits up to `slice` for any watched stream or exit, then reads what every ready one holds (a
// stream whose end came is closed and its flag cleared; an exit is reported once): the children
// that had something.
std::vector<ChildOutput> read_children(std::vector<Watched>& watched,
                                       std::chrono::milliseconds slice);

// A child's stream cut into lines: append what was read, take the complete lines. A line longer
// than `max` is dropped whole (its rest up to the next newline too), and counted.
class LineBuffer {
 public:
  explicit LineBuffer(std::size_t max) : max_(max) {}
  void append(std::string_view data);
  std::optional<std::string> next();  // the next complete line (without its newline)
  std::size_t dropped() const { return dropped_; }
  std::size_t pending() const { return pending_.size(); }  // bytes of a line not yet ended

 private:
  std::size_t max_;
  std::string pending_;
  bool skipping_ = false;  // inside a line too long, until its newline
  std::size_t dropped_ = 0;
};

// The state letter of a process in /proc/PID/stat ('R', 'S', 'D' for uninterruptible sleep,
// 'Z'...), or '?' when it cannot be read.
char process_state(pid_t pid);

struct ProcessOutput {
  int exit_code = -1;   // -1 when killed by a signal or timed out
  int term_signal = 0;  // the signal that ended it, 0 otherwise
  bool timed_out = false;
  bool interrupted = false;  // SIGINT/SIGTERM/SIGHUP/SIGQUIT arrived (install_signal_handlers)
  bool overflowed = false;   // it wrote more than max_output to stdout or stderr: it was ended
  std::string out;
  std::string err;
  std::string start_error;  // set when it could not be started
};

// Runs a command to completion, `timeout`, an interrupt, or more than `max_output` bytes on
// stdout or stderr (the child is then killed with its process group), collecting both. A child
// that has not exited `reap_limit` after that (stuck in the kernel) is left to the system, not
// waited for: `start_error` says so.
ProcessOutput run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& input, std::chrono::milliseconds timeout,
                          std::size_t max_output = std::size_t{16} << 20U,
                          std::chrono::milliseconds reap_limit = std::chrono::seconds(2));

// The current environment as KEY=VALUE entries, with `overrides` applied (an override with an
// empty value after '=' sets the variable to "", "KEY" alone removes it).
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

// The path of the running executable (/proc/self/exe), or "" when unknown.
std::string self_executable_path();

// The probe's signals, set once in main(): SIGINT, SIGTERM, SIGHUP and SIGQUIT set a flag that
// the engine's wait loop sees; it then stops its workers and the probe reports what it has (exit
// 5). A second such signal ends the probe at once, killing every child's process group and
// removing any temporary output file first.
// SIGPIPE and SIGXFSZ are ignored, so that a closed pipe or a file-size limit is a write error the
// probe reports (workers get every signal's default back).
void install_signal_handlers();
bool interrupt_requested();
int interrupt_signal();  // the signal received, 0 if none

// "SIGSEGV" for 11.
std::string signal_name(int signal);

}  // namespace precision_probe
