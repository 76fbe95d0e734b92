#include "precision_probe/report_json.hpp"

#include <algorithm>
#include <cmath>

#include "strings/strings.hpp"
#include "report/json_fields.hpp"
#include "report/report_reader.hpp"

namespace precision_probe {
namespace json_fields {

json encode(bool v) { return v; }
json encode(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json encode(const std::string& v) { return v; }
json encode(Mode v) { return std::string(mode_key(v)); }
json encode(ComputeCapability v) { return v.to_string(); }
json encode(Version v) { return v.to_string(); }

std::string Path::str() const {
  std::string base = parent_ != nullptr ? parent_->str() : std::string();
  if (element_) return base + "[" + std::to_string(index_) + "]";
  if (base.empty()) return std::string(text_);
  return base + "." + std::string(text_);
}

void fail(const Path& path, const std::string& what) {
  throw FieldError((path.empty() ? std::string("the document") : path.str()) + ": " + what);
}

std::string shown_text(std::string_view text) { return printable(text, 40); }

std::string cut_text(std::string_view text, const ReadLimits& limits) {
  // Cut at a character boundary (UTF-8 continuation bytes are 10xxxxxx).
  std::size_t cut = limits.max_text;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + " [... " + std::to_string(text.size() - cut) +
         " bytes cut]";
}

void Writer::modes(const char* key, const PerMode<PrecisionResult>& precisions, ModeKind kind) {
  json by_mode = json::object();
  for (const auto& [mode, p] : precisions) {
    if (mode_info(mode).kind != kind) continue;
    by_mode[std::string(mode_key(mode))] =
        kind == ModeKind::matmul ? encode(MatmulEntryConst{p}) : encode(TrainingEntryConst{p});
  }
  j_[key] = std::move(by_mode);
}

void Writer::benches(const char* key, const PerMode<PrecisionResult>& precisions) {
  json by_mode = json::object();
  for (const auto& [mode, p] : precisions) {
    if (p.bench) by_mode[std::string(mode_key(mode))] = encode(*p.bench);
  }
  if (!by_mode.empty()) j_[key] = std::move(by_mode);
}

}  // namespace json_fields

std::string report_to_json(const Report& report) {
  // Invalid UTF-8 (from a driver string, say) is replaced rather than thrown on.
  return json_fields::encode(report).dump(2, ' ', false,
                                          json_fields::json::error_handler_t::replace);
}

namespace {

// Schema 2 did not write the run's inputs of the exit decision: whether GPUs were selected follows
// from run.devices; an unavailable selection and an interrupt are lost (its exit_code still says
// them), and so is the `failure` of a precision not tested because the machine kept it from
// running.
void upgrade_from_schema_2(Report& report) {
  report.run.gpus_selected = report.run.devices != "cpu" && !report.run.devices.empty();
}

// Schema 3 said `failed` for every check that did not pass. Schema 4 keeps `failed` for wrong
// numbers, runtime errors, crashes and hangs past --check-timeout; what a stack, the run's deadline
// or a signal cut off has its own status, read here from the failure and the probe's own reasons.
void upgrade_status(Status& status, ErrorKind& failure, const std::string& reason) {
  if (status != Status::failed) return;
  if (failure == ErrorKind::environment) {
    status = Status::cannot_run;
  } else if (failure == ErrorKind::timed_out && starts_with(reason, "interrupted by ")) {
    status = Status::interrupted;
    failure = ErrorKind::interrupted;
  } else if (failure == ErrorKind::timed_out && starts_with(reason, "timed out after ") &&
             reason.find("(--timeout)") != std::string::npos) {
    status = Status::out_of_time;
    failure = ErrorKind::out_of_time;
  }
}

void upgrade_from_schema_3(Report& report) {
  for (DeviceReport& d : report.devices) {
    for (auto [mode, p] : d.precisions) upgrade_status(p.status, p.failure, p.reason);
  }
  for (RequirementResult& q : report.requirements) upgrade_status(q.status, q.failure, q.reason);
  if (report.collectives) {
    CollectivesReport& c = *report.collectives;
    upgrade_status(c.status, c.failure, c.reason);
  }
}

}  // namespace

Expected<Report> read_report_json(std::string_view text) {
  return read_report_json(text, ReadDepth::full);
}

Expected<Report> read_report_json(std::string_view text, ReadDepth depth) {
  return json_fields::read_report(text, depth, false);
}

namespace json_fields {

Expected<Report> read_report(std::string_view text, ReadDepth depth, bool padded) {
  // One document a thread, its buffers kept: a fleet's summary reads thousands of reports.
  thread_local JsonDocument doc;
  if (const Expected<void> parsed = doc.parse(text, padded); !parsed) {
    return Unexpected{"not a JSON document (" + parsed.error() + ")"};
  }
  const JsonValue root = doc.root();
  const auto version = root.is_object() ? root.find("schema_version") : std::nullopt;
  if (!version || !root.find("tool")) {
    return Unexpected{"not a precision-probe report (no schema_version or tool)"};
  }
  // Schema 1 named NVFP4 "fp4" (the reader takes that name where a mode is named); it changed
  // nothing else that a reader meets. Schema 2 lacked the run's inputs of the exit decision.
  const std::int64_t read_version = version->is_number_integer() ? version->int64() : 0;
  const bool schema_1 = read_version == 1;
  if (read_version < 1 || read_version > kSchemaVersion) {
    return Unexpected{"schema_version " + version->describe() +
                      (version->is_number_integer() ? "" : " (not an integer)") +
                      ", this reader reads " + std::to_string(kSchemaVersion) + " (and 1 to " +
                      std::to_string(kSchemaVersion - 1) + ")"};
  }
  // Its lists may take 64 MiB in memory (a real report's take well under one).
  std::size_t memory_left = std::size_t{64} << 20;
  const ReadLimits limits{std::size_t{1} << 20, std::size_t{1} << 20, depth == ReadDepth::full,
                          schema_1, &memory_left};
  try {
    Report report;
    decode(root, report, "", limits);
    // The one field a report cannot be without: missing, it would read as 0, a success.
    const auto exit_code = root.find("exit_code");
    if (!exit_code || exit_code->is_null()) fail("exit_code", "missing: every report says one");
    if (report.exit_code < 0 || report.exit_code > kLastExitCode) {
      fail("exit_code", std::to_string(report.exit_code) +
                            " is not an exit code of the probe (0 to " +
                            std::to_string(kLastExitCode) + ")");
    }
    if (schema_1)
      std::replace(report.run.required.begin(), report.run.required.end(), std::string("fp4"),
                   std::string("nvfp4"));
    if (read_version < 3) upgrade_from_schema_2(report);
    if (read_version < 4) upgrade_from_schema_3(report);
    report.schema_version = kSchemaVersion;
    return report;
  } catch (const FieldError& e) {
    return Unexpected{e.what()};
  }
}

}  // namespace json_fields

}  // namespace precision_probe
