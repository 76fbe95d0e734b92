// A fake NVIDIA driver: the NVML and CUDA driver entry points precision-probe loads, answering
// from environment variables. Point PRECISION_PROBE_LIBCUDA and PRECISION_PROBE_LIBNVML at this
// library to run the real binary against GPUs that are not there.
//
//   FAKE_NVIDIA_GPUS      "NVIDIA H200:9.0:132:141;Tesla T4:7.5:40:15" (name:cc:SMs:GiB)
//   FAKE_CUINIT_RESULT    cuInit's CUresult (default 0; 100 when there is no GPU)
//   FAKE_NVML_INIT_RESULT nvmlInit's result (default 0)
//   FAKE_DRIVER_VERSION   "580.159.04";  FAKE_CUDA_VERSION 13000
//   FAKE_MEMORY_USED_PCT  percent of each GPU's memory in use (default 1)
//   FAKE_COMPUTE_MODE     0 default, 2 prohibited, 3 exclusive process
//   FAKE_MIG              "1": GPU 0 has MIG enabled
//   FAKE_GPU_PROCESSES    "4242:136,77:1": compute processes on every GPU (pid:GiB)
//   FAKE_NVML_FAULT       hang | segv | flood: nvmlInit never returns, crashes the process, or
//                         writes to stdout without end
//   FAKE_CUINIT_FAULT     hang | segv | flood: cuInit likewise
//   FAKE_CTX_FLAGS_RESULT cuDevicePrimaryCtxSetFlags's CUresult (default 0: the flags are kept)
// CUDA_VISIBLE_DEVICES is honoured by the CUDA part, as the real driver does.

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Gpu {
  std::string name;
  int major = 0;
  int minor = 0;
  int sms = 0;
  unsigned long long bytes = 0;
  int nvml_index = 0;
};

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

// A driver in the state a health probe is run for: a call that never returns, or one that
// crashes the process that made it.
void fault(const char* variable) {
  const std::string what = env(variable, "");
  if (what == "hang") {
    for (;;) ::pause();
  }
  if (what == "segv") std::raise(SIGSEGV);
  if (what == "flood") {
    // A broken library that writes to stdout without end.
    const std::string line(4096, 'x');
    for (;;) {
      if (::write(1, line.data(), line.size()) < 0) std::_Exit(1);
    }
  }
}

// How the primary contexts' threads wait (CU_CTX_SCHED_*), as set: the first eight devices.
unsigned* primary_flags() {
  static unsigned flags[8] = {};
  return flags;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<Gpu> all_gpus() {
  std::vector<Gpu> gpus;
  const std::string spec = env("FAKE_NVIDIA_GPUS", "");
  if (spec.empty()) return gpus;
  for (const std::string& entry : split(spec, ';')) {
    const auto f = split(entry, ':');
    if (f.size() != 4) continue;
    Gpu g;
    g.name = f[0];
    const auto cc = split(f[1], '.');
    g.major = std::atoi(cc[0].c_str());
    g.minor = cc.size() > 1 ? std::atoi(cc[1].c_str()) : 0;
    g.sms = std::atoi(f[2].c_str());
    g.bytes = static_cast<unsigned long long>(std::atoll(f[3].c_str())) << 30U;
    g.nvml_index = static_cast<int>(gpus.size());
    gpus.push_back(g);
  }
  return gpus;
}

std::string uuid_of(int nvml_index) {
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%08x-1111-2222-3333-4444%08x", 0xfa0 + nvml_index,
                nvml_index);
  return text;
}

// The GPUs CUDA shows, after CUDA_VISIBLE_DEVICES (stopping at the first invalid entry).
std::vector<Gpu> visible_gpus() {
  const std::vector<Gpu> gpus = all_gpus();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return gpus;
  std::vector<Gpu> out;
  if (*visible == '\0') return out;
  for (const std::string& entry : split(visible, ',')) {
    int found = -1;
    if (entry.rfind("GPU-", 0) == 0) {
      for (const Gpu& g : gpus) {
        if (uuid_of(g.nvml_index).rfind(entry, 0) == 0) found = g.nvml_index;
      }
    } else if (!entry.empty() && entry.find_first_not_of("0123456789") == std::string::npos) {
      const int i = std::atoi(entry.c_str());
      if (i < static_cast<int>(gpus.size())) found = i;
    }
    if (found < 0) break;
    out.push_back(gpus[static_cast<std::size_t>(found)]);
  }
  return out;
}

struct Memory {
  unsigned long long total, free, used;
};

Memory memory_of(const Gpu& g) {
  const unsigned long long used =
      g.bytes / 100ULL * static_cast<unsigned long long>(env_int("FAKE_MEMORY_USED_PCT", 1));
  return {g.bytes, g.bytes - used, used};
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- NVML
int nvmlInit_v2() {
  fault("FAKE_NVML_FAULT");
  return env_int("FAKE_NVML_INIT_RESULT", 0);
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int result) { return result == 0 ? "Success" : "Driver Not Loaded"; }
int nvmlSystemGetDriverVersion(char* out, unsigned int size) {
  std::snprintf(out, size, "%s", env("FAKE_DRIVER_VERSION", "580.159.04").c_str());
  return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = env_int("FAKE_CUDA_VERSION", 13000);
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(all_gpus().size());
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= all_gpus().size()) return 2;
  *device = reinterpret_cast<void*>(static_cast<std::uintptr_t>(index + 1));
  return 0;
}
static int nvml_index(void* device) {
  return static_cast<int>(reinterpret_cast<std::uintptr_t>(device)) - 1;
}
int nvmlDeviceGetName(void* device, char* out, unsigned int size) {
  std::snprintf(out, size, "%s",
                all_gpus().at(static_cast<std::size_t>(nvml_index(device))).name.c_str());
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* out, unsigned int size) {
  std::snprintf(out, size, "%s", uuid_of(nvml_index(device)).c_str());
  return 0;
}
struct PciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:%02X:00.0", 0x17 + nvml_index(device));
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(void* device, int* major, int* minor) {
  const Gpu g = all_gpus().at(static_cast<std::size_t>(nvml_index(device)));
  *major = g.major;
  *minor = g.minor;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
  *memory = memory_of(all_gpus().at(static_cast<std::size_t>(nvml_index(device))));
  return 0;
}
int nvmlDeviceGetMigMode(void* device, unsigned int* current, unsigned int* pending) {
  if (env("FAKE_MIG", "0") != "1") return 3;  // NVML_ERROR_NOT_SUPPORTED
  *current = *pending = nvml_index(device) == 0 ? 1 : 0;
  return 0;
}
int nvmlDeviceGetMaxClockInfo(void* /*device*/, int /*type*/, unsigned int* mhz) {
  *mhz = 1980;
  return 0;
}
// --- NVML telemetry (the soak's): FAKE_NVIDIA_TEMP, FAKE_NVIDIA_CLOCK_REASONS (bits),
// FAKE_NVIDIA_ECC_GROWS=1 (GPU 0's uncorrected count grows), FAKE_NVIDIA_XID (one event on GPU 0)
int nvmlDeviceGetTemperature(void* device, int /*sensor*/, unsigned int* celsius) {
  *celsius = static_cast<unsigned int>(env_int("FAKE_NVIDIA_TEMP", 60) + nvml_index(device));
  return 0;
}
int nvmlDeviceGetClockInfo(void* /*device*/, int /*type*/, unsigned int* mhz) {
  *mhz = 1755;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* /*device*/, unsigned int* milliwatts) {
  *milliwatts = 612000;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* /*device*/, unsigned long long* reasons) {
  *reasons = std::strtoull(env("FAKE_NVIDIA_CLOCK_REASONS", "0").c_str(), nullptr, 0);
  return 0;
}
int nvmlDeviceGetTotalEccErrors(void* device, int type, int /*counter*/, unsigned long long* n) {
  static unsigned long long grown = 0;
  const bool grows =
      env("FAKE_NVIDIA_ECC_GROWS", "0") == "1" && nvml_index(device) == 0 && type == 1;
  *n = grows ? grown++ : 0;
  return 0;
}
int nvmlDeviceGetRemappedRows(void* /*device*/, unsigned int* corr, unsigned int* unc,
                              unsigned int* pending, unsigned int* failure) {
  *corr = *unc = *pending = *failure = 0;
  return 0;
}
int nvmlDeviceGetRetiredPages(void* /*device*/, int /*cause*/, unsigned int* count,
                              unsigned long long* /*addresses*/) {
  *count = 0;
  return 0;
}
int nvmlEventSetCreate(void** set) {
  *set = reinterpret_cast<void*>(std::uintptr_t{1});
  return 0;
}
int nvmlDeviceRegisterEvents(void* /*device*/, unsigned long long /*types*/, void* /*set*/) {
  return 0;
}
struct EventData {  // nvmlEventData_t
  void* device;
  unsigned long long type;
  unsigned long long data;
  unsigned int gpu_instance, compute_instance;
};
int nvmlEventSetWait_v2(void* /*set*/, EventData* event, unsigned int timeout_ms) {
  static bool delivered = false;
  const int xid = env_int("FAKE_NVIDIA_XID", 0);
  if (xid != 0 && !delivered) {
    delivered = true;
    *event = EventData{reinterpret_cast<void*>(std::uintptr_t{1}), 0x8,
                       static_cast<unsigned long long>(xid), 0, 0};
    return 0;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return 10;  // NVML_ERROR_TIMEOUT
}
int nvmlEventSetFree(void* /*set*/) { return 0; }

struct ProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long used;
  unsigned int gpu_instance;
  unsigned int compute_instance;
};
int nvmlDeviceGetComputeRunningProcesses_v3(void* /*device*/, unsigned int* count,
                                            ProcessInfo* infos) {
  const std::string spec = env("FAKE_GPU_PROCESSES", "");
  unsigned int n = 0;
  for (const std::string& entry : split(spec, ',')) {
    const auto f = split(entry, ':');
    if (f.size() != 2) continue;
    if (n < *count) {
      infos[n] = {static_cast<unsigned int>(std::atoi(f[0].c_str())),
                  static_cast<unsigned long long>(std::atoll(f[1].c_str())) << 30U, 0xffffffff,
                  0xffffffff};
    }
    ++n;
  }
  const bool fits = n <= *count;
  *count = n;
  return fits ? 0 : 7;  // NVML_ERROR_INSUFFICIENT_SIZE
}
int nvmlDeviceGetComputeMode(void* /*device*/, int* mode) {
  *mode = env_int("FAKE_COMPUTE_MODE", 0);
  return 0;
}

// ---------------------------------------------------------------- CUDA driver API
// Like the real driver, cuInit fails with CUDA_ERROR_NO_DEVICE when nothing is visible.
static int cuinit_result() {
  return env_int("FAKE_CUINIT_RESULT", visible_gpus().empty() ? 100 : 0);
}
int cuInit(unsigned int /*flags*/) {
  fault("FAKE_CUINIT_FAULT");
  return cuinit_result();
}
int cuDriverGetVersion(int* version) {
  *version = env_int("FAKE_CUDA_VERSION", 13000);
  return 0;
}
int cuGetErrorName(int result, const char** name) {
  switch (result) {
    case 0: *name = "CUDA_SUCCESS"; return 0;
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
    case 35: *name = "CUDA_ERROR_INSUFFICIENT_DRIVER"; return 0;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 802: *name = "CUDA_ERROR_SYSTEM_NOT_READY"; return 0;
    case 803: *name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; return 0;
    case 804: *name = "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"; return 0;
    case 999: *name = "CUDA_ERROR_UNKNOWN"; return 0;
    default: return 1;
  }
}
int cuGetErrorString(int result, const char** text) {
  switch (result) {
    case 35: *text = "CUDA driver version is insufficient for CUDA runtime version"; return 0;
    case 100: *text = "no CUDA-capable device is detected"; return 0;
    case 802: *text = "system not yet initialized"; return 0;
    case 999: *text = "unknown error"; return 0;
    default: *text = "fake error"; return 0;
  }
}
int cuDeviceGetCount(int* count) {
  if (cuinit_result() != 0) return 3;
  *count = static_cast<int>(visible_gpus().size());
  return 0;
}
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= static_cast<int>(visible_gpus().size())) return 101;
  *device = ordinal;
  return 0;
}
int cuDeviceGetName(char* out, int size, int device) {
  std::snprintf(out, static_cast<std::size_t>(size), "%s",
                visible_gpus().at(static_cast<std::size_t>(device)).name.c_str());
  return 0;
}
int cuDeviceGetUuid_v2(unsigned char* bytes, int device) {
  // Produces the bytes whose text form is uuid_of(nvml_index).
  const std::string text =
      uuid_of(visible_gpus().at(static_cast<std::size_t>(device)).nvml_index).substr(4);
  std::string hex;
  for (char c : text) {
    if (c != '-') hex += c;
  }
  for (int i = 0; i < 16; ++i)
    bytes[i] = static_cast<unsigned char>(
        std::stoi(hex.substr(static_cast<std::size_t>(i) * 2, 2), nullptr, 16));
  return 0;
}
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  const Gpu g = visible_gpus().at(static_cast<std::size_t>(device));
  switch (attribute) {
    case 16: *value = g.sms; return 0;
    case 13: *value = 1980000; return 0;  // kHz
    case 20: *value = env_int("FAKE_COMPUTE_MODE", 0); return 0;
    case 75: *value = g.major; return 0;
    case 76: *value = g.minor; return 0;
    default: return 1;
  }
}
int cuDeviceTotalMem_v2(std::size_t* bytes, int device) {
  *bytes = visible_gpus().at(static_cast<std::size_t>(device)).bytes;
  return 0;
}
int cuDeviceCanAccessPeer(int* can, int /*device*/, int /*peer*/) {
  *can = env("FAKE_P2P", "1") == "1" ? 1 : 0;
  return 0;
}
int cuDeviceGetP2PAttribute(int* value, int attribute, int /*src*/, int /*dst*/) {
  *value = attribute == 1 ? 0 : (env("FAKE_P2P", "1") == "1" ? 1 : 0);
  return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int device) {
  if (device < 0 || device >= static_cast<int>(visible_gpus().size())) return 101;
  static int fake_context = 0;
  *context = &fake_context;
  return 0;
}
int cuDevicePrimaryCtxSetFlags_v2(int device, unsigned flags) {
  if (device < 0 || device >= static_cast<int>(visible_gpus().size()) || device >= 8) return 101;
  if ((flags & 7U) == 3U || (flags & 7U) > 4U) return 1;  // one of the scheduling flags at most
  if (const int result = env_int("FAKE_CTX_FLAGS_RESULT", 0); result != 0) return result;
  primary_flags()[device] = flags;
  return 0;
}
int cuDevicePrimaryCtxGetState(int device, unsigned* flags, int* active) {
  if (device < 0 || device >= static_cast<int>(visible_gpus().size()) || device >= 8) return 101;
  *flags = primary_flags()[device];
  *active = 1;
  return 0;
}
// A context of its own (the bench's copies of one GPU): its flags, read back by cuCtxGetFlags (the
// fake keeps one such context's, the last made, whichever is current).
unsigned own_context_flags = 0;
int cuCtxCreate_v2(void** context, unsigned flags, int device) {
  if (device < 0 || device >= static_cast<int>(visible_gpus().size())) return 101;
  static int fake_own_context = 0;
  own_context_flags = flags;
  *context = &fake_own_context;
  return 0;
}
int cuCtxGetFlags(unsigned* flags) {
  *flags = own_context_flags;
  return 0;
}
int cuCtxSetCurrent(void* /*context*/) { return 0; }
// What the engine's driver needs beside (unit/test_cuda_driver.cpp): nothing is queued, so every
// wait returns at once and no time passes.
int cuCtxSynchronize() { return 0; }
// The last event's flags (CU_EVENT_*), for the engine's tests in the same process.
unsigned last_event_flags = 0;
int cuEventCreate(void** event, unsigned int flags) {
  last_event_flags = flags;
  static int fake_event = 0;
  *event = &fake_event;
  return 0;
}
int cuEventRecord(void* /*event*/, void* /*stream*/) { return 0; }
int cuEventSynchronize(void* /*event*/) { return 0; }
int cuEventElapsedTime_v2(float* ms, void* /*start*/, void* /*end*/) {
  *ms = 0.0F;
  return 0;
}
int cuEventDestroy_v2(void* /*event*/) { return 0; }
int cuDeviceGetPCIBusId(char* out, int size, int device) {
  std::snprintf(out, static_cast<std::size_t>(size), "0000:%02x:00.0",
                0x17 + visible_gpus().at(static_cast<std::size_t>(device)).nvml_index);
  return 0;
}

}  // extern "C"
