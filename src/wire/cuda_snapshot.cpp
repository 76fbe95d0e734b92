// cuInit's answer (cuda_snapshot.hpp): read from a started driver through the entry points the
// caller found, and sent as one JSON document (answer_json.hpp).

#include "wire/cuda_snapshot.hpp"

#include <cstring>
#include <initializer_list>

#include "strings/strings.hpp"
#include "wire/answer_json.hpp"

#if defined(PP_HAVE_CUDA_H) && __has_include(<cuda.h>)
#include <cuda.h>
static_assert(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == 16);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE == 20);
static_assert(CU_DEVICE_ATTRIBUTE_CLOCK_RATE == 13);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == 75);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == 76);
static_assert(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK == 1);
static_assert(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED == 3);
static_assert(sizeof(CUuuid) == sizeof(precision_probe::CudaUuidBytes));
#endif

namespace precision_probe {

std::string_view to_string(QueryFault fault) {
  switch (fault) {
    case QueryFault::none: return "none";
    case QueryFault::hung: return "hung";
    case QueryFault::crashed: return "crashed";
    case QueryFault::out_of_time: return "out_of_time";
  }
  return "?";
}

namespace {

constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrComputeMode = 20;
constexpr int kAttrClockRate = 13;  // kHz
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;
constexpr int kP2PPerformanceRank = 1;
constexpr int kP2PNativeAtomics = 3;
constexpr int kMaxDevices = 1024;

// Device `index`'s facts, each where the driver gives it; none where it has no such device.
std::optional<CudaDevice> read_device(const CudaQueries& q, int index) {
  int dev = 0;
  if (q.device == nullptr || q.device(&dev, index) != 0) return std::nullopt;
  CudaDevice d;
  char text[256] = {};
  if (q.device_name != nullptr && q.device_name(text, sizeof text - 1, dev) == 0) {
    d.name = text;
  }
  CudaUuidBytes uuid{};
  if (q.device_uuid != nullptr && q.device_uuid(&uuid, dev) == 0) {
    d.uuid = format_uuid(uuid.bytes, d.name.find(" MIG ") != std::string::npos);
  }
  auto attr = [&](int which) -> std::optional<int> {
    int value = 0;
    if (q.device_attribute != nullptr && q.device_attribute(&value, which, dev) == 0) {
      return value;
    }
    return std::nullopt;
  };
  const auto major = attr(kAttrCcMajor);
  const auto minor = attr(kAttrCcMinor);
  if (major && minor) d.cc = ComputeCapability{*major, *minor};
  d.sm_count = attr(kAttrMultiprocessorCount);
  d.compute_mode = attr(kAttrComputeMode);
  if (const auto khz = attr(kAttrClockRate); khz && *khz > 0) d.clock_ghz = *khz / 1e6;
  std::size_t bytes = 0;
  if (q.total_memory != nullptr && q.total_memory(&bytes, dev) == 0) {
    d.memory_total = bytes;
  }
  std::memset(text, 0, sizeof text);
  if (q.pci_bus_id != nullptr && q.pci_bus_id(text, 64, dev) == 0) {
    d.pci_bus_id = text;
  }
  return d;
}

// Peer access between every two of `n` devices.
std::vector<PeerLink> read_peers(const CudaQueries& q, int n) {
  std::vector<PeerLink> peers;
  for (int i = 0; i < n && q.can_access_peer != nullptr; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      PeerLink link;
      link.from = i;
      link.to = j;
      int value = 0;
      link.access = q.can_access_peer(&value, i, j) == 0 && value != 0;
      auto p2p = [&](int which) {
        return q.p2p_attribute != nullptr && q.p2p_attribute(&value, which, i, j) == 0;
      };
      if (p2p(kP2PPerformanceRank)) link.performance_rank = value;
      link.native_atomics = p2p(kP2PNativeAtomics) && value != 0;
      peers.push_back(link);
    }
  }
  return peers;
}

}  // namespace

namespace {

template <class F>
void find(const std::function<void*(const char*)>& symbol, F& slot,
          std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* p = symbol(name)) {
      slot = reinterpret_cast<F>(p);
      return;
    }
  }
}

}  // namespace

CudaQueries find_cuda_queries(const std::function<void*(const char*)>& symbol) {
  CudaQueries q;
  find(symbol, q.driver_version, {"cuDriverGetVersion"});
  find(symbol, q.device_count, {"cuDeviceGetCount"});
  find(symbol, q.device, {"cuDeviceGet"});
  find(symbol, q.device_name, {"cuDeviceGetName"});
  find(symbol, q.device_uuid, {"cuDeviceGetUuid_v2", "cuDeviceGetUuid"});
  find(symbol, q.device_attribute, {"cuDeviceGetAttribute"});
  find(symbol, q.total_memory, {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"});
  find(symbol, q.pci_bus_id, {"cuDeviceGetPCIBusId"});
  find(symbol, q.can_access_peer, {"cuDeviceCanAccessPeer"});
  find(symbol, q.p2p_attribute, {"cuDeviceGetP2PAttribute"});
  return q;
}

std::optional<Version> read_driver_version(const CudaQueries& q) {
  int version = 0;
  if (q.driver_version == nullptr || q.driver_version(&version) != 0) return std::nullopt;
  return Version::from_cuda_number(version);
}

void read_started_driver(const CudaQueries& q, CudaSnapshot& snapshot) {
  snapshot.driver_cuda_version = read_driver_version(q);
  int count = 0;
  if (q.device_count == nullptr || q.device_count(&count) != 0) return;
  for (int i = 0; i < count && i < kMaxDevices; ++i) {
    if (auto d = read_device(q, i)) snapshot.devices.push_back(std::move(*d));
  }
  snapshot.peers = read_peers(q, static_cast<int>(snapshot.devices.size()));
}

namespace json_fields {

template <class V, class S>
std::enable_if_t<is<S, CudaDevice>> fields(V& v, S& d) {
  v("name", d.name);
  v("uuid", d.uuid);
  v("pci_bus_id", d.pci_bus_id);
  v("cc", d.cc);
  v("sm_count", d.sm_count);
  v("memory_total", d.memory_total);
  v("compute_mode", d.compute_mode);
  v("clock_ghz", d.clock_ghz);
}

template <class V, class S>
std::enable_if_t<is<S, CudaSnapshot>> fields(V& v, S& s) {
  v("loaded", s.loaded);
  v("library", s.library);
  v("load_error", s.load_error);
  v("init_result", s.init_result);
  v("init_error_name", s.init_error_name);
  v("init_error_string", s.init_error_string);
  v("driver_cuda_version", s.driver_cuda_version);
  v("devices", s.devices);
  v("peers", s.peers);
}

}  // namespace json_fields

std::string encode_cuda_snapshot(const CudaSnapshot& s) { return answer_json::encode(s); }

Expected<CudaSnapshot> decode_cuda_snapshot(const json_fields::JsonValue& root) {
  return answer_json::decode<CudaSnapshot>(root);
}

Expected<CudaSnapshot> decode_cuda_snapshot(std::string_view text) {
  return answer_json::decode<CudaSnapshot>(text);
}

}  // namespace precision_probe
