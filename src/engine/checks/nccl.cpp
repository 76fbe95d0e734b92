// The collective mixed-precision training needs: an all-reduce of gradients in fp32, fp16 and
// bf16 over every GPU of the node, through the image's own NCCL and its C API (LibTorch's C ABI
// has no c10d): one communicator per GPU from ncclCommInitAll, every rank's all-reduce in one
// group, on LibTorch's current stream of each GPU, on tensors LibTorch made. Results are checked
// exactly (integer-valued data); bandwidth is measured on a large message.
//
// NCCL_NVLS_ENABLE and the other NCCL variables of the environment are left as they are.

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "engine/checks/checks.hpp"

#if defined(PP_HAVE_NCCL_H) && __has_include(<nccl.h>)
#include <nccl.h>
static_assert(ncclSum == 0 && ncclFloat16 == 6 && ncclFloat32 == 7 && ncclBfloat16 == 9);
#endif

namespace precision_probe::engine {

namespace {

using NcclComm = void*;
constexpr int kNcclSum = 0;

struct Nccl {
  int (*get_version)(int*) = nullptr;
  int (*comm_init_all)(NcclComm*, int, const int*) = nullptr;
  int (*all_reduce)(const void*, void*, std::size_t, int, int, NcclComm, void*) = nullptr;
  int (*group_start)() = nullptr;
  int (*group_end)() = nullptr;
  int (*comm_destroy)(NcclComm) = nullptr;
  const char* (*error_string)(int) = nullptr;

  void check(int result, const char* what) const {
    if (result == 0) return;
    const char* text = error_string != nullptr ? error_string(result) : nullptr;
    throw std::runtime_error(fmt::format("{} failed: {}", what, text != nullptr ? text : "?"));
  }
};

// The NCCL libtorch_cuda.so loaded (it needs libnccl.so.2), else one on the loader's path.
Expected<Nccl> load_nccl() {
  void* lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return Unexpected{"this LibTorch loads no NCCL (libnccl.so.2 not found)"};
  Nccl n;
  auto find = [lib](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(lib, name));
    return slot != nullptr;
  };
  const bool ok = find(n.get_version, "ncclGetVersion") &&
                  find(n.comm_init_all, "ncclCommInitAll") && find(n.all_reduce, "ncclAllReduce") &&
                  find(n.group_start, "ncclGroupStart") && find(n.group_end, "ncclGroupEnd") &&
                  find(n.comm_destroy, "ncclCommDestroy");
  find(n.error_string, "ncclGetErrorString");
  if (!ok) return Unexpected{"libnccl.so.2 lacks the functions of NCCL's C API the check needs"};
  return n;
}

int nccl_type(DType dtype) {
  switch (dtype) {
    case DType::fp16: return 6;
    case DType::bf16: return 9;
    case DType::fp32:
    case DType::fp64:
    case DType::none:
    case DType::other: break;
  }
  return 7;
}

Scalar scalar_of(DType dtype) {
  return dtype == DType::fp16 ? Scalar::f16 : dtype == DType::bf16 ? Scalar::bf16 : Scalar::f32;
}

constexpr int kWarmup = 2;
constexpr int kIterations = 10;

// The GPUs of the collective: each one's driver context and LibTorch target.
struct Ranks {
  std::vector<std::unique_ptr<CudaDriver>> drivers;
  std::vector<Target> targets;
  std::vector<NcclComm> comms;
  const Nccl* nccl = nullptr;
  ~Ranks() {
    for (NcclComm c : comms) {
      if (c != nullptr) nccl->comm_destroy(c);
    }
  }
  void synchronize() const {
    for (const Target& t : targets) t.synchronize();
  }
  // One all-reduce of each rank's tensor, in one group.
  void all_reduce(const std::vector<Tensor>& tensors, DType dtype) const {
    nccl->check(nccl->group_start(), "ncclGroupStart");
    for (std::size_t r = 0; r < tensors.size(); ++r) {
      targets[r].enter();
      nccl->check(nccl->all_reduce(tensors[r].data(), tensors[r].data(),
                                   static_cast<std::size_t>(tensors[r].numel()), nccl_type(dtype),
                                   kNcclSum, comms[r], targets[r].stream()),
                  "ncclAllReduce");
    }
    nccl->check(nccl->group_end(), "ncclGroupEnd");
  }
};

// One dtype: exact on every rank, then timed on the large message.
void run_dtype(const Ranks& ranks, DType dtype, std::int64_t bytes, CollectiveOutcome& o) {
  const auto n = static_cast<int>(ranks.targets.size());
  const Scalar scalar = scalar_of(dtype);
  // Rank r contributes r + 1 everywhere; the sum is n (n + 1) / 2, an integer every one of these
  // dtypes holds exactly.
  std::vector<Tensor> check;
  for (int r = 0; r < n; ++r) {
    const Target& t = ranks.targets[static_cast<std::size_t>(r)];
    check.push_back(empty(*t.torch, {1 << 20}, scalar, t.device));
    fill(check.back(), r + 1);
  }
  ranks.all_reduce(check, dtype);
  ranks.synchronize();
  const double expected = n * (n + 1) / 2.0;
  bool exact = true;
  for (const Tensor& t : check) {
    for (double v : download_values(t)) exact = exact && v == expected;
  }
  std::vector<Tensor> big;
  for (const Target& t : ranks.targets) {
    big.push_back(empty(*t.torch, {bytes / scalar_info(scalar).bytes}, scalar, t.device));
    fill(big.back(), 1.0);
  }
  for (int i = 0; i < kWarmup; ++i) ranks.all_reduce(big, dtype);
  ranks.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kIterations; ++i) ranks.all_reduce(big, dtype);
  ranks.synchronize();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kIterations;
  o.ran = true;
  o.time_ms = seconds * 1e3;
  o.algbw_gbps = static_cast<double>(o.bytes) / seconds / 1e9;
  o.busbw_gbps = *o.algbw_gbps * 2.0 * (o.ranks - 1) / o.ranks;
  o.ok = exact;
  if (!exact) {
    o.error_kind = ErrorKind::wrong_result;
    o.error = "wrong result: the all-reduce sum is not exact on every rank";
  }
}

}  // namespace

std::vector<CollectiveOutcome> run_collectives(const Torch& torch, const std::vector<int>& ordinals,
                                               std::int64_t bytes, std::string& nccl_version) {
  const auto ranks = static_cast<int>(ordinals.size());
  std::vector<CollectiveOutcome> out;
  for (DType dtype : kAllReduceDTypes) {
    CollectiveOutcome o;
    o.dtype = dtype;
    o.ranks = ranks;
    o.bytes = bytes;
    out.push_back(o);
  }
  const Expected<Nccl> nccl = load_nccl();
  auto fail_all = [&out](const std::string& why, ErrorKind kind) {
    for (CollectiveOutcome& o : out) {
      o.error = why;
      o.error_kind = kind;
    }
    return out;
  };
  if (!nccl) return fail_all(nccl.error(), ErrorKind::not_supported);
  int version = 0;
  if (nccl->get_version(&version) == 0) {
    // 22707 for 2.27.7 (NCCL_VERSION_CODE from 2.9: major * 10000 + minor * 100 + patch).
    nccl_version = fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
  }
  try {
    Ranks r;
    r.nccl = &*nccl;
    std::vector<int> devices;
    for (int ordinal : ordinals) {
      Expected<std::unique_ptr<CudaDriver>> driver = CudaDriver::open();
      if (!driver) throw std::runtime_error(driver.error());
      if (Expected<void> bound = (*driver)->bind(ordinal); !bound)
        throw std::runtime_error(bound.error());
      r.targets.push_back(Target{&torch, driver->get(), Device{true, ordinal}});
      r.drivers.push_back(std::move(*driver));
      devices.push_back(ordinal);
    }
    r.comms.assign(static_cast<std::size_t>(ranks), nullptr);
    nccl->check(nccl->comm_init_all(r.comms.data(), ranks, devices.data()), "ncclCommInitAll");
    for (std::size_t d = 0; d < out.size(); ++d) {
      try {
        run_dtype(r, kAllReduceDTypes[d], bytes, out[d]);
      } catch (const std::exception& e) {
        record_failure(out[d], e);
      }
    }
  } catch (const std::exception& e) {
    return fail_all(error_line(e), classify_error(e.what()));
  }
  return out;
}

}  // namespace precision_probe::engine
