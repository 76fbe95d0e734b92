#include "wire/protocol.hpp"

#include <algorithm>

#include "wire/worker_checks.hpp"
#include "report/json_fields.hpp"

namespace precision_probe {
namespace json_fields {

// The plan's fields (the protocol's own struct; the outcomes' are the report's).
template <class V, class S>
std::enable_if_t<is<S, WorkerPlan>> fields(V& v, S& p) {
  v("slot", p.slot);
  v("kind", p.kind);
  v("index", p.index);
  v("cuda_visible_devices", p.cuda_visible_devices);
  v("ordinals", p.ordinals);
  v("own_context", p.own_context);
  v("smoke", p.smoke);
  v("amp", p.amp);
  v("seed", p.seed);
  v("bench_size", p.bench_size);
  v("collective_ranks", p.collective_ranks);
  v("soak_seconds", p.soak_seconds);
  v("soak_modes", p.soak_modes);
  v("soak_size", p.soak_size);
  v("soak_seed", p.soak_seed);
  v("inject_mode", p.inject_mode);
  v("inject_iteration", p.inject_iteration);
}

}  // namespace json_fields

namespace {

using json_fields::json;
using json_fields::JsonDocument;
using json_fields::JsonValue;

// A worker's line: small texts (a LibTorch error with its backtrace is cut), short lists.
const json_fields::ReadLimits kLineLimits{std::size_t{16} * 1024, 1024};

// The slots a session's lines may name (a plan's number; far more than a node's devices).
constexpr int kMaxSlot = 1 << 16;

// One line: the type, its slot, then the fields of what it carries. Invalid UTF-8 is replaced.
template <class T>
json line_json(const char* type, int slot, const T& value,
               std::optional<Mode> mode = std::nullopt) {
  json j = {{"type", type}, {"slot", slot}};
  if (mode) j["mode"] = std::string(mode_key(*mode));
  const json fields = json_fields::encode(value);
  for (const auto& [key, field] : fields.items()) j[key] = field;
  return j;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

template <class T>
std::string line(const char* type, int slot, const T& value,
                 std::optional<Mode> mode = std::nullopt) {
  return dump(line_json(type, slot, value, mode));
}

template <class T>
T read(const JsonValue& j, const char* what) {
  for (const char* key : {"ran", "ok"}) {
    if (!j.find(key)) json_fields::fail(what, std::string("no \"") + key + "\"");
  }
  T value{};
  json_fields::decode(j, value, what, kLineLimits);
  return value;
}

Mode read_mode(const JsonValue& j, ModeKind kind) {
  Mode mode = Mode::fp32;
  const auto value = j.find("mode");
  if (!value) json_fields::fail("mode", "missing");
  json_fields::decode(*value, mode, "mode", kLineLimits);
  if (mode_info(mode).kind != kind) json_fields::fail("mode", "not a mode of this check");
  return mode;
}

// Whether a document's "protocol" is this probe's (a number equal to it, as JSON compares).
bool our_protocol(const std::optional<JsonValue>& protocol) {
  return protocol && protocol->is_number() &&
         protocol->number() == static_cast<double>(kProtocolVersion);
}

void read_hello(const JsonValue& j, std::optional<StackInfo>& hello) {
  const auto protocol = j.find("protocol");
  if (!our_protocol(protocol)) {
    json_fields::fail("protocol", "the engine speaks protocol " +
                                      (protocol ? protocol->describe() : std::string("null")) +
                                      ", the probe " + std::to_string(kProtocolVersion) +
                                      " (mismatched installation)");
  }
  StackInfo stack;
  const auto value = j.find("stack");
  if (!value) json_fields::fail("stack", "missing");
  json_fields::decode(*value, stack, "stack", kLineLimits);
  hello = stack;
}

void read_cuda_answer(const JsonValue& j, std::optional<CudaSnapshot>& cuda) {
  const auto value = j.find("snapshot");
  if (!value) json_fields::fail("snapshot", "missing");
  Expected<CudaSnapshot> snapshot = decode_cuda_snapshot(*value);
  if (!snapshot) json_fields::fail("snapshot", snapshot.error());
  cuda = std::move(*snapshot);
}

void read_device(const JsonValue& j, WorkerResult& result) {
  json_fields::Reader r(j, "", kLineLimits);
  r("name", result.device_name);
  r("uuid", result.device_uuid);
}

void read_outcome(const std::string& type, const JsonValue& j, WorkerResult& result) {
  if (type == "smoke") {
    const Mode mode = read_mode(j, ModeKind::matmul);
    auto o = read<SmokeOutcome>(j, "smoke");
    check_smoke(mode, o);
    result.smoke[mode] = o;
  } else if (type == "amp") {
    const Mode mode = read_mode(j, ModeKind::training);
    auto o = read<AmpOutcome>(j, "amp");
    check_amp(mode, o);
    result.amp[mode] = o;
  } else if (type == "bench") {
    const Mode mode = read_mode(j, ModeKind::matmul);
    auto o = read<BenchOutcome>(j, "bench");
    check_bench(o);
    result.bench[mode] = o;
  } else if (type == "soak") {
    const Mode mode = read_mode(j, ModeKind::matmul);
    auto o = read<SoakOutcome>(j, "soak");
    check_soak(o);
    result.soak[mode] = o;
  } else if (type == "collective") {
    auto o = read<CollectiveOutcome>(j, "collective");
    if (o.dtype == DType::none || o.dtype == DType::other || o.dtype == DType::fp64) {
      json_fields::fail("collective.dtype", "not a dtype the all-reduce runs");
    }
    check_collective(o);
    json_fields::Reader(j, "collective", kLineLimits)("nccl_version", result.nccl_version);
    result.collectives.push_back(o);
  } else {
    json_fields::fail("type", "unknown result line type '" + type + "'");
  }
}

}  // namespace

std::string encode_plan(const WorkerPlan& plan) {
  json j = json_fields::encode(plan);
  j["protocol"] = kProtocolVersion;
  return j.dump();
}

Expected<WorkerPlan> decode_plan(std::string_view text) {
  JsonDocument doc;
  if (!doc.parse(text) || !doc.root().is_object()) {
    return Unexpected{"malformed plan: not a JSON object"};
  }
  if (!our_protocol(doc.root().find("protocol"))) {
    return Unexpected{"protocol version mismatch (the engine speaks " +
                      std::to_string(kProtocolVersion) + ")"};
  }
  WorkerPlan plan;
  try {
    json_fields::decode(doc.root(), plan, "plan", kLineLimits);
  } catch (const json_fields::FieldError& e) {
    return Unexpected{std::string("malformed plan: ") + e.what()};
  }
  if (plan.collective_ranks < 0 || plan.collective_ranks > 1024) {
    return Unexpected{"collective_ranks out of range"};
  }
  if (plan.slot < 0 || plan.slot >= kMaxSlot) return Unexpected{"slot out of range"};
  const bool gpu_ordinals = std::all_of(plan.ordinals.begin(), plan.ordinals.end(),
                                        [](int o) { return o >= 0 && o < 1024; });
  const std::size_t want = plan.collective_ranks > 0
                               ? static_cast<std::size_t>(plan.collective_ranks)
                           : plan.kind == DeviceKind::cuda ? 1U
                                                           : 0U;
  if (!gpu_ordinals || plan.ordinals.size() != want) {
    return Unexpected{"ordinals do not name the plan's GPUs"};
  }
  if (plan.bench_size < 0 || plan.bench_size > 65536) return Unexpected{"bench_size out of range"};
  if (!(plan.soak_seconds >= 0.0 && plan.soak_seconds <= 7.0 * 86400.0) || plan.soak_size < 0 ||
      plan.soak_size > 65536 || plan.inject_iteration < 0) {
    return Unexpected{"soak out of range"};
  }
  return plan;
}

std::string encode_stack(const StackInfo& stack) { return json_fields::encode(stack).dump(); }

Expected<StackInfo> decode_stack(std::string_view text) {
  JsonDocument doc;
  if (!doc.parse(text)) return Unexpected{"malformed stack description: not JSON"};
  try {
    StackInfo stack;
    json_fields::decode(doc.root(), stack, "stack", kLineLimits);
    return stack;
  } catch (const json_fields::FieldError& e) {
    return Unexpected{std::string("malformed stack description: ") + e.what()};
  }
}

std::string encode_hello(const StackInfo& stack) {
  return json{
      {"type", "hello"}, {"protocol", kProtocolVersion}, {"stack", json_fields::encode(stack)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_cuda_answer(const CudaSnapshot& snapshot) {
  // The snapshot's own JSON (as the driver's agent prints it), inside the line.
  return R"({"type":"cuda","snapshot":)" + encode_cuda_snapshot(snapshot) + "}";
}

std::string encode_device(int slot, const std::string& name, const std::string& uuid) {
  return dump(json{{"type", "device"}, {"slot", slot}, {"name", name}, {"uuid", uuid}});
}

std::string encode_smoke(int slot, Mode mode, const SmokeOutcome& o) {
  return line("smoke", slot, o, mode);
}
std::string encode_amp(int slot, Mode mode, const AmpOutcome& o) {
  return line("amp", slot, o, mode);
}
std::string encode_bench(int slot, Mode mode, const BenchOutcome& o) {
  return line("bench", slot, o, mode);
}
std::string encode_soak(int slot, Mode mode, const SoakOutcome& o) {
  return line("soak", slot, o, mode);
}

std::string encode_collective(int slot, const CollectiveOutcome& o,
                              const std::string& nccl_version) {
  json j = line_json("collective", slot, o);
  j["nccl_version"] = nccl_version;
  return dump(j);
}

std::string encode_done(int slot) { return dump(json{{"type", "done"}, {"slot", slot}}); }

std::string encode_progress(int slot, std::string_view what) {
  return dump(json{{"type", "progress"}, {"slot", slot}, {"what", std::string(what)}});
}

namespace {

// The slot a plan's line names.
int read_slot(const JsonValue& j) {
  const auto value = j.find("slot");
  if (!value || !value->is_number_integer()) json_fields::fail("slot", "missing");
  const std::int64_t slot = value->int64();
  if (slot < 0 || slot >= kMaxSlot) json_fields::fail("slot", "out of range");
  return static_cast<int>(slot);
}

// A plan's line: its slot's result takes what it carries.
LineNote apply_plan_line(const std::string& type, const JsonValue& j,
                         const std::function<WorkerResult*(int)>& result_of) {
  LineNote note;
  note.slot = read_slot(j);
  WorkerResult* result = result_of(*note.slot);
  if (result == nullptr) json_fields::fail("slot", std::to_string(*note.slot) + " is no plan's");
  if (type == "device") {
    read_device(j, *result);
  } else if (type == "progress") {
    // The line itself tells the probe's watchdog the plan is alive; its "what" must be a text.
    std::string what;
    json_fields::Reader(j, "", kLineLimits)("what", what);
  } else if (type == "done") {
    result->finished = true;
    note.done = true;
  } else {
    read_outcome(type, j, *result);
  }
  return note;
}

}  // namespace

Expected<LineNote> apply_engine_line(std::string_view text,
                                     const std::function<WorkerResult*(int)>& result_of,
                                     SessionFacts& session) {
  JsonDocument doc;
  if (!doc.parse(text) || !doc.root().is_object()) {
    return Unexpected{"malformed result line: not a JSON object"};
  }
  const JsonValue j = doc.root();
  try {
    const auto type_value = j.find("type");
    if (!type_value || !type_value->is_string()) json_fields::fail("type", "missing");
    const std::string type(type_value->string_view());
    if (type == "hello") {
      read_hello(j, session.hello);
      return LineNote{};
    }
    if (type == "cuda") {
      read_cuda_answer(j, session.cuda);
      return LineNote{};
    }
    return apply_plan_line(type, j, result_of);
  } catch (const json_fields::FieldError& e) {
    return Unexpected{std::string("malformed result line: ") + e.what()};
  }
}

Expected<void> apply_result_line(std::string_view text, WorkerResult& result) {
  SessionFacts session{result.stack, std::nullopt};
  const Expected<LineNote> note = apply_engine_line(
      text, [&result](int) { return &result; }, session);
  if (!note) return Unexpected{note.error()};
  result.stack = std::move(session.hello);
  return {};
}

}  // namespace precision_probe
