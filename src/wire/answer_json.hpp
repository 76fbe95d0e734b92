#pragma once
// A driver query's answer as one JSON document, both ways: the driver agent's NVML and CUDA
// snapshots, and cuInit's answer in an engine session's line (cuda_snapshot.hpp). Through the
// field layer (report/json_fields.hpp), as the report is: a compute capability is "9.0" here as
// there. Each snapshot's fields() sit beside its encoder. Decoding never trusts the document:
// anything malformed is an error, which the reader reports as a query that crashed (or a session
// that broke the protocol).

#include <cstddef>
#include <string>
#include <string_view>

#include "precision_probe/expected.hpp"
#include "report/json_document.hpp"
#include "report/json_fields.hpp"

namespace precision_probe::answer_json {

// An answer's limits: a machine's devices and peers, driver texts cut at 16 KiB.
inline constexpr json_fields::ReadLimits kLimits{std::size_t{16} * 1024, 4096};

template <class Snapshot>
std::string encode(const Snapshot& s) {
  return json_fields::encode(s).dump(-1, ' ', false, json_fields::json::error_handler_t::replace);
}

// The snapshot in `root`, or why it is not one (no "loaded" or "devices": the query did not
// finish; a value of the wrong type).
template <class Snapshot>
Expected<Snapshot> decode(const json_fields::JsonValue& root) {
  for (const char* key : {"loaded", "devices"}) {
    if (!root.is_object() || !root.find(key)) return Unexpected{std::string("no \"") + key + "\""};
  }
  Snapshot s;
  try {
    json_fields::decode(root, s, "", kLimits);
  } catch (const json_fields::FieldError& e) {
    return Unexpected{e.what()};
  }
  return s;
}

// The same from a text, which must be one JSON document.
template <class Snapshot>
Expected<Snapshot> decode(std::string_view text) {
  json_fields::JsonDocument doc;
  if (Expected<void> parsed = doc.parse(text); !parsed) return Unexpected{parsed.error()};
  return decode<Snapshot>(doc.root());
}

}  // namespace precision_probe::answer_json
