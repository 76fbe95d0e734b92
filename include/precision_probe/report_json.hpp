#pragma once
// The report as JSON (schema: docs/report.schema.json; fields: docs/report.md), both ways, for
// the probe and for programs that consume its reports (find_package(precision-probe), target
// precision_probe::report).

#include <string>
#include <string_view>

#include "precision_probe/expected.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

// The report as a JSON document, pretty-printed with two-space indentation.
std::string report_to_json(const Report& report);

// How much of a report read_report_json reads (docs/report.md, "Reading a report"). Either way the
// whole text is parsed, and a text that is not JSON or not a report is refused.
enum class ReadDepth {
  full,
  // What a fleet's view needs, about a tenth of a report's values: schema_version, report_id,
  // started_at, tool, host, error, run, driver, requirements, exit_code, exit_reason and
  // duration_ms; of each device its index, kind, name, selected, gpu, cpu, kernels and each
  // mode's verdict (hardware, hardware_reason, status, reason, failure); of each benchmark ran,
  // ok, tflops and sustained_tflops; of its soak the soak's own fields and of each soaked mode
  // ran, ok, mismatches and tflops. Everything else keeps its default (PrecisionResult::amp
  // stays empty) and is not checked.
  verdicts,
};

// A report read back from its JSON. Refuses (with the path of the bad value) what is not JSON,
// not a report, a schema_version other than kSchemaVersion (or 1 and 2, upgraded), values of the
// wrong type, lists that would take more than 64 MiB in memory, and an exit_code that is missing
// or not one of the probe's. Fields it does not know are ignored; other fields that are missing
// keep their defaults. A report of schema 3 read back carries every input of the probe's exit
// decision, so that it is gated again to the exit code it says (docs/report.md).
Expected<Report> read_report_json(std::string_view text);  // ReadDepth::full
Expected<Report> read_report_json(std::string_view text, ReadDepth depth);

}  // namespace precision_probe
