#pragma once
// The engine's settings for measuring (PRECISION_PROBE_ENGINE_*, docs/engine.md): one table of the
// variables and the values each takes. The engine reads them; the probe refuses a value that is not
// one before a run starts (a usage error), where the engine would read it as a default (PRELOAD as
// overlap) and say nothing.

#include <array>
#include <string>
#include <string_view>

namespace precision_probe {

struct EngineSetting {
  std::string_view variable;
  std::string_view values;  // the values it takes, separated by spaces
};

// Each variable's default comes first where it does not depend on the usable CPUs (PRELOAD,
// CPU_TRAINING and CPU_CHECKS do: docs/engine.md).
inline constexpr std::array kEngineSettings = {
    EngineSetting{"PRECISION_PROBE_ENGINE_START",
                  "init-first driver-first cuinit-beside overlap libtorch-first"},
    EngineSetting{"PRECISION_PROBE_ENGINE_DLOPEN", "lazy now"},
    EngineSetting{"PRECISION_PROBE_ENGINE_PRELOAD", "overlap first none"},
    EngineSetting{"PRECISION_PROBE_ENGINE_CPU_TRAINING", "at-once in-turn"},
    EngineSetting{"PRECISION_PROBE_ENGINE_CPU_CHECKS", "beside after-gpus"},
    EngineSetting{"PRECISION_PROBE_ENGINE_CPUS", "quota mask"},
    EngineSetting{"PRECISION_PROBE_ENGINE_WAIT", "auto spin yield blocking"},
};

// `value` of `setting`: "" where it is one of its values or empty (the engine reads an empty value
// as unset), else the one-line error that says what it takes.
std::string bad_engine_setting(const EngineSetting& setting, std::string_view value);

}  // namespace precision_probe
