// Prints the engine's two tables for tests/engine/release-check.sh: the C functions it looks up
// ("function NAME MAJOR.MINOR floor|optional cpu|cuda") and the operators it calls by name
// ("operator SCHEMA" with the release that can pass its arguments).

#include <cstdio>

#include "engine/torch/c_api.hpp"
#include "engine/torch/ops.hpp"

namespace eng = precision_probe::engine;

int main() {
  for (const eng::torch_c::FunctionInfo& f : eng::torch_c::kFunctions) {
    std::printf("function %s %d.%d %s %s\n", f.name, f.major, f.minor,
                f.need == eng::torch_c::Need::floor ? "floor" : "optional",
                f.cuda_only ? "cuda" : "cpu");
  }
  for (const eng::OpInfo& op : eng::kOps) {
    std::printf("operator %d.%d %s\n", op.since.major, op.since.minor, op.schema);
  }
  return 0;
}
