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

// A report read back from its JSON. Refuses (with the path of the bad value) what is not JSON,
// not a report, a schema_version other than kSchemaVersion, and values of the wrong type. Fields
// it does not know are ignored; fields that are missing keep their defaults. Fields the JSON
// does not carry (RunInfo::gpus_selected and the like) keep their defaults too.
Expected<Report> read_report_json(std::string_view text);

}  // namespace precision_probe
