// The real driver: NVML and the CUDA driver API loaded with dlopen. Only the handful of entry
// points the probe needs are declared here; their ABI has been stable for many driver
// generations. Where the CUDA toolkit's headers are present the constants are checked against them.

#include <dlfcn.h>

#include <array>
#include <chrono>
#include <thread>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "probe/driver/driver.hpp"
#include "probe/driver/telemetry.hpp"
#include "trace/trace.hpp"
#include "strings/strings.hpp"
#include "probe/platform/system.hpp"

#if defined(PP_HAVE_CUDA_H) && __has_include(<cuda.h>)
#include <cuda.h>
static_assert(CUDA_ERROR_NO_DEVICE == 100);
static_assert(sizeof(CUuuid) == sizeof(precision_probe::CudaUuidBytes));
#endif

namespace precision_probe {
namespace {

// --- CUDA driver API -------------------------------------------------------------------------
using CUresult = int;

using cuInit_t = CUresult (*)(unsigned int);
using cuGetErrorName_t = CUresult (*)(CUresult, const char**);
using cuGetErrorString_t = CUresult (*)(CUresult, const char**);

// --- NVML --------------------------------------------------------------------------------------
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlPciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};
constexpr nvmlReturn_t kNvmlSuccess = 0;

using nvmlInit_t = nvmlReturn_t (*)();
using nvmlShutdown_t = nvmlReturn_t (*)();
using nvmlErrorString_t = const char* (*)(nvmlReturn_t);
using nvmlSystemGetDriverVersion_t = nvmlReturn_t (*)(char*, unsigned int);
using nvmlSystemGetCudaDriverVersion_t = nvmlReturn_t (*)(int*);
using nvmlDeviceGetCount_t = nvmlReturn_t (*)(unsigned int*);
using nvmlDeviceGetHandleByIndex_t = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetString_t = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetPciInfo_t = nvmlReturn_t (*)(nvmlDevice_t, NvmlPciInfo*);
using nvmlDeviceGetCudaComputeCapability_t = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using nvmlDeviceGetMemoryInfo_t = nvmlReturn_t (*)(nvmlDevice_t, NvmlMemory*);
using nvmlDeviceGetMigMode_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using nvmlDeviceGetComputeMode_t = nvmlReturn_t (*)(nvmlDevice_t, int*);
using nvmlDeviceGetMaxClockInfo_t = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
struct NvmlProcessInfoV2 {  // nvmlProcessInfo_v2_t, taken by the _v2 and _v3 entry points
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using nvmlDeviceGetComputeRunningProcesses_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*,
                                                                NvmlProcessInfoV2*);
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
constexpr int kNvmlClockSm = 1;

// A dlopen'ed library, closed on destruction unless released.
class Library {
 public:
  explicit Library(const std::string& name) {
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* err = dlerror();  // NOLINT(concurrency-mt-unsafe): glibc keeps it per thread
      error_ = err != nullptr ? err : ("cannot open " + name);
    }
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_ != nullptr && !keep_loaded_) dlclose(handle_);
  }
  // Leaves the library loaded when this object goes: an initialised driver must not be unloaded.
  void keep_loaded() { keep_loaded_ = true; }
  bool loaded() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }

  template <typename Fn>
  Fn get(const char* name) const {
    return handle_ != nullptr ? reinterpret_cast<Fn>(dlsym(handle_, name)) : nullptr;
  }
  template <typename Fn>
  Fn get_any(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      if (auto fn = get<Fn>(name)) return fn;
    }
    return nullptr;
  }
  // The file the loader actually picked (through a symbol's address).
  std::string path_of(const char* symbol) const {
    Dl_info info{};
    void* address = handle_ != nullptr ? dlsym(handle_, symbol) : nullptr;
    if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
      return info.dli_fname;
    }
    return "";
  }

 private:
  void* handle_ = nullptr;
  std::string error_;
  bool keep_loaded_ = false;
};

// The compute processes on a device (at most 64 are listed).
std::vector<GpuProcess> compute_processes(nvmlDeviceGetComputeRunningProcesses_t get,
                                          nvmlDevice_t dev) {
  std::vector<GpuProcess> out;
  std::array<NvmlProcessInfoV2, 64> infos{};
  unsigned int count = infos.size();
  if (get(dev, &count, infos.data()) != kNvmlSuccess) return out;
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    GpuProcess p;
    p.pid = infos[i].pid;
    if (infos[i].used_gpu_memory != kNvmlValueNotAvailable) p.used_bytes = infos[i].used_gpu_memory;
    out.push_back(p);
  }
  return out;
}

// NVML's per-device queries, each optional (an older driver lacks some).
class NvmlDeviceQueries {
 public:
  explicit NvmlDeviceQueries(const Library& lib)
      : name_(lib.get<nvmlDeviceGetString_t>("nvmlDeviceGetName")),
        uuid_(lib.get<nvmlDeviceGetString_t>("nvmlDeviceGetUUID")),
        pci_(lib.get_any<nvmlDeviceGetPciInfo_t>(
            {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"})),
        cc_(lib.get<nvmlDeviceGetCudaComputeCapability_t>("nvmlDeviceGetCudaComputeCapability")),
        mem_(lib.get<nvmlDeviceGetMemoryInfo_t>("nvmlDeviceGetMemoryInfo")),
        mig_(lib.get<nvmlDeviceGetMigMode_t>("nvmlDeviceGetMigMode")),
        mode_(lib.get<nvmlDeviceGetComputeMode_t>("nvmlDeviceGetComputeMode")),
        clock_(lib.get<nvmlDeviceGetMaxClockInfo_t>("nvmlDeviceGetMaxClockInfo")),
        processes_(lib.get_any<nvmlDeviceGetComputeRunningProcesses_t>(
            {"nvmlDeviceGetComputeRunningProcesses_v3",
             "nvmlDeviceGetComputeRunningProcesses_v2"})) {}

  NvmlDevice read(nvmlDevice_t dev) const {
    NvmlDevice d;
    char text[128] = {};
    if (name_ != nullptr && name_(dev, text, sizeof text) == kNvmlSuccess) d.name = text;
    std::memset(text, 0, sizeof text);
    if (uuid_ != nullptr && uuid_(dev, text, sizeof text) == kNvmlSuccess) d.uuid = text;
    // Room to spare in case a newer driver writes a larger structure.
    alignas(NvmlPciInfo) unsigned char pci_storage[sizeof(NvmlPciInfo) + 256] = {};
    auto* pci = reinterpret_cast<NvmlPciInfo*>(pci_storage);
    if (pci_ != nullptr && pci_(dev, pci) == kNvmlSuccess) {
      pci->bus_id[sizeof pci->bus_id - 1] = '\0';
      d.pci_bus_id = pci->bus_id;
    }
    int major = 0;
    int minor = 0;
    if (cc_ != nullptr && cc_(dev, &major, &minor) == kNvmlSuccess) {
      d.cc = ComputeCapability{major, minor};
    }
    NvmlMemory mem{};
    if (mem_ != nullptr && mem_(dev, &mem) == kNvmlSuccess) {
      d.memory_total = mem.total;
      d.memory_free = mem.free;
      d.memory_used = mem.used;
    }
    unsigned int current = 0;
    unsigned int pending = 0;
    if (mig_ != nullptr && mig_(dev, &current, &pending) == kNvmlSuccess) {
      d.mig_enabled = current == 1;
    }
    int mode = 0;
    if (mode_ != nullptr && mode_(dev, &mode) == kNvmlSuccess) d.compute_mode = mode;
    unsigned int mhz = 0;
    if (clock_ != nullptr && clock_(dev, kNvmlClockSm, &mhz) == kNvmlSuccess && mhz > 0) {
      d.max_clock_ghz = mhz / 1000.0;
    }
    if (processes_ != nullptr) d.processes = compute_processes(processes_, dev);
    return d;
  }

 private:
  nvmlDeviceGetString_t name_;
  nvmlDeviceGetString_t uuid_;
  nvmlDeviceGetPciInfo_t pci_;
  nvmlDeviceGetCudaComputeCapability_t cc_;
  nvmlDeviceGetMemoryInfo_t mem_;
  nvmlDeviceGetMigMode_t mig_;
  nvmlDeviceGetComputeMode_t mode_;
  nvmlDeviceGetMaxClockInfo_t clock_;
  nvmlDeviceGetComputeRunningProcesses_t processes_;
};

class SystemDriver final : public DriverApi {
 public:
  SystemDriver(std::string nvml_name, std::string cuda_name)
      : nvml_name_(std::move(nvml_name)), cuda_name_(std::move(cuda_name)) {}
  SystemDriver(const SystemDriver&) = delete;
  SystemDriver& operator=(const SystemDriver&) = delete;
  ~SystemDriver() override = default;

  NvmlSnapshot query_nvml() override {
    NvmlSnapshot snap;
    Library lib(nvml_name_);
    snap.loaded = lib.loaded();
    if (!snap.loaded) {
      snap.load_error = lib.error();
      return snap;
    }
    auto init = lib.get_any<nvmlInit_t>({"nvmlInit_v2", "nvmlInit"});
    auto shutdown = lib.get<nvmlShutdown_t>("nvmlShutdown");
    auto error_string = lib.get<nvmlErrorString_t>("nvmlErrorString");
    if (init == nullptr) {
      snap.loaded = false;
      snap.load_error = nvml_name_ + " has no nvmlInit_v2";
      return snap;
    }
    snap.init_result = init();
    if (snap.init_result != kNvmlSuccess) {
      snap.init_error = error_string != nullptr ? error_string(snap.init_result) : "unknown error";
      return snap;
    }
    char buffer[96] = {};
    if (auto fn = lib.get<nvmlSystemGetDriverVersion_t>("nvmlSystemGetDriverVersion");
        fn != nullptr && fn(buffer, sizeof buffer) == kNvmlSuccess) {
      snap.driver_version = buffer;
    }
    int cuda_version = 0;
    if (auto fn = lib.get_any<nvmlSystemGetCudaDriverVersion_t>(
            {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
        fn != nullptr && fn(&cuda_version) == kNvmlSuccess) {
      snap.cuda_version = Version::from_cuda_number(cuda_version);
    }
    auto get_count =
        lib.get_any<nvmlDeviceGetCount_t>({"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
    auto get_handle = lib.get_any<nvmlDeviceGetHandleByIndex_t>(
        {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
    const NvmlDeviceQueries queries(lib);
    unsigned int count = 0;
    if (get_count != nullptr && get_handle != nullptr && get_count(&count) == kNvmlSuccess) {
      for (unsigned int i = 0; i < count && i < 1024; ++i) {
        nvmlDevice_t dev = nullptr;
        if (get_handle(i, &dev) == kNvmlSuccess) snap.devices.push_back(queries.read(dev));
      }
    }
    if (shutdown != nullptr) shutdown();
    return snap;
  }

  CudaSnapshot query_cuda() override {
    CudaSnapshot snap;
    if (!cuda_) cuda_ = std::make_unique<Library>(cuda_name_);
    const Library* lib = cuda_.get();
    snap.loaded = lib->loaded();
    if (!snap.loaded) {
      snap.load_error = lib->error();
      return snap;
    }
    snap.library = lib->path_of("cuInit");
    auto init = lib->get<cuInit_t>("cuInit");
    auto error_name = lib->get<cuGetErrorName_t>("cuGetErrorName");
    auto error_string = lib->get<cuGetErrorString_t>("cuGetErrorString");
    if (init == nullptr) {
      snap.loaded = false;
      snap.load_error = cuda_name_ + " has no cuInit";
      return snap;
    }
    const CudaQueries queries =
        find_cuda_queries([lib](const char* name) { return lib->get<void*>(name); });
    snap.driver_cuda_version = read_driver_version(queries);
    cuda_->keep_loaded();  // cuInit is about to run: unloading an initialised driver is unsafe
    snap.init_result = init(0);
    if (snap.init_result != 0) {
      const char* text = nullptr;
      snap.init_error_name =
          (error_name != nullptr && error_name(snap.init_result, &text) == 0 && text)
              ? text
              : fmt::format("CUresult {}", snap.init_result);
      text = nullptr;
      snap.init_error_string =
          (error_string != nullptr && error_string(snap.init_result, &text) == 0 && text) ? text
                                                                                          : "";
      return snap;
    }
    read_started_driver(queries, snap);
    return snap;
  }

 private:
  std::string nvml_name_;
  std::string cuda_name_;
  std::unique_ptr<Library> cuda_;
};

// --- Telemetry (the driver agent's `telemetry`) -----------------------------------------------
using nvmlEventSet_t = void*;
struct NvmlEventData {  // nvmlEventData_t
  nvmlDevice_t device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long kNvmlEventXidCriticalError = 0x8;
constexpr int kNvmlErrorTimeout = 10;
constexpr int kNvmlInsufficientSize = 7;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlEccCorrected = 0;
constexpr int kNvmlEccUncorrected = 1;
constexpr int kNvmlVolatileEcc = 0;
using nvmlDeviceGetTemperature_t = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetClockInfo_t = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetPowerUsage_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetClocksEventReasons_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using nvmlDeviceGetTotalEccErrors_t = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using nvmlDeviceGetRemappedRows_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                     unsigned int*, unsigned int*);
using nvmlDeviceGetRetiredPages_t = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*,
                                                     unsigned long long*);
using nvmlEventSetCreate_t = nvmlReturn_t (*)(nvmlEventSet_t*);
using nvmlDeviceRegisterEvents_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
using nvmlEventSetWait_t = nvmlReturn_t (*)(nvmlEventSet_t, NvmlEventData*, unsigned int);

// The telemetry queries of one GPU; a query NVML lacks or refuses is left out of the sample.
class NvmlTelemetry {
 public:
  explicit NvmlTelemetry(const Library& lib)
      : temperature_(lib.get<nvmlDeviceGetTemperature_t>("nvmlDeviceGetTemperature")),
        clock_(lib.get<nvmlDeviceGetClockInfo_t>("nvmlDeviceGetClockInfo")),
        power_(lib.get<nvmlDeviceGetPowerUsage_t>("nvmlDeviceGetPowerUsage")),
        reasons_(lib.get_any<nvmlDeviceGetClocksEventReasons_t>(
            {"nvmlDeviceGetCurrentClocksEventReasons",
             "nvmlDeviceGetCurrentClocksThrottleReasons"})),
        ecc_(lib.get<nvmlDeviceGetTotalEccErrors_t>("nvmlDeviceGetTotalEccErrors")),
        remapped_(lib.get<nvmlDeviceGetRemappedRows_t>("nvmlDeviceGetRemappedRows")),
        retired_(lib.get<nvmlDeviceGetRetiredPages_t>("nvmlDeviceGetRetiredPages")) {}

  GpuSample read(nvmlDevice_t dev, const std::string& uuid) const {
    GpuSample g;
    g.uuid = uuid;
    unsigned int value = 0;
    if (temperature_ != nullptr && temperature_(dev, kNvmlTemperatureGpu, &value) == kNvmlSuccess)
      g.temperature_c = static_cast<int>(value);
    if (clock_ != nullptr && clock_(dev, kNvmlClockSm, &value) == kNvmlSuccess)
      g.sm_mhz = static_cast<int>(value);
    if (power_ != nullptr && power_(dev, &value) == kNvmlSuccess) g.power_w = value / 1000.0;
    unsigned long long bits = 0;
    if (reasons_ != nullptr && reasons_(dev, &bits) == kNvmlSuccess) g.clock_reasons = bits;
    read_errors(dev, g);
    return g;
  }

 private:
  void read_errors(nvmlDevice_t dev, GpuSample& g) const {
    unsigned long long count = 0;
    if (ecc_ != nullptr && ecc_(dev, kNvmlEccCorrected, kNvmlVolatileEcc, &count) == kNvmlSuccess)
      g.ecc_corrected = static_cast<std::int64_t>(count);
    if (ecc_ != nullptr && ecc_(dev, kNvmlEccUncorrected, kNvmlVolatileEcc, &count) == kNvmlSuccess)
      g.ecc_uncorrected = static_cast<std::int64_t>(count);
    unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
    if (remapped_ != nullptr && remapped_(dev, &corr, &unc, &pending, &failure) == kNvmlSuccess) {
      g.remapped_rows = static_cast<std::int64_t>(corr) + unc;
      g.remap_failure = failure != 0;
    }
    std::int64_t pages = 0;
    bool any = false;
    for (int cause : {0, 1}) {  // multiple single-bit errors, double-bit errors
      unsigned int n = 0;
      const nvmlReturn_t r = retired_ != nullptr ? retired_(dev, cause, &n, nullptr) : -1;
      if (r == kNvmlSuccess || r == kNvmlInsufficientSize) {
        pages += n;
        any = true;
      }
    }
    if (any) g.retired_pages = pages;
  }

  nvmlDeviceGetTemperature_t temperature_;
  nvmlDeviceGetClockInfo_t clock_;
  nvmlDeviceGetPowerUsage_t power_;
  nvmlDeviceGetClocksEventReasons_t reasons_;
  nvmlDeviceGetTotalEccErrors_t ecc_;
  nvmlDeviceGetRemappedRows_t remapped_;
  nvmlDeviceGetRetiredPages_t retired_;
};

// Xid events since the last call, waiting up to `wait_ms` for the first (the sampling period).
void collect_xids(const Library& lib, nvmlEventSet_t set,
                  const std::vector<std::pair<nvmlDevice_t, std::string>>& devices, int wait_ms,
                  TelemetrySample& sample) {
  auto wait = lib.get_any<nvmlEventSetWait_t>({"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  if (set == nullptr || wait == nullptr) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return;
  }
  for (int timeout = wait_ms;; timeout = 0) {
    NvmlEventData data{};
    const nvmlReturn_t r = wait(set, &data, static_cast<unsigned int>(timeout));
    if (r != kNvmlSuccess) {
      if (r != kNvmlErrorTimeout && timeout > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
      }
      return;
    }
    for (const auto& [dev, uuid] : devices) {
      if (dev == data.device) sample.xids.push_back({uuid, static_cast<int>(data.event_data)});
    }
  }
}

}  // namespace

int sample_nvml(const std::string& library, double period_s,
                const std::function<bool(const TelemetrySample&)>& emit) {
  Library lib(library);
  auto init = lib.get_any<nvmlInit_t>({"nvmlInit_v2", "nvmlInit"});
  if (init == nullptr || init() != kNvmlSuccess) return 3;
  lib.keep_loaded();
  auto get_count =
      lib.get_any<nvmlDeviceGetCount_t>({"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  auto get_handle = lib.get_any<nvmlDeviceGetHandleByIndex_t>(
      {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  auto get_uuid = lib.get<nvmlDeviceGetString_t>("nvmlDeviceGetUUID");
  std::vector<std::pair<nvmlDevice_t, std::string>> devices;
  unsigned int count = 0;
  if (get_count == nullptr || get_handle == nullptr || get_uuid == nullptr ||
      get_count(&count) != kNvmlSuccess) {
    return 3;
  }
  for (unsigned int i = 0; i < count && i < 1024; ++i) {
    nvmlDevice_t dev = nullptr;
    char uuid[96] = {};
    if (get_handle(i, &dev) == kNvmlSuccess && get_uuid(dev, uuid, sizeof uuid) == kNvmlSuccess)
      devices.emplace_back(dev, uuid);
  }
  nvmlEventSet_t set = nullptr;
  auto create = lib.get<nvmlEventSetCreate_t>("nvmlEventSetCreate");
  auto do_register = lib.get<nvmlDeviceRegisterEvents_t>("nvmlDeviceRegisterEvents");
  if (create != nullptr && do_register != nullptr && create(&set) == kNvmlSuccess) {
    for (const auto& [dev, uuid] : devices) (void)do_register(dev, kNvmlEventXidCriticalError, set);
  }
  const NvmlTelemetry queries(lib);
  const int wait_ms = static_cast<int>(period_s * 1000.0);
  for (;;) {
    TelemetrySample sample;
    sample.boot_s = boot_clock_ms() / 1000.0;
    for (const auto& [dev, uuid] : devices) sample.gpus.push_back(queries.read(dev, uuid));
    collect_xids(lib, set, devices, wait_ms, sample);
    if (!emit(sample)) return 0;
  }
}

namespace {
// A library the environment names instead of the driver's own; an empty variable is unset.
std::string library_setting(const System& system, const char* variable, const char* fallback) {
  const std::string value = system.getenv(variable).value_or("");
  return value.empty() ? fallback : value;
}
}  // namespace

std::string nvml_library(const System& system) {
  return library_setting(system, "PRECISION_PROBE_LIBNVML", "libnvidia-ml.so.1");
}

std::unique_ptr<DriverApi> make_system_driver(const System& system) {
  return std::make_unique<SystemDriver>(
      nvml_library(system), library_setting(system, "PRECISION_PROBE_LIBCUDA", "libcuda.so.1"));
}

}  // namespace precision_probe
