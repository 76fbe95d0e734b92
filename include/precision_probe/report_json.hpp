#pragma once
// The JSON form of the report (schema: docs/report.schema.json). Every JSON field name of the
// report lives in report_json.cpp.

#include <string>

#include "precision_probe/report.hpp"

namespace precision_probe {

// The report as a JSON document, pretty-printed with two-space indentation.
std::string report_to_json(const Report& report);

}  // namespace precision_probe
