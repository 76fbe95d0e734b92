#include "engine/cuda/driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "strings/strings.hpp"

#if defined(PP_HAVE_CUDA_H) && __has_include(<cuda.h>)
#include <cuda.h>
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == 75);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == 76);
static_assert(CU_EVENT_DEFAULT == 0 && CU_EVENT_BLOCKING_SYNC == 1 && CU_EVENT_DISABLE_TIMING == 2);
static_assert(sizeof(CUuuid) == 16);
static_assert(CUDA_SUCCESS == 0);
static_assert(CU_CTX_SCHED_AUTO == 0 && CU_CTX_SCHED_SPIN == 1 && CU_CTX_SCHED_YIELD == 2 &&
              CU_CTX_SCHED_BLOCKING_SYNC == 4 && CU_CTX_SCHED_MASK == 7);
#endif

namespace precision_probe::engine {

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUevent = void*;
using CUstream = void*;
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;
constexpr unsigned kEventDefault = 0;
constexpr unsigned kEventBlockingSync = 1;
constexpr unsigned kEventDisableTiming = 2;
constexpr unsigned kSchedMask = 7;

}  // namespace

// The entry points, with the versioned names cuda.h maps the plain ones to.
struct CudaDriver::Api {
  void* library = nullptr;
  std::string path;  // the file the loader picked, as cuInit's answer names it
  // The device queries (cuDeviceGet, its name, UUID and attributes, ...): cuInit's answer reads
  // them too (wire/cuda_snapshot.hpp).
  CudaQueries queries;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxSetFlags)(CUdevice, unsigned) = nullptr;  // ..._v2
  CUresult (*cuDevicePrimaryCtxGetState)(CUdevice, unsigned*, int*) = nullptr;
  CUresult (*cuCtxGetFlags)(unsigned*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxCreate)(CUcontext*, unsigned, CUdevice) = nullptr;  // cuCtxCreate_v2
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
};

namespace {

template <typename F>
void find(void* library, F& slot, const char* name, const char* fallback = nullptr) {
  void* p = ::dlsym(library, name);
  if (p == nullptr && fallback != nullptr) p = ::dlsym(library, fallback);
  slot = reinterpret_cast<F>(p);
}

// The file the loader picked for `symbol`'s library (dladdr: found while the driver loads, as the
// entry points are, since dlsym and dladdr wait for the loader's lock, which LibTorch's dlopen
// holds for half a second once it has begun).
std::string file_of(void* symbol) {
  Dl_info info{};
  if (symbol != nullptr && ::dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "";
}

}  // namespace

Expected<std::unique_ptr<CudaDriver>> CudaDriver::open() {
  Expected<std::unique_ptr<CudaDriver>> driver = load();
  if (!driver) return driver;
  if (Expected<void> started = (*driver)->init(); !started) return Unexpected{started.error()};
  return driver;
}

Expected<void> CudaDriver::init() {
  if (const CUresult r = api_->cuInit(0); r != 0) {
    return Unexpected{fmt::format("cuInit failed: {}", error_name(r))};
  }
  return {};
}

Expected<std::unique_ptr<CudaDriver>> CudaDriver::load() {
  const char* configured = std::getenv("PRECISION_PROBE_LIBCUDA");  // NOLINT(concurrency-mt-unsafe)
  const std::string name =
      configured != nullptr && *configured != '\0' ? configured : "libcuda.so.1";
  void* library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();  // NOLINT(concurrency-mt-unsafe): glibc's is per thread
    return Unexpected{"the CUDA driver (" + name + ") cannot be loaded: " + (why ? why : "")};
  }
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  driver->api_ = std::make_unique<Api>();
  Api& a = *driver->api_;
  a.library = library;
  find(library, a.cuInit, "cuInit");
  a.queries = find_cuda_queries([library](const char* symbol) { return ::dlsym(library, symbol); });
  find(library, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  find(library, a.cuDevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2");
  find(library, a.cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
  find(library, a.cuCtxGetFlags, "cuCtxGetFlags");
  find(library, a.cuCtxSetCurrent, "cuCtxSetCurrent");
  find(library, a.cuCtxCreate, "cuCtxCreate_v2");
  find(library, a.cuCtxSynchronize, "cuCtxSynchronize");
  find(library, a.cuMemGetInfo, "cuMemGetInfo_v2");
  find(library, a.cuEventCreate, "cuEventCreate");
  find(library, a.cuEventRecord, "cuEventRecord");
  find(library, a.cuEventSynchronize, "cuEventSynchronize");
  find(library, a.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  find(library, a.cuEventDestroy, "cuEventDestroy_v2");
  find(library, a.cuGetErrorName, "cuGetErrorName");
  a.path = file_of(reinterpret_cast<void*>(a.cuInit));
  if (a.cuInit == nullptr || a.queries.device == nullptr || a.cuDevicePrimaryCtxRetain == nullptr ||
      a.cuCtxSetCurrent == nullptr || a.cuCtxSynchronize == nullptr || a.cuEventCreate == nullptr ||
      a.cuEventRecord == nullptr || a.cuEventSynchronize == nullptr ||
      a.cuEventElapsedTime == nullptr || a.cuEventDestroy == nullptr) {
    return Unexpected{name + " lacks the driver functions the engine needs"};
  }
  return driver;
}

CudaSnapshot CudaDriver::snapshot() const {
  CudaSnapshot s;
  s.loaded = true;
  s.library = api_->path;
  s.init_result = 0;
  read_started_driver(api_->queries, s);
  return s;
}

std::unique_ptr<CudaDriver> CudaDriver::another() const {
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  driver->api_ = std::make_unique<Api>(*api_);
  return driver;
}

CudaDriver::~CudaDriver() = default;  // never dlclose'd: LibTorch's runtime uses it too

int CudaDriver::device_count() const {
  int count = 0;
  if (api_->queries.device_count == nullptr || api_->queries.device_count(&count) != 0) return 0;
  return count;
}

Expected<void> CudaDriver::bind(int ordinal, bool own_context, Waiting waiting) {
  if (const CUresult r = api_->queries.device(&device_, ordinal); r != 0) {
    return Unexpected{fmt::format("no CUDA device {}: {}", ordinal, error_name(r))};
  }
  const auto flags = static_cast<unsigned>(waiting);
  if (own_context) {
    if (api_->cuCtxCreate == nullptr) return Unexpected{"this driver has no cuCtxCreate_v2"};
    if (const CUresult r = api_->cuCtxCreate(&context_, flags, device_); r != 0) {
      return Unexpected{
          fmt::format("a context of CUDA device {} cannot be made: {}", ordinal, error_name(r))};
    }
  } else {
    if (waiting != Waiting::automatic) {
      // Only the scheduling bits change: the context's other flags stay as they were.
      const unsigned old = context_flags(false).value_or(0);
      const CUresult r =
          api_->cuDevicePrimaryCtxSetFlags == nullptr
              ? -1
              : api_->cuDevicePrimaryCtxSetFlags(device_, (old & ~kSchedMask) | flags);
      if (r != 0) {
        return Unexpected{
            fmt::format("how the primary context of CUDA device {} waits cannot be set: {}",
                        ordinal, r == -1 ? "no cuDevicePrimaryCtxSetFlags_v2" : error_name(r))};
      }
    }
    if (const CUresult r = api_->cuDevicePrimaryCtxRetain(&context_, device_); r != 0) {
      return Unexpected{fmt::format("the primary context of CUDA device {} cannot be made: {}",
                                    ordinal, error_name(r))};
    }
  }
  ordinal_ = ordinal;
  own_context_ = own_context;
  make_current();
  waiting_ = this->waiting().value_or(Waiting::automatic);
  return {};
}

std::optional<unsigned> CudaDriver::context_flags(bool own) const {
  unsigned flags = 0;
  if (own) {
    make_current();
    if (api_->cuCtxGetFlags == nullptr || api_->cuCtxGetFlags(&flags) != 0) return std::nullopt;
    return flags;
  }
  int active = 0;
  if (api_->cuDevicePrimaryCtxGetState == nullptr ||
      api_->cuDevicePrimaryCtxGetState(device_, &flags, &active) != 0) {
    return std::nullopt;
  }
  return flags;
}

std::optional<CudaDriver::Waiting> CudaDriver::waiting() const {
  if (ordinal_ < 0) return std::nullopt;
  const std::optional<unsigned> flags = context_flags(own_context_);
  if (!flags) return std::nullopt;
  switch (*flags & kSchedMask) {
    case 0: return Waiting::automatic;
    case 1: return Waiting::spin;
    case 2: return Waiting::yield;
    case 4: return Waiting::blocking;
    default: return std::nullopt;
  }
}

void CudaDriver::make_current() const {
  if (context_ != nullptr) api_->cuCtxSetCurrent(context_);
}

std::string CudaDriver::name() const {
  char name[256] = {};
  if (api_->queries.device_name == nullptr ||
      api_->queries.device_name(name, sizeof name, device_) != 0) {
    return "CUDA device";
  }
  return name;
}

std::string CudaDriver::uuid() const {
  CudaUuidBytes id{};
  if (api_->queries.device_uuid == nullptr || api_->queries.device_uuid(&id, device_) != 0) {
    return "";
  }
  return format_uuid(id.bytes, false);
}

std::optional<ComputeCapability> CudaDriver::capability() const {
  int major = 0;
  int minor = 0;
  const auto attribute = api_->queries.device_attribute;
  if (attribute == nullptr || attribute(&major, kAttrCcMajor, device_) != 0 ||
      attribute(&minor, kAttrCcMinor, device_) != 0) {
    return std::nullopt;
  }
  return ComputeCapability{major, minor};
}

void CudaDriver::synchronize() const {
  make_current();
  cuda_check(*this, api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

std::optional<std::int64_t> CudaDriver::free_memory() const {
  std::size_t free = 0;
  std::size_t total = 0;
  make_current();
  if (api_->cuMemGetInfo == nullptr || api_->cuMemGetInfo(&free, &total) != 0) return std::nullopt;
  return static_cast<std::int64_t>(free);
}

std::string CudaDriver::error_name(int result) const {
  const char* name = nullptr;
  if (api_ && api_->cuGetErrorName != nullptr && api_->cuGetErrorName(result, &name) == 0 &&
      name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(result);
}

CudaDriver::Event::Event(const CudaDriver& driver, bool timing) : driver_(&driver) {
  driver.make_current();
  // A blocking event where the context's threads block: an event's wait spins otherwise.
  const unsigned flags = (timing ? kEventDefault : kEventDisableTiming) |
                         (driver.waiting_ == Waiting::blocking ? kEventBlockingSync : 0U);
  cuda_check(driver, driver.api_->cuEventCreate(&event_, flags), "cuEventCreate");
}

CudaDriver::Event::Event(Event&& other) noexcept : driver_(other.driver_), event_(other.event_) {
  other.event_ = nullptr;
}

CudaDriver::Event& CudaDriver::Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) driver_->api_->cuEventDestroy(event_);
    driver_ = other.driver_;
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}

CudaDriver::Event::~Event() {
  if (event_ != nullptr) driver_->api_->cuEventDestroy(event_);
}

void CudaDriver::Event::record(void* stream) {
  cuda_check(*driver_, driver_->api_->cuEventRecord(event_, stream), "cuEventRecord");
}

void CudaDriver::Event::wait() const {
  cuda_check(*driver_, driver_->api_->cuEventSynchronize(event_), "cuEventSynchronize");
}

double CudaDriver::Event::since(const Event& start) const {
  float ms = 0.0F;
  cuda_check(*driver_, driver_->api_->cuEventElapsedTime(&ms, start.event_, event_),
             "cuEventElapsedTime");
  return static_cast<double>(ms);
}

void cuda_check(const CudaDriver& driver, int result, const char* what) {
  if (result != 0) {
    throw std::runtime_error(fmt::format("{} failed: {}", what, driver.error_name(result)));
  }
}

}  // namespace precision_probe::engine
