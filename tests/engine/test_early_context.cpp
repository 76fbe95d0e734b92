// Whether a worker keeps the CUDA context it began before main(), for the plan it then reads.

#include <gtest/gtest.h>

#include "engine/device/early_context.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;

namespace {

const char* kUuid = "GPU-8f3a0000-1111-2222-3333-444455556666";

eng::EarlyContext made_on(const std::string& uuid) {
  eng::EarlyContext early;
  early.started = true;
  early.cuda_initialised = true;
  early.uuid = uuid;
  return early;
}

pp::WorkerPlan gpu_plan(const std::string& visible) {
  pp::WorkerPlan plan;
  plan.kind = pp::DeviceKind::cuda;
  plan.index = 0;
  plan.cuda_visible_devices = visible;
  return plan;
}

}  // namespace

TEST(EarlyContext, KeptOnlyForAOneGpuPlanNamingItsGpu) {
  EXPECT_TRUE(eng::early_context_fits(made_on(kUuid), gpu_plan(kUuid)));
  // NVML and CUDA may write the hex digits in either case.
  EXPECT_TRUE(eng::early_context_fits(made_on(kUuid),
                                      gpu_plan("GPU-8F3A0000-1111-2222-3333-444455556666")));
  EXPECT_FALSE(eng::early_context_fits(made_on(kUuid),
                                       gpu_plan("GPU-00000000-1111-2222-3333-444455556666")));
  EXPECT_FALSE(eng::early_context_fits(made_on(kUuid), gpu_plan("0")));  // an index: unverifiable
  EXPECT_FALSE(eng::early_context_fits(made_on(kUuid), gpu_plan("")));

  pp::WorkerPlan cpu;  // a CPU worker must see no GPU at all
  EXPECT_FALSE(eng::early_context_fits(made_on(kUuid), cpu));
  pp::WorkerPlan collective = gpu_plan(kUuid);
  collective.collective_ranks = 2;
  EXPECT_FALSE(eng::early_context_fits(made_on(kUuid), collective));

  eng::EarlyContext failed = made_on("");
  failed.error = "cuInit returned 100";
  EXPECT_FALSE(eng::early_context_fits(failed, gpu_plan(kUuid)));
  EXPECT_FALSE(eng::early_context_fits(eng::EarlyContext{}, gpu_plan(kUuid)));
}
