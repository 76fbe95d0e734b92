#pragma once
// The operating system as the probe uses it: environment, small files, device nodes. Behind an
// interface so that every diagnostic can be triggered from a test with a fake.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace precision_probe {

class System {
 public:
  virtual ~System() = default;
  virtual std::optional<std::string> getenv(const std::string& name) const = 0;
  // The whole file (capped at a few MiB), nullopt when it cannot be read. Only a regular file is
  // read, opened so that nothing can block (a FIFO without a writer, a terminal, a device).
  virtual std::optional<std::string> read_file(const std::string& path) const = 0;
  virtual bool exists(const std::string& path) const = 0;
  // What is at `path` when it is there but is not a regular file ("a FIFO", "a directory", "a
  // socket", "a character device", "a block device"), after symbolic links; "" for a regular file
  // or nothing there. A reader refuses such a file, named, rather than wait on it.
  virtual std::string not_regular(const std::string& /*path*/) const { return ""; }
  // Whether this process may open the path for reading and writing (device nodes).
  virtual bool accessible(const std::string& path) const = 0;
  // Where permission is denied on the way to reading `path` (EACCES): the first directory on it
  // that this process may not search, else the path itself; "" when nothing denies it (it can be
  // read, or is not there).
  virtual std::string denied(const std::string& path) const = 0;
  // Names in a directory matching a prefix ("nvidia" in /dev), sorted.
  virtual std::vector<std::string> list_dir(const std::string& dir,
                                            const std::string& prefix) const = 0;
  virtual std::string hostname() const = 0;
  virtual std::string machine() const = 0;         // uname -m
  virtual std::string kernel_release() const = 0;  // uname -r
  virtual bool stdout_is_terminal() const = 0;
  // The terminal's width in columns (0 when stdout is not a terminal or it does not say).
  virtual int terminal_columns() const = 0;
};

std::unique_ptr<System> make_real_system();

// 64 random bits from the kernel (getrandom), for seeds and report ids. Not std::random_device:
// in a static libstdc++ it calls arc4random, which raises the probe's glibc floor to 2.36.
std::uint64_t random_u64();

// Whether a name in /dev is a GPU's device node ("nvidia0", "nvidia1", ...; not nvidiactl,
// nvidia-uvm and the like).
bool is_gpu_device_node(const std::string& name);

}  // namespace precision_probe
