#include "precision_probe/protocol.hpp"

#include <cmath>

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

}  // namespace

std::string encode_plan(const WorkerPlan& plan) {
  json smoke = json::array();
  for (Mode m : plan.smoke) smoke.push_back(std::string(mode_key(m)));
  return json{{"protocol", kProtocolVersion},
              {"kind", std::string(to_string(plan.kind))},
              {"index", plan.index},
              {"smoke", smoke},
              {"seed", plan.seed},
              {"describe", plan.describe}}
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
    plan.seed = j.value("seed", std::uint64_t{0});
    plan.describe = j.value("describe", false);
    plan.smoke.clear();
    for (const auto& key : j.value("smoke", std::vector<std::string>{})) {
      const auto mode = parse_mode(key);
      if (!mode) {
        error = "unknown mode '" + key + "'";
        return false;
      }
      plan.smoke.push_back(*mode);
    }
    return true;
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

std::string encode_device(const std::string& name) {
  return json{{"type", "device"}, {"name", name}}.dump();
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

std::string encode_done() { return json{{"type", "done"}}.dump(); }

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
      o.tolerance = j.value("tolerance", 0.0);
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
        o.error = "the engine reported ok without a relative error within tolerance";
      }
      result.smoke[*mode] = o;
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
