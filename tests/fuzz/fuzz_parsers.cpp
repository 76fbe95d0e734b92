// libFuzzer target for everything that reads input the probe does not control: the command line
// (arguments separated by NUL bytes in the input), --device lists, --require lists, compute
// capabilities, CUDA_VISIBLE_DEVICES, arch lists, /proc/cpuinfo, durations and timestamps, a
// library's fat binaries (the input as a section, and as an ELF file) and arch flags; and what
// its children send: the worker protocol's result lines (each line of the input, as a crashing
// worker may leave them: cut anywhere), plans, and the driver agent's snapshots and telemetry; and
// the JSON reader under them all (report/json_document.hpp), against nlohmann/json. None may crash,
// hang or leak, whatever the bytes; the sanitizers (address, undefined) catch what a crash would
// not.
//
//   ./dev fuzz [SECONDS]     (clang, libclang-rt's libFuzzer)

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "probe/facts/fatbin.hpp"
#include "strings/strings.hpp"
#include "probe/cli/cli.hpp"
#include "probe/facts/cpu.hpp"
#include "probe/driver/driver.hpp"
#include "precision_probe/modes.hpp"
#include "probe/cli/options.hpp"
#include "wire/protocol.hpp"
#include "wire/training_check.hpp"
#include "precision_probe/report_json.hpp"
#include "probe/driver/telemetry.hpp"
#include "report/json_document.hpp"

#include <nlohmann/json.hpp>

namespace pp = precision_probe;

namespace {

// Whether a parsed value is the one nlohmann/json read.
bool same_value(const pp::json_fields::JsonValue& v, const nlohmann::json& j) {
  if (v.is_null()) return j.is_null();
  if (v.is_boolean()) return j.is_boolean() && j.get<bool>() == v.boolean();
  if (v.is_number_integer()) {
    if (!j.is_number_integer()) return false;
    return v.is_number_unsigned() ? j.is_number_unsigned() && j.get<std::uint64_t>() == v.uint64()
                                  : j.get<std::int64_t>() == v.int64();
  }
  if (v.is_number()) return j.is_number_float() && j.get<double>() == v.number();
  if (v.is_string()) return j.is_string() && j.get_ref<const std::string&>() == v.string_view();
  bool same = v.size() == j.size();
  if (v.is_array()) {
    if (!j.is_array()) return false;
    std::size_t i = 0;
    v.for_each([&](const pp::json_fields::JsonValue& e) { same = same && same_value(e, j[i++]); });
    return same;
  }
  if (!j.is_object()) return false;
  v.for_each_member([&](std::string_view key, const pp::json_fields::JsonValue& e) {
    const auto it = j.find(std::string(key));
    same = same && it != j.end() && same_value(e, *it);
  });
  return same;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  // The command line: "precision-probe" followed by the NUL-separated pieces of the input.
  std::vector<std::string> args = {"precision-probe"};
  std::string current;
  for (char c : text) {
    if (c == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  args.push_back(current);
  if (args.size() > 64) args.resize(64);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const pp::CommandLine cl = pp::parse_command_line(static_cast<int>(argv.size()), argv.data());
  if (cl.action == pp::CommandLine::Action::usage_error &&
      cl.text.find('\n') != std::string::npos) {
    __builtin_trap();  // a usage error is one line
  }

  // The value parsers, on the raw input.
  pp::parse_device_selection(text);
  pp::parse_mode_list(text);
  if (const auto cc = pp::ComputeCapability::parse(text)) {
    if (cc->major < 1 || cc->major > 99 || cc->minor < 0 || cc->minor > 9) __builtin_trap();
    // Its text is read back as itself.
    if (pp::ComputeCapability::parse(cc->to_string()) != cc) __builtin_trap();
    pp::gpu_hardware_support(*cc, pp::Mode::bf16);
  }
  if (const auto version = pp::Version::parse(text)) {
    if (pp::Version::parse(version->to_string()) != version) __builtin_trap();
  }
  pp::parse_cuda_visible_devices(text);
  const auto targets = pp::parse_arch_list(text);
  pp::kernel_coverage(pp::ComputeCapability{9, 0}, targets);
  pp::parse_cpuinfo(text, "x86_64");
  if (const auto seconds = pp::parse_duration(text); seconds && *seconds < 0) __builtin_trap();
  if (const auto ms = pp::parse_utc_timestamp(text)) {
    // What parses formats back to the same second.
    if (*ms >= 0 && *ms < (std::int64_t{1} << 45) &&
        pp::parse_utc_timestamp(pp::format_utc_timestamp(*ms / 1000)) != *ms / 1000 * 1000) {
      __builtin_trap();
    }
  }

  // A library's fat binaries: the input as a section's bytes and as an ELF file. Every entry
  // takes at least 48 bytes, every container 16; every target is main or extra.
  for (const pp::FatbinSummary& fat :
       {pp::parse_fatbin_bytes(text), pp::read_fatbin_summary_from_bytes(text)}) {
    std::size_t entries = fat.other_entries;
    for (const auto* list : {&fat.sass, &fat.ptx}) {
      for (const pp::FatbinTarget& t : *list) entries += t.count;
    }
    if (entries * 48 > text.size() || fat.containers * 16 > text.size()) __builtin_trap();
    const pp::FatbinArchList split = pp::fatbin_arch_list(fat);
    if (split.main.size() + split.extras.size() != fat.sass.size() + fat.ptx.size()) {
      __builtin_trap();
    }
  }
  if (const auto flags = pp::find_arch_flags(text); flags && pp::parse_arch_list(*flags).empty()) {
    __builtin_trap();  // what is found reads as an arch list
  }

  // What children send: a worker's result lines, a plan, the driver agent's snapshots.
  pp::WorkerResult result;
  result.kind = text.size() % 2 == 0 ? pp::DeviceKind::cuda : pp::DeviceKind::cpu;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::string_view line(text.data() + start,
                                (nl == std::string::npos ? text.size() : nl) - start);
    (void)pp::apply_result_line(line, result);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  for (const auto& [mode, o] : result.smoke) {
    // Believed only within the probe's own tolerance.
    if (o.ok && !(o.rel_error && *o.rel_error <= pp::smoke_tolerance(mode))) __builtin_trap();
  }
  for (const auto& [mode, o] : result.amp) {
    // A training run is believed only when its own figures show it trained.
    if (o.ok && !pp::training_problem(mode, o).empty()) {
      __builtin_trap();
    }
  }
  for (const auto& [mode, o] : result.bench) {
    if (o.ok && (!o.ran || !o.tflops)) __builtin_trap();
  }
  for (const auto& o : result.collectives) {
    if (o.ok && !o.ran) __builtin_trap();
  }
  (void)pp::decode_plan(text);
  (void)pp::decode_stack(text);
  // A report read back is written again without trouble, and reads back the same. A read of the
  // verdicts checks less than a full read: what the full read accepts, it accepts.
  const auto verdicts = pp::read_report_json(text, pp::ReadDepth::verdicts);
  if (const auto report = pp::read_report_json(text)) {
    const std::string written = pp::report_to_json(*report);
    const auto again = pp::read_report_json(written);
    if (!again || pp::report_to_json(*again) != written) __builtin_trap();
    if (!verdicts) __builtin_trap();
  }
  (void)pp::decode_nvml_snapshot(text);
  (void)pp::decode_cuda_snapshot(text);
  (void)pp::decode_sample(text);

  // The JSON reader: a refusal is one line; what it reads, nlohmann/json reads to the same values
  // (it refuses more: a member named twice, nesting past 512 levels).
  pp::json_fields::JsonDocument doc;
  const pp::Expected<void> parsed = doc.parse(text);
  const std::string refused = parsed ? std::string() : parsed.error();
  if (refused.find('\n') != std::string::npos) __builtin_trap();
  if (refused.empty()) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !same_value(doc.root(), j)) __builtin_trap();
  }
  return 0;
}
