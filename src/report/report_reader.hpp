#pragma once
// read_report_json without a copy of the text, for a reader that keeps kJsonPadding readable bytes
// after each text (a fleet's summary reads every report into such a buffer).

#include <string_view>

#include "precision_probe/report_json.hpp"

namespace precision_probe::json_fields {

// As read_report_json; `padded`: kJsonPadding bytes after the text may be read (json_document.hpp).
Expected<Report> read_report(std::string_view text, ReadDepth depth, bool padded);

}  // namespace precision_probe::json_fields
