// The aarch64 engine (the distribution's build, `./dev dist`) run directly under qemu-user:
// `qemu-aarch64-static -L ROOT ENGINE --worker cpu --libtorch LIB`, a plan on stdin, against
// PyPI's aarch64 torch, with ROOT Debian's arm64 C library, libgcc_s, libstdc++ and libgomp
// (`./dev aarch64-test` fetches them). Its answers are read back by the probe's reader and held
// to the x86_64 engine's (this build's) on PyPI's x86_64 torch of the same release, on the same
// plan and seed. CPU only, emulated: no Grace machine ran it (docs/images.md). Registered where
// PP_AARCH64_ENGINE is named (tests/CMakeLists.txt); whatever it needs that is not there fails
// it, never skips it.

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "binary.hpp"
#include "wire/protocol.hpp"
#include "fakes.hpp"
#include "process/process.hpp"
#include "worker_lines.hpp"

namespace pp = precision_probe;
using pp::Mode;
using pp::testing::cpu_plan;
using pp::testing::read_lines;

namespace {

// Each is set by tests/CMakeLists.txt from the configuration (./dev aarch64-test).
constexpr const char* kEngine = PP_AARCH64_ENGINE;
constexpr const char* kTorch = PP_AARCH64_TORCH_SITE;  // holds torch/lib/libtorch_cpu.so
constexpr const char* kRoot = PP_AARCH64_ROOT;
constexpr const char* kQemu = PP_QEMU_AARCH64;
constexpr const char* kX86Torch = PP_AARCH64_X86_TORCH_SITE;  // the same release for x86_64
constexpr const char* kRelease = PP_AARCH64_RELEASE;

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// What this test needs that is not there, said with what to do; "" when all is.
std::string missing() {
  const std::string run = " (./dev aarch64-test builds and fetches everything)";
  if (!is_file(kEngine)) return std::string("no aarch64 engine at '") + kEngine + "'" + run;
  if (std::string(kQemu).empty())
    return "no qemu-aarch64-static (apt-get install qemu-user-static)";
  if (!is_file(std::string(kRoot) + "/lib/ld-linux-aarch64.so.1")) {
    return std::string("no arm64 root at '") + kRoot + "'" + run;
  }
  if (!is_file(std::string(kTorch) + "/torch/lib/libtorch_cpu.so")) {
    return std::string("no aarch64 LibTorch at '") + kTorch + "'" + run;
  }
  if (!is_file(std::string(kX86Torch) + "/torch/lib/libtorch_cpu.so")) {
    return std::string("no x86_64 LibTorch ") + kRelease + " to compare with at '" + kX86Torch +
           "' (PP_TEST_TORCH names none of that release)";
  }
  return "";
}

// The engine's ELF header says AArch64 (e_machine 183): not an x86_64 engine run by mistake.
bool is_aarch64_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[20] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);  // NOLINT: bytes of a file
  return in.gcount() == sizeof header && header[0] == 0x7f && header[1] == 'E' &&
         header[4] == 2 /* 64-bit */ && header[18] == 183 && header[19] == 0;
}

// qemu's -L prefix is looked in first for every absolute path the guest opens. Debian 12's qemu
// (7.2) shows the guest the host's /proc/cpuinfo, an x86 one, on which LibTorch's cpuinfo
// library crashes (a NULL dereference as it starts, before any check): the root given to qemu is
// ROOT's directories with an aarch64 /proc/cpuinfo of this machine's CPU count, each a core of
// the recorded Grace's (tests/unit/grace-cpuinfo.txt). Removed when the test program exits.
std::string emulation_root() {
  const std::string dir = pp::testing::make_temp_dir();
  if (dir.empty()) return "";
  for (const char* top : {"lib", "usr", "etc"}) {
    if (::symlink((std::string(kRoot) + "/" + top).c_str(), (dir + "/" + top).c_str()) != 0) {
      return "";
    }
  }
  const std::string grace = pp::testing::grace_cpuinfo();
  const std::string block = grace.substr(0, grace.find("\n\n") + 2);  // processor 0's
  const std::string first = "processor\t: 0\n";
  if (block.rfind(first, 0) != 0) return "";
  std::string cpuinfo;
  const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
  for (long i = 0; i < cpus; ++i) {
    cpuinfo += "processor\t: " + std::to_string(i) + "\n" + block.substr(first.size());
  }
  if (::mkdir((dir + "/proc").c_str(), 0755) != 0) return "";
  std::ofstream out(dir + "/proc/cpuinfo");
  out << cpuinfo;
  out.close();
  return out ? dir : "";
}

// The perf maps in /tmp (perf-PID.map: where oneDNN on AArch64 lists its JIT kernels by default,
// whatever TMPDIR says).
std::set<std::string> perf_maps() {
  std::set<std::string> names;
  DIR* dir = ::opendir("/tmp");
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind("perf-", 0) == 0 && name.size() > 9 && name.substr(name.size() - 4) == ".map") {
      names.insert(name);
    }
  }
  ::closedir(dir);
  return names;
}

// A plan run by the aarch64 engine under qemu, and by the x86_64 engine.
struct Answers {
  pp::WorkerResult aarch64;
  pp::WorkerResult x86_64;
};

pp::ProcessOutput run_engine(const std::vector<std::string>& argv, const pp::WorkerPlan& plan) {
  // No driver: PRECISION_PROBE_LIBCUDA names a library that is nowhere.
  return pp::run_process(argv,
                         pp::environment_with({"PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                                               "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"}),
                         pp::encode_plan(plan) + "\n", std::chrono::seconds(900));
}

Answers run_both(const pp::WorkerPlan& plan) {
  Answers a;
  const std::string root = emulation_root();
  EXPECT_FALSE(root.empty()) << "could not make the emulation's root";
  if (root.empty()) return a;
  const std::set<std::string> maps_before = perf_maps();
  const pp::ProcessOutput arm =
      run_engine({kQemu, "-L", root, kEngine, "--worker", "cpu", "--libtorch",
                  std::string(kTorch) + "/torch/lib/libtorch_cpu.so"},
                 plan);
  EXPECT_EQ(arm.exit_code, 0) << "signal " << arm.term_signal << ": " << arm.err;
  // The engine leaves nothing behind: oneDNN's perf map, its default on AArch64, is off.
  for (const std::string& name : perf_maps()) {
    if (maps_before.count(name) != 0) continue;
    ADD_FAILURE() << "the aarch64 engine left /tmp/" << name;
    (void)::unlink(("/tmp/" + name).c_str());
  }
  a.aarch64 = read_lines(arm.out);
  const pp::ProcessOutput x86 = run_engine({PP_REAL_ENGINE, "--worker", "cpu", "--libtorch",
                                            std::string(kX86Torch) + "/torch/lib/libtorch_cpu.so"},
                                           plan);
  EXPECT_EQ(x86.exit_code, 0) << x86.err;
  a.x86_64 = read_lines(x86.out);
  return a;
}

// The hello of each: the release asked for, loaded from the library named.
void expect_release(const pp::WorkerResult& r, const std::string& site, const char* arch) {
  EXPECT_TRUE(r.finished) << arch;
  ASSERT_TRUE(r.stack.has_value()) << arch;
  EXPECT_EQ(r.stack->load_error, "") << arch;
  EXPECT_EQ(r.stack->abi_version, kRelease) << arch;
  EXPECT_EQ(r.stack->library, site + "/torch/lib/libtorch_cpu.so") << arch;
}

// Passed, and its relative error a number within the mode's tolerance: NaN never passes.
void expect_within_tolerance(const pp::SmokeOutcome& s, Mode mode, const char* arch) {
  EXPECT_TRUE(s.ran && s.ok) << arch << " " << pp::mode_key(mode) << ": " << s.error;
  ASSERT_TRUE(s.rel_error.has_value()) << arch << " " << pp::mode_key(mode);
  EXPECT_TRUE(std::isfinite(*s.rel_error) && *s.rel_error <= s.tolerance)
      << arch << " " << pp::mode_key(mode) << ": " << *s.rel_error << " > " << s.tolerance;
}

double relative(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

}  // namespace

// Every CPU mode's matmul on the same inputs: each engine within the mode's tolerance, and the
// aarch64 engine's error within a tenth of the tolerance of the x86_64 engine's (int8, exact,
// equal). Both kernels are LibTorch's own; a tenth catches a kernel that accumulates in the
// low precision (bf16: about 1e-2 against 2e-3).
TEST(Aarch64Engine, EverySmokeTestPassesAsOnX86_64) {
  const std::string problem = missing();
  ASSERT_EQ(problem, "");
  ASSERT_TRUE(is_aarch64_elf(kEngine)) << kEngine << " is not an aarch64 executable";
  const std::vector<Mode> modes = {Mode::fp32, Mode::fp16, Mode::bf16, Mode::int8};
  const Answers a = run_both(cpu_plan(modes, {}));
  expect_release(a.aarch64, kTorch, "aarch64");
  expect_release(a.x86_64, kX86Torch, "x86_64");
  for (Mode mode : modes) {
    ASSERT_TRUE(a.aarch64.smoke.contains(mode)) << pp::mode_key(mode);
    ASSERT_TRUE(a.x86_64.smoke.contains(mode)) << pp::mode_key(mode);
    const pp::SmokeOutcome& arm = a.aarch64.smoke.at(mode);
    const pp::SmokeOutcome& x86 = a.x86_64.smoke.at(mode);
    expect_within_tolerance(arm, mode, "aarch64");
    expect_within_tolerance(x86, mode, "x86_64");
    EXPECT_EQ(arm.tolerance, x86.tolerance) << pp::mode_key(mode);
    EXPECT_EQ(arm.m * arm.n * arm.k, x86.m * x86.n * x86.k) << pp::mode_key(mode);
    if (!arm.rel_error || !x86.rel_error) continue;
    EXPECT_LE(std::fabs(*arm.rel_error - *x86.rel_error), 0.1 * arm.tolerance)
        << pp::mode_key(mode) << ": aarch64 " << *arm.rel_error << ", x86_64 " << *x86.rel_error;
    std::cout << std::setprecision(9) << "[ figures  ] " << pp::mode_key(mode)
              << ": relative error aarch64 " << *arm.rel_error << ", x86_64 " << *x86.rel_error
              << " (tolerance " << arm.tolerance << ")\n";
  }
}

// Both training runs on the same data: each engine's final loss within the mode's tolerance of
// its fp32 run's; the two engines' first losses (fp32 arithmetic on the same inputs) alike to
// 1e-5, their fp32 runs' final losses to 1e-4, their mixed-precision final losses within a tenth
// of the tolerance; autocast's dtypes and fp16's loss scaling (the injected overflow skipped, the
// scale it ends at) the same.
TEST(Aarch64Engine, TrainingEndsAsOnX86_64) {
  const std::string problem = missing();
  ASSERT_EQ(problem, "");
  const std::vector<Mode> modes = {Mode::amp_fp16, Mode::amp_bf16};
  const Answers a = run_both(cpu_plan({}, modes));
  expect_release(a.aarch64, kTorch, "aarch64");
  for (Mode mode : modes) {
    ASSERT_TRUE(a.aarch64.amp.contains(mode)) << pp::mode_key(mode);
    ASSERT_TRUE(a.x86_64.amp.contains(mode)) << pp::mode_key(mode);
    const pp::AmpOutcome& arm = a.aarch64.amp.at(mode);
    const pp::AmpOutcome& x86 = a.x86_64.amp.at(mode);
    EXPECT_TRUE(arm.ok) << pp::mode_key(mode) << ": " << arm.error;
    EXPECT_TRUE(x86.ok) << pp::mode_key(mode) << ": " << x86.error;
    ASSERT_TRUE(arm.loss_start && arm.loss_end && arm.fp32_loss_end && arm.loss_rel_diff)
        << pp::mode_key(mode);
    ASSERT_TRUE(x86.loss_start && x86.loss_end && x86.fp32_loss_end && x86.loss_rel_diff)
        << pp::mode_key(mode);
    EXPECT_TRUE(std::isfinite(*arm.loss_rel_diff) && *arm.loss_rel_diff <= arm.loss_tolerance)
        << pp::mode_key(mode) << ": " << *arm.loss_rel_diff;
    EXPECT_EQ(arm.steps, x86.steps);
    EXPECT_LE(relative(*arm.loss_start, *x86.loss_start), 1e-5) << pp::mode_key(mode);
    EXPECT_LE(relative(*arm.fp32_loss_end, *x86.fp32_loss_end), 1e-4) << pp::mode_key(mode);
    EXPECT_LE(relative(*arm.loss_end, *x86.loss_end), 0.1 * arm.loss_tolerance)
        << pp::mode_key(mode) << ": aarch64 " << *arm.loss_end << ", x86_64 " << *x86.loss_end;
    EXPECT_TRUE(arm.params_changed) << pp::mode_key(mode);
    EXPECT_EQ(arm.matmul_dtype, x86.matmul_dtype) << pp::mode_key(mode);
    EXPECT_EQ(arm.skipped_steps, x86.skipped_steps) << pp::mode_key(mode);
    EXPECT_EQ(arm.final_scale, x86.final_scale) << pp::mode_key(mode);
    EXPECT_EQ(arm.overflow_handled, x86.overflow_handled) << pp::mode_key(mode);
    std::cout << std::setprecision(9) << "[ figures  ] " << pp::mode_key(mode)
              << ": final loss aarch64 " << *arm.loss_end << " (" << *arm.loss_rel_diff
              << " from its fp32 run), x86_64 " << *x86.loss_end << " (" << *x86.loss_rel_diff
              << "); tolerance " << arm.loss_tolerance << "\n";
  }
}
