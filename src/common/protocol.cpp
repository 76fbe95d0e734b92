#include "common/protocol.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace precision_probe {

using nlohmann::json;

std::string_view to_string(DeviceKind kind) { return kind == DeviceKind::cuda ? "cuda" : "cpu"; }

namespace {

json optional_number(const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return nullptr;
  return *value;
}

std::optional<double> read_optional_number(const json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  return j.at(key).get<double>();
}

json stack_to_json(const StackInfo& s) {
  return json{{"available", s.available},
              {"source", s.source},
              {"libtorch_version", s.libtorch_version},
              {"cuda_built", s.cuda_built},
              {"cuda_version", s.cuda_version},
              {"cudnn_version", s.cudnn_version},
              {"arch_list", s.arch_list},
              {"cpu_threads", s.cpu_threads},
              {"error", s.error}};
}

StackInfo stack_from_json(const json& j) {
  StackInfo s;
  s.available = j.value("available", false);
  s.source = j.value("source", "");
  s.libtorch_version = j.value("libtorch_version", "");
  s.cuda_built = j.value("cuda_built", false);
  s.cuda_version = j.value("cuda_version", "");
  s.cudnn_version = j.value("cudnn_version", "");
  s.arch_list = j.value("arch_list", std::vector<std::string>{});
  s.cpu_threads = j.value("cpu_threads", 0);
  s.error = j.value("error", "");
  return s;
}

json mode_list(const std::vector<Mode>& modes) {
  json list = json::array();
  for (Mode m : modes) list.push_back(std::string(mode_key(m)));
  return list;
}

bool read_mode_list(const json& j, const char* key, std::vector<Mode>& out, std::string& error) {
  out.clear();
  for (const auto& name : j.value(key, std::vector<std::string>{})) {
    const auto mode = parse_mode(name);
    if (!mode) {
      error = "unknown mode '" + name + "'";
      return false;
    }
    out.push_back(*mode);
  }
  return true;
}

template <typename T>
json optional_json(const std::optional<T>& value) {
  if (!value) return nullptr;
  return *value;
}

template <typename T>
std::optional<T> read_optional(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

}  // namespace

std::string encode_plan(const WorkerPlan& plan) {
  return json{{"protocol", kProtocolVersion},
              {"kind", std::string(to_string(plan.kind))},
              {"index", plan.index},
              {"cuda_visible_devices", plan.cuda_visible_devices},
              {"smoke", mode_list(plan.smoke)},
              {"amp", mode_list(plan.amp)},
              {"seed", plan.seed},
              {"describe", plan.describe},
              {"bench_size", plan.bench_size},
              {"collective_ranks", plan.collective_ranks}}
      .dump();
}

bool decode_plan(std::string_view text, WorkerPlan& plan, std::string& error) {
  try {
    const json j = json::parse(text);
    if (j.value("protocol", 0) != kProtocolVersion) {
      error =
          "protocol version mismatch (the engine speaks " + std::to_string(kProtocolVersion) + ")";
      return false;
    }
    const std::string kind = j.at("kind").get<std::string>();
    if (kind != "cpu" && kind != "cuda") {
      error = "unknown device kind '" + kind + "'";
      return false;
    }
    plan.kind = kind == "cuda" ? DeviceKind::cuda : DeviceKind::cpu;
    plan.index = j.value("index", -1);
    plan.cuda_visible_devices = j.value("cuda_visible_devices", std::string());
    plan.seed = j.value("seed", std::uint64_t{0});
    plan.describe = j.value("describe", false);
    plan.bench_size = j.value("bench_size", std::int64_t{0});
    plan.collective_ranks = j.value("collective_ranks", 0);
    if (plan.collective_ranks < 0 || plan.collective_ranks > 1024) {
      error = "collective_ranks out of range";
      return false;
    }
    if (plan.bench_size < 0 || plan.bench_size > 65536) {
      error = "bench_size out of range";
      return false;
    }
    return read_mode_list(j, "smoke", plan.smoke, error) &&
           read_mode_list(j, "amp", plan.amp, error);
  } catch (const json::exception& e) {
    error = std::string("malformed plan: ") + e.what();
    return false;
  }
}

std::string encode_stack(const StackInfo& stack) { return stack_to_json(stack).dump(); }

bool decode_stack(std::string_view text, StackInfo& stack, std::string& error) {
  try {
    stack = stack_from_json(json::parse(text));
    return true;
  } catch (const json::exception& e) {
    error = std::string("malformed stack description: ") + e.what();
    return false;
  }
}

std::string encode_hello(const StackInfo& stack) {
  return json{{"type", "hello"}, {"protocol", kProtocolVersion}, {"stack", stack_to_json(stack)}}
      .dump();
}

std::string encode_device(const std::string& name, const std::string& uuid) {
  return json{{"type", "device"}, {"name", name}, {"uuid", uuid}}.dump();
}

std::string encode_smoke(Mode mode, const SmokeOutcome& o) {
  return json{{"type", "smoke"},
              {"mode", std::string(mode_key(mode))},
              {"ran", o.ran},
              {"ok", o.ok},
              {"rel_error", optional_number(o.rel_error)},
              {"tolerance", o.tolerance},
              {"ms", optional_number(o.ms)},
              {"m", o.m},
              {"n", o.n},
              {"k", o.k},
              {"method", o.method},
              {"error_kind", std::string(to_string(o.error_kind))},
              {"error", o.error}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_amp(Mode mode, const AmpOutcome& o) {
  return json{{"type", "amp"},
              {"mode", std::string(mode_key(mode))},
              {"ran", o.ran},
              {"ok", o.ok},
              {"error_kind", std::string(to_string(o.error_kind))},
              {"error", o.error},
              {"ms", optional_number(o.ms)},
              {"steps", o.steps},
              {"loss_start", optional_number(o.loss_start)},
              {"loss_end", optional_number(o.loss_end)},
              {"fp32_loss_end", optional_number(o.fp32_loss_end)},
              {"loss_rel_diff", optional_number(o.loss_rel_diff)},
              {"loss_tolerance", o.loss_tolerance},
              {"params_changed", o.params_changed},
              {"matmul_dtype", o.matmul_dtype},
              {"layer_norm_dtype", o.layer_norm_dtype},
              {"softmax_dtype", o.softmax_dtype},
              {"loss_dtype", o.loss_dtype},
              {"skipped_steps", o.skipped_steps},
              {"initial_scale", optional_number(o.initial_scale)},
              {"final_scale", optional_number(o.final_scale)},
              {"injected_overflow_step", optional_json(o.injected_overflow_step)},
              {"overflow_handled", o.overflow_handled},
              {"peak_bytes", optional_json(o.peak_bytes)},
              {"fp32_peak_bytes", optional_json(o.fp32_peak_bytes)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_bench(Mode mode, const BenchOutcome& o) {
  return json{{"type", "bench"},
              {"mode", std::string(mode_key(mode))},
              {"ran", o.ran},
              {"ok", o.ok},
              {"error_kind", std::string(to_string(o.error_kind))},
              {"error", o.error},
              {"size", o.size},
              {"reps", o.reps},
              {"ms", optional_number(o.ms)},
              {"tflops", optional_number(o.tflops)},
              {"sustained_ms", optional_number(o.sustained_ms)},
              {"sustained_tflops", optional_number(o.sustained_tflops)},
              {"timer", o.timer},
              {"note", o.note}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_collective(const CollectiveOutcome& o, const std::string& nccl_version) {
  return json{{"type", "collective"},
              {"op", o.op},
              {"dtype", o.dtype},
              {"ran", o.ran},
              {"ok", o.ok},
              {"error_kind", std::string(to_string(o.error_kind))},
              {"error", o.error},
              {"ranks", o.ranks},
              {"bytes", o.bytes},
              {"time_ms", optional_number(o.time_ms)},
              {"algbw_gbps", optional_number(o.algbw_gbps)},
              {"busbw_gbps", optional_number(o.busbw_gbps)},
              {"nccl_version", nccl_version}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_done() { return json{{"type", "done"}}.dump(); }

std::string encode_progress(std::string_view what) {
  return json{{"type", "progress"}, {"what", std::string(what)}}.dump();
}

namespace {

// --- What a worker may not be believed on ------------------------------------------------------
// Each returns "" when every value can be, else the first that cannot: the outcome is then failed
// with that reason (the probe checks what it can, it does not take the worker's word).

bool finite_at_least(const std::optional<double>& v, double low) {
  return !v || (std::isfinite(*v) && *v >= low);
}

// Within 1 % of each other (figures a worker derives from others it also sends).
bool agree(double a, double b) {
  return std::abs(a - b) <= 0.01 * std::max(std::abs(a), std::abs(b));
}

constexpr double kLongestCallMs = 1e6;  // 1000 s: no single check takes that long
constexpr double kFastestTflops = 1e5;  // 100 PFLOP/s: no single device reaches that
constexpr std::int64_t kLargestDim = 65536;

std::string impossible_smoke(const SmokeOutcome& o) {
  if (!finite_at_least(o.rel_error, 0.0)) return fmt::format("rel_error {}", *o.rel_error);
  if (!finite_at_least(o.ms, 0.0) || (o.ms && *o.ms > kLongestCallMs))
    return fmt::format("ms {}", *o.ms);
  for (std::int64_t dim : {o.m, o.n, o.k}) {
    if (o.ran && (dim < 1 || dim > kLargestDim)) return fmt::format("a matrix size of {}", dim);
  }
  return "";
}

std::string impossible_amp(const AmpOutcome& o) {
  if (o.ran && (o.steps < 1 || o.steps > 100000)) return fmt::format("{} steps", o.steps);
  if (o.skipped_steps < 0 || o.skipped_steps > std::max(o.steps, 0)) {
    return fmt::format("{} skipped steps of {}", o.skipped_steps, o.steps);
  }
  for (const auto& [name, v] :
       {std::pair{"loss_start", o.loss_start}, std::pair{"loss_end", o.loss_end},
        std::pair{"fp32_loss_end", o.fp32_loss_end}}) {
    if (v && !std::isfinite(*v) && o.ok) return fmt::format("{} {}", name, *v);
  }
  if (!finite_at_least(o.ms, 0.0)) return fmt::format("ms {}", *o.ms);
  for (const auto& v : {o.initial_scale, o.final_scale}) {
    if (v && !(std::isfinite(*v) && *v > 0.0)) return fmt::format("a loss scale of {}", *v);
  }
  for (const auto& v : {o.peak_bytes, o.fp32_peak_bytes}) {
    if (v && *v < 0) return fmt::format("a peak memory of {} bytes", *v);
  }
  // The distance to the fp32 run is the probe's to work out.
  if (o.loss_rel_diff && o.loss_end && o.fp32_loss_end && *o.fp32_loss_end != 0.0 &&
      std::isfinite(*o.loss_end) && std::isfinite(*o.fp32_loss_end)) {
    const double diff = std::abs(*o.loss_end - *o.fp32_loss_end) / std::abs(*o.fp32_loss_end);
    if (!agree(diff, *o.loss_rel_diff) && std::abs(diff - *o.loss_rel_diff) > 1e-12) {
      return fmt::format("loss_rel_diff {} where the losses give {}", *o.loss_rel_diff, diff);
    }
  }
  return "";
}

std::string impossible_bench(const BenchOutcome& o) {
  if (!o.ran) return "";
  if (o.size < 16 || o.size > kLargestDim) return fmt::format("a GEMM size of {}", o.size);
  if (o.reps < 1 || o.reps > 100000) return fmt::format("{} timed calls", o.reps);
  const double flop = 2.0 * std::pow(static_cast<double>(o.size), 3.0);
  for (const auto& [ms, tflops] :
       {std::pair{o.ms, o.tflops}, std::pair{o.sustained_ms, o.sustained_tflops}}) {
    if (!ms && !tflops) continue;
    if (!ms || !tflops || !(std::isfinite(*ms) && *ms > 0.0 && *ms < kLongestCallMs)) {
      return "a time without its throughput, or an impossible time";
    }
    if (!(std::isfinite(*tflops) && *tflops > 0.0 && *tflops < kFastestTflops)) {
      return fmt::format("{} TFLOP/s", *tflops);
    }
    if (!agree(flop / (*ms * 1e-3) / 1e12, *tflops)) {
      return fmt::format("{} TFLOP/s where its size and time give {:.4g}", *tflops,
                         flop / (*ms * 1e-3) / 1e12);
    }
  }
  return "";
}

std::string impossible_collective(const CollectiveOutcome& o) {
  if (!o.ran) return "";
  if (o.ranks < 2 || o.bytes <= 0) return fmt::format("{} ranks, {} bytes", o.ranks, o.bytes);
  if (!o.time_ms || !(std::isfinite(*o.time_ms) && *o.time_ms > 0.0)) return "an impossible time";
  const double algbw = static_cast<double>(o.bytes) / (*o.time_ms * 1e-3) / 1e9;
  if (!o.algbw_gbps || !agree(algbw, *o.algbw_gbps))
    return "an algorithm bandwidth its size and time do not give";
  const double busbw = algbw * 2.0 * (o.ranks - 1) / o.ranks;
  if (!o.busbw_gbps || !agree(busbw, *o.busbw_gbps))
    return "a bus bandwidth its algorithm bandwidth does not give";
  return "";
}

// Fails an outcome with the value that cannot be.
template <typename Outcome>
void disbelieve(Outcome& o, const std::string& what) {
  if (what.empty()) return;
  o.ok = false;
  o.error_kind = ErrorKind::wrong_result;
  o.error = "the engine reported an impossible value: " + what;
}

bool read_amp(const json& j, WorkerResult& result, std::string& error) {
  const auto mode = parse_mode(j.at("mode").get<std::string>());
  if (!mode || !is_amp_mode(*mode)) {
    error = "unknown AMP mode in result line";
    return false;
  }
  AmpOutcome o;
  o.ran = j.at("ran").get<bool>();
  o.ok = j.at("ok").get<bool>();
  const auto kind = parse_error_kind(j.value("error_kind", "none"));
  if (!kind) {
    error = "unknown error kind in result line";
    return false;
  }
  o.error_kind = *kind;
  o.error = j.value("error", "");
  o.ms = read_optional_number(j, "ms");
  o.steps = j.value("steps", 0);
  o.loss_start = read_optional_number(j, "loss_start");
  o.loss_end = read_optional_number(j, "loss_end");
  o.fp32_loss_end = read_optional_number(j, "fp32_loss_end");
  o.loss_rel_diff = read_optional_number(j, "loss_rel_diff");
  o.loss_tolerance = amp_loss_tolerance(*mode);  // the probe's, not the worker's
  o.params_changed = j.value("params_changed", false);
  o.matmul_dtype = j.value("matmul_dtype", "");
  o.layer_norm_dtype = j.value("layer_norm_dtype", "");
  o.softmax_dtype = j.value("softmax_dtype", "");
  o.loss_dtype = j.value("loss_dtype", "");
  o.skipped_steps = j.value("skipped_steps", 0);
  o.initial_scale = read_optional_number(j, "initial_scale");
  o.final_scale = read_optional_number(j, "final_scale");
  o.injected_overflow_step = read_optional<int>(j, "injected_overflow_step");
  o.overflow_handled = j.value("overflow_handled", false);
  o.peak_bytes = read_optional<std::int64_t>(j, "peak_bytes");
  o.fp32_peak_bytes = read_optional<std::int64_t>(j, "fp32_peak_bytes");
  // As for smoke lines: "ok" must come with a finite loss close to the fp32 run's.
  if (o.ok && (!o.loss_rel_diff || *o.loss_rel_diff > o.loss_tolerance)) {
    o.ok = false;
    o.error_kind = ErrorKind::wrong_result;
    o.error = "the engine reported ok without a final loss within tolerance of the fp32 run";
  }
  disbelieve(o, impossible_amp(o));
  result.amp[*mode] = o;
  return true;
}

bool read_collective(const json& j, WorkerResult& result, std::string& error) {
  const auto kind = parse_error_kind(j.value("error_kind", "none"));
  const std::string dtype = j.value("dtype", "");
  if (!kind || (dtype != "fp32" && dtype != "fp16" && dtype != "bf16")) {
    error = "unknown dtype or error kind in collective line";
    return false;
  }
  CollectiveOutcome o;
  o.op = j.value("op", "all_reduce");
  o.dtype = dtype;
  o.ran = j.at("ran").get<bool>();
  o.ok = j.at("ok").get<bool>();
  o.error_kind = *kind;
  o.error = j.value("error", "");
  o.ranks = j.value("ranks", 0);
  o.bytes = j.value("bytes", std::int64_t{0});
  o.time_ms = read_optional_number(j, "time_ms");
  o.algbw_gbps = read_optional_number(j, "algbw_gbps");
  o.busbw_gbps = read_optional_number(j, "busbw_gbps");
  disbelieve(o, impossible_collective(o));
  result.nccl_version = j.value("nccl_version", "");
  result.collectives.push_back(o);
  return true;
}

bool read_bench(const json& j, WorkerResult& result, std::string& error) {
  const auto mode = parse_mode(j.at("mode").get<std::string>());
  const auto kind = parse_error_kind(j.value("error_kind", "none"));
  if (!mode || is_amp_mode(*mode) || !kind) {
    error = "unknown mode or error kind in bench line";
    return false;
  }
  BenchOutcome o;
  o.ran = j.at("ran").get<bool>();
  o.ok = j.at("ok").get<bool>();
  o.error_kind = *kind;
  o.error = j.value("error", "");
  o.size = j.value("size", std::int64_t{0});
  o.reps = j.value("reps", 0);
  o.ms = read_optional_number(j, "ms");
  o.tflops = read_optional_number(j, "tflops");
  o.sustained_ms = read_optional_number(j, "sustained_ms");
  o.sustained_tflops = read_optional_number(j, "sustained_tflops");
  o.timer = j.value("timer", "");
  o.note = j.value("note", "");
  if (o.ok && (!o.tflops || !(*o.tflops > 0.0))) {
    o.ok = false;
    o.error_kind = ErrorKind::wrong_result;
    o.error = "the engine reported a benchmark without a positive throughput";
  }
  disbelieve(o, impossible_bench(o));
  result.bench[*mode] = o;
  return true;
}

}  // namespace

bool apply_result_line(std::string_view line, WorkerResult& result, std::string& error) {
  try {
    const json j = json::parse(line);
    const std::string type = j.at("type").get<std::string>();
    if (type == "hello") {
      if (j.value("protocol", 0) != kProtocolVersion) {
        error = "the engine speaks protocol " + std::to_string(j.value("protocol", 0)) +
                ", the probe " + std::to_string(kProtocolVersion) + " (mismatched installation)";
        return false;
      }
      result.stack = stack_from_json(j.at("stack"));
    } else if (type == "device") {
      result.device_name = j.at("name").get<std::string>();
      result.device_uuid = j.value("uuid", std::string());
    } else if (type == "smoke") {
      const auto mode = parse_mode(j.at("mode").get<std::string>());
      if (!mode) {
        error = "unknown mode in result line";
        return false;
      }
      SmokeOutcome o;
      o.ran = j.at("ran").get<bool>();
      o.ok = j.at("ok").get<bool>();
      o.rel_error = read_optional_number(j, "rel_error");
      o.tolerance = smoke_tolerance(*mode);  // the probe's, not the worker's
      o.ms = read_optional_number(j, "ms");
      o.m = j.value("m", std::int64_t{0});
      o.n = j.value("n", std::int64_t{0});
      o.k = j.value("k", std::int64_t{0});
      o.method = j.value("method", "");
      o.error = j.value("error", "");
      const auto kind = parse_error_kind(j.value("error_kind", "none"));
      if (!kind) {
        error = "unknown error kind in result line";
        return false;
      }
      o.error_kind = *kind;
      // Never trust "ok" on its own: a result without a finite error within tolerance is not ok.
      if (o.ok && (!o.rel_error || *o.rel_error > o.tolerance)) {
        o.ok = false;
        o.error_kind = ErrorKind::wrong_result;
        o.error = o.rel_error ? fmt::format(
                                    "wrong result: relative error {:.3g} exceeds the "
                                    "tolerance {:.3g}",
                                    *o.rel_error, o.tolerance)
                              : "the engine reported ok without a relative error";
      }
      disbelieve(o, impossible_smoke(o));
      result.smoke[*mode] = o;
    } else if (type == "collective") {
      if (!read_collective(j, result, error)) return false;
    } else if (type == "bench") {
      if (!read_bench(j, result, error)) return false;
    } else if (type == "amp") {
      if (!read_amp(j, result, error)) return false;
    } else if (type == "progress") {
      // Nothing to record: the line itself tells the probe's watchdog the worker is alive.
    } else if (type == "done") {
      result.finished = true;
    } else {
      error = "unknown result line type '" + type + "'";
      return false;
    }
    return true;
  } catch (const json::exception& e) {
    error = std::string("malformed result line: ") + e.what();
    return false;
  }
}

}  // namespace precision_probe
