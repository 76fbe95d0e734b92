// Diagnostics: the container and stack problems behind most "BF16 doesn't work" reports, each
// with a stable code, what was seen, and how to fix it. docs/diagnostics.md documents every code.

#include "probe/verdicts/diagnostics.hpp"

#include "probe/verdicts/soak.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "arch/arch.hpp"
#include "strings/strings.hpp"
#include "probe/facts/cpu.hpp"

namespace precision_probe {

namespace {

class Collector {
 public:
  explicit Collector(std::vector<Diagnostic>& out) : out_(out) {}
  void add(DiagnosticCode code, Severity severity, std::string message, std::string hint) {
    out_.push_back({std::string(to_string(code)), severity, std::move(message), std::move(hint)});
  }

 private:
  std::vector<Diagnostic>& out_;
};

bool any_gpu(const Report& report) {
  for (const DeviceReport& d : report.devices) {
    if (d.kind == DeviceKind::cuda) return true;
  }
  return false;
}

// The minimum Linux driver branch for a CUDA major version (NVIDIA's CUDA toolkit release notes).
std::string minimum_driver(Version cuda) {
  switch (cuda.major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580.65.06";
    default: return "a newer one";
  }
}

// " (PID 4242 python3: 136.0 GiB, PID 77: 1.2 GiB)": who holds a GPU's memory, as NVML says.
std::string holders(const GpuInfo& g) {
  std::vector<std::string> named;
  for (const GpuProcess& p : g.processes) {
    std::string one = fmt::format("PID {}{}", p.pid, p.name.empty() ? "" : " " + p.name);
    if (p.used_bytes)
      one += fmt::format(": {:.1f} GiB", static_cast<double>(*p.used_bytes) / (1 << 30));
    named.push_back(one);
  }
  return named.empty() ? "" : " (" + join(named, ", ") + ")";
}

// "; amp_fp16, amp_bf16 could not run (out of memory)": the checks the machine kept from running.
std::string untested_for_memory(const DeviceReport& d) {
  std::vector<std::string> modes;
  for (const auto& [mode, p] : d.precisions) {
    if (p.failure == ErrorKind::unavailable) modes.emplace_back(mode_key(mode));
  }
  return modes.empty() ? "" : "; " + join(modes, ", ") + " could not run here";
}

const char* const kGpuContainerHint =
    "start the container with GPUs: `docker run --gpus all ...` (NVIDIA Container Toolkit), "
    "`runtime: nvidia` or `deploy.resources.reservations.devices` in Compose, a "
    "`nvidia.com/gpu` resource limit in Kubernetes (NVIDIA device plugin); on a host, install "
    "the NVIDIA driver";

// A driver query that hung or crashed: the state a health probe is run for.
void driver_fault(Collector& c, const Report& r) {
  if (r.driver.status == DriverStatus::out_of_time) {
    c.add(DiagnosticCode::driver_out_of_time, Severity::error,
          "the NVIDIA driver did not answer in the time this run gave it: " + r.driver.message +
              "; the GPUs were not tested",
          "give it more time: a --timeout longer than --check-timeout, and a --check-timeout of "
          "at least 3 s for each GPU (a driver that starts its GPUs takes 1-3 s each where "
          "persistence mode is off); a driver that still does not answer hangs (driver-hung)");
  } else if (r.driver.status == DriverStatus::hung) {
    c.add(DiagnosticCode::driver_hung, Severity::error,
          "the NVIDIA driver does not answer: " + r.driver.message + "; the GPUs were not tested",
          "read the kernel log for Xid errors (`dmesg | grep -i xid`: 79 is a GPU fallen off the "
          "bus, 48/63/64/94/95 memory errors), drain the node, reset the GPU (`nvidia-smi -r -i "
          "N`, with nothing running on it) or reboot; `nvidia-smi` hangs as well in this state");
  } else if (r.driver.status == DriverStatus::crashed) {
    c.add(
        DiagnosticCode::driver_crashed, Severity::error,
        "a query of the NVIDIA driver crashed: " + r.driver.message + "; the GPUs were not tested",
        "the driver's user-space libraries do not match its kernel module or are damaged: compare "
        "`cat /proc/driver/nvidia/version` with the libnvidia-ml/libcuda versions the container "
        "mounts (NVIDIA Container Toolkit), and reinstall the driver if they differ");
  }
}

void driver_library(Collector& c, const Report& r, const DiagnosticFacts& ctx) {
  if (driver_faulted(r.driver)) return;
  if (r.driver.status != DriverStatus::not_found && !(ctx.cuda && !ctx.cuda->loaded)) return;
  const bool nvml_only = ctx.nvml.loaded && ctx.nvml.init_result == 0;
  if (nvml_only) {
    c.add(DiagnosticCode::cuda_library_not_found, Severity::error,
          "NVML loads but the CUDA driver library does not (" + r.driver.message +
              "): nvidia-smi works, CUDA programs cannot",
          "the container was given the 'utility' driver capability only: set "
          "NVIDIA_DRIVER_CAPABILITIES=compute,utility (or all)");
    return;
  }
  c.add(DiagnosticCode::driver_library_not_found, ctx.gpu_wanted ? Severity::error : Severity::info,
        "no NVIDIA driver library can be loaded (" + r.driver.message + ")", kGpuContainerHint);
}

void device_nodes(Collector& c, const DiagnosticFacts& ctx) {
  // Only meaningful where a driver is there to talk to.
  const bool driver_present =
      ctx.nvml.loaded || (ctx.cuda && ctx.cuda->loaded) || ctx.machine.driver_module;
  if (!driver_present) return;
  const std::vector<std::string>& nodes = ctx.machine.nodes.all;
  const bool ctl = ctx.machine.nodes.ctl;
  if (!ctl || ctx.machine.nodes.gpus.empty()) {
    c.add(DiagnosticCode::device_nodes_missing,
          ctx.gpu_wanted ? Severity::error : Severity::warning,
          fmt::format("the NVIDIA driver is present but {} (found: {})",
                      !ctl ? "/dev/nvidiactl is missing" : "no /dev/nvidiaN device node exists",
                      nodes.empty() ? "no /dev/nvidia* at all" : join(nodes, " ")),
          "the container sees the driver's libraries but not its devices: start it with `--gpus` "
          "(or `--device /dev/nvidiactl --device /dev/nvidia0 --device /dev/nvidia-uvm`)");
    return;
  }
  const std::vector<std::string>& blocked = ctx.machine.nodes.inaccessible;
  if (!blocked.empty()) {
    c.add(DiagnosticCode::device_nodes_inaccessible,
          ctx.gpu_wanted ? Severity::error : Severity::warning,
          "this user may not open " + join(blocked, ", ") + " for reading and writing",
          "add the user to the group that owns the nodes (often 'video' or 'render'), or allow "
          "the devices in the container's device cgroup");
  }
}

// The first entry of CUDA_VISIBLE_DEVICES that names no GPU ("" when none is known to): one the
// parse refused or found repeated, an index past the GPUs NVML lists, a GPU- UUID that is the
// prefix of none of theirs, or the entry where CUDA stopped (none seen at all: the first).
std::string invalid_visible_entry(const VisibleDevicesSpec& spec, const DiagnosticFacts& ctx) {
  if (!spec.invalid_entry.empty()) return spec.invalid_entry;
  const std::size_t physical = ctx.nvml.devices.size();
  for (const std::string& e : spec.entries) {
    const auto index = parse_int(e);
    if (physical > 0 && index && *index >= static_cast<std::int64_t>(physical)) return e;
    const bool known_uuid = std::any_of(
        ctx.nvml.devices.begin(), ctx.nvml.devices.end(),
        [&e](const NvmlDevice& d) { return starts_with(to_lower(d.uuid), to_lower(e)); });
    if (physical > 0 && starts_with(e, "GPU-") && !known_uuid) return e;
  }
  if (!ctx.cuda || spec.entries.empty()) return "";
  constexpr int kCudaErrorNoDevice = 100;
  if (ctx.cuda->init_result == kCudaErrorNoDevice && physical > 0) return spec.entries.front();
  if (ctx.cuda->init_result == 0 && ctx.cuda->devices.size() < spec.entries.size()) {
    return spec.entries[ctx.cuda->devices.size()];
  }
  return "";
}

void visible_devices(Collector& c, const Report& r, const DiagnosticFacts& ctx) {
  const std::optional<std::string>& nvidia = ctx.machine.nvidia_visible_devices;
  if (nvidia) {
    const std::string v = to_lower(trim(*nvidia));
    if (v == "void" || v == "none" || v.empty()) {
      c.add(DiagnosticCode::nvidia_visible_devices_none,
            ctx.gpu_wanted ? Severity::error : Severity::warning,
            fmt::format("NVIDIA_VISIBLE_DEVICES={} tells the NVIDIA container runtime to expose no "
                        "GPU",
                        v.empty() ? "\"\"" : v),
            "set NVIDIA_VISIBLE_DEVICES=all (or a list of GPU indices or UUIDs) in the image or "
            "the container's environment");
    }
  } else if (ctx.gpu_wanted && r.host.container && r.driver.status == DriverStatus::not_found) {
    c.add(DiagnosticCode::nvidia_visible_devices_unset, Severity::info,
          "this container has no NVIDIA_VISIBLE_DEVICES: it was not started by the NVIDIA "
          "container runtime (or the image does not request GPUs)",
          kGpuContainerHint);
  }

  const VisibleDevicesSpec& spec = ctx.visible;
  if (!spec.set) return;
  const std::size_t physical = ctx.nvml.devices.size();
  if (spec.entries.empty()) {
    c.add(
        DiagnosticCode::cuda_visible_devices_empty,
        ctx.gpu_wanted ? Severity::error : Severity::warning,
        fmt::format("CUDA_VISIBLE_DEVICES={} hides every GPU from CUDA{}",
                    spec.raw.empty() ? "\"\"" : "\"" + printable(spec.raw) + "\"",
                    physical > 0 ? fmt::format(" ({} present)", physical) : ""),
        "unset CUDA_VISIBLE_DEVICES, or set it to the GPUs to use (indices such as 0,1 or UUIDs)");
    return;
  }
  const std::string bad = invalid_visible_entry(spec, ctx);
  if (!bad.empty()) {
    c.add(DiagnosticCode::cuda_visible_devices_invalid,
          ctx.gpu_wanted ? Severity::error : Severity::warning,
          fmt::format(
              "CUDA_VISIBLE_DEVICES=\"{}\": entry '{}' {}{}; CUDA ignores it and every entry "
              "after it ({} visible){}",
              printable(spec.raw), printable(bad),
              spec.repeated ? "repeats an earlier one" : "names no GPU",
              physical == 1  ? std::string(" (1 present: 0)")
              : physical > 1 ? fmt::format(" ({} present: 0-{})", physical, physical - 1)
                             : std::string(""),
              std::count_if(r.devices.begin(), r.devices.end(),
                            [](const DeviceReport& d) { return d.kind == DeviceKind::cuda; }),
              spec.repeated ? "; PyTorch's torch.cuda.device_count() counts no GPU at all" : ""),
          "list only existing GPUs, each once: indices from nvidia-smi -L, or their UUIDs "
          "(GPU-...)");
  }
}

void driver_version(Collector& c, const Report& r, const DiagnosticFacts& ctx) {
  const std::optional<Version> needed = r.stack.cuda_version;
  const bool insufficient = r.driver.cu_init_result == 35;
  if (!insufficient && (!needed || !r.driver.cuda_version || *r.driver.cuda_version >= *needed)) {
    return;
  }
  const bool compat = ctx.machine.compat_libcuda;
  const bool compat_loaded = r.driver.libcuda_path.find("/compat/") != std::string::npos;
  std::string message =
      needed && r.driver.cuda_version
          ? fmt::format("LibTorch was built with CUDA {}, but driver {} supports CUDA {} at most",
                        needed->to_string(), r.driver.version.empty() ? "?" : r.driver.version,
                        r.driver.cuda_version->to_string())
          : "cuInit: CUDA_ERROR_INSUFFICIENT_DRIVER: the driver is older than the CUDA runtime";
  message += compat ? (compat_loaded ? "; the forward-compatibility libcuda from "
                                       "/usr/local/cuda/compat is in use"
                                     : "; forward-compatibility libraries exist in "
                                       "/usr/local/cuda/compat but are not loaded")
                    : "; no forward-compatibility libraries in /usr/local/cuda/compat";
  c.add(
      DiagnosticCode::driver_too_old, Severity::error, message,
      fmt::format("upgrade the host driver to {} or newer for CUDA {}, or use an image built for "
                  "CUDA {} or older; on data-centre GPUs the cuda-compat package (LD_LIBRARY_PATH="
                  "/usr/local/cuda/compat) bridges one major version",
                  needed ? minimum_driver(*needed) : std::string("a newer branch"),
                  needed ? needed->to_string() : std::string("of the image"),
                  r.driver.cuda_version ? r.driver.cuda_version->to_string()
                                        : std::string("the driver's")));
}

void cu_init(Collector& c, const Report& r, const DiagnosticFacts& ctx) {
  if (!r.driver.cu_init_result) return;
  const int code = *r.driver.cu_init_result;
  const std::string name = r.driver.cu_init_error_name;
  if (code == 0 || code == 35) return;  // success, or driver-too-old above
  if (code == 100) {
    // CUDA_VISIBLE_DEVICES hiding every GPU is said by its own diagnostic.
    if (ctx.visible.set && (ctx.visible.entries.empty() || !ctx.visible.invalid_entry.empty() ||
                            !ctx.nvml.devices.empty())) {
      return;
    }
    c.add(DiagnosticCode::no_cuda_device, ctx.gpu_wanted ? Severity::error : Severity::warning,
          "the driver is loaded, but cuInit finds no CUDA device (CUDA_ERROR_NO_DEVICE)",
          "check `nvidia-smi -L`; in a container, pass the GPUs in (`--gpus all`) and check "
          "NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES");
    return;
  }
  std::string hint;
  switch (code) {
    case 802:
      hint =
          "an NVSwitch system whose fabric manager is not running: start nvidia-fabricmanager "
          "(its version must match the driver's)";
      break;
    case 803:
      hint =
          "the user-mode driver (libcuda) does not match the kernel module: mount the host's "
          "driver libraries instead of the image's, and remove stale libcuda copies";
      break;
    case 804:
      hint =
          "forward-compatibility libcuda on a GPU that does not support it (consumer GPUs): "
          "take /usr/local/cuda/compat out of LD_LIBRARY_PATH";
      break;
    case 999:
      hint =
          "the driver or GPU is in a bad state: check `nvidia-smi` and the kernel log (Xid "
          "errors); a GPU reset or reboot may be needed";
      break;
    case 304:
      hint =
          "an OS call failed: check permissions on /dev/nvidia* and the container's device "
          "cgroup";
      break;
    default:
      hint =
          "look the error up in the CUDA driver API documentation; check `nvidia-smi` and the "
          "kernel log";
  }
  c.add(DiagnosticCode::cuinit_failed, Severity::error,
        fmt::format("cuInit failed with {} ({}){}", name.empty() ? "an error" : name, code,
                    ctx.cuda && !ctx.cuda->init_error_string.empty()
                        ? ": " + ctx.cuda->init_error_string
                        : ""),
        hint);
}

// One GPU's state: kernels for it in the build, MIG, its compute mode, memory held by others.
void gpu_state(Collector& c, const DeviceReport& d) {
  const GpuInfo& g = *d.gpu;
  if (d.kernels && !d.kernels->covered) {
    c.add(DiagnosticCode::arch_not_in_build, Severity::error, d.label() + ": " + d.kernels->reason,
          "use a LibTorch/PyTorch build whose torch.cuda.get_arch_list() covers this GPU (or "
          "build it with TORCH_CUDA_ARCH_LIST including it)");
  } else if (d.kernels && d.kernels->ptx) {
    c.add(DiagnosticCode::arch_via_ptx, Severity::warning,
          d.label() + ": this LibTorch build has no binary for sm_" +
              std::to_string(g.cc ? g.cc->as_int() : 0) + "; the driver JIT-compiles " +
              d.kernels->via + ": slow first start, and kernels tuned for an older GPU",
          "use a build whose arch list includes this GPU's architecture");
  }
  if (g.mig_enabled.value_or(false)) {
    c.add(DiagnosticCode::mig_enabled, Severity::info,
          fmt::format("{} ({}) has MIG enabled{}", d.label(), g.name,
                      g.mig_instance ? ": this is a MIG instance, with its share of the SMs and "
                                       "memory"
                                     : ": CUDA sees its instances only when "
                                       "CUDA_VISIBLE_DEVICES names them (MIG-...)"),
          "list the instances with `nvidia-smi -L`; give a job one by its MIG UUID");
  }
  if (g.compute_mode == 2) {
    c.add(DiagnosticCode::compute_mode_prohibited, Severity::error,
          d.label() + " is in compute mode Prohibited: no process may create a context on it",
          "`nvidia-smi -i " + std::to_string(d.index) + " -c DEFAULT` (as root)");
  }
  // In use: what is not free (NVML's own "used" counts reserved memory too, and can exceed the
  // total it reports).
  const std::optional<std::uint64_t> in_use =
      g.memory_total && g.memory_free
          ? std::optional<std::uint64_t>(*g.memory_total -
                                         std::min(*g.memory_free, *g.memory_total))
          : g.memory_used;
  const bool busy = g.memory_total && in_use && *g.memory_total > 0 &&
                    static_cast<double>(*in_use) > 0.9 * static_cast<double>(*g.memory_total);
  if (g.compute_mode == 3 && g.memory_used && *g.memory_used > (512ULL << 20)) {
    c.add(DiagnosticCode::compute_mode_exclusive_busy, Severity::warning,
          d.label() + " is in compute mode Exclusive Process and another process holds it (" +
              std::to_string(*g.memory_used >> 20) + " MiB in use): a second process cannot use it",
          "wait for the other process, or `nvidia-smi -i " + std::to_string(d.index) +
              " -c DEFAULT`");
  } else if (busy) {
    c.add(DiagnosticCode::gpu_memory_busy, Severity::warning,
          fmt::format("{}: {:.1f} of {:.1f} GiB are in use by other processes{}{}", d.label(),
                      static_cast<double>(*in_use) / (1 << 30),
                      static_cast<double>(*g.memory_total) / (1 << 30), holders(g),
                      untested_for_memory(d)),
          "free the GPU (stop those processes), or choose another with --device; "
          "`nvidia-smi --query-compute-apps=pid,used_memory --format=csv` lists the holders");
  }
}

// The first not_tested reason of any device that names an operator's schema ("" when none).
std::string schema_mismatch(const Report& r) {
  for (const DeviceReport& d : r.devices) {
    for (const auto& [mode, p] : d.precisions) {
      if (p.reason.find("the image's schema of") != std::string::npos ||
          p.reason.find("native_functions.yaml has no") != std::string::npos) {
        return p.reason;
      }
    }
  }
  return "";
}

// The image's LibTorch as the engine found and loaded it (a full run's; --quick loads nothing).
void libtorch(Collector& c, const Report& r) {
  if (r.run.quick || r.run.command != Command::probe) return;
  const StackInfo& s = r.stack;
  if (!s.available) {
    if (s.found_by == "PRECISION_PROBE_TORCH=none") return;
    c.add(DiagnosticCode::libtorch_not_found, Severity::error,
          "no PyTorch or LibTorch was found for the engine to load: no kernel check ran",
          "run the probe inside the image whose PyTorch you train with (the torch package of its "
          "python3 is found), or set PRECISION_PROBE_TORCH to a torch package or LibTorch "
          "directory");
    return;
  }
  const std::optional<Version> release = Version::parse(s.libtorch_version);
  if (release && *release < kEngineFloor) {
    c.add(DiagnosticCode::libtorch_too_old, Severity::error,
          fmt::format("this image's PyTorch {} is older than {}, the oldest release whose stable "
                      "C ABI the engine uses: no kernel check ran",
                      s.libtorch_version, kEngineFloor.to_string()),
          fmt::format("use PyTorch {} or later; --quick still answers for this one from its files",
                      kEngineFloor.to_string()));
    return;
  }
  if (!s.load_error.empty()) {
    c.add(DiagnosticCode::libtorch_load_failed, Severity::error,
          fmt::format("the engine could not load this image's LibTorch: {}", s.load_error),
          "the libraries it needs (its libc10.so, the nvidia-* wheels of its CUDA) must be where "
          "pip puts them; `ldd " +
              s.library + "` shows what is missing");
    return;
  }
  // The files' claim (the report's stack gives the release that ran).
  const std::string& files = r.image_stack ? r.image_stack->libtorch_version : s.libtorch_version;
  if (!s.abi_version.empty() && !files.empty() && version_release(files) != s.abi_version) {
    c.add(DiagnosticCode::libtorch_version_mismatch, Severity::warning,
          fmt::format("torch/version.py says {}, but the library the engine loaded ({}) says it is "
                      "{} (aoti_torch_abi_version): the checks ran on {}, the release this report "
                      "gives",
                      files, s.library, s.abi_version, s.abi_version),
          "the package's files and its libraries come from different installations: reinstall "
          "torch");
  }
  if (!s.release_note.empty()) {
    c.add(DiagnosticCode::libtorch_untested_release, Severity::warning,
          fmt::format("PyTorch {}: {}; its checks ran, each result checked as always, and an "
                      "operator whose schema changed was not called",
                      s.libtorch_version, s.release_note),
          "a newer precision-probe knows this release; meanwhile read the reasons of what is not "
          "tested");
  }
  if (const std::string mismatch = schema_mismatch(r); !mismatch.empty()) {
    c.add(DiagnosticCode::operator_schema_mismatch, Severity::warning,
          "an operator the engine calls by name has another schema in this image, so the checks "
          "that use it did not run: " +
              mismatch,
          "a precision-probe that knows this release's schemas runs them");
  }
}

// Files of the image's PyTorch tree that are not regular files (a FIFO, a device): refused
// unread, since a reader of one waits for ever (docs/images.md).
void refused_files(Collector& c, const Report& r) {
  if (!r.image_stack || r.image_stack->refused.empty()) return;
  const StackInfo& s = *r.image_stack;
  c.add(DiagnosticCode::torch_file_refused, s.available ? Severity::warning : Severity::error,
        fmt::format("the image's PyTorch tree holds {} that {} not a regular file, refused "
                    "unread: {}",
                    s.refused.size() == 1 ? "a file" : fmt::format("{} files", s.refused.size()),
                    s.refused.size() == 1 ? "is" : "are", join(s.refused, ", ")),
        "replace each with the file it stands for (pip install --force-reinstall torch, or "
        "rebuild the image): a FIFO or a device in a package is a broken or tampered image, and "
        "`import torch` would wait on it for ever");
}

void stack_and_devices(Collector& c, const Report& r, const DiagnosticFacts& ctx) {
  refused_files(c, r);
  if (!ctx.engine_installed) {
    c.add(DiagnosticCode::engine_not_installed, Severity::warning,
          !ctx.engine_missing.empty()
              ? ctx.engine_missing
              : "the kernel engine (precision-probe-engine) is not installed next to the probe: "
                "no smoke test ran",
          "install the whole package (bin/precision-probe and libexec/precision-probe/), or set "
          "PRECISION_PROBE_ENGINE to the engine's path");
  }
  if (r.stack.available && !r.stack.cuda_built && r.stack.cuda_version) {
    // A CUDA build without its CUDA library (a partial install, or ./dev's cache).
    c.add(DiagnosticCode::libtorch_without_cuda, any_gpu(r) ? Severity::error : Severity::info,
          fmt::format("LibTorch {} is a CUDA {} build, but its libtorch_cuda.so is not in {}/lib{}",
                      r.stack.libtorch_version, r.stack.cuda_version->to_string(), r.stack.location,
                      any_gpu(r) ? ": no GPU kernel can run" : " (and no GPU is visible)"),
          "install torch whole (pip install torch), or run the probe in the image you train with; "
          "./dev's cache of PyPI's torch holds its CPU library alone");
  } else if (r.stack.available && !r.stack.cuda_built) {
    if (any_gpu(r)) {
      c.add(DiagnosticCode::libtorch_without_cuda, Severity::error,
            fmt::format("LibTorch {} was built without CUDA, but this machine has GPUs: no GPU "
                        "kernel can run",
                        r.stack.libtorch_version),
            "use a CUDA build of PyTorch/LibTorch (a pytorch/pytorch:*-cuda* image, a cu12x/cu13x "
            "wheel)");
    } else {
      c.add(DiagnosticCode::libtorch_without_cuda, Severity::info,
            fmt::format("LibTorch {} is a CPU-only build (and no GPU is visible)",
                        r.stack.libtorch_version),
            "nothing to do for CPU work; for GPUs, use a CUDA build of LibTorch");
    }
  }
  bool tf32_native = false;
  for (const DeviceReport& d : r.devices) {
    if (d.kind != DeviceKind::cuda || !d.gpu) continue;
    gpu_state(c, d);
    const PrecisionResult* bf16 = d.find(Mode::bf16);
    if (bf16 != nullptr && bf16->status == Status::emulated) {
      c.add(DiagnosticCode::bf16_emulated, Severity::warning,
            d.label() + ": BF16 runs but is emulated (" + bf16->reason +
                "); torch.cuda.is_bf16_supported() still answers True here",
            "train in fp16 with loss scaling on this GPU (see the recommendation), or use cc 8.0+");
    }
    const PrecisionResult* tf32 = d.find(Mode::tf32);
    if (tf32 != nullptr && tf32->hardware == Hardware::native) tf32_native = true;
  }
  if (ctx.machine.tf32_override) {
    c.add(DiagnosticCode::tf32_override, Severity::warning,
          "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 is set (NGC's images set it): this image's PyTorch "
          "runs every fp32 matmul as TF32, whatever the code asks; the probe's fp32 check ran "
          "without it",
          "unset it for jobs that need full-fp32 matmuls; keep it where TF32 is what you want");
  } else if (tf32_native) {
    c.add(DiagnosticCode::tf32_off_by_default, Severity::info,
          "PyTorch/LibTorch leave TF32 off for fp32 matmuls by default (since 1.12): fp32 training "
          "runs at full-fp32 speed although TF32 tensor cores are native here",
          "torch.set_float32_matmul_precision('high') (Python) or "
          "at::globalContext().setFloat32MatmulPrecision(\"high\") (C++); cuDNN convolutions use "
          "TF32 already");
  }
}

// GPUs of one node that disagree: mixed models, or a mode whose status differs (one GPU failing).
void disagreement(Collector& c, const Report& r) {
  std::vector<const DeviceReport*> gpus;
  std::set<std::string> models;
  for (const DeviceReport& d : r.devices) {
    if (d.kind != DeviceKind::cuda || !d.selected) continue;
    gpus.push_back(&d);
    models.insert(d.name);
  }
  if (gpus.size() < 2) return;
  std::vector<std::string> differences;
  for (Mode mode : all_modes()) {
    std::map<Status, std::vector<std::string>> by_status;
    for (const DeviceReport* d : gpus) {
      if (const PrecisionResult* p = d->find(mode))
        by_status[p->status].push_back(std::to_string(d->index));
    }
    if (by_status.size() < 2) continue;
    std::vector<std::string> parts;
    parts.reserve(by_status.size());
    for (const auto& [status, indices] : by_status) {
      parts.push_back(fmt::format("{} on GPU {}", to_string(status), join(indices, ",")));
    }
    differences.push_back(fmt::format("{}: {}", mode_key(mode), join(parts, "; ")));
  }
  if (!differences.empty()) {
    c.add(DiagnosticCode::devices_disagree, Severity::warning,
          "the GPUs of this node disagree: " + join(differences, " | "),
          "a training job runs at the pace (and precision) of its worst GPU: look at the GPU that "
          "differs (nvidia-smi -q -i N, the kernel log for Xid errors), or exclude it with "
          "CUDA_VISIBLE_DEVICES");
  } else if (models.size() > 1) {
    c.add(DiagnosticCode::devices_disagree, Severity::info,
          "the node mixes GPU models: " +
              join(std::vector<std::string>(models.begin(), models.end()), ", "),
          "data-parallel jobs run at the pace of the slowest model; pin jobs to one model with "
          "CUDA_VISIBLE_DEVICES");
  }
}

}  // namespace

// A CPU whose fp32 GEMM (--bench) reaches less than this share of what its cores and ISA allow is
// running a reference BLAS (the figures measured: docs/diagnostics.md, cpu-blas-slow).
constexpr double kSlowBlasFraction = 0.10;

void cpu_blas(Collector& c, const Report& r) {
  for (const DeviceReport& d : r.devices) {
    if (!d.cpu) continue;
    const PrecisionResult* fp32 = d.find(Mode::fp32);
    const auto peak = cpu_fp32_peak_gflops(*d.cpu);
    if (fp32 == nullptr || !fp32->bench || !fp32->bench->outcome.ok || !peak) continue;
    const double gflops = fp32->bench->outcome.tflops.value_or(0.0) * 1000.0;
    if (gflops >= kSlowBlasFraction * *peak) continue;
    c.add(DiagnosticCode::cpu_blas_slow, Severity::warning,
          fmt::format("the CPU's fp32 GEMM runs at {:.3g} GFLOP/s, {:.1f} % of the {:.0f} GFLOP/s "
                      "its {} cores allow ({:.2f} GHz, {} FLOP per cycle): LibTorch is on a "
                      "reference BLAS",
                      gflops, 100.0 * gflops / *peak, *peak, d.cpu->physical_cores,
                      d.cpu->mhz.value_or(0.0) / 1000.0, cpu_fp32_flops_per_cycle(*d.cpu)),
          "install an optimised BLAS (Debian/Ubuntu: apt-get install libopenblas0-pthread, which "
          "takes over libblas.so.3), or use a LibTorch built with MKL or OpenBLAS");
  }
}

// A device that is reported but not gated never changes the exit code: what failed there is
// said here, so that it is not missed.
void ungated_failures(Collector& c, const Report& r) {
  for (const DeviceReport& d : r.devices) {
    if (d.selected || (d.index < 0 && d.kind == DeviceKind::cuda)) continue;
    std::vector<std::string> failed;
    for (const auto& [mode, p] : d.precisions) {
      if (p.status == Status::failed)
        failed.push_back(std::string(mode_key(mode)) + " (" + p.reason + ")");
    }
    if (failed.empty()) continue;
    c.add(DiagnosticCode::ungated_device_failed, Severity::warning,
          fmt::format("{} is reported, not gated, so the exit code does not count its failures: {}",
                      d.label(), join(failed, "; ")),
          d.kind == DeviceKind::cpu ? "gate the CPU too with --device all (or --device cpu)"
                                    : "gate this GPU with --device " + std::to_string(d.index));
  }
}

// Why a lost session's devices ran again, by what ended it: the probe itself (another device's
// check hung), a crash that came again with one device alone (that device's own), a SIGKILL the
// probe did not send (the OOM killer, most often), or a crash or an exit that did not come again.
std::string rerun_hint(const EngineRerun& e, const std::vector<std::string>& again) {
  if (!e.hung_device.empty()) {
    return "nothing to do for the others: the probe ended the session they shared with " +
           e.hung_device + " to free their checks; see its timed-out check";
  }
  if (!again.empty()) {
    return "see the failed checks of " + join(again, ", ") +
           ": the crash came again with it alone, so it is that device's";
  }
  if (e.signal == "SIGKILL" && e.oom_killer == std::optional<bool>(true)) {
    return "give the probe's container more memory than its cgroup's limit (docs/performance.md "
           "has the probe's peak per GPU), or run it where less else runs in that cgroup";
  }
  if (e.signal == "SIGKILL" && e.oom_killer == std::optional<bool>(false)) {
    return "something outside the probe sent SIGKILL (a supervisor, an eviction, `kill -9`): find "
           "what, in its logs and the kernel's (`dmesg`)";
  }
  if (e.signal == "SIGKILL") {
    return "the probe does not send SIGKILL: the kernel's OOM killer most often (`dmesg | grep -i "
           "oom`, the container cgroup's memory.events `oom_kill`); give the probe's container "
           "more memory (docs/performance.md has its peak per GPU), or find what killed it";
  }
  return "it did not come again with each device alone, so it depends on what ran beside it: "
         "run again with PRECISION_PROBE_TRACE=1 and report it with that output";
}

bool crashed(const DeviceReport& d) {
  for (const auto& [mode, p] : d.precisions) {
    if (p.failure == ErrorKind::crashed) return true;
  }
  return false;
}

// Devices whose checks ran again in an isolated session, the shared one lost before they were
// done: their verdicts stand, what ended the session is said (a diagnostic a cause).
void lost_sessions(Collector& c, const Report& r) {
  std::map<std::string, std::vector<const DeviceReport*>> by_cause;  // by what ended the session
  for (const DeviceReport& d : r.devices) {
    if (d.engine_rerun) by_cause[d.engine_rerun->why].push_back(&d);
  }
  for (const auto& [why, devices] : by_cause) {
    EngineRerun e = *devices.front()->engine_rerun;
    std::vector<std::string> labels;
    std::vector<std::string> again;   // their checks crashed again alone
    std::vector<std::string> killed;  // the OOM killer ended them again alone: memory, not them
    for (const DeviceReport* d : devices) {
      labels.push_back(d->label());
      const bool oom = d->engine_rerun->oom_killer == std::optional<bool>(true);
      if (oom) e.oom_killer = true;
      if (crashed(*d)) (oom ? killed : again).push_back(d->label());
    }
    const bool explained = !e.hung_device.empty() || !again.empty();
    std::string after;
    if (!again.empty()) after += "; " + join(again, ", ") + " crashed again alone";
    if (!killed.empty()) after += "; the OOM killer ended " + join(killed, ", ") + " again alone";
    c.add(DiagnosticCode::engine_session_lost, explained ? Severity::info : Severity::warning,
          fmt::format("the engine session running the checks of {} was lost before they were "
                      "done ({}); what they had not answered ran again in an isolated session "
                      "each, and their verdicts are from there{}",
                      join(labels, ", "), e.why, after),
          rerun_hint(e, again));
  }
}

// "GPU 0 (NVIDIA H200, GPU-..., 0000:17:00.0)": what a datacentre ticket needs.
std::string identity(const DeviceReport& d) {
  if (!d.gpu) return d.label() + " (" + d.name + ")";
  return fmt::format("{} ({}, {}, {})", d.label(), d.name,
                     d.gpu->uuid.empty() ? "no UUID" : d.gpu->uuid,
                     d.gpu->pci_bus_id.empty() ? "no PCI bus id" : d.gpu->pci_bus_id);
}

constexpr const char* kDrainHint =
    "drain the node (no more jobs on it), then run the vendor's field diagnostic on that GPU "
    "(`dcgmi diag -r 4`, or NVIDIA's fieldiag through the system vendor) and replace it if it "
    "fails; results computed on it may be wrong";

constexpr const char* kCpuCorruptionHint =
    "take the machine out of service, then run a checking CPU and memory stress test (the vendor's "
    "diagnostics, or stress-ng --cpu with --verify, and a memory test) and replace what fails";

void soak_mismatches(Collector& c, const DeviceReport& d) {
  for (const auto& [mode, o] : d.soak->modes) {
    if (o.mismatches == 0 || !o.first_mismatch) continue;
    const SoakMismatch& m = *o.first_mismatch;
    std::string when = fmt::format("result {} ({:.1f} s in", m.iteration, m.seconds);
    if (m.temperature_c) when += fmt::format(", at {} °C", *m.temperature_c);
    when += ")";
    c.add(DiagnosticCode::silent_data_corruption, o.injected ? Severity::info : Severity::error,
          fmt::format("{} computed wrong {} numbers under load: {} of {} results differed from the "
                      "golden one, the first at {} in {} element(s){}{}",
                      identity(d), mode_key(mode), o.mismatches, o.iterations, when, m.elements,
                      m.max_abs_error ? fmt::format(", by up to {:.3g}", *m.max_abs_error) : "",
                      o.injected ? " (an injected fault: a test of the detector)" : ""),
          d.kind == DeviceKind::cpu ? kCpuCorruptionHint : kDrainHint);
  }
}

// What NVML said against a GPU during the soak: errors (Xid events, uncorrectable ECC errors,
// rows remapped or pages retired, a remapping failure) and slowdowns other than the power cap a
// loaded GPU normally sits at.
void soak_health(Collector& c, const DeviceReport& d) {
  const SoakTelemetry& t = *d.soak->telemetry;
  std::vector<std::string> errors;
  std::vector<std::string> slowdowns;
  if (!t.xids.empty()) {
    std::vector<std::string> codes;
    codes.reserve(t.xids.size());
    for (int xid : t.xids) codes.push_back(std::to_string(xid));
    errors.push_back("Xid " + join(codes, ", "));
  }
  auto grew = [&errors](const std::optional<std::int64_t>& delta, const char* what) {
    if (delta && *delta > 0) errors.push_back(fmt::format("{} {}", *delta, what));
  };
  grew(t.ecc_uncorrected_delta, "more uncorrectable ECC errors");
  grew(t.remapped_rows_delta, "more remapped rows");
  grew(t.retired_pages_delta, "more retired pages");
  if (t.remap_failure) errors.emplace_back("a row-remapping failure");
  for (const std::string& e : t.clock_events) {
    if (e != "sw_power_cap") slowdowns.push_back(e);
  }
  if (errors.empty() && slowdowns.empty()) return;
  std::string evidence = join(errors, "; ");
  if (!slowdowns.empty()) {
    evidence +=
        (evidence.empty() ? "" : "; ") + std::string("clock slowdowns: ") + join(slowdowns, ", ");
  }
  if (t.max_temperature_c) evidence += fmt::format(" (up to {} °C)", *t.max_temperature_c);
  c.add(DiagnosticCode::soak_gpu_health, errors.empty() ? Severity::warning : Severity::error,
        identity(d) + " under the soak's load: " + evidence,
        errors.empty() ? "a GPU slowed down by heat or its hardware runs below its like: check its "
                         "cooling and power (nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i N)"
                       : kDrainHint);
}

// Each note of a fault that was not injected, once, with the devices whose soak says it (a note
// of the run, one DEVICE that is not soaked, is every soaked device's).
void injection_notes(Collector& c, const Report& r) {
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;
  for (const DeviceReport& d : r.devices) {
    if (!d.soak || d.soak->injected || d.soak->injection_note.empty()) continue;
    const auto it = std::find_if(notes.begin(), notes.end(),
                                 [&d](const auto& n) { return n.first == d.soak->injection_note; });
    if (it != notes.end()) {
      it->second.push_back(d.label());
    } else {
      notes.push_back({d.soak->injection_note, {d.label()}});
    }
  }
  for (const auto& [note, devices] : notes) {
    c.add(DiagnosticCode::soak_fault_injected, Severity::warning, join(devices, ", ") + ": " + note,
          "name a result the soak reaches (an earlier ITERATION, or a longer --soak) of a mode "
          "(--soak-modes) on a device (--device) this run soaks");
  }
}

void soak(Collector& c, const Report& r) {
  for (const DeviceReport& d : r.devices) {
    if (!d.soak) continue;
    soak_mismatches(c, d);
    if (d.soak->telemetry) soak_health(c, d);
    if (!d.soak->golden_disagreement.empty()) {
      c.add(DiagnosticCode::soak_golden_disagrees, Severity::error,
            identity(d) + ": " + d.soak->golden_disagreement, kDrainHint);
    }
    if (!d.soak->straggler.empty()) {
      c.add(DiagnosticCode::soak_straggler, Severity::warning,
            identity(d) + " is a straggler: " + d.soak->straggler,
            "look at its clocks, power and temperature under load (nvidia-smi -q -d "
            "PERFORMANCE,POWER,TEMPERATURE -i N) and its cooling; a job runs at the pace of its "
            "slowest GPU");
    }
    if (d.soak->injected) {
      c.add(DiagnosticCode::soak_fault_injected, Severity::info,
            fmt::format("{} was set: a bit of one result of {} was flipped on purpose",
                        kInjectFaultVariable, d.label()),
            "unset it for a real soak: it is a test facility of the detector");
    }
  }
  injection_notes(c, r);
}

std::vector<Diagnostic> diagnose(const Report& report, const DiagnosticFacts& facts) {
  std::vector<Diagnostic> out;
  Collector c(out);
  driver_fault(c, report);
  driver_library(c, report, facts);
  device_nodes(c, facts);
  visible_devices(c, report, facts);
  driver_version(c, report, facts);
  cu_init(c, report, facts);
  stack_and_devices(c, report, facts);
  libtorch(c, report);
  disagreement(c, report);
  ungated_failures(c, report);
  lost_sessions(c, report);
  cpu_blas(c, report);
  soak(c, report);
  return out;
}

std::string_view to_string(DiagnosticCode code) {
  for (const DiagnosticInfo& info : kDiagnosticCodes) {
    if (info.code == code) return info.name;
  }
  return "?";
}

}  // namespace precision_probe
