// The driver agent's NVML answer on the wire: its snapshot as one JSON document (driver_agent.cpp
// writes it, the probe reads it back; CUDA's is wire/cuda_snapshot.cpp's), through the field layer
// (report/json_fields.hpp) as the report is: a compute capability is "9.0" here as there.
// Decoding never trusts the document: anything malformed is an error, which the probe reports as
// a query that crashed.

#include "probe/driver/driver.hpp"
#include "report/json_fields.hpp"

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

namespace {

// An answer's limits: a machine's devices and peers, driver texts cut at 16 KiB.
constexpr json_fields::ReadLimits kAnswerLimits{std::size_t{16} * 1024, 4096};

template <class Snapshot>
std::string encode_snapshot(const Snapshot& s) {
  return json_fields::encode(s).dump(-1, ' ', false, json_fields::json::error_handler_t::replace);
}

// The snapshot in `text`, or why it is not one (not JSON, no "loaded" or "devices": the agent did
// not finish; a value of the wrong type).
template <class Snapshot>
Expected<Snapshot> decode_snapshot(std::string_view text) {
  json_fields::JsonDocument doc;
  if (Expected<void> parsed = doc.parse(text); !parsed) return Unexpected{parsed.error()};
  const json_fields::JsonValue root = doc.root();
  for (const char* key : {"loaded", "devices"}) {
    if (!root.is_object() || !root.find(key)) return Unexpected{std::string("no \"") + key + "\""};
  }
  Snapshot s;
  try {
    json_fields::decode(root, s, "", kAnswerLimits);
  } catch (const json_fields::FieldError& e) {
    return Unexpected{e.what()};
  }
  return s;
}

}  // namespace

std::string encode_nvml_snapshot(const NvmlSnapshot& s) { return encode_snapshot(s); }

Expected<NvmlSnapshot> decode_nvml_snapshot(std::string_view text) {
  return decode_snapshot<NvmlSnapshot>(text);
}

}  // namespace precision_probe
