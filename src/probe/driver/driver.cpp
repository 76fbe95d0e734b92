#include "probe/driver/driver.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "strings/strings.hpp"

namespace precision_probe {

bool driver_faulted(const DriverInfo& driver) {
  return driver.status == DriverStatus::hung || driver.status == DriverStatus::crashed ||
         driver.status == DriverStatus::out_of_time;
}

VisibleDevicesSpec parse_cuda_visible_devices(const std::optional<std::string>& value) {
  VisibleDevicesSpec spec;
  if (!value) return spec;
  spec.set = true;
  spec.raw = *value;
  if (trim(*value).empty()) return spec;  // "" hides every device
  for (const std::string& raw : split(*value, ',')) {
    const std::string entry = trim(raw);
    const bool index = !entry.empty() && std::all_of(entry.begin(), entry.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    }) && entry.size() <= 6;
    const bool uuid = starts_with(entry, "GPU-") || starts_with(entry, "MIG-");
    if (!index && !uuid) {
      spec.invalid_entry = entry.empty() ? "(empty)" : entry;
      break;
    }
    // "0,0" or "00,0": one GPU named twice (PyTorch's device_count() then counts none at all).
    const bool repeated =
        std::any_of(spec.entries.begin(), spec.entries.end(), [&](const std::string& e) {
          return index ? parse_int(e) == parse_int(entry) : to_lower(e) == to_lower(entry);
        });
    if (repeated) {
      spec.invalid_entry = entry;
      spec.repeated = true;
      break;
    }
    spec.entries.push_back(entry);
  }
  return spec;
}

namespace {

// NVML writes "00000000:17:00.0", CUDA "0000:17:00.0": keep CUDA's form, lower case.
std::string normalize_bus_id(const std::string& bus_id) {
  std::string id = to_lower(bus_id);
  const std::size_t colon = id.find(':');
  if (colon == 8 && starts_with(id, "0000")) id = id.substr(4);
  return id;
}

std::string version_from_proc(const std::optional<std::string>& text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..."
  if (!text) return "";
  const std::size_t pos = text->find("Kernel Module");
  if (pos == std::string::npos) return "";
  std::string rest = trim(std::string_view(*text).substr(pos + 13));
  const std::size_t end = rest.find_first_of(" \t\n");
  return rest.substr(0, end);
}

const NvmlDevice* find_nvml(const NvmlSnapshot& nvml, const CudaDevice& device) {
  for (const NvmlDevice& d : nvml.devices) {
    if (!device.uuid.empty() && d.uuid == device.uuid) return &d;
  }
  // A MIG instance: its parent GPU has the same PCI bus id.
  for (const NvmlDevice& d : nvml.devices) {
    if (!device.pci_bus_id.empty() &&
        normalize_bus_id(d.pci_bus_id) == normalize_bus_id(device.pci_bus_id)) {
      return &d;
    }
  }
  return nullptr;
}

GpuInfo from_nvml(const NvmlDevice& d) {
  GpuInfo g;
  g.name = d.name;
  g.uuid = d.uuid;
  g.pci_bus_id = normalize_bus_id(d.pci_bus_id);
  g.cc = d.cc;
  g.memory_total = d.memory_total;
  g.memory_free = d.memory_free;
  g.memory_used = d.memory_used;
  g.mig_enabled = d.mig_enabled;
  g.compute_mode = d.compute_mode;
  g.clock_ghz = d.max_clock_ghz;
  g.processes = d.processes;
  g.source = "nvml";
  return g;
}

GpuInfo from_cuda(const CudaDevice& c, const NvmlDevice* n) {
  GpuInfo g;
  g.name = c.name;
  g.uuid = c.uuid;
  g.pci_bus_id = normalize_bus_id(c.pci_bus_id);
  g.cc = c.cc;
  g.sm_count = c.sm_count;
  g.memory_total = c.memory_total;
  g.compute_mode = c.compute_mode;
  g.clock_ghz = c.clock_ghz;
  g.mig_instance = starts_with(c.uuid, "MIG-");
  g.source = "cuda";
  if (n != nullptr) {
    g.source = "cuda+nvml";
    g.mig_enabled = n->mig_enabled;
    if (!g.mig_instance) {
      g.memory_free = n->memory_free;
      g.memory_used = n->memory_used;
      g.processes = n->processes;
      if (!g.memory_total) g.memory_total = n->memory_total;
    }
    if (!g.compute_mode) g.compute_mode = n->compute_mode;
    if (!g.cc) g.cc = n->cc;
    if (!g.clock_ghz) g.clock_ghz = n->max_clock_ghz;
  }
  return g;
}

// CUDA_VISIBLE_DEVICES applied to NVML's list, the way CUDA applies it: stop at the first entry
// that names no device.
std::vector<GpuInfo> map_visible(const NvmlSnapshot& nvml, const VisibleDevicesSpec& visible,
                                 bool& reliable) {
  std::vector<GpuInfo> gpus;
  if (!visible.set) {
    for (const NvmlDevice& d : nvml.devices) gpus.push_back(from_nvml(d));
    return gpus;
  }
  std::set<std::size_t> used;
  for (const std::string& entry : visible.entries) {
    std::optional<std::size_t> found;
    if (starts_with(entry, "MIG-")) {
      reliable = false;  // MIG instances are enumerated by CUDA only
      break;
    }
    if (starts_with(entry, "GPU-")) {
      for (std::size_t i = 0; i < nvml.devices.size(); ++i) {
        if (starts_with(to_lower(nvml.devices[i].uuid), to_lower(entry))) {
          found = i;
          break;
        }
      }
    } else if (auto idx = parse_int(entry);
               idx && *idx >= 0 && static_cast<std::size_t>(*idx) < nvml.devices.size()) {
      found = static_cast<std::size_t>(*idx);
    }
    if (!found || used.count(*found) != 0) break;
    used.insert(*found);
    gpus.push_back(from_nvml(nvml.devices[*found]));
  }
  return gpus;
}

}  // namespace

GpuFacts merge_gpu_facts(const NvmlSnapshot& nvml, const std::optional<CudaSnapshot>& cuda,
                         const VisibleDevicesSpec& visible,
                         const std::optional<std::string>& proc_driver_version_text) {
  GpuFacts facts;
  DriverInfo& d = facts.driver;
  const bool nvml_ok = nvml.loaded && nvml.init_result == 0;
  d.nvml_loaded = nvml_ok;
  d.version = nvml_ok ? nvml.driver_version : version_from_proc(proc_driver_version_text);
  d.cuda_version = nvml_ok ? nvml.cuda_version : std::nullopt;

  const bool cuda_answered = cuda && cuda->fault == QueryFault::none;
  auto fault_status = [](QueryFault f) {
    return f == QueryFault::crashed       ? DriverStatus::crashed
           : f == QueryFault::out_of_time ? DriverStatus::out_of_time
                                          : DriverStatus::hung;
  };
  if (cuda && !cuda_answered) {
    // CUDA's query hung or crashed: the GPUs NVML lists (if it answered) are shown, not usable.
    d.cuda_queried = true;
    d.status = fault_status(cuda->fault);
    d.message = cuda->fault_message;
    if (nvml_ok) facts.gpus = map_visible(nvml, visible, facts.order_is_reliable);
  } else if (nvml.fault != QueryFault::none && !cuda_answered) {
    d.status = fault_status(nvml.fault);
    d.message = nvml.fault_message;
  } else if (cuda && cuda->loaded) {
    d.cuda_queried = true;
    d.libcuda_path = cuda->library;
    d.cu_init_result = cuda->init_result;
    d.cu_init_error_name = cuda->init_error_name;
    if (!d.cuda_version) d.cuda_version = cuda->driver_cuda_version;
    if (cuda->init_result == 0) {
      std::set<std::string> seen;  // one GPU named twice in CUDA_VISIBLE_DEVICES is one GPU
      for (const CudaDevice& c : cuda->devices) {
        if (!c.uuid.empty() && !seen.insert(c.uuid).second) continue;
        facts.gpus.push_back(from_cuda(c, nvml_ok ? find_nvml(nvml, c) : nullptr));
      }
      facts.peers = cuda->peers;
      d.status = facts.gpus.empty() ? DriverStatus::no_devices : DriverStatus::ok;
      d.message = facts.gpus.empty() ? "the driver is loaded but CUDA sees no device"
                                     : fmt::format("{} GPU(s) visible to CUDA", facts.gpus.size());
    } else {
      const bool no_device = cuda->init_result == 100;
      d.status = no_device ? DriverStatus::no_devices : DriverStatus::init_failed;
      d.message = fmt::format("cuInit failed: {} ({}): {}", cuda->init_error_name,
                              cuda->init_result, cuda->init_error_string);
    }
  } else if (cuda && !cuda->loaded) {
    d.status = nvml_ok ? DriverStatus::init_failed : DriverStatus::not_found;
    d.message = cuda->load_error;
    if (nvml_ok) {
      d.message += " (NVML is present: the container may lack the 'compute' driver capability)";
    }
  } else if (nvml_ok) {
    facts.gpus = map_visible(nvml, visible, facts.order_is_reliable);
    std::set<std::string> models;
    for (const GpuInfo& g : facts.gpus) {
      models.insert(g.name);
      if (g.mig_enabled.value_or(false)) facts.order_is_reliable = false;
    }
    if (models.size() > 1) facts.order_is_reliable = false;  // CUDA orders fastest first
    d.status = facts.gpus.empty() ? DriverStatus::no_devices : DriverStatus::ok;
    d.message = facts.gpus.empty() ? "NVML answered, but no GPU is visible"
                                   : fmt::format("{} GPU(s) visible (NVML)", facts.gpus.size());
  } else if (nvml.loaded) {
    d.status = DriverStatus::init_failed;
    d.message = fmt::format("nvmlInit failed ({}): {}", nvml.init_result, nvml.init_error);
  } else {
    d.status = DriverStatus::not_found;
    d.message = nvml.load_error;
  }
  for (std::size_t i = 0; i < facts.gpus.size(); ++i) facts.gpus[i].index = static_cast<int>(i);
  return facts;
}

}  // namespace precision_probe
