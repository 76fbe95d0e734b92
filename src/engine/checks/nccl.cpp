// The collective mixed-precision training needs: an all-reduce of gradients in fp32, fp16 and
// bf16 over every GPU of the node, through LibTorch's c10d ProcessGroupNCCL: one thread per GPU,
// each with its own device guard, all sharing an in-process HashStore. Results are checked
// exactly (integer-valued data); bandwidth is measured on a large message.
//
// NCCL_NVLS_ENABLE and the other NCCL variables of the environment are left as they are.

#include "engine/engine.hpp"
#include "engine/error_text.hpp"

#if defined(PP_HAVE_NCCL)
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#endif

namespace precision_probe::engine {

namespace {

#if defined(PP_HAVE_NCCL)

at::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::fp16: return at::kHalf;
    case DType::bf16: return at::kBFloat16;
    case DType::fp64: return at::kDouble;
    case DType::fp32:
    case DType::none:
    case DType::other: break;
  }
  return at::kFloat;
}

// A reusable barrier for the rank threads (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation != generation_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
  int waiting_ = 0;
  int generation_ = 0;
};

constexpr int kWarmup = 2;
constexpr int kIterations = 10;

// One rank's run: per dtype, whether its sum was exact and the seconds per all-reduce; an error
// ends its run.
struct RankRun {
  std::vector<char> exact;
  std::vector<double> seconds;
  std::string error;
};

void run_rank(int rank, int ranks, std::int64_t bytes, const c10::intrusive_ptr<c10d::Store>& store,
              Barrier& barrier, RankRun& run) {
  run.exact.assign(kAllReduceDTypes.size(), 0);
  run.seconds.assign(kAllReduceDTypes.size(), 0.0);
  try {
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(rank));
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, ranks);
    const auto on = at::TensorOptions().device(at::kCUDA, rank);
    for (std::size_t d = 0; d < kAllReduceDTypes.size(); ++d) {
      const at::ScalarType dtype = scalar_type(kAllReduceDTypes[d]);
      // Exact check: rank r contributes r + 1 everywhere; the sum is n (n + 1) / 2, an integer
      // every one of these dtypes holds exactly.
      std::vector<at::Tensor> check = {at::full({1 << 20}, rank + 1, on.dtype(dtype))};
      pg->allreduce(check)->wait();
      const double expected = ranks * (ranks + 1) / 2.0;
      run.exact[d] = check[0].eq(expected).all().item<bool>() ? 1 : 0;
      // Bandwidth: a large message, timed between barriers, every rank's device synchronised.
      const std::int64_t elements = bytes / static_cast<std::int64_t>(c10::elementSize(dtype));
      std::vector<at::Tensor> big = {at::ones({elements}, on.dtype(dtype))};
      for (int i = 0; i < kWarmup; ++i) pg->allreduce(big)->wait();
      c10::cuda::device_synchronize();
      barrier.arrive_and_wait();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kIterations; ++i) pg->allreduce(big)->wait();
      c10::cuda::device_synchronize();
      run.seconds[d] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
          kIterations;
      barrier.arrive_and_wait();
    }
  } catch (const std::exception& e) {
    run.error = error_text(e);
  }
}

// The outcome of dtype `d` over every rank: the slowest rank's time, exact only if every sum was.
void summarise(const std::vector<RankRun>& runs, std::size_t d, CollectiveOutcome& o) {
  for (std::size_t rank = 0; rank < runs.size(); ++rank) {
    if (runs[rank].error.empty()) continue;
    o.error = "rank " + std::to_string(rank) + ": " + runs[rank].error;
    o.error_kind = classify_error(o.error);
    return;
  }
  o.ran = true;
  double slowest = 0.0;
  bool all_exact = true;
  for (const RankRun& run : runs) {
    slowest = std::max(slowest, run.seconds[d]);
    all_exact = all_exact && run.exact[d] != 0;
  }
  o.time_ms = slowest * 1e3;
  o.algbw_gbps = static_cast<double>(o.bytes) / slowest / 1e9;
  o.busbw_gbps = *o.algbw_gbps * 2.0 * (o.ranks - 1) / o.ranks;
  o.ok = all_exact;
  if (!all_exact) {
    o.error_kind = ErrorKind::wrong_result;
    o.error = "wrong result: the all-reduce sum is not exact on every rank";
  }
}

#endif

}  // namespace

std::vector<CollectiveOutcome> run_collectives(int ranks, std::int64_t bytes,
                                               std::string& nccl_version) {
  std::vector<CollectiveOutcome> out;
  for (DType dtype : kAllReduceDTypes) {
    CollectiveOutcome o;
    o.dtype = dtype;
    o.ranks = ranks;
    o.bytes = bytes;
    out.push_back(o);
  }
#if !defined(PP_HAVE_NCCL)
  static_cast<void>(nccl_version);
  for (CollectiveOutcome& o : out) {
    o.error_kind = ErrorKind::not_supported;
    o.error = "this LibTorch (" TORCH_VERSION ") was built without NCCL (c10d ProcessGroupNCCL)";
  }
  return out;
#else
  try {
    nccl_version = c10d::getNcclVersion();
  } catch (const std::exception&) {
    nccl_version = "";
  }
  const auto store = c10::make_intrusive<c10d::HashStore>();
  Barrier barrier(ranks);
  std::vector<RankRun> runs(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  threads.reserve(runs.size());
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      run_rank(rank, ranks, bytes, store, barrier, runs[static_cast<std::size_t>(rank)]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t d = 0; d < out.size(); ++d) summarise(runs, d, out[d]);
  return out;
#endif
}

}  // namespace precision_probe::engine
