// The driver agent's answers on the wire: NVML's and CUDA's snapshots as one JSON document each
// (driver_agent.cpp writes them, the probe reads them back). Decoding never trusts the document:
// anything malformed is an error, which the probe reports as a query that crashed.

#include <nlohmann/json.hpp>

#include "probe/driver/driver.hpp"

namespace precision_probe {

using nlohmann::json;

namespace {

template <typename T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T>
std::optional<T> read_optional(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

json cc_json(const std::optional<ComputeCapability>& cc) {
  return cc ? json{{"major", cc->major}, {"minor", cc->minor}} : json(nullptr);
}

std::optional<ComputeCapability> read_cc(const json& j) {
  if (!j.contains("cc") || j.at("cc").is_null()) return std::nullopt;
  return ComputeCapability{j.at("cc").at("major").get<int>(), j.at("cc").at("minor").get<int>()};
}

json nvml_device_json(const NvmlDevice& d) {
  json processes = json::array();
  for (const GpuProcess& p : d.processes) {
    processes.push_back({{"pid", p.pid}, {"used_bytes", optional_json(p.used_bytes)}});
  }
  return {{"name", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"cc", cc_json(d.cc)},
          {"memory_total", optional_json(d.memory_total)},
          {"memory_free", optional_json(d.memory_free)},
          {"memory_used", optional_json(d.memory_used)},
          {"mig_enabled", optional_json(d.mig_enabled)},
          {"compute_mode", optional_json(d.compute_mode)},
          {"max_clock_ghz", optional_json(d.max_clock_ghz)},
          {"processes", processes}};
}

NvmlDevice nvml_device_from(const json& j) {
  NvmlDevice d;
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  d.pci_bus_id = j.at("pci_bus_id").get<std::string>();
  d.cc = read_cc(j);
  d.memory_total = read_optional<std::uint64_t>(j, "memory_total");
  d.memory_free = read_optional<std::uint64_t>(j, "memory_free");
  d.memory_used = read_optional<std::uint64_t>(j, "memory_used");
  d.mig_enabled = read_optional<bool>(j, "mig_enabled");
  d.compute_mode = read_optional<int>(j, "compute_mode");
  d.max_clock_ghz = read_optional<double>(j, "max_clock_ghz");
  for (const json& p : j.at("processes")) {
    GpuProcess process;
    process.pid = p.at("pid").get<unsigned int>();
    process.used_bytes = read_optional<std::uint64_t>(p, "used_bytes");
    d.processes.push_back(process);
  }
  return d;
}

json cuda_device_json(const CudaDevice& d) {
  return {{"name", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"cc", cc_json(d.cc)},
          {"sm_count", optional_json(d.sm_count)},
          {"memory_total", optional_json(d.memory_total)},
          {"compute_mode", optional_json(d.compute_mode)},
          {"clock_ghz", optional_json(d.clock_ghz)}};
}

CudaDevice cuda_device_from(const json& j) {
  CudaDevice d;
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  d.pci_bus_id = j.at("pci_bus_id").get<std::string>();
  d.cc = read_cc(j);
  d.sm_count = read_optional<int>(j, "sm_count");
  d.memory_total = read_optional<std::uint64_t>(j, "memory_total");
  d.compute_mode = read_optional<int>(j, "compute_mode");
  d.clock_ghz = read_optional<double>(j, "clock_ghz");
  return d;
}

// Runs `read` on the parsed document; any exception (a missing key, a wrong type) is an error.
template <typename Read>
bool decode(std::string_view text, std::string& error, Read&& read) {
  try {
    read(json::parse(text));
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

}  // namespace

std::string encode_nvml_snapshot(const NvmlSnapshot& s) {
  json devices = json::array();
  for (const NvmlDevice& d : s.devices) devices.push_back(nvml_device_json(d));
  return json{{"loaded", s.loaded},
              {"load_error", s.load_error},
              {"init_result", s.init_result},
              {"init_error", s.init_error},
              {"driver_version", s.driver_version},
              {"cuda_version", optional_json(s.cuda_version)},
              {"devices", devices}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

bool decode_nvml_snapshot(std::string_view text, NvmlSnapshot& s, std::string& error) {
  return decode(text, error, [&s](const json& j) {
    s.loaded = j.at("loaded").get<bool>();
    s.load_error = j.at("load_error").get<std::string>();
    s.init_result = j.at("init_result").get<int>();
    s.init_error = j.at("init_error").get<std::string>();
    s.driver_version = j.at("driver_version").get<std::string>();
    s.cuda_version = read_optional<int>(j, "cuda_version");
    for (const json& d : j.at("devices")) s.devices.push_back(nvml_device_from(d));
  });
}

std::string encode_cuda_snapshot(const CudaSnapshot& s) {
  json devices = json::array();
  for (const CudaDevice& d : s.devices) devices.push_back(cuda_device_json(d));
  json peers = json::array();
  for (const PeerLink& p : s.peers) {
    peers.push_back({{"from", p.from},
                     {"to", p.to},
                     {"access", p.access},
                     {"performance_rank", optional_json(p.performance_rank)},
                     {"native_atomics", p.native_atomics}});
  }
  return json{{"loaded", s.loaded},
              {"library", s.library},
              {"load_error", s.load_error},
              {"init_result", s.init_result},
              {"init_error_name", s.init_error_name},
              {"init_error_string", s.init_error_string},
              {"driver_cuda_version", optional_json(s.driver_cuda_version)},
              {"devices", devices},
              {"peers", peers}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

bool decode_cuda_snapshot(std::string_view text, CudaSnapshot& s, std::string& error) {
  return decode(text, error, [&s](const json& j) {
    s.loaded = j.at("loaded").get<bool>();
    s.library = j.at("library").get<std::string>();
    s.load_error = j.at("load_error").get<std::string>();
    s.init_result = j.at("init_result").get<int>();
    s.init_error_name = j.at("init_error_name").get<std::string>();
    s.init_error_string = j.at("init_error_string").get<std::string>();
    s.driver_cuda_version = read_optional<int>(j, "driver_cuda_version");
    for (const json& d : j.at("devices")) s.devices.push_back(cuda_device_from(d));
    for (const json& p : j.at("peers")) {
      PeerLink link;
      link.from = p.at("from").get<int>();
      link.to = p.at("to").get<int>();
      link.access = p.at("access").get<bool>();
      link.performance_rank = read_optional<int>(p, "performance_rank");
      link.native_atomics = p.at("native_atomics").get<bool>();
      s.peers.push_back(link);
    }
  });
}

}  // namespace precision_probe
