#pragma once
// cuInit's answer: what the CUDA driver says of its version, the devices it makes visible and the
// links between them. It is part of the probe-engine contract: the driver's agent
// (probe/driver/driver_agent.hpp) and a GPU session of the engine, once its own cuInit has
// answered, read it with the same function and send it as the same JSON, so that a run with a GPU
// session starts the driver once (docs/architecture.md, "cuInit once a run").

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precision_probe/expected.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

namespace json_fields {
class JsonValue;
}

// A driver query runs in a process of its own (driver_agent.hpp), or in an engine session:
// whether it answered.
enum class QueryFault {
  none,
  hung,         // no answer within the deadline (a GPU fallen off the bus: Xid 79)
  crashed,      // the query process died (a driver library that segfaults), or answered garbage
  out_of_time,  // no answer within a limit too short to prove a hang (the run's --timeout,
                // or a --check-timeout below what the driver may take to start its GPUs):
                // slow or hung, not known which
};
std::string_view to_string(QueryFault fault);

struct CudaDevice {
  std::string name;
  std::string uuid;  // "GPU-..." or "MIG-..."
  std::string pci_bus_id;
  std::optional<ComputeCapability> cc;
  std::optional<int> sm_count;
  std::optional<std::uint64_t> memory_total;
  std::optional<int> compute_mode;
  std::optional<double> clock_ghz;  // maximum SM clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
};

struct CudaSnapshot {
  QueryFault fault = QueryFault::none;
  std::string fault_message;
  bool loaded = false;  // libcuda could be opened
  std::string library;  // the path that was loaded
  std::string load_error;
  int init_result = -1;  // cuInit's CUresult (0 success, 100 no device, 35 insufficient driver)
  std::string init_error_name;                 // "CUDA_ERROR_NO_DEVICE"
  std::string init_error_string;               // "no CUDA-capable device is detected"
  std::optional<Version> driver_cuda_version;  // cuDriverGetVersion's 13000: 13.0
  std::vector<CudaDevice> devices;             // the visible devices, in CUDA's order
  std::vector<PeerLink> peers;                 // every ordered pair of visible devices
};

// The driver's entry points that reading a started driver takes, as dlsym finds them in libcuda
// (the versioned names cuda.h maps the plain ones to), each named after its cu* function. Any may
// be null: what it would answer is then left unset.
struct CudaUuidBytes {
  unsigned char bytes[16];
};
struct CudaQueries {
  int (*driver_version)(int*) = nullptr;
  int (*device_count)(int*) = nullptr;
  int (*device)(int*, int) = nullptr;
  int (*device_name)(char*, int, int) = nullptr;
  int (*device_uuid)(CudaUuidBytes*, int) = nullptr;  // cuDeviceGetUuid_v2, else cuDeviceGetUuid
  int (*device_attribute)(int*, int, int) = nullptr;
  int (*total_memory)(std::size_t*, int) = nullptr;  // cuDeviceTotalMem_v2
  int (*pci_bus_id)(char*, int, int) = nullptr;
  int (*can_access_peer)(int*, int, int) = nullptr;
  int (*p2p_attribute)(int*, int, int, int) = nullptr;
};

// The table from a loaded libcuda: `symbol` is dlsym on its handle (nullptr for a name it lacks).
// The versioned names cuda.h maps the plain ones to come first.
CudaQueries find_cuda_queries(const std::function<void*(const char*)>& symbol);

// The CUDA version the driver supports (cuDriverGetVersion: it answers before cuInit, and where
// cuInit fails).
std::optional<Version> read_driver_version(const CudaQueries& queries);
// What a started driver (cuInit answered 0) says: its CUDA version, every visible device (at most
// 1024) and the peer links between them, into `snapshot`; where the count cannot be read, no
// device.
void read_started_driver(const CudaQueries& queries, CudaSnapshot& snapshot);

// The snapshot as one JSON document (the agent's answer; an engine session's "cuda" line carries
// it), and read back: what is malformed (not JSON, no "loaded" or "devices", a value of the wrong
// type, more than a machine's devices) is an error, never trusted. The fault is not sent: the
// reader's side says it.
std::string encode_cuda_snapshot(const CudaSnapshot& snapshot);
Expected<CudaSnapshot> decode_cuda_snapshot(std::string_view text);
Expected<CudaSnapshot> decode_cuda_snapshot(const json_fields::JsonValue& value);

}  // namespace precision_probe
