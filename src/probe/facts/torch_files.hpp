#pragma once
// The PyTorch of the image the probe runs in, read from its files alone: nothing is imported and
// no LibTorch is loaded (importing torch takes seconds). docs/images.md tells where it looks and
// what it reads.
//
// Where: PRECISION_PROBE_TORCH=DIR (a torch package, a directory holding one, or a LibTorch
// root); else the site-packages and dist-packages of the Python PRECISION_PROBE_PYTHON names (the
// wheel's launcher names its own), then of the python3 on PATH (the usual places of its prefix,
// else the interpreter asked with -I -S, which imports nothing); else a LibTorch on the loader
// path (LD_LIBRARY_PATH).
// What: the version and the CUDA or ROCm it was built for (torch/version.py, or LibTorch's
// build-version), cuDNN and NCCL (the nvidia-* wheels' headers, or the libraries' file names), and
// the GPU targets of libtorch_cuda.so's fat binaries (probe/facts/fatbin), checked against the arch
// flags compiled into libtorch_python.so.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "precision_probe/results.hpp"
#include "probe/platform/system.hpp"

namespace precision_probe {

// Asks the python3 at `python` (a path) for its prefixes, sys.prefix and sys.exec_prefix; nullopt
// where it gave none.
using PythonPrefixes =
    std::function<std::optional<std::vector<std::string>>(const std::string& python)>;

// The image's stack (source "image files"), or nullopt where no PyTorch is found. A
// PRECISION_PROBE_TORCH that names no PyTorch, or a PRECISION_PROBE_PYTHON that names no
// interpreter, gives a stack that is not available, with the reason in `error` (the caller makes
// it a usage error). Every file is read through `system`
// (System::read_file opens nothing that can block); one that is there but is not a regular file
// (a FIFO, a device) is refused unread and named in `refused`. The search itself can still sleep
// in the kernel on a hung network mount: the probe runs it in a child (image_reader.hpp).
std::optional<StackInfo> search_image_torch(const System& system, const PythonPrefixes& ask);
// The same, python3 asked with ask_python_prefixes (2 s at most).
std::optional<StackInfo> find_image_torch(const System& system);

// Whether `python` may be asked for its prefixes: an absolute path, printable, whose last
// component starts with "python" (python3, python3.12, a venv's python).
bool python_may_be_asked(const std::string& python);

// `python -I -S -c ...` (isolated, no site: nothing is imported) run for `limit` at most: the
// prefixes it printed, nullopt where it did not exit 0.
std::optional<std::vector<std::string>> ask_python_prefixes(const std::string& python,
                                                            std::chrono::milliseconds limit);

// The stack of the torch package (or LibTorch root) at `dir`; `found_by` says how it was found.
StackInfo read_torch_dir(const System& system, const std::string& dir, const std::string& found_by);

// torch/version.py's assignments: `__version__ = '2.11.0+cu130'`, `cuda: Optional[str] =
// '13.0'`, `hip = None`. The quoted value of `name`, "" for None, nullopt when it is not there.
std::optional<std::string> version_py_value(const std::string& text, const std::string& name);

// "#define NAME 9" in a header: the number, or nullopt.
std::optional<int> header_define(const std::string& text, const std::string& name);

}  // namespace precision_probe
