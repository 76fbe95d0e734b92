// The image's PyTorch read from its files (probe/facts/torch_files): where it is looked for, what
// version.py, the nvidia-* wheels' headers and LibTorch's build-version say; nothing imported.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "binary.hpp"
#include "strings/strings.hpp"
#include "fakes.hpp"
#include "probe/facts/image_reader.hpp"
#include "probe/facts/torch_files.hpp"

namespace pp = precision_probe;

namespace {

constexpr const char* kVersionPy =
    "__version__ = '2.11.0+cu130'\n"
    "debug = False\n"
    "cuda: Optional[str] = '13.0'\n"
    "git_version = 'abc123'\n"
    "hip: Optional[str] = None\n"
    "xpu: Optional[str] = None\n";

// A python3 at `prefix`/bin with torch in its site-packages, cuDNN and NCCL from the wheels.
pp::testing::FakeSystem image_with_python(const std::string& prefix, const std::string& site) {
  pp::testing::FakeSystem sys;
  sys.env["PATH"] = "/nowhere:" + prefix + "/bin";
  sys.paths.insert(prefix + "/bin/python3");
  sys.paths.insert(prefix + "/lib/python3.12");
  const std::string sp = prefix + "/lib/python3.12/" + site;
  sys.files[sp + "/torch/version.py"] = kVersionPy;
  sys.paths.insert(sp + "/torch/lib/libtorch_cuda.so");
  sys.files[sp + "/nvidia/cudnn/include/cudnn_version.h"] =
      "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 19\n#define CUDNN_PATCHLEVEL 0\n";
  sys.paths.insert(sp + "/nvidia/nccl/lib/libnccl.so.2.27.7");
  return sys;
}

}  // namespace

TEST(TorchFiles, VersionPyAndHeadersAreReadAsWritten) {
  EXPECT_EQ(pp::version_py_value(kVersionPy, "__version__"), "2.11.0+cu130");
  EXPECT_EQ(pp::version_py_value(kVersionPy, "cuda"), "13.0");
  EXPECT_EQ(pp::version_py_value(kVersionPy, "hip"), "");  // None
  EXPECT_EQ(pp::version_py_value(kVersionPy, "rocm"), std::nullopt);
  EXPECT_EQ(pp::version_py_value("cuda_version = '1'\ncuda = \"12.8\"\n", "cuda"), "12.8");
  EXPECT_EQ(pp::header_define("#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n", "NCCL_MINOR"), 27);
  EXPECT_EQ(pp::header_define("#define NCCL_MAJOR_X 2\n", "NCCL_MAJOR"), std::nullopt);
}

TEST(TorchFiles, ThePython3OnPathLeadsToItsSitePackages) {
  for (const char* site : {"site-packages", "dist-packages"}) {
    const pp::testing::FakeSystem sys = image_with_python("/opt/venv", site);
    const auto stack = pp::find_image_torch(sys);
    ASSERT_TRUE(stack) << site;
    EXPECT_TRUE(stack->available) << stack->error;
    EXPECT_EQ(stack->source, "image files");
    EXPECT_EQ(stack->found_by, "python3 (/opt/venv/bin/python3)");
    EXPECT_EQ(stack->location, std::string("/opt/venv/lib/python3.12/") + site + "/torch");
    EXPECT_EQ(stack->libtorch_version, "2.11.0+cu130");
    EXPECT_EQ(stack->cuda_version, (pp::Version{13, 0}));
    EXPECT_TRUE(stack->cuda_built);
    EXPECT_EQ(stack->cudnn_version, "9.19.0");
    EXPECT_EQ(stack->nccl_version, "2.27.7");
    // No fat binaries to read in a fake file system: the arch list is said to be unknown.
    EXPECT_TRUE(stack->arch_list.empty());
    EXPECT_EQ(stack->arch_note.rfind("unknown: the fat binaries could not be read", 0), 0U)
        << stack->arch_note;
    EXPECT_TRUE(stack->read_ms.has_value());
  }
}

TEST(TorchFiles, PrecisionProbeTorchComesFirstAndMustNameAPyTorch) {
  pp::testing::FakeSystem sys = image_with_python("/usr", "dist-packages");
  sys.env["PRECISION_PROBE_TORCH"] = "/mnt/torch-tree";
  sys.files["/mnt/torch-tree/torch/version.py"] =
      "__version__ = '2.9.1+rocm6.4'\ncuda: Optional[str] = None\nhip: Optional[str] = '6.4.4'\n";
  auto stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->found_by, "PRECISION_PROBE_TORCH");
  EXPECT_EQ(stack->location, "/mnt/torch-tree/torch");
  EXPECT_EQ(stack->rocm_version, "6.4.4");
  EXPECT_FALSE(stack->cuda_built);  // a ROCm build runs no CUDA kernel
  sys.env["PRECISION_PROBE_TORCH"] = "/mnt/empty";
  stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_FALSE(stack->available);
  EXPECT_EQ(stack->error,
            "PRECISION_PROBE_TORCH=/mnt/empty: no PyTorch there (no version.py, torch/version.py "
            "or lib/libtorch_cpu.so)");
}

// Where this user may not reach or read PRECISION_PROBE_TORCH, that is what is said, with the place
// that denies it: a directory on the way it may not enter, a version.py it may not read.
TEST(TorchFiles, APrecisionProbeTorchThisUserMayNotReadIsPermissionDenied) {
  pp::testing::FakeSystem sys;
  const std::string uid = std::to_string(::getuid());
  sys.env["PRECISION_PROBE_TORCH"] = "/root/venv/torch/";
  sys.denials["/root/venv/torch"] = "/root";
  auto stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_FALSE(stack->available);
  EXPECT_EQ(stack->error,
            "PRECISION_PROBE_TORCH=/root/venv/torch/: permission denied: /root (this "
            "user, uid " +
                uid + ", may not enter it)");
  sys.env["PRECISION_PROBE_TORCH"] = "/opt/torch";
  sys.paths.insert("/opt/torch/version.py");  // there, and not readable
  sys.denials["/opt/torch/version.py"] = "/opt/torch/version.py";
  stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->error,
            "PRECISION_PROBE_TORCH=/opt/torch: no version in /opt/torch: permission "
            "denied: /opt/torch/version.py (this user, uid " +
                uid + ", may not read it)");
}

TEST(TorchFiles, ALibTorchOnTheLoaderPathIsReadFromItsBuildVersion) {
  pp::testing::FakeSystem sys;
  sys.env["LD_LIBRARY_PATH"] = "/usr/lib:/opt/libtorch/lib";
  sys.paths.insert("/opt/libtorch/lib/libtorch_cpu.so");
  sys.paths.insert("/opt/libtorch/lib/libtorch_cuda.so");
  sys.files["/opt/libtorch/build-version"] = "2.11.0+cu128\n";
  const auto stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->found_by, "the loader path (LD_LIBRARY_PATH)");
  EXPECT_EQ(stack->location, "/opt/libtorch");
  EXPECT_EQ(stack->libtorch_version, "2.11.0+cu128");
  EXPECT_EQ(stack->cuda_version, (pp::Version{12, 8}));
  EXPECT_TRUE(stack->cuda_built);
}

TEST(TorchFiles, TheSearchFollowsSysPathsOrderAndNoneTurnsItOff) {
  pp::testing::FakeSystem sys;
  sys.env["PATH"] = "/fake/bin";  // not on this machine: realpath leaves it as it is
  sys.env["HOME"] = "/home/u";
  sys.paths.insert("/fake/bin/python3");
  for (const char* py : {"python3.9", "python3.12"})
    sys.paths.insert(std::string("/fake/lib/") + py);
  sys.files["/fake/lib/python3.9/site-packages/torch/version.py"] = "__version__ = '1.0.0'\n";
  sys.files["/fake/lib/python3.12/site-packages/torch/version.py"] = "__version__ = '2.0.0'\n";
  auto stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->libtorch_version, "2.0.0");  // 3.12 is newer than 3.9
  sys.paths.insert("/fake/local/lib/python3.12");
  sys.files["/fake/local/lib/python3.12/dist-packages/torch/version.py"] =
      "__version__ = '2.1.0'\n";
  EXPECT_EQ(pp::find_image_torch(sys)->libtorch_version,
            "2.1.0");  // local/lib before lib, as sys.path
  sys.env["PRECISION_PROBE_TORCH"] = "none";
  EXPECT_FALSE(pp::find_image_torch(sys));
  sys.env["PRECISION_PROBE_TORCH"] = "/fake/lib/python3.9/site-packages/torch/";  // a slash too
  EXPECT_EQ(pp::find_image_torch(sys)->location, "/fake/lib/python3.9/site-packages/torch");
}

// PRECISION_PROBE_PYTHON (the wheel's launcher gives its sys.executable): that Python's torch comes
// right after PRECISION_PROBE_TORCH and before the python3 on PATH's; where it has none, the search
// goes on.
TEST(TorchFiles, PrecisionProbePythonComesAfterPrecisionProbeTorchAndBeforePython3) {
  pp::testing::FakeSystem sys = image_with_python("/img", "dist-packages");  // 2.11.0 on PATH
  sys.env["PRECISION_PROBE_PYTHON"] = "/venv/bin/python";
  sys.paths.insert("/venv/bin/python");
  sys.paths.insert("/venv/lib/python3.11");
  sys.files["/venv/lib/python3.11/site-packages/torch/version.py"] = "__version__ = '2.9.1+cpu'\n";
  auto stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_TRUE(stack->available) << stack->error;
  EXPECT_EQ(stack->found_by, "PRECISION_PROBE_PYTHON (/venv/bin/python)");
  EXPECT_EQ(stack->location, "/venv/lib/python3.11/site-packages/torch");
  EXPECT_EQ(stack->libtorch_version, "2.9.1+cpu");
  sys.env["PRECISION_PROBE_TORCH"] = "/img/lib/python3.12/dist-packages";  // it comes first
  EXPECT_EQ(pp::find_image_torch(sys)->libtorch_version, "2.11.0+cu130");
  sys.env.erase("PRECISION_PROBE_TORCH");
  sys.files.erase("/venv/lib/python3.11/site-packages/torch/version.py");  // no torch there
  stack = pp::find_image_torch(sys);
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->found_by, "python3 (/img/bin/python3)");
  EXPECT_EQ(stack->libtorch_version, "2.11.0+cu130");
}

// A PRECISION_PROBE_PYTHON that names no interpreter is bad input, said with the value.
TEST(TorchFiles, APrecisionProbePythonThatNamesNoFileIsSaidWithItsValue) {
  pp::testing::FakeSystem sys = image_with_python("/img", "dist-packages");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"python3",
       "PRECISION_PROBE_PYTHON=python3: not an absolute path (the Python whose torch to check: "
       "sys.executable)"},
      {"/nowhere/bin/python", "PRECISION_PROBE_PYTHON=/nowhere/bin/python: no such file"},
      {"/root/venv/bin/python",
       "PRECISION_PROBE_PYTHON=/root/venv/bin/python: permission denied: /root (this user, uid " +
           std::to_string(::getuid()) + ", may not enter it)"},
  };
  sys.denials["/root/venv/bin/python"] = "/root";
  for (const auto& [value, error] : cases) {
    sys.env["PRECISION_PROBE_PYTHON"] = value;
    const auto stack = pp::find_image_torch(sys);
    ASSERT_TRUE(stack) << value;
    EXPECT_FALSE(stack->available) << value;
    EXPECT_EQ(stack->found_by, "PRECISION_PROBE_PYTHON");
    EXPECT_EQ(stack->error, error);
  }
  sys.env["PRECISION_PROBE_PYTHON"] = "";  // empty is unset
  const auto unset = pp::find_image_torch(sys);
  ASSERT_TRUE(unset);
  EXPECT_EQ(unset->found_by, "python3 (/img/bin/python3)");
}

// Where the named Python's prefixes hold no torch, that interpreter (an ELF executable) is asked
// for its prefixes, as python3 is: a conda base, say, whose python lives elsewhere.
TEST(TorchFiles, ThePythonPrecisionProbePythonNamesIsAskedForItsPrefixes) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string python = dir + "/python";
  ASSERT_EQ(::symlink(PP_FAKE_PYTHON, python.c_str()), 0);  // an ELF executable
  pp::testing::FakeSystem sys;
  sys.env["PRECISION_PROBE_PYTHON"] = python;
  sys.paths.insert(python);
  sys.paths.insert("/conda/lib/python3.12");
  sys.files["/conda/lib/python3.12/site-packages/torch/version.py"] = "__version__ = '2.15.0'\n";
  std::vector<std::string> asked;
  const pp::PythonPrefixes ask = [&asked](const std::string& p) {
    asked.push_back(p);
    return std::optional<std::vector<std::string>>{{"/conda"}};
  };
  const auto stack = pp::search_image_torch(sys, ask);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(asked, std::vector<std::string>{python});
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->found_by, "PRECISION_PROBE_PYTHON (" + python + ")");
  EXPECT_EQ(stack->libtorch_version, "2.15.0");
  EXPECT_TRUE(pp::python_may_be_asked("/opt/conda/bin/python3.12"));
  EXPECT_FALSE(pp::python_may_be_asked("python3"));
  EXPECT_FALSE(pp::python_may_be_asked("/usr/bin/sh"));
}

TEST(TorchFiles, NoPyTorchAnywhereIsNone) {
  pp::testing::FakeSystem sys;
  sys.env["PATH"] = "/usr/bin";
  EXPECT_FALSE(pp::find_image_torch(sys));
}

// --- A real tree with real FIFOs: refused, named, and nothing waits on them
// ------------------------

namespace {

// A file with `text` at `path`, its directories made.
void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

void make_fifo(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
}

// A FIFO without a writer holds a blocking open for ever: should the reader ever open one so, the
// alarm ends this test program (a failure) instead of hanging the suite.
struct HangGuard {
  HangGuard() { ::alarm(30); }
  ~HangGuard() { ::alarm(0); }
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;
  HangGuard(HangGuard&&) = delete;
  HangGuard& operator=(HangGuard&&) = delete;
};

}  // namespace

TEST(TorchFiles, TheRealSystemReadsRegularFilesOnlyAndNamesWhatElseIsThere) {
  const HangGuard guard;
  const auto sys = pp::make_real_system();
  const std::string dir = pp::testing::make_temp_dir();
  write_file(dir + "/plain", "text");
  make_fifo(dir + "/fifo");
  EXPECT_EQ(sys->read_file(dir + "/plain"), "text");
  EXPECT_EQ(sys->read_file(dir + "/fifo"), std::nullopt);  // at once: no writer is waited for
  EXPECT_EQ(sys->read_file(dir), std::nullopt);
  EXPECT_EQ(sys->read_file("/dev/zero"), std::nullopt);  // a device is not read for ever either
  EXPECT_EQ(sys->not_regular(dir + "/fifo"), "a FIFO");
  EXPECT_EQ(sys->not_regular(dir), "a directory");
  EXPECT_EQ(sys->not_regular("/dev/null"), "a character device");
  EXPECT_EQ(sys->not_regular(dir + "/plain"), "");
  EXPECT_EQ(sys->not_regular(dir + "/nothing"), "");
  // /proc files say they are empty; they are read to their end.
  EXPECT_NE(sys->read_file("/proc/self/status").value_or("").find("Name:"), std::string::npos);
}

TEST(TorchFiles, EveryFileOfTheTreeThatIsAFifoIsRefusedAndNamed) {
  const HangGuard guard;
  const auto sys = pp::make_real_system();
  const std::string site = pp::testing::make_temp_dir();
  const std::string torch = site + "/torch";
  write_file(torch + "/version.py", kVersionPy);
  write_file(torch + "/lib/libtorch_cpu.so", "");
  make_fifo(torch + "/lib/libtorch_cuda.so");
  make_fifo(site + "/nvidia/cudnn/include/cudnn_version.h");
  make_fifo(site + "/torchgen/packaged/ATen/native/native_functions.yaml");
  const pp::StackInfo s = pp::read_torch_dir(*sys, torch, "PRECISION_PROBE_TORCH");
  EXPECT_TRUE(s.available) << s.error;
  EXPECT_EQ(s.libtorch_version, "2.11.0+cu130");
  EXPECT_FALSE(s.cuda_built);  // a FIFO is no library to load
  EXPECT_EQ(s.arch_note, "built for CUDA 13.0, but " + torch +
                             "/lib/libtorch_cuda.so is not a regular file (refused)");
  EXPECT_EQ(s.cudnn_version, "");
  EXPECT_EQ(s.refused, (std::vector<std::string>{
                           torch + "/lib/libtorch_cuda.so (a FIFO)",
                           site + "/torchgen/packaged/ATen/native/native_functions.yaml (a FIFO)",
                           site + "/nvidia/cudnn/include/cudnn_version.h (a FIFO)"}));
  // libtorch_python.so (the arch flags) is read only for a CUDA library: a tree of its own.
  const std::string other = pp::testing::make_temp_dir() + "/torch";
  write_file(other + "/version.py", kVersionPy);
  write_file(other + "/lib/libtorch_cuda.so", "not ELF");
  make_fifo(other + "/lib/libtorch_python.so");
  const pp::StackInfo t = pp::read_torch_dir(*sys, other, "PRECISION_PROBE_TORCH");
  EXPECT_TRUE(t.cuda_built);
  EXPECT_EQ(t.refused, std::vector<std::string>{other + "/lib/libtorch_python.so (a FIFO)"});
  EXPECT_EQ(t.arch_note.rfind("unknown: the fat binaries could not be read", 0), 0U) << t.arch_note;
}

TEST(TorchFiles, AVersionPyThatIsAFifoLeavesNoVersionAndSaysWhy) {
  const HangGuard guard;
  const auto sys = pp::make_real_system();
  const std::string torch = pp::testing::make_temp_dir() + "/torch";
  make_fifo(torch + "/version.py");
  const pp::StackInfo s = pp::read_torch_dir(*sys, torch, "PRECISION_PROBE_TORCH");
  EXPECT_FALSE(s.available);
  EXPECT_EQ(s.error, "no version in " + torch + ": " + torch +
                         "/version.py (a FIFO) is not a regular file, refused unread");
  EXPECT_EQ(s.refused, std::vector<std::string>{torch + "/version.py (a FIFO)"});
}

// --- The reading in a child: bounded by the deadline, its answer checked
// ---------------------------

namespace {

// The fake python3 (tests/cli/fake_python.cpp) copied into a directory of its own, told `mode`:
// here it stands for the probe's own executable started as the image reader.
std::string fake_reader(const std::string& mode) {
  const std::string dir = pp::testing::make_temp_dir();
  std::filesystem::copy_file(PP_FAKE_PYTHON, dir + "/reader");
  write_file(dir + "/fake-python-mode", mode + "\n");
  return dir + "/reader";
}

}  // namespace

TEST(ImageReader, AReaderThatNeverAnswersIsKilledAtTheDeadline) {
  const std::string reader = fake_reader("hang");
  const auto start = std::chrono::steady_clock::now();
  const auto s = pp::read_image_torch(reader, start + std::chrono::seconds(1), 1.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->available);
  EXPECT_EQ(s->read_failure, pp::ErrorKind::timed_out);
  EXPECT_EQ(s->error.rfind("the image's PyTorch files were not read within the run's time (1 s, "
                           "--timeout)",
                           0),
            0U)
      << s->error;
  // It was started, and it is gone: killed and reaped, not left behind.
  const std::string started =
      pp::testing::read_all(pp::directory_of(reader) + "/fake-python-started");
  ASSERT_FALSE(started.empty());
  const pid_t pid = static_cast<pid_t>(std::stol(started));
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(ImageReader, AnAnswerThatCannotBeIsNotBelieved) {
  const std::string ok =
      R"({"stack":{"available":true,"source":"image files","libtorch_version":"2.11.0",)"
      R"("location":"/t/torch","found_by":"PRECISION_PROBE_TORCH","read_ms":0}})";
  const auto good = pp::read_image_torch(
      fake_reader("say " + ok), std::chrono::steady_clock::now() + std::chrono::seconds(30), 30.0);
  ASSERT_TRUE(good);
  EXPECT_TRUE(good->available) << good->error;
  EXPECT_EQ(good->location, "/t/torch");
  // A stack found through PRECISION_PROBE_PYTHON is one the reader may send.
  const std::string named_python =
      R"x({"stack":{"available":true,"source":"image files","libtorch_version":"2.9.1",)x"
      R"x("location":"/v/torch","found_by":"PRECISION_PROBE_PYTHON (/v/bin/python)",)x"
      R"x("read_ms":0}})x";
  const auto by_python =
      pp::read_image_torch(fake_reader("say " + named_python),
                           std::chrono::steady_clock::now() + std::chrono::seconds(30), 30.0);
  ASSERT_TRUE(by_python);
  EXPECT_TRUE(by_python->available) << by_python->error;
  EXPECT_EQ(by_python->found_by, "PRECISION_PROBE_PYTHON (/v/bin/python)");
  EXPECT_FALSE(pp::read_image_torch(fake_reader(R"(say {"stack":null})"),
                                    std::chrono::steady_clock::now() + std::chrono::seconds(30),
                                    30.0));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"hello", "not an answer"},
      {R"({"stack":{"available":true,"source":"engine","libtorch_version":"2.11.0","location":"/t","found_by":"PRECISION_PROBE_TORCH","read_ms":0}})",
       "source \"engine\""},
      {R"({"stack":{"available":true,"source":"image files","libtorch_version":"2.11.0","location":"/t","found_by":"PRECISION_PROBE_TORCH","library":"/t/lib/libtorch_cuda.so","read_ms":0}})",
       "what only a loaded library can say"},
      {R"({"stack":{"available":true,"source":"image files","libtorch_version":"2.11.0","location":"/t","found_by":"PRECISION_PROBE_TORCH","arch_list":["sm_9x"],"read_ms":0}})",
       "arch target \"sm_9x\""},
      {R"({"stack":{"available":true,"source":"image files","libtorch_version":"2.11.0","location":"/t","found_by":"PRECISION_PROBE_TORCH","read_ms":1e12}})",
       "read_ms"},
      {R"({"stack":{"available":false,"source":"image files","error":"","read_ms":0}})",
       "without the reason"},
      {R"({"stack":{"available":true,"source":"image files","libtorch_version":"2.11.0","location":"/t","found_by":"PRECISION_PROBE_TORCH","read_failure":"timed_out","read_ms":0}})",
       "a failure of its own reading"},
      {R"({"ask":"python3"})", "not an answer"},
      {R"({"ask":"/bin/sh"})", "not an answer"},
      {R"({"stack":{"available":true,"source":"image files","libtorch_version":"2.11.0","location":"/t","found_by":"PRECISION_PROBE_PYTHON","read_ms":0}})",
       "found_by \"PRECISION_PROBE_PYTHON\""},
  };
  for (const auto& [line, why] : cases) {
    const auto s =
        pp::read_image_torch(fake_reader("say " + line),
                             std::chrono::steady_clock::now() + std::chrono::seconds(30), 30.0);
    ASSERT_TRUE(s) << line;
    EXPECT_FALSE(s->available) << line;
    EXPECT_EQ(s->read_failure, pp::ErrorKind::crashed) << line;
    EXPECT_NE(s->error.find("answered what cannot be"), std::string::npos) << s->error;
    EXPECT_NE(s->error.find(why), std::string::npos) << s->error;
  }
  const auto crashed =
      pp::read_image_torch(fake_reader("unknown mode"),
                           std::chrono::steady_clock::now() + std::chrono::seconds(30), 30.0);
  ASSERT_TRUE(crashed);
  EXPECT_EQ(crashed->read_failure, pp::ErrorKind::crashed);
  EXPECT_NE(crashed->error.find("exited with code 1"), std::string::npos) << crashed->error;
}
