#pragma once
// Running the built precision-probe binary from tests.

#include <string>
#include <vector>

#include "probe/platform/process.hpp"

namespace precision_probe::testing {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
  int term_signal = 0;
};

// Runs the binary with `args` and environment overrides ("KEY=VALUE", or "KEY" to unset).
// The engine is the fake one (tests/cli/fake_engine.cpp) unless an override names another,
// and the driver libraries are made unloadable unless an override names them.
Run run_probe_binary(const std::vector<std::string>& args, std::vector<std::string> env = {},
                     int timeout_s = 60);

// The environment overrides that point the binary at the fake NVIDIA driver describing `gpus`
// ("NVIDIA H200:9.0:132:141;Tesla T4:7.5:40:15" = name:cc:SMs:GiB, separated by ';').
std::vector<std::string> fake_driver_env(const std::string& gpus);

// "PRECISION_PROBE_ENGINE=..." naming the fake engine in a directory of its own, next to the
// build-time stack cache it would have when installed: `stack` "cuda" or "cpu" (FAKE_ENGINE_STACK).
std::string fake_engine_with_stack_cache(const std::string& stack);

// The whole content of a file ("" when it cannot be read).
std::string read_all(const std::string& path);

// A fresh empty directory under the system's temp dir.
std::string make_temp_dir();

// Validates a JSON document against docs/report.schema.json with python3-jsonschema.
// Returns "" when valid, else the validator's message. Sets `available` false when no python3
// with jsonschema was found at configure time.
std::string validate_against_schema(const std::string& json_text, bool& available);

// What `promtool check metrics` finds in an exposition ("" when nothing), the label names the
// probe shares with dcgm-exporter (UUID, modelName, Hostname, DCGM_FI_DRIVER_VERSION:
// docs/prometheus.md) first spelled in snake_case: promtool's lint refuses camelCase, which that
// exporter's own output draws too. Sets `available` false when promtool was not found at
// configure time.
std::string promtool_problems(const std::string& exposition, bool& available);

}  // namespace precision_probe::testing
