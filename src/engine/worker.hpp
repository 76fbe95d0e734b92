#pragma once
// precision-probe-engine's worker: one plan (one JSON line on stdin), answered in JSON lines on
// stdout, one per finished check, flushed at once, so that a worker that hangs or dies leaves
// every finished result behind (wire/protocol.hpp). It loads the image's LibTorch, which the
// probe found and names on its command line, and runs the plan's checks through its C ABI.

#include <string>

#include "engine/host/cpus.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe::engine {

struct WorkerArgs {
  DeviceKind kind = DeviceKind::cpu;
  std::string libtorch;  // libtorch_cpu.so (the CPU) or libtorch_cuda.so (GPUs)
  CpuLimits cpus;        // the CPUs it may use, read at its start
};

// The whole worker; its exit code.
int run_worker(const WorkerArgs& args);

// `--describe --libtorch PATH [--cuda]`: loads the library and prints the stack it is, one line of
// JSON (the engine tests and ./dev read it); exit 3 when it cannot be loaded.
int describe(const WorkerArgs& args);

}  // namespace precision_probe::engine
