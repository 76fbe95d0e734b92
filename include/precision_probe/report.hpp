#pragma once
// The report: everything the probe found, as plain data. Collectors fill it, printers read it.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "precision_probe/modes.hpp"
#include "precision_probe/per_mode.hpp"
#include "precision_probe/results.hpp"

namespace precision_probe {

// 3: the run's inputs of the exit decision (run.gpus_selected, run.unavailable_selection,
// run.interrupted) are written, and a `failure` is written wherever there is one (a precision
// not tested because the machine kept it from running, a collective the environment could not
// run), not only beside a failed status.
// 4: `failed` means wrong numbers, a runtime error, a crash or a check past --check-timeout; a
// stack that cannot run, a device setting that refused the work, the run's deadline and a signal
// have statuses of their own (cannot_run, refused, out_of_time, interrupted) and failure kinds
// (refused, out_of_time, interrupted). read_report_json reads schemas 1 to 3 too.
inline constexpr int kSchemaVersion = 4;
// The probe's exit codes are 0 to this one (docs/exit-codes.md); a report says one of them.
inline constexpr int kLastExitCode = 6;

// --- The devices and the driver, as the report describes them ---------------------------------

enum class DeviceKind { cpu, cuda };
std::string_view to_string(DeviceKind kind);

struct KernelCoverage {
  bool covered = false;
  std::string via;     // "sm_90" or "compute_80 (PTX, JIT-compiled by the driver at first use)"
  std::string reason;  // why not covered; empty when covered
  bool ptx = false;    // covered only by PTX the driver JIT-compiles
};

struct CpuInfo {
  std::string model;         // "Intel(R) Xeon(R) Platinum 8480+"
  std::string architecture;  // "x86_64", "aarch64"
  int logical_cores = 0;
  int physical_cores = 0;             // logical cores less SMT siblings ("cpu cores"/"siblings")
  std::optional<double> mhz;          // the clock /proc/cpuinfo reports
  std::vector<std::string> features;  // the ISA features that matter, as the kernel names them
};

// A process holding a GPU's memory, as NVML lists compute processes. In a container the PID may
// be the host's; the name is read from /proc where that PID is visible.
struct GpuProcess {
  unsigned int pid = 0;
  std::optional<std::uint64_t> used_bytes;
  std::string name;
};

struct GpuInfo {
  int index = -1;  // the visible index, what --device takes
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::optional<ComputeCapability> cc;
  std::optional<int> sm_count;
  std::optional<std::uint64_t> memory_total, memory_free, memory_used;
  std::optional<bool> mig_enabled;
  bool mig_instance = false;
  std::optional<int> compute_mode;
  std::optional<double> clock_ghz;    // maximum SM clock
  std::vector<GpuProcess> processes;  // compute processes holding its memory (NVML)
  std::string source;                 // "cuda+nvml", "cuda", "nvml"
};
std::string compute_mode_name(int mode);  // "default", "exclusive_process", "prohibited"
std::optional<int> parse_compute_mode(std::string_view name);

// Peer-to-peer access from one visible GPU to another (cuDeviceCanAccessPeer and its attributes).
struct PeerLink {
  int from = 0;
  int to = 0;
  bool access = false;
  std::optional<int> performance_rank;  // lower is faster (NVLink ranks above PCIe)
  bool native_atomics = false;
};

// out_of_time: the driver did not answer within a limit too short to prove a hang: the run's
// --timeout (shorter than --check-timeout), or a --check-timeout shorter than the driver may take
// to start the machine's GPUs (driver_agent.hpp).
enum class DriverStatus { ok, not_found, init_failed, no_devices, hung, crashed, out_of_time };
std::string_view to_string(DriverStatus status);

struct DriverInfo {
  DriverStatus status = DriverStatus::not_found;
  std::string version;                  // "580.159.04" (NVML, else /proc/driver/nvidia/version)
  std::optional<Version> cuda_version;  // the highest CUDA the driver supports (13.0)
  std::string message;                  // one line: what was found or what went wrong
  std::string libcuda_path;
  bool nvml_loaded = false;
  bool cuda_queried = false;  // cuInit ran (false under --quick when NVML answered)
  std::optional<int> cu_init_result;
  std::string cu_init_error_name;
};

// A precision's measured throughput, set against fp32's and the datasheet's.
struct BenchResult {
  BenchOutcome outcome;
  std::optional<double> ratio_to_fp32;
  std::optional<double> peak_tflops;
  std::string peak_source;
  std::optional<double> percent_of_peak;
};

struct PrecisionResult {
  Hardware hardware = Hardware::unsupported;
  std::string hardware_reason;
  Status status = Status::not_tested;
  std::string reason;                   // why it is not native (empty when native)
  ErrorKind failure = ErrorKind::none;  // failed: what failed; not_tested: unavailable when the
                                        // machine kept it from running (else none)
  SmokeOutcome smoke;                   // the matmul modes
  std::optional<AmpOutcome> amp;        // the training modes (amp_fp16, amp_bf16)
  std::optional<BenchResult> bench;     // --bench: throughput
};

struct Recommendation {
  DType dtype = DType::none;  // bf16, fp16 or fp32
  bool loss_scaling = false;
  std::string reason;
};

// --soak on one device: each mode's outcome, and what comparing the devices found.
struct SoakReport {
  double seconds = 0.0;        // asked for
  bool injected = false;       // a fault was injected (a test of the detector, not a finding)
  std::string injection_note;  // a fault was asked for and not injected, and why
  PerMode<SoakOutcome> modes;
  // Set where this device's golden output differs from that of the same GPUs of the run (a
  // majority, or with two GPUs, each other): the modes and the devices it disagrees with.
  std::string golden_disagreement;
  // Set where this device's soak throughput is more than 10 % below the median of the same GPUs.
  std::string straggler;
  std::optional<SoakTelemetry> telemetry;  // GPUs
};

// A device whose checks ran again in an isolated engine session because the session shared with
// the run's other devices was lost before they were done: what ended it. Its verdicts are the
// isolated session's (diagnostic engine-session-lost).
struct EngineRerun {
  std::string why;          // "the engine worker crashed (SIGKILL)"
  std::string signal;       // the signal that ended the session ("SIGKILL"), where one did
  std::string hung_device;  // the device whose hung check the probe ended it for ("GPU 3")
  // Killed: whether an OOM killer did it, as the cgroup's oom_kill count says (nullopt: unknown).
  std::optional<bool> oom_killer;
};

struct DeviceReport {
  DeviceKind kind = DeviceKind::cpu;
  int index = -1;  // visible GPU index; -1 for the CPU (and for `arch`)
  std::string name;
  bool selected = false;  // gated by --require
  std::optional<GpuInfo> gpu;
  std::optional<CpuInfo> cpu;
  std::optional<KernelCoverage> kernels;  // GPUs: whether the LibTorch build runs here
  PerMode<PrecisionResult> precisions;
  Recommendation recommendation;
  std::optional<SoakReport> soak;  // --soak
  std::optional<EngineRerun> engine_rerun;

  std::string label() const;  // "GPU 0", "CPU"
  const PrecisionResult* find(Mode mode) const { return precisions.find(mode); }
  PrecisionResult* find(Mode mode) { return precisions.find(mode); }
};

enum class Severity { error, warning, info };
std::string_view to_string(Severity severity);

struct Diagnostic {
  std::string code;  // stable, kebab-case: docs/diagnostics.md
  Severity severity = Severity::info;
  std::string message;
  std::string hint;
};

struct RequirementResult {
  Mode mode = Mode::fp32;
  std::string device;  // "GPU 0", "CPU"; empty when nothing was selected ("none" in JSON)
  bool met = false;
  Status status = Status::not_tested;
  std::string reason;
  ErrorKind failure = ErrorKind::none;  // the precision's: unavailable makes an unmet one exit 3
};

struct ToolInfo {
  std::string name = "precision-probe";
  std::string version;
  // What the binaries link: no LibTorch and no CUDA ("none" both; schema 1 and 2 named a linked
  // LibTorch here). The engine loads the image's LibTorch at run time, from libtorch_floor on
  // (older releases lack the stable C ABI it uses), tested up to libtorch_tested.
  std::string built_with_libtorch = "none";
  std::string built_with_cuda = "none";
  std::optional<Version> libtorch_floor;   // 2.9
  std::optional<Version> libtorch_tested;  // 2.15
};

struct HostInfo {
  std::string hostname;  // what the kernel says (in a Kubernetes pod: the pod's name)
  // The node's name: PRECISION_PROBE_NODE_NAME where set (Kubernetes' spec.nodeName through the
  // downward API), else the hostname; what the metrics and summarize name the node by. Empty in a
  // report written before the field existed: node() is then the hostname.
  std::string node_name;
  std::string os;  // PRETTY_NAME of /etc/os-release
  std::string kernel;
  std::string machine;
  bool container = false;

  const std::string& node() const { return node_name.empty() ? hostname : node_name; }
};

// What was run: the probe, or `arch CC` (the offline answer for a compute capability).
enum class Command { probe, arch };
std::string_view to_string(Command command);

struct RunInfo {
  Command command = Command::probe;
  bool quick = false;
  bool bench = false;
  double soak_s = 0.0;  // --soak (0: none)
  std::uint64_t seed = 0;
  double timeout_s = 0.0;
  std::vector<std::string> required;
  std::string devices = "gpu";  // --device as given ("gpu", "cpu", "all", "0,1", "cpu,0")
  // The selection includes GPUs (all of them, or named ones): a driver that hangs or crashes is
  // then the run's verdict (exit 5, 3).
  bool gpus_selected = true;
  // Set when --device named GPUs but none is visible: an environment problem (exit 3).
  std::string unavailable_selection;
  // Set when SIGINT or SIGTERM arrived during the run ("SIGTERM"): exit 5.
  std::string interrupted;
};

// The node's collectives: peer access between GPUs always (two or more visible), the NCCL
// all-reduce with --nccl.
struct CollectivesReport {
  bool requested = false;              // --nccl
  Status status = Status::not_tested;  // native: every all-reduce exact; failed; unsupported
  std::string reason;                  // why it is not native
  ErrorKind failure = ErrorKind::none;
  std::string nccl_version;
  std::vector<int> devices;  // the visible GPU indices taking part
  std::vector<CollectiveOutcome> all_reduce;
  std::vector<PeerLink> peers;
};

// Why a run has no report, or could not deliver it.
enum class FailureKind {
  usage,     // bad input: the report holds nothing else (exit 2)
  output,    // the report is complete, but writing it somewhere failed (exit 6)
  internal,  // an unexpected error: the report holds nothing else
};
std::string_view to_string(FailureKind kind);

struct RunFailure {
  FailureKind kind = FailureKind::usage;
  std::string message;
};

struct Report {
  int schema_version = kSchemaVersion;
  std::string report_id;   // 32 hex digits, random: one run's report among a fleet's
  std::string started_at;  // when the run started, RFC 3339 in UTC ("2026-12-01T06:52:08.123Z")
  ToolInfo tool;
  HostInfo host;
  RunInfo run;
  StackInfo stack;  // what the verdicts rest on: the engine's, or under --quick the image's
  // The PyTorch of the image the probe runs in, read from its files (source "image files"), where
  // one was found: the engine's LibTorch may be another.
  std::optional<StackInfo> image_stack;
  DriverInfo driver;
  std::vector<DeviceReport> devices;
  std::vector<Diagnostic> diagnostics;
  std::vector<RequirementResult> requirements;
  std::optional<CollectivesReport> collectives;
  std::optional<RunFailure> error;  // bad input, a failed delivery, an internal error
  int exit_code = 0;
  std::string exit_reason;
  double duration_ms = 0.0;
};

// Escapes control characters in every text of the report that came from outside the probe (a
// driver's message, a library name given in the environment, a worker's stderr, /etc/os-release),
// so that no printer can pass an escape sequence to a terminal.
void make_printable(Report& report);

// The report's overall severity, for a fleet's dashboards: "error" (an exit code of 2 or more, or
// an error diagnostic), "warning" (exit 1: a requirement not met, or a warning diagnostic), "ok".
std::string_view overall_severity(const Report& report);

// Whether the report holds what the run found: false for bad input and internal errors, whose
// report carries only the header and the error.
bool has_findings(const Report& report);

}  // namespace precision_probe
