#pragma once
// What the user asked for, as plain structs: Options for the probe and `arch`, SummarizeOptions for
// `summarize`. Filled by the CLI layer (cli.hpp), read by the rest.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "precision_probe/modes.hpp"
#include "precision_probe/report.hpp"
#include "probe/outputs/format.hpp"

namespace precision_probe {

enum class ColorMode { automatic, never };

// The least --check-timeout: no check can finish sooner, as a worker's start alone (loading
// LibTorch) takes about half a second (docs/performance.md). A smaller value is refused, exit 2.
inline constexpr double kLeastCheckSeconds = 1.0;

// --device: which devices the gate checks. The CPU is always reported.
struct DeviceSelection {
  bool all_gpus = true;          // every visible GPU
  bool cpu = false;              // the CPU is gated too
  std::vector<int> gpu_indices;  // explicit visible indices (all_gpus false)
};

// "all", "gpu", "cpu", or a comma list of GPU indices and "cpu" ("0,1", "cpu,0"); or what is
// wrong, said after the option ("'x' is not a device ...").
Expected<DeviceSelection> parse_device_selection(std::string_view text);

// One more report of the same run: --json FILE, --markdown FILE, --prom FILE, --text FILE, or
// --output-as FORMAT:FILE (repeatable). "-" is stdout.
struct ExtraOutput {
  Format format = Format::json;
  std::string path;
  std::string flag;  // as typed, for messages
};

struct Options {
  Command command = Command::probe;
  Format format = Format::text;
  std::string output;              // -o FILE; "" means stdout
  std::string output_flag = "-o";  // "-o" or "--output", as typed
  std::vector<ExtraOutput> extra_outputs;
  DeviceSelection devices;
  std::vector<Mode> require;
  ColorMode color = ColorMode::automatic;
  bool quiet = false;
  std::string quiet_flag = "-q";           // as typed: "-q" or "--quiet"
  bool quick = false;                      // facts and architecture verdicts only: no kernels
  std::optional<std::uint64_t> seed;       // random inputs; a fresh seed per run by default
  double timeout_s = 60.0;                 // bound on the whole run
  double check_timeout_s = 45.0;           // bound on any one check
  bool bench = false;                      // measure TFLOP/s per precision
  bool amp = true;                         // run the mixed-precision training checks
  bool nccl = false;                       // all-reduce across the selected GPUs through NCCL
  std::optional<std::int64_t> bench_size;  // default: 8192 on GPUs, 1024 on the CPU
  double soak_s = 0.0;                     // --soak: seconds per device (0: no soak)
  std::vector<Mode> soak_modes;            // --soak-modes (empty: every native matmul mode)
  std::int64_t nfd_ttl_s = 3600;           // --nfd-ttl: the node labels' lifetime
  // --termination-log: FILE, or "none"; unset: /dev/termination-log under Kubernetes
  // (outputs/termination_log.hpp)
  std::optional<std::string> termination_log;
  std::string arch_cc;  // `arch CC`
};

// `precision-probe summarize` (docs/summarize.md).
struct SummarizeOptions {
  Format format = Format::text;    // text, json or markdown
  std::string output;              // -o FILE; "" means stdout
  std::string output_flag = "-o";  // as typed
  std::optional<std::int64_t> max_age_s;
  std::vector<Mode> require;
  bool quiet = false;
  std::string quiet_flag = "-q";     // as typed
  std::vector<std::string> sources;  // files, directories, "-" for standard input
};

}  // namespace precision_probe
