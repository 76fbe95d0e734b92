#pragma once
// Why a JSON text was refused, and where: asked only after simdjson's DOM parser refused a text
// (or found a member named twice), which says what kind of error it found but not where. The text
// is walked again, value by value (simdjson's On-Demand API, which knows where it stands), to the
// first problem: "at byte 58 (line 3, column 12), in devices[1].precisions: the member "bf16" is
// given twice (first at byte 39, line 3, column 4): a strict reader refuses duplicate keys".

#include <cstddef>
#include <string>
#include <string_view>

namespace precision_probe::json_fields {

// What is wrong with `text` and where; `fallback` (simdjson's message) where the walk finds
// nothing wrong. Containers nested deeper than `max_depth` are refused. The first `skip` bytes
// (a byte order mark the parser skipped) are not read, and a place counts them.
std::string json_refusal(std::string_view text, std::size_t skip, std::size_t max_depth,
                         const std::string& fallback);

}  // namespace precision_probe::json_fields
