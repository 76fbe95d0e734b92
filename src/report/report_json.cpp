#include "precision_probe/report_json.hpp"

#include <cmath>

#include "report/json_fields.hpp"

namespace precision_probe {
namespace json_fields {

json encode(bool v) { return v; }
json encode(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json encode(const std::string& v) { return v; }
json encode(Mode v) { return std::string(mode_key(v)); }
json encode(ComputeCapability v) { return v.to_string(); }

void fail(const std::string& path, const std::string& what) {
  throw FieldError(path + ": " + what);
}

void decode(const json& j, bool& out, const std::string& path, const ReadLimits& /*limits*/) {
  if (!j.is_boolean()) fail(path, "expected true or false");
  out = j.get<bool>();
}

void decode(const json& j, double& out, const std::string& path, const ReadLimits& /*limits*/) {
  if (!j.is_number()) fail(path, "expected a number");
  out = j.get<double>();
}

void decode(const json& j, std::string& out, const std::string& path, const ReadLimits& limits) {
  if (!j.is_string()) fail(path, "expected a text");
  const auto& text = j.get_ref<const std::string&>();
  if (text.size() <= limits.max_text) {
    out = text;
    return;
  }
  // Cut at a character boundary (UTF-8 continuation bytes are 10xxxxxx).
  std::size_t cut = limits.max_text;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  out = text.substr(0, cut) + " [... " + std::to_string(text.size() - cut) + " bytes cut]";
}

void decode(const json& j, Mode& out, const std::string& path, const ReadLimits& /*limits*/) {
  if (!j.is_string()) fail(path, "expected a mode");
  const auto mode = parse_mode(j.get<std::string>());
  if (!mode) fail(path, "unknown mode '" + j.get<std::string>() + "'");
  out = *mode;
}

void decode(const json& j, ComputeCapability& out, const std::string& path,
            const ReadLimits& /*limits*/) {
  const std::string text = j.is_string() ? j.get<std::string>() : "";
  const auto dot = text.find('.');
  const bool digits = dot != std::string::npos && dot >= 1 && dot <= 2 && text.size() == dot + 2 &&
                      text.find_first_not_of("0123456789.") == std::string::npos;
  if (!digits) fail(path, "expected a compute capability such as \"9.0\"");
  out = {std::stoi(text.substr(0, dot)), text[dot + 1] - '0'};
}

bool cuda_version_from(const json& j, std::optional<int>& version) {
  if (!j.is_string()) return false;
  const std::string text = j.get<std::string>();
  const auto dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 3 || dot + 1 >= text.size() ||
      text.size() > dot + 3 || text.find_first_not_of("0123456789.") != std::string::npos) {
    return false;
  }
  version = std::stoi(text.substr(0, dot)) * 1000 + std::stoi(text.substr(dot + 1)) * 10;
  return true;
}

void Writer::modes(const char* key, const std::vector<std::pair<Mode, PrecisionResult>>& precisions,
                   ModeKind kind) {
  json by_mode = json::object();
  for (const auto& [mode, p] : precisions) {
    if (mode_info(mode).kind != kind) continue;
    by_mode[std::string(mode_key(mode))] =
        kind == ModeKind::matmul ? encode(MatmulEntryConst{p}) : encode(TrainingEntryConst{p});
  }
  j_[key] = std::move(by_mode);
}

void Writer::benches(const char* key,
                     const std::vector<std::pair<Mode, PrecisionResult>>& precisions) {
  json by_mode = json::object();
  for (const auto& [mode, p] : precisions) {
    if (p.bench) by_mode[std::string(mode_key(mode))] = encode(*p.bench);
  }
  if (!by_mode.empty()) j_[key] = std::move(by_mode);
}

namespace {

PrecisionResult& entry_for(std::vector<std::pair<Mode, PrecisionResult>>& precisions, Mode mode) {
  for (auto& [m, p] : precisions) {
    if (m == mode) return p;
  }
  precisions.emplace_back(mode, PrecisionResult{});
  return precisions.back().second;
}

}  // namespace

void Reader::modes(const char* key, std::vector<std::pair<Mode, PrecisionResult>>& precisions,
                   ModeKind kind) {
  const json* by_mode = find(key);
  if (by_mode == nullptr) return;
  if (!by_mode->is_object()) fail(at(key), "expected an object");
  for (const auto& [name, value] : by_mode->items()) {
    const auto mode = parse_mode(name);
    const std::string path = at(key) + "." + name;
    if (!mode || mode_info(*mode).kind != kind) fail(path, "not a mode of this section");
    PrecisionResult& p = entry_for(precisions, *mode);
    if (kind == ModeKind::matmul) {
      MatmulEntry entry{p};
      decode(value, entry, path, limits_);
    } else {
      TrainingEntry entry{p};
      decode(value, entry, path, limits_);
    }
  }
}

void Reader::benches(const char* key, std::vector<std::pair<Mode, PrecisionResult>>& precisions) {
  const json* by_mode = find(key);
  if (by_mode == nullptr) return;
  if (!by_mode->is_object()) fail(at(key), "expected an object");
  for (const auto& [name, value] : by_mode->items()) {
    const auto mode = parse_mode(name);
    if (!mode) fail(at(key) + "." + name, "unknown mode");
    BenchResult bench;
    decode(value, bench, at(key) + "." + name, limits_);
    entry_for(precisions, *mode).bench = bench;
  }
}

}  // namespace json_fields

std::string report_to_json(const Report& report) {
  // Invalid UTF-8 (from a driver string, say) is replaced rather than thrown on.
  return json_fields::encode(report).dump(2, ' ', false,
                                          json_fields::json::error_handler_t::replace);
}

namespace {

// Schema 1 named NVFP4 "fp4": the mode lists (run.required, requirements[].mode) and the keys of
// each device's precisions and bench. Schema 2 changed nothing else that a reader meets; free text
// that happens to read "fp4" is left alone.
void rename_fp4_key(json_fields::json& by_mode) {
  if (!by_mode.is_object() || !by_mode.contains("fp4")) return;
  by_mode["nvfp4"] = std::move(by_mode["fp4"]);
  by_mode.erase("fp4");
}

void rename_fp4_value(json_fields::json& value) {
  if (value.is_string() && value.get<std::string>() == "fp4") value = "nvfp4";
}

void upgrade_from_schema_1(json_fields::json& j) {
  if (j.contains("run") && j["run"].is_object() && j["run"].contains("required") &&
      j["run"]["required"].is_array()) {
    for (auto& mode : j["run"]["required"]) rename_fp4_value(mode);
  }
  if (j.contains("requirements") && j["requirements"].is_array()) {
    for (auto& q : j["requirements"]) {
      if (q.is_object() && q.contains("mode")) rename_fp4_value(q["mode"]);
    }
  }
  if (j.contains("devices") && j["devices"].is_array()) {
    for (auto& d : j["devices"]) {
      if (!d.is_object()) continue;
      for (const char* section : {"precisions", "bench"}) {
        if (d.contains(section)) rename_fp4_key(d[section]);
      }
    }
  }
}

}  // namespace

Expected<Report> read_report_json(std::string_view text) {
  using json_fields::json;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Unexpected{"not a JSON document"};
  if (!j.is_object() || !j.contains("schema_version") || !j.contains("tool")) {
    return Unexpected{"not a precision-probe report (no schema_version or tool)"};
  }
  if (j.at("schema_version") == 1) {
    upgrade_from_schema_1(j);
    j["schema_version"] = kSchemaVersion;
  }
  if (j.at("schema_version") != kSchemaVersion) {
    return Unexpected{"schema_version " + j.at("schema_version").dump() + ", this reader reads " +
                      std::to_string(kSchemaVersion)};
  }
  const json_fields::ReadLimits limits{std::size_t{1} << 20, std::size_t{1} << 20};
  try {
    Report report;
    json_fields::decode(j, report, "", limits);
    return report;
  } catch (const json_fields::FieldError& e) {
    return Unexpected{e.what()};
  }
}

}  // namespace precision_probe
