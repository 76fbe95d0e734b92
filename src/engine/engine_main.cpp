// precision-probe-engine: the worker. `--worker` reads a plan (one JSON document) on stdin and
// answers in JSON lines on stdout, one line per finished check, flushed at once, so a worker that
// hangs or dies leaves every finished result behind. `--describe` prints the LibTorch stack.

#include <iostream>
#include <iterator>
#include <string>

#include "engine.hpp"
#include "error_text.hpp"
#include "precision_probe/protocol.hpp"

namespace pp = precision_probe;

namespace {

void emit(const std::string& line) { std::cout << line << '\n' << std::flush; }

int run_worker() {
  const std::string input{std::istreambuf_iterator<char>(std::cin),
                          std::istreambuf_iterator<char>()};
  pp::WorkerPlan plan;
  std::string error;
  if (!pp::decode_plan(input, plan, error)) {
    std::cerr << "precision-probe-engine: error: " << error << '\n';
    return 2;
  }
  emit(pp::encode_hello(pp::engine::describe_stack()));
  pp::engine::Target target;
  if (plan.kind == pp::DeviceKind::cuda) {
    target.cuda = true;
    target.device = at::Device(at::kCUDA, 0);  // the worker sees exactly one GPU
  }
  try {
    if (pp::engine::unusable_reason(target).empty())
      emit(pp::encode_device(pp::engine::device_name(target)));
  } catch (const std::exception& e) {
    std::cerr << "precision-probe-engine: " << pp::engine::error_text(e) << '\n';
  }
  std::uint64_t salt = 0;
  for (pp::Mode mode : plan.smoke) {
    emit(pp::encode_smoke(mode,
                          pp::engine::run_smoke(mode, target, plan.seed * 1000003ULL + ++salt)));
  }
  emit(pp::encode_done());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string verb = argc > 1 ? argv[1] : "";
  try {
    if (verb == "--worker" && argc == 2) return run_worker();
    if (verb == "--describe" && argc == 2) {
      std::cout << pp::encode_stack(pp::engine::describe_stack()) << '\n';
      return 0;
    }
    if (verb == "--version" && argc == 2) {
      std::cout << "precision-probe-engine (LibTorch " << TORCH_VERSION << ")\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "precision-probe-engine: error: " << pp::engine::error_text(e) << '\n';
    return 4;
  }
  std::cerr << "usage: precision-probe-engine --worker | --describe | --version\n"
               "(started by precision-probe; not meant to be run by hand)\n";
  return 2;
}
