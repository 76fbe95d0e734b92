#include "probe/facts/torch_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "probe/facts/fatbin.hpp"
#include "strings/strings.hpp"
#include "process/process.hpp"

namespace precision_probe {

std::optional<std::string> version_py_value(const std::string& text, const std::string& name) {
  for (const std::string& raw : split(text, '\n')) {
    const std::string line = trim(raw);
    if (!starts_with(line, name)) continue;
    const std::string rest = trim(line.substr(name.size()));
    if (rest.empty() || (rest[0] != '=' && rest[0] != ':')) continue;  // a longer name
    const std::size_t eq = rest.find('=');
    if (eq == std::string::npos) continue;
    const std::string value = trim(rest.substr(eq + 1));
    if (value == "None") return std::string();
    if (value.size() >= 2 && (value[0] == '\'' || value[0] == '"') && value.back() == value[0]) {
      return value.substr(1, value.size() - 2);
    }
  }
  return std::nullopt;
}

std::optional<int> header_define(const std::string& text, const std::string& name) {
  const std::string key = "#define " + name + " ";
  for (const std::string& raw : split(text, '\n')) {
    const std::string line = trim(raw);
    if (!starts_with(line, key)) continue;
    if (const auto n = parse_int(trim(line.substr(key.size())))) return static_cast<int>(*n);
  }
  return std::nullopt;
}

namespace {

std::string without_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string parent_of(const std::string& given) {
  const std::string path = without_slash(given);
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "2.11.0+cu130" -> 13.0, "+cu128" -> 12.8 (the tag is major and minor written together); none
// for "+cpu" or no suffix.
std::optional<Version> cuda_of_local_version(const std::string& version) {
  const std::size_t plus = version.find("+cu");
  if (plus == std::string::npos) return std::nullopt;
  const std::string digits = version.substr(plus + 3);
  const auto tag = digits.size() >= 2 && digits.size() <= 4 ? parse_int(digits) : std::nullopt;
  if (!tag || digits[0] < '0' || digits[0] > '9') return std::nullopt;
  return Version{static_cast<int>(*tag / 10), static_cast<int>(*tag % 10)};
}

// A file of the tree that is there but is not a regular file (a FIFO, a device, a directory) is
// refused unread and named in `s.refused`: a reader of it would wait for ever (docs/images.md).
bool refuse(const System& sys, const std::string& path, std::vector<std::string>& refused) {
  const std::string what = sys.not_regular(path);
  if (what.empty()) return false;
  refused.push_back(path + " (" + what + ")");
  return true;
}

// The text of a file of the tree: nullopt where it is not there, cannot be read or is refused.
std::optional<std::string> tree_file(const System& sys, const std::string& path, StackInfo& s) {
  if (refuse(sys, path, s.refused)) return std::nullopt;
  return sys.read_file(path);
}

// The version in a header ("9.19.0" from cudnn_version.h's CUDNN_MAJOR/MINOR/PATCHLEVEL), or in a
// library's file name ("libnccl.so.2.27.7").
std::string library_version(const System& sys, const std::vector<std::string>& headers,
                            const std::string& prefix, const std::vector<std::string>& lib_dirs,
                            const std::string& lib_name, StackInfo& s) {
  for (const std::string& header : headers) {
    const auto text = tree_file(sys, header, s);
    if (!text) continue;
    const auto major = header_define(*text, prefix + "_MAJOR");
    const auto minor = header_define(*text, prefix + "_MINOR");
    auto patch = header_define(*text, prefix + "_PATCHLEVEL");
    if (!patch) patch = header_define(*text, prefix + "_PATCH");
    if (major && minor) return fmt::format("{}.{}.{}", *major, *minor, patch.value_or(0));
  }
  for (const std::string& dir : lib_dirs) {
    for (const std::string& name : sys.list_dir(dir, lib_name + ".")) {
      std::string version = name.substr(lib_name.size() + 1);
      if (std::count(version.begin(), version.end(), '.') >= 1) return version;
    }
  }
  return "";
}

// The GPU targets of libtorch_cuda.so, checked against the arch flags of libtorch_python.so.
void read_targets(const System& sys, const std::string& lib, StackInfo& s) {
  const FatbinSummary fat = read_fatbin_summary(lib + "/libtorch_cuda.so");
  const std::string python_lib = lib + "/libtorch_python.so";
  const std::optional<std::string> flags =
      refuse(sys, python_lib, s.refused) ? std::nullopt : read_arch_flags(python_lib);
  if (fat.found && fat.error.empty() && (!fat.sass.empty() || !fat.ptx.empty())) {
    const FatbinArchList list = fatbin_arch_list(fat);
    for (const ArchTarget& t : list.main) s.arch_list.push_back(t.to_string());
    for (const ArchTarget& t : list.extras) s.arch_extras.push_back(t.to_string());
    const std::string main = arch_list_string(list.main);
    s.arch_note = fmt::format("read from the fat binaries of libtorch_cuda.so ({} containers)",
                              fat.containers);
    if (flags && *flags != main) {
      s.arch_note +=
          fmt::format("; the build's arch flags (libtorch_python.so) say \"{}\"", *flags);
    } else if (flags) {
      s.arch_note += "; the build's arch flags agree";
    }
    return;
  }
  const std::string why = !fat.error.empty() ? fat.error
                          : fat.found        ? "it holds no GPU code"
                                             : "no fat binaries in libtorch_cuda.so";
  if (flags) {
    for (const std::string& t : split(*flags, ' ')) s.arch_list.push_back(t);
    s.arch_note =
        "from the build's arch flags (libtorch_python.so): the fat binaries could not be "
        "read (" +
        why + ")";
  } else {
    s.arch_note = "unknown: the fat binaries could not be read (" + why + ")";
  }
}

// A directory that holds a PyTorch: the package itself, its parent, or a LibTorch root.
std::optional<std::string> torch_dir_in(const System& sys, const std::string& given) {
  const std::string dir = without_slash(given);
  if (sys.exists(dir + "/version.py")) return dir;
  if (sys.exists(dir + "/torch/version.py")) return dir + "/torch";
  if (sys.exists(dir + "/lib/libtorch_cpu.so")) return dir;
  return std::nullopt;
}

// The Python versions a prefix has ("python3.12"), the newest first (3.12 before 3.9).
std::vector<std::string> python_versions(const System& sys, const std::string& lib) {
  std::vector<std::string> pythons = sys.list_dir(lib, "python3.");
  auto minor = [](const std::string& name) { return parse_int(name.substr(8)).value_or(-1); };
  std::sort(pythons.begin(), pythons.end(),
            [&](const std::string& a, const std::string& b) { return minor(a) > minor(b); });
  return pythons;
}

// Where a python3 of `prefix` imports torch from, in its sys.path's order: /usr/local's
// dist-packages before /usr's, its own version's (`python`, "python3.12") where known.
std::optional<std::string> torch_under_prefix(const System& sys, const std::string& prefix,
                                              const std::string& python) {
  std::vector<std::string> dirs;
  for (const std::string& lib : {prefix + "/local/lib", prefix + "/lib"}) {
    const std::vector<std::string> pythons =
        python.empty() ? python_versions(sys, lib) : std::vector<std::string>{python};
    for (const std::string& py : pythons) {
      const std::string base = fmt::format("{}/{}/", lib, py);
      dirs.push_back(base + "dist-packages");
      dirs.push_back(base + "site-packages");
    }
  }
  dirs.push_back(prefix + "/lib/python3/dist-packages");  // Debian's packaged modules
  for (const std::string& dir : dirs) {
    if (sys.exists(dir + "/torch/version.py")) return dir + "/torch";
  }
  return std::nullopt;
}

// The files and the question of one search: the refusals made before a stack was found (a FIFO
// named python3) go with the stack found, or make one that says so.
struct Search {
  const System& sys;
  const PythonPrefixes& ask;
  std::vector<std::string> refused;
};

// Whether the file starts as an ELF executable does: a real interpreter, not a shim script (pyenv's
// shims are bash: asking one costs 60 ms). Opened so that a FIFO or a device cannot hold it.
bool is_elf(Search& search, const std::string& path) {
  if (refuse(search.sys, path, search.refused)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  char magic[4] = {};
  const bool elf = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, magic, 4) == 4 &&
                   magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
  ::close(fd);
  return elf;
}

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : path;
}

// "permission denied: ..." where this user may not reach or read one of `paths` (the first such
// place named), else "".
std::string permission_denied(const System& sys, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    const std::string where = sys.denied(path);
    if (where.empty()) continue;
    return fmt::format("permission denied: {} (this user, uid {}, may not {} it)",
                       printable_path(where), ::getuid(), where == path ? "read" : "enter");
  }
  return "";
}

// The torch a Python interpreter (`python`, a path) imports: its own prefix's site-packages (and
// the prefix its link leads to), the user's site first; then the interpreter's answer to -I -S
// (nothing imported) where none of those holds torch and it is an ELF executable whose name
// python_may_be_asked() accepts. `found_by` names it in the stack.
std::optional<StackInfo> torch_of_interpreter(Search& search, const std::string& python,
                                              const std::string& found_by) {
  const System& sys = search.sys;
  // Its version from where the link leads ("python3.12"), as its sys.path has it.
  const std::string real = real_path(python);
  const std::string name = real.substr(real.find_last_of('/') + 1);
  const std::string version = starts_with(name, "python3.") ? name : "";
  std::vector<std::string> prefixes = {parent_of(parent_of(python)), parent_of(parent_of(real))};
  // The user's site comes first in sys.path.
  if (const auto home = sys.getenv("HOME"); home && !home->empty() && !version.empty()) {
    const std::string user = fmt::format("{}/.local/lib/{}/site-packages", *home, version);
    if (sys.exists(user + "/torch/version.py"))
      return read_torch_dir(sys, user + "/torch", found_by);
  }
  for (const std::string& prefix : prefixes) {
    if (const auto dir = torch_under_prefix(sys, prefix, version)) {
      return read_torch_dir(sys, *dir, found_by);
    }
  }
  if (!python_may_be_asked(python) || !is_elf(search, real)) return std::nullopt;
  const std::optional<std::vector<std::string>> asked = search.ask(python);
  for (const std::string& prefix : asked.value_or(std::vector<std::string>{})) {
    if (const auto dir = torch_under_prefix(sys, prefix, version))
      return read_torch_dir(sys, *dir, found_by);
  }
  return std::nullopt;
}

// The python3 on PATH's torch.
std::optional<StackInfo> torch_of_python(Search& search) {
  const System& sys = search.sys;
  for (const std::string& dir : split(sys.getenv("PATH").value_or(""), ':')) {
    if (!dir.empty() && sys.exists(dir + "/python3")) {
      const std::string python = dir + "/python3";
      return torch_of_interpreter(search, python, "python3 (" + python + ")");
    }
  }
  return std::nullopt;
}

// PRECISION_PROBE_PYTHON=INTERPRETER (the wheel's launcher gives its own, sys.executable): that
// Python's torch, looked for as python3's is; nullopt where it has none (the search goes on). A
// value that names no interpreter gives a stack that is not available, with the reason in
// `error` (bad input, as a PRECISION_PROBE_TORCH that names no PyTorch).
std::optional<StackInfo> torch_of_named_python(Search& search, const std::string& python) {
  const System& sys = search.sys;
  std::string why;
  if (!starts_with(python, "/")) {
    why = "not an absolute path (the Python whose torch to check: sys.executable)";
  } else if (!sys.exists(python)) {
    why = permission_denied(sys, {python});
    if (why.empty()) why = "no such file";
  } else if (const std::string what = sys.not_regular(python); !what.empty()) {
    why = "not a Python interpreter but " + what;
  }
  if (why.empty()) {
    return torch_of_interpreter(search, python, "PRECISION_PROBE_PYTHON (" + python + ")");
  }
  StackInfo s;
  s.source = "image files";
  s.found_by = "PRECISION_PROBE_PYTHON";
  s.location = python;
  s.error = fmt::format("PRECISION_PROBE_PYTHON={}: {}", printable_path(python), why);
  return s;
}

// PRECISION_PROBE_TORCH=DIR: its PyTorch, or a stack that says why there is none there.
StackInfo torch_named(const System& sys, const std::string& named) {
  if (const auto torch = torch_dir_in(sys, named)) {
    StackInfo s = read_torch_dir(sys, *torch, "PRECISION_PROBE_TORCH");
    if (!s.available)
      s.error = fmt::format("PRECISION_PROBE_TORCH={}: {}", printable_path(named), s.error);
    return s;
  }
  StackInfo s;
  s.source = "image files";
  s.found_by = "PRECISION_PROBE_TORCH";
  s.location = named;
  const std::string dir = without_slash(named);
  const std::string denied = permission_denied(
      sys, {dir, dir + "/version.py", dir + "/torch/version.py", dir + "/lib/libtorch_cpu.so"});
  s.error = !denied.empty()
                ? fmt::format("PRECISION_PROBE_TORCH={}: {}", printable_path(named), denied)
                : fmt::format(
                      "PRECISION_PROBE_TORCH={}: no PyTorch there (no version.py, "
                      "torch/version.py or lib/libtorch_cpu.so)",
                      printable_path(named));
  return s;
}

// "no version in DIR ...": what kept the version from being read.
std::string no_version(const System& sys, const std::string& dir, const StackInfo& s) {
  if (!s.refused.empty()) {
    return fmt::format("no version in {}: {} is not a regular file, refused unread", dir,
                       s.refused.front());
  }
  const std::string denied = permission_denied(sys, {dir + "/version.py", dir + "/build-version"});
  if (!denied.empty()) return "no version in " + dir + ": " + denied;
  return "no version in " + dir + " (version.py or build-version)";
}

}  // namespace

bool python_may_be_asked(const std::string& python) {
  const std::string name = python.substr(python.find_last_of('/') + 1);
  return starts_with(python, "/") && starts_with(name, "python") &&
         printable(python, python.size()) == python;
}

std::optional<std::vector<std::string>> ask_python_prefixes(const std::string& python,
                                                            std::chrono::milliseconds limit) {
  const ProcessOutput out = run_process(
      {python, "-I", "-S", "-c", "import sys; print(sys.prefix); print(sys.exec_prefix)"}, {}, "",
      limit, 4096);
  if (out.exit_code != 0) return std::nullopt;
  std::vector<std::string> prefixes;
  for (const std::string& line : split(out.out, '\n')) {
    if (!trim(line).empty()) prefixes.push_back(trim(line));
  }
  return prefixes;
}

StackInfo read_torch_dir(const System& sys, const std::string& given, const std::string& found_by) {
  const std::string dir = without_slash(given);
  StackInfo s;
  s.source = "image files";
  s.location = dir;
  s.found_by = found_by;
  std::string lib = dir + "/lib";
  std::string site = parent_of(dir);
  if (const auto text = tree_file(sys, dir + "/version.py", s)) {
    s.libtorch_version = version_py_value(*text, "__version__").value_or("");
    s.cuda_version = Version::parse(version_py_value(*text, "cuda").value_or(""));
    s.rocm_version = version_py_value(*text, "hip").value_or("");
  } else if (const auto build = tree_file(sys, dir + "/build-version", s)) {
    s.libtorch_version = trim(*build);  // a LibTorch archive: "2.11.0+cu130"
    s.cuda_version = cuda_of_local_version(s.libtorch_version);
    site = dir;
  }
  if (s.libtorch_version.empty()) {
    s.error = no_version(sys, dir, s);
    return s;
  }
  s.available = true;
  const std::string cuda_lib = lib + "/libtorch_cuda.so";
  const bool cuda_lib_there = sys.exists(cuda_lib) && !refuse(sys, cuda_lib, s.refused);
  s.cuda_built = s.cuda_version && cuda_lib_there;
  (void)refuse(sys, lib + "/libtorch_cpu.so", s.refused);  // the engine would load it
  // The engine compares its operators with this file (a wheel has it, a LibTorch archive not).
  (void)refuse(sys, parent_of(dir) + "/torchgen/packaged/ATen/native/native_functions.yaml",
               s.refused);
  std::vector<std::string> headers;
  std::vector<std::string> nccl_headers;
  for (const char* wheel : {"cudnn", "cu13", "cu12"}) {
    headers.push_back(fmt::format("{}/nvidia/{}/include/cudnn_version.h", site, wheel));
  }
  for (const char* wheel : {"nccl", "cu13", "cu12"}) {
    nccl_headers.push_back(fmt::format("{}/nvidia/{}/include/nccl.h", site, wheel));
  }
  s.cudnn_version =
      library_version(sys, headers, "CUDNN", {lib, site + "/nvidia/cudnn/lib"}, "libcudnn.so", s);
  s.nccl_version =
      library_version(sys, nccl_headers, "NCCL", {lib, site + "/nvidia/nccl/lib"}, "libnccl.so", s);
  if (s.cuda_built) read_targets(sys, lib, s);
  if (s.cuda_version && !s.cuda_built) {
    s.arch_note = "built for CUDA " + s.cuda_version->to_string() + ", but " + cuda_lib +
                  (sys.exists(cuda_lib) ? " is not a regular file (refused)" : " is missing");
  }
  return s;
}

std::optional<StackInfo> find_image_torch(const System& sys) {
  const PythonPrefixes ask = [](const std::string& python) {
    return ask_python_prefixes(python, std::chrono::milliseconds(2000));
  };
  return search_image_torch(sys, ask);
}

std::optional<StackInfo> search_image_torch(const System& sys, const PythonPrefixes& ask) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<StackInfo> found;
  Search search{sys, ask, {}};
  const std::optional<std::string> named = sys.getenv("PRECISION_PROBE_TORCH");
  if (named && *named == "none") return std::nullopt;  // asked not to look
  if (named && !named->empty()) {
    found = torch_named(sys, *named);  // and nowhere else
  } else {
    const std::string python = sys.getenv("PRECISION_PROBE_PYTHON").value_or("");
    if (!python.empty()) found = torch_of_named_python(search, python);
    if (!found) found = torch_of_python(search);
  }
  if (!found && !(named && !named->empty())) {
    for (const std::string& dir : split(sys.getenv("LD_LIBRARY_PATH").value_or(""), ':')) {
      if (dir.empty() || !sys.exists(without_slash(dir) + "/libtorch_cpu.so")) continue;
      found = read_torch_dir(sys, parent_of(dir), "the loader path (LD_LIBRARY_PATH)");
      break;
    }
  }
  if (!found && !search.refused.empty()) {
    // Nothing found, but something refused on the way (a FIFO named python3): said, not hidden.
    found = StackInfo{};
    found->source = "image files";
    found->error = "no PyTorch found; refused unread: " + join(search.refused, ", ");
  }
  if (found) {
    found->refused.insert(found->refused.begin(), search.refused.begin(), search.refused.end());
    found->read_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return found;
}

}  // namespace precision_probe
