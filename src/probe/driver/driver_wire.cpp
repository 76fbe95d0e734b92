// The driver agent's NVML answer on the wire: its snapshot's fields, as one JSON document
// (wire/answer_json.hpp; driver_agent.cpp writes it, the probe reads it back; CUDA's is
// wire/cuda_snapshot.cpp's).

#include "probe/driver/driver.hpp"
#include "wire/answer_json.hpp"

namespace precision_probe {
namespace json_fields {

template <class V, class S>
std::enable_if_t<is<S, NvmlDevice>> fields(V& v, S& d) {
  v("name", d.name);
  v("uuid", d.uuid);
  v("pci_bus_id", d.pci_bus_id);
  v("cc", d.cc);
  v("memory_total", d.memory_total);
  v("memory_free", d.memory_free);
  v("memory_used", d.memory_used);
  v("mig_enabled", d.mig_enabled);
  v("compute_mode", d.compute_mode);
  v("max_clock_ghz", d.max_clock_ghz);
  v("processes", d.processes);
}

template <class V, class S>
std::enable_if_t<is<S, NvmlSnapshot>> fields(V& v, S& s) {
  v("loaded", s.loaded);
  v("load_error", s.load_error);
  v("init_result", s.init_result);
  v("init_error", s.init_error);
  v("driver_version", s.driver_version);
  v("cuda_version", s.cuda_version);
  v("devices", s.devices);
}

}  // namespace json_fields

std::string encode_nvml_snapshot(const NvmlSnapshot& s) { return answer_json::encode(s); }

Expected<NvmlSnapshot> decode_nvml_snapshot(std::string_view text) {
  return answer_json::decode<NvmlSnapshot>(text);
}

}  // namespace precision_probe
