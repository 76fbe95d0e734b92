#pragma once
// The CUDA context made before main(). A GPU worker started with `--early-context` begins to
// create its GPU's primary context on a thread of its own, started from the executable's
// .preinit_array (early_context_start.hpp), while the dynamic loader runs LibTorch's static
// initialisers (0.3-0.45 s on the H200 machine), instead of after them. LibTorch later retains the
// same primary context at no cost. (Loading LibTorch with dlopen from main() would not do: dlopen
// holds the loader's lock while it runs initialisers, and cuInit waits for that lock.)
//
// The thread sees the GPUs of the environment the worker was started with; the plan, read later,
// names the GPU to use. When the two are not the same one GPU, the worker starts itself again
// without the early context (restart_without_early_context), and runs as any other worker.

#include <string>

#include "probe/run/engine_client.hpp"

namespace precision_probe::engine {

// The argument that asks for it: `precision-probe-engine --worker --early-context`.
inline constexpr const char* kEarlyContextFlag = "--early-context";

struct EarlyContext {
  bool started = false;           // asked for, and the thread ran
  std::string error;              // why no context was made ("" when one was)
  bool cuda_initialised = false;  // cuInit ran: CUDA_VISIBLE_DEVICES can no longer be narrowed
  std::string uuid;               // device 0's UUID, as NVML writes it ("GPU-...")
  double started_at_ms = 0;       // when the thread was started (trace clock: boot_clock_ms())
  double libc_at_ms = 0;          // when the C library was ready and the thread went on
  double init_at_ms = 0;          // when cuInit returned
  double ready_at_ms = 0;         // when the context existed
};

// Waits for the thread, if one was started, and says what it made.
EarlyContext join_early_context();

// Whether the worker can run `plan` on the early context: a one-GPU CUDA plan naming, by UUID,
// the only device the context was made for. Anything else restarts the worker.
bool early_context_fits(const EarlyContext& early, const WorkerPlan& plan);

// Replaces this process with a worker without the early context (`argv0 --worker`) that reads
// `plan_text` on stdin (and narrows CUDA_VISIBLE_DEVICES from it, as every worker does). Returns
// only when that failed, with the reason.
std::string restart_without_early_context(const char* argv0, const std::string& plan_text);

}  // namespace precision_probe::engine
