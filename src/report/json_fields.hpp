#pragma once
// The project's one JSON layer: the JSON of every struct, written once. One `fields` function per
// struct lists its JSON names and shape, and the same list writes (Writer, through nlohmann/json)
// and reads (Reader, from a document parsed by json_document.hpp). The report's JSON
// (report_json.cpp), the worker protocol (wire/protocol.cpp), the driver's answers
// (wire/answer_json.hpp: the agent's snapshots, a GPU session's cuInit answer), telemetry, the
// image reader's line and the summary (summary_printers.cpp) all use it, their structs' fields()
// beside their encoders, so a struct cannot be spelt two ways. The report's field names are part of
// the documented schema (docs/report.schema.json, docs/report.md): adding one is free, renaming or
// removing one bumps kSchemaVersion (docs/architecture.md).

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/json_document.hpp"

#include "precision_probe/report.hpp"

namespace precision_probe::json_fields {

// ordered_json: fields come out in the order they are listed, as a reader expects them.
using json = nlohmann::ordered_json;

// A value the reader refused, with where it was ("devices[1].gpu.sm_count: expected an integer").
class FieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a reader accepts: texts longer than `max_text` are cut (and say so), lists longer than
// `max_items` are refused. A worker's line gets small limits, a report file large ones.
// `details` false leaves the fields that fields() marks as details unread, at their defaults
// (read_report_json's ReadDepth::verdicts).
// `schema_1`: the document is of schema 1, which named NVFP4 "fp4" (where a mode is named: a mode's
// value, a key by mode).
// `memory_left`: where set, what the lists read may still take in memory (each item's struct; a
// device is 15 KiB, so a list of three-byte `{},` items could otherwise take 5,000 times the
// text's size); a list past it is refused.
struct ReadLimits {
  std::size_t max_text = std::size_t{16} * 1024;
  std::size_t max_items = 4096;
  bool details = true;
  bool schema_1 = false;
  std::size_t* memory_left = nullptr;
};

// A mode by its key, as the document's schema names it (schema 1 had no "nvfp4": its NVFP4 was
// "fp4", so a document naming both would say two things of one mode).
inline std::optional<Mode> mode_named(std::string_view key, const ReadLimits& limits) {
  if (limits.schema_1) {
    if (key == "fp4") return Mode::nvfp4;
    if (key == "nvfp4") return std::nullopt;
  }
  return parse_mode(key);
}

// A text of the document as a message shows it: control characters (a NUL too) escaped, cut at
// 40 characters.
std::string shown_text(std::string_view text);

template <class S, class T>
inline constexpr bool is = std::is_same_v<std::remove_const_t<S>, T>;

// --- Enums by name: every enum of the report has to_string() with "?" past its last value ------

template <class E>
std::optional<E> enum_from_name(std::string_view name) {
  for (int i = 0; i < 64; ++i) {
    const auto value = static_cast<E>(i);
    const std::string_view text = to_string(value);
    if (text == "?") break;
    if (text == name) return value;
  }
  return std::nullopt;
}

class Writer;

// --- Writing -------------------------------------------------------------------------------------

json encode(bool v);
json encode(double v);  // a non-finite number is null
json encode(const std::string& v);
json encode(Mode v);
json encode(ComputeCapability v);  // "9.0"
json encode(Version v);            // "13.0"

template <class T>
std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, json> encode(T v) {
  return v;
}
template <class E>
std::enable_if_t<std::is_enum_v<E> && !std::is_same_v<E, Mode>, json> encode(E v) {
  return std::string(to_string(v));
}
template <class T>
json encode(const std::vector<T>& items);
template <class S>
auto encode(const S& s) -> decltype(fields(std::declval<Writer&>(), s), json());
template <class T>
json encode(const std::optional<T>& v) {
  return v ? encode(*v) : json(nullptr);
}

class Writer {
 public:
  explicit Writer(json& j) : j_(j) {}
  template <class T>
  void operator()(const char* key, const T& value) {
    j_[key] = encode(value);
  }
  // Null unless `present` (a reader reads it when not null).
  template <class T>
  void when(bool present, const char* key, const T& value) {
    j_[key] = present ? encode(value) : json(nullptr);
  }
  // Left out unless `present`.
  template <class T>
  void omit_unless(bool present, const char* key, const T& value) {
    if (present) j_[key] = encode(value);
  }
  // Worked out from other fields: written, never read.
  template <class T>
  void derived(const char* key, const T& value) {
    j_[key] = encode(value);
  }
  // A value with its own text form ("13.0" for 13000).
  template <class T, class ToJson, class FromJson>
  void mapped(const char* key, const T& value, ToJson to, FromJson /*from*/) {
    j_[key] = to(value);
  }
  // A nested object of some of this struct's fields (null unless `present`).
  template <class F>
  void group(bool present, const char* key, F&& list) {
    if (!present) {
      j_[key] = nullptr;
      return;
    }
    json sub = json::object();
    Writer w(sub);
    list(w);
    j_[key] = std::move(sub);
  }
  // Another struct's fields in this object.
  template <class S>
  void inline_fields(const S& s) {
    fields(*this, s);
  }
  // Fields that a read of the verdicts only leaves out (ReadDepth::verdicts): always written.
  template <class F>
  void details(F&& write) {
    write();
  }
  // The precisions of a device by mode key, of one kind (matmul or training).
  void modes(const char* key, const PerMode<PrecisionResult>& precisions, ModeKind kind);
  // The benchmarks of a device by mode key; left out when there are none.
  void benches(const char* key, const PerMode<PrecisionResult>& precisions);
  // Per-mode values as an object by mode key, in the mode table's order.
  template <class T>
  void by_mode(const char* key, const PerMode<T>& items) {
    json by_key = json::object();
    for (const auto& [mode, item] : items) by_key[std::string(mode_key(mode))] = encode(item);
    j_[key] = std::move(by_key);
  }
  // Structs that hold their own mode (`mode`), as an object by mode key (the mode not repeated
  // inside).
  template <class T>
  void keyed(const char* key, const std::vector<T>& items, Mode T::*mode) {
    json by_key = json::object();
    for (const T& item : items) by_key[std::string(mode_key(item.*mode))] = encode(item);
    j_[key] = std::move(by_key);
  }
  static constexpr bool reading = false;

 private:
  json& j_;
};

template <class T>
json encode(const std::vector<T>& items) {
  json list = json::array();
  for (const T& item : items) list.push_back(encode(item));
  return list;
}

template <class S>
auto encode(const S& s) -> decltype(fields(std::declval<Writer&>(), s), json()) {
  json j = json::object();
  Writer w(j);
  fields(w, s);
  return j;
}

// --- Reading -------------------------------------------------------------------------------------
// The reader works on a value of a parsed document (JsonValue, json_document.hpp); BasicReader's
// parameter is that view.

// Where a value is in the document ("devices[1].gpu.sm_count"), made into text only when a value
// is refused: reading builds no strings for the values it accepts.
class Path {
 public:
  Path(const char* text) : text_(text) {}         // NOLINT: implicit, a path's text
  Path(const std::string& text) : text_(text) {}  // NOLINT: implicit
  Path(const Path& parent, std::string_view member) : parent_(&parent), text_(member) {}
  Path(const Path& parent, std::size_t index) : parent_(&parent), index_(index), element_(true) {}
  bool empty() const { return parent_ == nullptr && text_.empty(); }
  std::string str() const;

 private:
  const Path* parent_ = nullptr;
  std::string_view text_;
  std::size_t index_ = 0;
  bool element_ = false;
};

[[noreturn]] void fail(const Path& path, const std::string& what);

template <class J>
void decode(const J& j, bool& out, const Path& path, const ReadLimits& /*limits*/) {
  if (!j.is_boolean()) fail(path, "expected true or false");
  out = j.boolean();
}

template <class J>
void decode(const J& j, double& out, const Path& path, const ReadLimits& /*limits*/) {
  if (!j.is_number()) fail(path, "expected a number");
  out = j.number();
}

// A text longer than limits.max_text is cut at a character boundary, and says so.
std::string cut_text(std::string_view text, const ReadLimits& limits);

template <class J>
void decode(const J& j, std::string& out, const Path& path, const ReadLimits& limits) {
  if (!j.is_string()) fail(path, "expected a text");
  const std::string_view text = j.string_view();
  if (text.size() <= limits.max_text) {
    out.assign(text);
  } else {
    out = cut_text(text, limits);
  }
}

template <class J>
void decode(const J& j, Mode& out, const Path& path, const ReadLimits& limits) {
  if (!j.is_string()) fail(path, "expected a mode");
  const auto mode = mode_named(j.string_view(), limits);
  if (!mode) fail(path, "unknown mode '" + shown_text(j.string_view()) + "'");
  out = *mode;
}

template <class J>
void decode(const J& j, ComputeCapability& out, const Path& path, const ReadLimits& /*limits*/) {
  const auto cc = j.is_string() ? ComputeCapability::parse(j.string_view()) : std::nullopt;
  if (!cc) fail(path, "expected a compute capability such as \"9.0\"");
  out = *cc;
}

template <class J>
void decode(const J& j, Version& out, const Path& path, const ReadLimits& /*limits*/) {
  const auto version = j.is_string() ? Version::parse(j.string_view()) : std::nullopt;
  if (!version) fail(path, "expected a version such as \"13.0\"");
  out = *version;
}

template <class J, class T>
std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>> decode(
    const J& j, T& out, const Path& path, const ReadLimits& /*limits*/) {
  using Limits = std::numeric_limits<T>;
  if (!j.is_number_integer()) fail(path, "expected an integer");
  if (j.is_number_unsigned()) {
    const std::uint64_t v = j.uint64();
    if (v > static_cast<std::uint64_t>(Limits::max())) fail(path, "an integer out of range");
    out = static_cast<T>(v);
    return;
  }
  const std::int64_t v = j.int64();
  if constexpr (Limits::is_signed) {
    if (v < static_cast<std::int64_t>(Limits::min()) ||
        v > static_cast<std::int64_t>(Limits::max())) {
      fail(path, "an integer out of range");
    }
  } else {
    if (v < 0 || static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(Limits::max())) {
      fail(path, "an integer out of range");
    }
  }
  out = static_cast<T>(v);
}

template <class J, class E>
std::enable_if_t<std::is_enum_v<E> && !std::is_same_v<E, Mode>> decode(
    const J& j, E& out, const Path& path, const ReadLimits& /*limits*/) {
  if (!j.is_string()) fail(path, "expected a name");
  const auto value = enum_from_name<E>(j.string_view());
  if (!value) fail(path, "unknown value '" + shown_text(j.string_view()) + "'");
  out = *value;
}

template <class J>
class BasicReader;

template <class J, class T>
void decode(const J& j, std::vector<T>& out, const Path& path, const ReadLimits& limits);
template <class J, class S>
auto decode(const J& j, S& out, const Path& path, const ReadLimits& limits)
    -> decltype(fields(std::declval<BasicReader<J>&>(), out), void());

template <class J, class T>
void decode(const J& j, std::optional<T>& out, const Path& path, const ReadLimits& limits) {
  if (j.is_null()) {
    out.reset();
    return;
  }
  decode(j, out.emplace(), path, limits);  // a refusal leaves `out` half read: the read fails
}

template <class J, class T>
void decode(const J& j, std::vector<T>& out, const Path& path, const ReadLimits& limits) {
  if (!j.is_array()) fail(path, "expected a list");
  if (j.size() > limits.max_items)
    fail(path, "a list of more than " + std::to_string(limits.max_items));
  if (limits.memory_left != nullptr) {
    const std::size_t need = j.size() * sizeof(T);
    if (need > *limits.memory_left) {
      fail(path, "a list of " + std::to_string(j.size()) + " items, more than the memory a " +
                     "document may take allows");
    }
    *limits.memory_left -= need;
  }
  out.clear();
  out.reserve(j.size());
  // Each item read where it stays: a device is 15 KiB, built and moved it would cost a copy.
  j.for_each([&](const J& element) {
    const std::size_t index = out.size();
    decode(element, out.emplace_back(), Path(path, index), limits);
  });
}

template <class J>
class BasicReader {
 public:
  BasicReader(const J& j, const Path& path, const ReadLimits& limits)
      : j_(j), path_(path), limits_(limits) {
    if (!j_.is_object()) fail(path_, "expected an object");
  }
  // A missing or null field leaves the value as it is (its default). Keys are views: a literal's
  // length is known where fields() names it.
  template <class T>
  void operator()(std::string_view key, T& value) {
    if (const auto v = find(key)) decode(*v, value, at(key), limits_);
  }
  template <class T>
  void when(bool /*present*/, std::string_view key, T& value) {
    (*this)(key, value);
  }
  template <class T>
  void omit_unless(bool /*present*/, std::string_view key, T& value) {
    (*this)(key, value);
  }
  template <class T>
  void derived(const char* /*key*/, const T& /*value*/) {}
  template <class T, class ToJson, class FromJson>
  void mapped(std::string_view key, T& value, ToJson /*to*/, FromJson from) {
    const auto v = find(key);
    if (!v) return;
    if (!from(*v, value)) fail(at(key), "an unreadable value");
  }
  template <class F>
  void group(bool /*present*/, std::string_view key, F&& list) {
    const auto v = find(key);
    if (!v) return;
    BasicReader sub(*v, at(key), limits_);
    list(sub);
  }
  template <class S>
  void inline_fields(S& s) {
    fields(*this, s);
  }
  // Read only when the limits ask for details.
  template <class F>
  void details(F&& read) {
    if (limits_.details) read();
  }
  // The precisions of a device by mode key, of one kind (matmul or training).
  void modes(std::string_view key, PerMode<PrecisionResult>& precisions, ModeKind kind);
  // The benchmarks of a device by mode key.
  void benches(std::string_view key, PerMode<PrecisionResult>& precisions) {
    by_key(key, [&](Mode mode, const J& value, const Path& path) {
      decode(value, precisions[mode].bench.emplace(), path, limits_);
    });
  }
  template <class T>
  void by_mode(std::string_view key, PerMode<T>& items) {
    by_key(key, [&](Mode mode, const J& value, const Path& path) {
      decode(value, items.set(mode, T{}), path, limits_);
    });
  }
  template <class T>
  void keyed(std::string_view key, std::vector<T>& items, Mode T::*mode) {
    by_key(key, [&](Mode m, const J& value, const Path& path) {
      T item{};
      decode(value, item, path, limits_);
      item.*mode = m;
      items.push_back(std::move(item));
    });
  }
  static constexpr bool reading = true;

 private:
  std::optional<J> find(std::string_view key) {
    auto v = j_.find(key, &hint_);
    if (v && v->is_null()) v.reset();
    return v;
  }
  Path at(std::string_view key) const { return Path(path_, key); }
  // Each member of an object keyed by mode: f(mode, value, path).
  template <class F>
  void by_key(std::string_view key, F&& f) {
    const auto by_mode = find(key);
    if (!by_mode) return;
    if (!by_mode->is_object()) fail(at(key), "expected an object");
    by_mode->for_each_member([&](std::string_view name, const J& value) {
      const auto mode = mode_named(name, limits_);
      const Path section = at(key);
      const Path path(section, name);
      if (!mode) fail(path, "unknown mode");
      f(*mode, value, path);
    });
  }

  J j_;
  Path path_;  // its parent outlives this reader: readers nest within one call
  const ReadLimits& limits_;
  std::uint32_t hint_ = 0;
};

using Reader = BasicReader<JsonValue>;

template <class J, class S>
auto decode(const J& j, S& out, const Path& path, const ReadLimits& limits)
    -> decltype(fields(std::declval<BasicReader<J>&>(), out), void()) {
  BasicReader<J> r(j, path, limits);
  fields(r, out);
}

// --- The fields of each struct ---------------------------------------------------------------
// V is Writer or Reader; S is the struct, const when writing.

// Where an outcome's error_kind and error are read: always, or only with the details (a benchmark's
// and a soak's, whose verdicts are their figures).
enum class ErrorFields { verdict, detail };

// The fields every check's outcome shares (CheckOutcome), around the check's own (`own`): ran and
// ok first, error_kind and error last, in the report and on the worker's lines alike.
template <class V, class O, class F>
void outcome_fields(V& v, O& o, F&& own, ErrorFields error = ErrorFields::verdict) {
  static_assert(std::is_base_of_v<CheckOutcome, std::remove_const_t<O>>);
  v("ran", o.ran);
  v("ok", o.ok);
  own();
  const auto error_fields = [&] {
    v("error_kind", o.error_kind);
    v("error", o.error);
  };
  if (error == ErrorFields::detail) {
    v.details(error_fields);
  } else {
    error_fields();
  }
}

template <class V, class S>
std::enable_if_t<is<S, SmokeOutcome>> fields(V& v, S& o) {
  outcome_fields(v, o, [&] {
    v("rel_error", o.rel_error);
    v.when(o.ran, "tolerance", o.tolerance);
    v("ms", o.ms);
    v.group(o.ran, "size", [&](auto& g) {
      g("m", o.m);
      g("n", o.n);
      g("k", o.k);
    });
    v("method", o.method);
  });
}

// A training run's own fields.
template <class V, class S>
void amp_fields(V& v, S& a) {
  v.when(a.ran, "steps", a.steps);
  v("loss_start", a.loss_start);
  v("loss_end", a.loss_end);
  v("fp32_loss_end", a.fp32_loss_end);
  v("loss_rel_diff", a.loss_rel_diff);
  v.when(a.ran, "loss_tolerance", a.loss_tolerance);
  v("params_changed", a.params_changed);
  v.group(a.ran, "dtypes", [&](auto& g) {
    g("matmul", a.matmul_dtype);
    g("layer_norm", a.layer_norm_dtype);
    g("softmax", a.softmax_dtype);
    g("loss", a.loss_dtype);
  });
  v.group(a.initial_scale.has_value(), "loss_scaling", [&](auto& g) {
    g("initial_scale", a.initial_scale);
    g("final_scale", a.final_scale);
    g("skipped_steps", a.skipped_steps);
    g("injected_overflow_step", a.injected_overflow_step);
    g("overflow_handled", a.overflow_handled);
  });
  v.group(a.peak_bytes.has_value(), "memory", [&](auto& g) {
    g("peak_bytes", a.peak_bytes);
    g("fp32_peak_bytes", a.fp32_peak_bytes);
    std::optional<double> ratio;
    if (a.peak_bytes && a.fp32_peak_bytes && *a.fp32_peak_bytes > 0) {
      ratio = static_cast<double>(*a.peak_bytes) / static_cast<double>(*a.fp32_peak_bytes);
    }
    g.derived("ratio_to_fp32", ratio);
  });
  v("ms", a.ms);
  v("method", a.method);
}

template <class V, class S>
std::enable_if_t<is<S, AmpOutcome>> fields(V& v, S& a) {
  outcome_fields(v, a, [&] { amp_fields(v, a); });
}

template <class V, class S>
std::enable_if_t<is<S, BenchOutcome>> fields(V& v, S& o) {
  outcome_fields(
      v, o,
      [&] {
        v("tflops", o.tflops);
        v("sustained_tflops", o.sustained_tflops);
        v.details([&] {
          v("size", o.size);
          v("ms", o.ms);
          v("sustained_ms", o.sustained_ms);
          v("reps", o.reps);
          v("timer", o.timer);
          v("note", o.note);
        });
      },
      ErrorFields::detail);
}

template <class V, class S>
std::enable_if_t<is<S, SoakMismatch>> fields(V& v, S& m) {
  v("iteration", m.iteration);
  v("seconds", m.seconds);
  v("elements", m.elements);
  v("max_abs_error", m.max_abs_error);
  v("boot_s", m.boot_s);
  v("temperature_c", m.temperature_c);
}

template <class V, class S>
std::enable_if_t<is<S, SoakTelemetry>> fields(V& v, S& t) {
  v("samples", t.samples);
  v("max_temperature_c", t.max_temperature_c);
  v("min_sm_mhz", t.min_sm_mhz);
  v("max_sm_mhz", t.max_sm_mhz);
  v("max_power_w", t.max_power_w);
  v("clock_events", t.clock_events);
  v("ecc_corrected_delta", t.ecc_corrected_delta);
  v("ecc_uncorrected_delta", t.ecc_uncorrected_delta);
  v("remapped_rows_delta", t.remapped_rows_delta);
  v("retired_pages_delta", t.retired_pages_delta);
  v("remap_failure", t.remap_failure);
  v("xids", t.xids);
  v("note", t.note);
}

template <class V, class S>
std::enable_if_t<is<S, SoakOutcome>> fields(V& v, S& o) {
  outcome_fields(
      v, o,
      [&] {
        v.details([&] {
          v("size", o.size);
          v("iterations", o.iterations);
        });
        v("mismatches", o.mismatches);
        v.details([&] {
          v("full_compares", o.full_compares);
          v("first_mismatch", o.first_mismatch);
          v("golden_checksum", o.golden_checksum);
          v("seconds", o.seconds);
        });
        v("tflops", o.tflops);
        v.details([&] { v("injected", o.injected); });
      },
      ErrorFields::detail);
}

template <class V, class S>
std::enable_if_t<is<S, SoakReport>> fields(V& v, S& s) {
  v("seconds", s.seconds);
  v("injected", s.injected);
  v("injection_note", s.injection_note);
  v.by_mode("modes", s.modes);
  v("golden_disagreement", s.golden_disagreement);
  v("straggler", s.straggler);
  v.details([&] { v.omit_unless(s.telemetry.has_value(), "telemetry", s.telemetry); });
}

template <class V, class S>
std::enable_if_t<is<S, BenchResult>> fields(V& v, S& b) {
  v.inline_fields(b.outcome);
  v.details([&] {
    v("ratio_to_fp32", b.ratio_to_fp32);
    v("peak_tflops", b.peak_tflops);
    v("peak_source", b.peak_source);
    v("percent_of_peak", b.percent_of_peak);
  });
}

template <class V, class S>
std::enable_if_t<is<S, CollectiveOutcome>> fields(V& v, S& a) {
  v("op", a.op);
  v("dtype", a.dtype);
  outcome_fields(v, a, [&] {
    v("ranks", a.ranks);
    v("bytes", a.bytes);
    v("time_ms", a.time_ms);
    v("algbw_gbps", a.algbw_gbps);
    v("busbw_gbps", a.busbw_gbps);
  });
}

// A version that may be absent, as "" where it is (a stack's CUDA, the tool's LibTorch range).
inline json version_json(const std::optional<Version>& version) {
  return version_or_empty(version);
}
inline constexpr auto version_from = [](const auto& j, std::optional<Version>& version) {
  if (!j.is_string()) return false;
  version = j.string_view().empty() ? std::nullopt : Version::parse(j.string_view());
  return version.has_value() || j.string_view().empty();
};

template <class V, class S>
std::enable_if_t<is<S, StackInfo>> fields(V& v, S& s) {
  v("available", s.available);
  v("source", s.source);
  v("libtorch_version", s.libtorch_version);
  v("cuda_built", s.cuda_built);
  v.mapped("cuda_version", s.cuda_version, version_json, version_from);
  v("cudnn_version", s.cudnn_version);
  v("arch_list", s.arch_list);
  v("cpu_threads", s.cpu_threads);
  v("error", s.error);
  v("location", s.location);
  v("found_by", s.found_by);
  v("rocm_version", s.rocm_version);
  v("nccl_version", s.nccl_version);
  v("arch_extras", s.arch_extras);
  v("arch_note", s.arch_note);
  v("read_ms", s.read_ms);
  v("refused", s.refused);
  v("read_failure", s.read_failure);
  v("library", s.library);
  v("abi_version", s.abi_version);
  v("release_note", s.release_note);
  v("load_error", s.load_error);
}

// The verdict part of a precision (matmul or training).
template <class V, class S>
void verdict_fields(V& v, S& p) {
  v("hardware", p.hardware);
  v("hardware_reason", p.hardware_reason);
  v("status", p.status);
  v("reason", p.reason);
  v.when(p.failure != ErrorKind::none, "failure", p.failure);
}

// A matmul precision: its verdict and its smoke test.
struct MatmulEntry {
  PrecisionResult& p;
};
struct MatmulEntryConst {
  const PrecisionResult& p;
};
template <class V>
void fields(V& v, const MatmulEntryConst& e) {
  verdict_fields(v, e.p);
  v.details([&] { v("smoke", e.p.smoke); });
}
template <class V>
void fields(V& v, MatmulEntry& e) {
  verdict_fields(v, e.p);
  v.details([&] { v("smoke", e.p.smoke); });
}

// A training precision: its verdict and its run, in one object.
struct TrainingEntry {
  PrecisionResult& p;
};
struct TrainingEntryConst {
  const PrecisionResult& p;
};
template <class V>
void fields(V& v, const TrainingEntryConst& e) {
  verdict_fields(v, e.p);
  v.details([&] { v.inline_fields(e.p.amp.value_or(AmpOutcome{})); });
}
template <class V>
void fields(V& v, TrainingEntry& e) {
  verdict_fields(v, e.p);
  v.details([&] {
    if (!e.p.amp) e.p.amp = AmpOutcome{};
    v.inline_fields(*e.p.amp);
  });
}

template <class V, class S>
std::enable_if_t<is<S, GpuProcess>> fields(V& v, S& p) {
  v("pid", p.pid);
  v("used_bytes", p.used_bytes);
  v("name", p.name);
}

inline json compute_mode_json(const std::optional<int>& mode) {
  return mode ? json(compute_mode_name(*mode)) : json(nullptr);
}
inline constexpr auto compute_mode_from = [](const auto& j, std::optional<int>& mode) {
  if (!j.is_string()) return false;
  mode = parse_compute_mode(j.string_view());
  return mode.has_value();
};

template <class V, class S>
std::enable_if_t<is<S, GpuInfo>> fields(V& v, S& g) {
  v("uuid", g.uuid);
  v("pci_bus_id", g.pci_bus_id);
  v("compute_capability", g.cc);
  v.derived("architecture", g.cc ? std::optional<std::string>(architecture_name(*g.cc))
                                 : std::optional<std::string>());
  v("sm_count", g.sm_count);
  v("memory_total_bytes", g.memory_total);
  v("memory_free_bytes", g.memory_free);
  v("memory_used_bytes", g.memory_used);
  v("mig_enabled", g.mig_enabled);
  v("mig_instance", g.mig_instance);
  v.mapped("compute_mode", g.compute_mode, compute_mode_json, compute_mode_from);
  v("max_clock_ghz", g.clock_ghz);
  v("processes", g.processes);
  v("source", g.source);
}

template <class V, class S>
std::enable_if_t<is<S, CpuInfo>> fields(V& v, S& c) {
  v("model", c.model);
  v("architecture", c.architecture);
  v("logical_cores", c.logical_cores);
  v("physical_cores", c.physical_cores);
  v("mhz", c.mhz);
  v("isa_features", c.features);
}

template <class V, class S>
std::enable_if_t<is<S, KernelCoverage>> fields(V& v, S& k) {
  v("covered", k.covered);
  v("via", k.via);
  v("ptx", k.ptx);
  v("reason", k.reason);
}

template <class V, class S>
std::enable_if_t<is<S, Recommendation>> fields(V& v, S& r) {
  v("dtype", r.dtype);
  v("loss_scaling", r.loss_scaling);
  v("reason", r.reason);
}

template <class V, class S>
std::enable_if_t<is<S, EngineRerun>> fields(V& v, S& e) {
  v("why", e.why);
  v("signal", e.signal);
  v("hung_device", e.hung_device);
  v("oom_killer", e.oom_killer);
}

template <class V, class S>
std::enable_if_t<is<S, DeviceReport>> fields(V& v, S& d) {
  v.when(d.index >= 0, "index", d.index);
  v("kind", d.kind);
  v("name", d.name);
  v("selected", d.selected);
  v.modes("precisions", d.precisions, ModeKind::matmul);
  v.modes("amp", d.precisions, ModeKind::training);
  v.details([&] { v("recommendation", d.recommendation); });
  v.benches("bench", d.precisions);
  v.omit_unless(d.soak.has_value(), "soak", d.soak);
  v.omit_unless(d.engine_rerun.has_value(), "engine_rerun", d.engine_rerun);
  v.omit_unless(d.gpu.has_value(), "gpu", d.gpu);
  v.omit_unless(d.cpu.has_value(), "cpu", d.cpu);
  // A GPU's says null when unknown; a CPU has none.
  v.omit_unless(d.kind == DeviceKind::cuda || d.kernels.has_value(), "kernels", d.kernels);
}

template <class V, class S>
std::enable_if_t<is<S, Diagnostic>> fields(V& v, S& d) {
  v("code", d.code);
  v("severity", d.severity);
  v("message", d.message);
  v("hint", d.hint);
}

// A requirement's device: "none" when nothing was selected.
inline json device_json(const std::string& device) { return device.empty() ? "none" : device; }
inline constexpr auto device_from = [](const auto& j, std::string& device) {
  if (!j.is_string()) return false;
  device = j.string_view() == "none" ? "" : std::string(j.string_view());
  return true;
};

template <class V, class S>
std::enable_if_t<is<S, RequirementResult>> fields(V& v, S& q) {
  v("mode", q.mode);
  v.mapped("device", q.device, device_json, device_from);
  v("met", q.met);
  v("status", q.status);
  v("reason", q.reason);
  v("failure", q.failure);
}

template <class V, class S>
std::enable_if_t<is<S, PeerLink>> fields(V& v, S& p) {
  v("from", p.from);
  v("to", p.to);
  v("access", p.access);
  v("performance_rank", p.performance_rank);
  v("native_atomics", p.native_atomics);
}

template <class V, class S>
std::enable_if_t<is<S, CollectivesReport>> fields(V& v, S& c) {
  v("requested", c.requested);
  v("status", c.status);
  v("reason", c.reason);
  v.when(c.failure != ErrorKind::none, "failure", c.failure);
  v("nccl_version", c.nccl_version);
  v("devices", c.devices);
  v("all_reduce", c.all_reduce);
  v("peer_access", c.peers);
}

template <class V, class S>
std::enable_if_t<is<S, DriverInfo>> fields(V& v, S& d) {
  v("status", d.status);
  v("version", d.version);
  v("cuda_version", d.cuda_version);
  v("message", d.message);
  v("libcuda_path", d.libcuda_path);
  v("nvml", d.nvml_loaded);
  v("cuda_queried", d.cuda_queried);
  v.group(d.cu_init_result.has_value(), "cu_init", [&](auto& g) {
    g("result", d.cu_init_result);
    g("name", d.cu_init_error_name);
  });
}

template <class V, class S>
std::enable_if_t<is<S, RunInfo>> fields(V& v, S& r) {
  v("command", r.command);
  v("quick", r.quick);
  v("bench", r.bench);
  v("soak_s", r.soak_s);
  v("seed", r.seed);
  v("timeout_s", r.timeout_s);
  v("required", r.required);
  v("devices", r.devices);
  v("gpus_selected", r.gpus_selected);
  v("unavailable_selection", r.unavailable_selection);
  v("interrupted", r.interrupted);
}

template <class V, class S>
std::enable_if_t<is<S, ToolInfo>> fields(V& v, S& t) {
  v("name", t.name);
  v("version", t.version);
  v.group(true, "built_with", [&](auto& g) {
    g("libtorch", t.built_with_libtorch);
    g("cuda", t.built_with_cuda);
  });
  v.mapped("libtorch_floor", t.libtorch_floor, version_json, version_from);
  v.mapped("libtorch_tested", t.libtorch_tested, version_json, version_from);
}

template <class V, class S>
std::enable_if_t<is<S, HostInfo>> fields(V& v, S& h) {
  v("hostname", h.hostname);
  v("node_name", h.node_name);
  v("os", h.os);
  v("kernel", h.kernel);
  v("machine", h.machine);
  v("container", h.container);
}

template <class V, class S>
std::enable_if_t<is<S, RunFailure>> fields(V& v, S& f) {
  v("kind", f.kind);
  v("message", f.message);
}

inline json tenth_of_ms(double ms) { return std::round(ms * 10.0) / 10.0; }
inline constexpr auto ms_from = [](const auto& j, double& ms) {
  if (!j.is_number()) return false;
  ms = j.number();
  return true;
};

template <class V, class S>
std::enable_if_t<is<S, Report>> fields(V& v, S& r) {
  v("schema_version", r.schema_version);
  v("report_id", r.report_id);
  v("started_at", r.started_at);
  v("tool", r.tool);
  v("host", r.host);
  v.omit_unless(r.error.has_value(), "error", r.error);
  // A report of bad input or an internal error holds nothing else.
  if (has_findings(r)) {
    v("run", r.run);
    v.details([&] {
      v("stack", r.stack);
      v.omit_unless(r.image_stack.has_value(), "image_stack", r.image_stack);
    });
    v("driver", r.driver);
    v("devices", r.devices);
    v.details([&] { v("diagnostics", r.diagnostics); });
    v("requirements", r.requirements);
    v.details([&] { v.omit_unless(r.collectives.has_value(), "collectives", r.collectives); });
  }
  v("exit_code", r.exit_code);
  v("exit_reason", r.exit_reason);
  v.derived("severity", std::string(overall_severity(r)));
  if (has_findings(r)) v.mapped("duration_ms", r.duration_ms, tenth_of_ms, ms_from);
}

template <class J>
void BasicReader<J>::modes(std::string_view key, PerMode<PrecisionResult>& precisions,
                           ModeKind kind) {
  const auto by_mode = find(key);
  if (!by_mode) return;
  if (!by_mode->is_object()) fail(at(key), "expected an object");
  by_mode->for_each_member([&](std::string_view name, const J& value) {
    const auto mode = mode_named(name, limits_);
    const Path section = at(key);
    const Path path(section, name);
    if (!mode || mode_info(*mode).kind != kind) fail(path, "not a mode of this section");
    PrecisionResult& p = precisions[*mode];
    if (kind == ModeKind::matmul) {
      MatmulEntry entry{p};
      decode(value, entry, path, limits_);
    } else {
      TrainingEntry entry{p};
      decode(value, entry, path, limits_);
    }
  });
}

}  // namespace precision_probe::json_fields
