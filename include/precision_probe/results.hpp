#pragma once
// What the kernel engine measures, as plain values. Shared by the engine (which fills them) and
// the probe (which reads them off the wire).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "precision_probe/versions.hpp"

namespace precision_probe {

// Why a check did not succeed.
enum class ErrorKind {
  none,
  not_run,        // deliberately skipped (the reason says why): status not_tested
  not_supported,  // LibTorch or the hardware refused the operation: status unsupported
  wrong_result,   // ran, but the numbers are wrong or not finite: status failed
  runtime,        // an unexpected runtime error: status failed
  environment,    // the stack cannot run on this device (no kernel image, driver too old):
                  // status cannot_run, exit 3
  timed_out,      // a check did not finish within --check-timeout (a hang): failed, exit 5
  crashed,        // the worker died (signal or bad output): failed
  unavailable,    // the machine's state or set-up kept it from running (out of memory, no usable
                  // engine, a LibTorch without CUDA): not_tested; an environment problem (exit 3)
                  // where the mode was required
  refused,        // the device's setting refused the work (compute mode Prohibited, or Exclusive
                  // Process and held by another process): status refused, exit 3
  out_of_time,    // the run's deadline (--timeout) cut the check off: status out_of_time, exit 5
  interrupted,    // a signal cut the check off: status interrupted, exit 5
};
std::string_view to_string(ErrorKind kind);
std::optional<ErrorKind> parse_error_kind(std::string_view text);

// Sorts a LibTorch/CUDA error message into a kind: "not implemented for 'Half'" is not_supported,
// "no kernel image is available" is environment, "out of memory" is unavailable, anything else
// is runtime.
ErrorKind classify_error(std::string_view message);

// The element type a tensor had, as the report names it.
enum class DType { none, fp64, fp32, fp16, bf16, other };
std::string_view to_string(DType dtype);  // "" for none

// What every check's outcome says, whatever the check: whether it ran, whether it passed, and where
// it did not, why. The outcomes below are made of it and their own figures; their JSON writes
// ran and ok first, error_kind and error last (report/json_fields.hpp: outcome_fields).
struct CheckOutcome {
  bool ran = false;
  bool ok = false;  // ran, and passed (each check says what passing is)
  ErrorKind error_kind = ErrorKind::none;
  std::string error;  // what failed (an exception's text), or why it did not run
};

// The outcome of a check that did not run, or whose answer never came: of `kind`, for `why`.
template <class Outcome>
Outcome did_not_run(ErrorKind kind, const std::string& why) {
  static_assert(std::is_base_of_v<CheckOutcome, Outcome>);
  Outcome o;
  o.error_kind = kind;
  o.error = why;
  return o;
}

// One matmul smoke test: C = A x B on fresh random data, compared with a float64 reference.
struct SmokeOutcome : CheckOutcome {
  std::optional<double> rel_error;  // relative Frobenius error against the float64 reference
  double tolerance = 0.0;
  std::optional<double> ms;  // wall time of the low-precision matmul, synchronised
  std::int64_t m = 0, n = 0, k = 0;
  std::string method;  // "at::mm", "at::_scaled_mm e4m3 x e4m3 -> bf16"
};

// One mixed-precision training run (autocast; dynamic loss scaling for fp16), checked against an
// fp32 run of the same steps on the same data.
struct AmpOutcome : CheckOutcome {
  std::string method;        // how the steps ran (explicit casts, which scaler and optimizer ops)
  std::optional<double> ms;  // wall time of the AMP run
  int steps = 0;
  std::optional<double> loss_start, loss_end;  // AMP run, first and last step
  std::optional<double> fp32_loss_end;         // the fp32 run's last step
  std::optional<double> loss_rel_diff;         // |loss_end - fp32_loss_end| / fp32_loss_end
  double loss_tolerance = 0.0;
  bool params_changed = false;
  // The dtypes autocast produced: matmul (linear) output, layer norm, log-softmax, loss.
  DType matmul_dtype = DType::none, layer_norm_dtype = DType::none, softmax_dtype = DType::none,
        loss_dtype = DType::none;
  // Loss scaling (amp_fp16): steps skipped for inf/NaN gradients, the final scale, and the step
  // where an overflow was injected on purpose (the scaler must skip it and halve the scale).
  int skipped_steps = 0;
  std::optional<double> initial_scale, final_scale;
  std::optional<int> injected_overflow_step;
  bool overflow_handled = false;
  // Peak device memory of the tensors one training step holds (GPUs only), as the engine counts
  // them (LibTorch's workspaces not included): AMP and fp32.
  std::optional<std::int64_t> peak_bytes, fp32_peak_bytes;
};

// Throughput of one precision: a square GEMM timed after warm-up, the median of many runs,
// inputs rotated between runs, random data.
struct BenchOutcome : CheckOutcome {
  std::int64_t size = 0;  // M = N = K
  int reps = 0;
  std::optional<double> ms;      // median time of one GEMM, right after warm-up (boost clocks)
  std::optional<double> tflops;  // 2 * size^3 / time
  // The same after at least a second of continuous load (GPUs): what a long run gets once power
  // and thermal limits have lowered the clocks.
  std::optional<double> sustained_ms;
  std::optional<double> sustained_tflops;
  std::string timer;  // "cuda events" or "steady clock"
  std::string note;   // how the size was chosen when it is not the one asked for
};

// The first result of a soak that differed, bit for bit, from the golden output.
struct SoakMismatch {
  std::int64_t iteration = 0;           // 1 is the first call after the golden one
  double seconds = 0.0;                 // into the soak
  std::int64_t elements = 0;            // output elements whose bits differ
  std::optional<double> max_abs_error;  // the largest difference as numbers (null: not finite)
  double boot_s = 0.0;                  // CLOCK_BOOTTIME when it was found (to match telemetry)
  std::optional<int> temperature_c;     // the GPU's temperature then (the nearest NVML sample)
};

// What NVML said of a GPU while it soaked (sampled by the driver agent, never by the probe or the
// worker): extremes, the clock-event (throttle) reasons seen, error counters' growth, Xid events.
struct SoakTelemetry {
  int samples = 0;
  std::optional<int> max_temperature_c;
  std::optional<int> min_sm_mhz, max_sm_mhz;
  std::optional<double> max_power_w;
  std::vector<std::string> clock_events;  // "sw_power_cap", "hw_slowdown", "sw_thermal", ...
  std::optional<std::int64_t> ecc_corrected_delta, ecc_uncorrected_delta;
  std::optional<std::int64_t> remapped_rows_delta, retired_pages_delta;
  bool remap_failure = false;
  std::vector<int> xids;  // Xid error codes NVML's event API delivered
  std::string note;       // why there is none or little ("NVML: ...")
};

// One mode of a soak on one device: the same GEMM back to back under load, every result
// compared with the golden one computed first (cool). A worker sends one after each of the
// mode's slices, the latest standing for the whole (a run cut short keeps what it found).
// `ok`: it ran, and every result matched the golden one.
struct SoakOutcome : CheckOutcome {
  std::int64_t size = 0;           // M = N = K
  std::int64_t iterations = 0;     // results compared
  std::int64_t mismatches = 0;     // results that differed
  std::int64_t full_compares = 0;  // of them, compared element by element (the others by checksum)
  std::optional<SoakMismatch> first_mismatch;
  std::string golden_checksum;    // the golden output's 64-bit words summed, 16 hex digits
  std::optional<double> seconds;  // time this mode ran hot
  std::optional<double> tflops;   // its throughput over that time (int8: TOPS)
  bool injected = false;          // PRECISION_PROBE_INJECT_FAULT flipped a bit of one result
};

// One collective over the GPUs of the node: an all-reduce (sum) of integer-valued data, checked
// exactly, then timed on a large message. Bandwidths as nccl-tests defines them: algbw =
// bytes / time, busbw = algbw * 2 (n - 1) / n for an all-reduce over n ranks.
struct CollectiveOutcome : CheckOutcome {
  std::string op = "all_reduce";
  DType dtype = DType::none;  // fp32, fp16 or bf16
  int ranks = 0;
  std::int64_t bytes = 0;                        // message size per rank, timed
  std::optional<double> time_ms;                 // per all-reduce, the slowest rank
  std::optional<double> algbw_gbps, busbw_gbps;  // GB/s (1e9 bytes)
};

// The all-reduces a collective check runs, one outcome each, in this order.
inline constexpr std::array<DType, 3> kAllReduceDTypes = {DType::fp32, DType::fp16, DType::bf16};

// GradScaler's rule, in plain C++: the expected scale after a step. Backs off on an inf/NaN
// gradient (the step is skipped), grows after `growth_interval` good steps in a row.
struct LossScaleModel {
  double scale = 65536.0;
  int growth_tracker = 0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
  // Applies one step; returns whether the optimizer step runs (no inf/NaN gradient).
  bool update(bool found_inf);
};

// A LibTorch stack: as the engine sees it, or as an image's files say (source "image files").
struct StackInfo {
  bool available = false;  // false: no engine could be asked, no files read (see error)
  std::string source;      // "image files" (found and read by the probe), "engine", "none"
  std::string libtorch_version;
  bool cuda_built = false;
  std::optional<Version> cuda_version;  // 13.0 (none without CUDA)
  std::string cudnn_version;            // "9.13.0" ("" when absent)
  std::vector<std::string> arch_list;   // "sm_80", "compute_90", as the build names them
  int cpu_threads = 0;                  // LibTorch's intra-op threads
  std::string error;                    // why it is unavailable
  // Read from an image's files (source "image files"):
  std::string location;                  // the torch package or LibTorch directory
  std::string found_by;                  // "PRECISION_PROBE_TORCH", "python3 (/usr/bin/python3)"
  std::string rocm_version;              // a ROCm build's HIP version ("" otherwise)
  std::string nccl_version;              // "2.27.7" ("" when absent)
  std::vector<std::string> arch_extras;  // targets with a few kernels only (sm_89, sm_100a)
  std::string arch_note;                 // what the arch list rests on, or a disagreement
  std::optional<double> read_ms;         // how long reading the files took
  // Files of the tree that are there but are not regular files (a FIFO, a device), refused
  // unread, each "PATH (a FIFO)": a reader would wait on them for ever.
  std::vector<std::string> refused;
  // The reading itself failed: timed_out (not done within the run's time, --timeout: exit 5),
  // not_run (interrupted by a signal: exit 5), crashed (the reader's process died or answered
  // what cannot be); `error` says which.
  ErrorKind read_failure = ErrorKind::none;
  // What the kernels ran on (the engine's hello): the library it loaded and the release that
  // library says it is (aoti_torch_abi_version), and whether that release was tested.
  std::string library;       // "/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so"
  std::string abi_version;   // "2.11.0"
  std::string release_note;  // "untested release: ..." where newer than the newest tested
  std::string load_error;  // why the engine could not load it (dlopen's dlerror()), "" when it did
};

}  // namespace precision_probe
