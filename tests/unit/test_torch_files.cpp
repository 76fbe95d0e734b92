// The image's PyTorch read from its files (probe/facts/torch_files): where it is looked for, what
// version.py, the nvidia-* wheels' headers and LibTorch's build-version say; nothing imported.

#include <gtest/gtest.h>

#include "fakes.hpp"
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
    EXPECT_EQ(stack->cuda_version, "13.0");
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
  EXPECT_EQ(stack->cuda_version, "12.8");
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

TEST(TorchFiles, NoPyTorchAnywhereIsNone) {
  pp::testing::FakeSystem sys;
  sys.env["PATH"] = "/usr/bin";
  EXPECT_FALSE(pp::find_image_torch(sys));
}
