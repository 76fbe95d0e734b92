#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "fakes.hpp"
#include "wire/protocol.hpp"
#include "wire/worker_checks.hpp"

namespace pp = precision_probe;
using pp::Mode;

TEST(Protocol, PlanRoundTrips) {
  pp::WorkerPlan plan;
  plan.kind = pp::DeviceKind::cuda;
  plan.index = 3;
  plan.smoke = {Mode::fp32, Mode::fp8_e5m2};
  plan.seed = 123456789;
  plan.own_context = true;
  plan.cuda_visible_devices = "GPU-8f3a0c1e-1234-5678-9abc-def012345678";
  plan.ordinals = {3};
  plan.slot = 7;
  const pp::Expected<pp::WorkerPlan> decoded = pp::decode_plan(pp::encode_plan(plan));
  ASSERT_TRUE(decoded) << decoded.error();
  const pp::WorkerPlan& back = *decoded;
  EXPECT_EQ(back.kind, pp::DeviceKind::cuda);
  EXPECT_EQ(back.index, 3);
  EXPECT_EQ(back.smoke, plan.smoke);
  EXPECT_EQ(back.cuda_visible_devices, plan.cuda_visible_devices);
  EXPECT_EQ(back.seed, 123456789U);
  EXPECT_TRUE(back.own_context);
  EXPECT_EQ(back.slot, 7);
  EXPECT_EQ(back.ordinals, std::vector<int>{3});
}

// A plan names its GPUs by the session's ordinals: a GPU's plan one, the collective one per rank,
// the CPU's none; and its slot is a plan's number.
TEST(Protocol, APlansOrdinalsNameItsGpus) {
  const auto decoded = [](const std::string& fields) {
    return pp::decode_plan(R"({"protocol":8,)" + fields + "}");
  };
  EXPECT_TRUE(decoded(R"("kind":"cuda","ordinals":[2])"));
  EXPECT_TRUE(decoded(R"("kind":"cpu")"));
  EXPECT_TRUE(decoded(R"("kind":"cuda","collective_ranks":2,"ordinals":[0,3])"));
  for (const char* bad : {R"("kind":"cuda")", R"("kind":"cuda","ordinals":[0,1])",
                          R"("kind":"cpu","ordinals":[0])", R"("kind":"cuda","ordinals":[-1])",
                          R"("kind":"cuda","collective_ranks":2,"ordinals":[0])"}) {
    const auto plan = decoded(bad);
    ASSERT_FALSE(plan) << bad;
    EXPECT_NE(plan.error().find("ordinals"), std::string::npos) << plan.error();
  }
  EXPECT_NE(decoded(R"("kind":"cpu","slot":-1)").error().find("slot"), std::string::npos);
}

// One session's lines: the hello is the session's, every other line names the slot of the plan it
// answers and goes to that plan's result; a slot that is no plan's, or none, breaks the protocol.
TEST(Protocol, ASessionsLinesGoToTheirPlans) {
  pp::WorkerResult a;
  pp::WorkerResult b;
  pp::SessionFacts hello;
  const auto result_of = [&a, &b](int slot) -> pp::WorkerResult* {
    return slot == 4 ? &a : slot == 9 ? &b : nullptr;
  };
  ASSERT_TRUE(pp::apply_engine_line(pp::encode_hello(pp::testing::cuda_stack()), result_of, hello));
  ASSERT_TRUE(hello.hello.has_value());
  const auto smoke = pp::apply_engine_line(
      pp::encode_smoke(9, Mode::bf16, pp::testing::passed(2e-3)), result_of, hello);
  ASSERT_TRUE(smoke) << smoke.error();
  EXPECT_EQ(smoke->slot, 9);
  EXPECT_TRUE(b.smoke.contains(Mode::bf16));
  EXPECT_FALSE(a.smoke.contains(Mode::bf16));
  const auto progress =
      pp::apply_engine_line(pp::encode_progress(4, "bench fp32"), result_of, hello);
  ASSERT_TRUE(progress) << progress.error();
  EXPECT_EQ(progress->slot, 4);
  EXPECT_FALSE(progress->done || a.finished);
  const auto done = pp::apply_engine_line(pp::encode_done(4), result_of, hello);
  ASSERT_TRUE(done);
  EXPECT_TRUE(done->done && a.finished && !b.finished);
  for (const std::string& bad : {pp::encode_done(5), std::string(R"({"type":"done"})"),
                                 std::string(R"({"type":"done","slot":"4"})")}) {
    const auto refused = pp::apply_engine_line(bad, result_of, hello);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().find("slot"), std::string::npos) << refused.error();
  }
}

TEST(Protocol, BadPlansAreRefusedWithAReason) {
  const auto refused = [](const char* text) { return pp::decode_plan(text).error(); };
  EXPECT_NE(refused("{").find("malformed"), std::string::npos);
  EXPECT_NE(refused(R"({"protocol":99,"kind":"cpu"})").find("protocol"), std::string::npos);
  EXPECT_NE(refused(R"({"protocol":8,"kind":"tpu"})").find("plan.kind: unknown value 'tpu'"),
            std::string::npos);
  EXPECT_NE(refused(R"({"protocol":8,"kind":"cpu","smoke":["fp7"]})").find("plan.smoke[0]"),
            std::string::npos);
  EXPECT_NE(refused(R"({"protocol":8,"kind":"cpu","seed":1e30})").find("plan.seed"),
            std::string::npos);
  EXPECT_NE(refused(R"({"protocol":8,"kind":"cpu","bench_size":-4})").find("bench_size"),
            std::string::npos);
  EXPECT_NE(refused(R"({"protocol":8,"kind":"cpu","soak_seconds":-1})").find("soak"),
            std::string::npos);
  EXPECT_NE(refused(R"({"protocol":8,"kind":"cpu","inject_iteration":-2})").find("soak"),
            std::string::npos);
}

TEST(Protocol, ResultLinesRebuildTheWorkerResult) {
  pp::WorkerResult r;
  r.kind = pp::DeviceKind::cuda;
  ASSERT_TRUE(pp::apply_result_line(pp::encode_hello(pp::testing::cuda_stack()), r));
  ASSERT_TRUE(r.stack.has_value());
  EXPECT_EQ(r.stack->arch_list, pp::testing::cuda_stack().arch_list);
  const std::string uuid = "GPU-8f3a0c1e-1234-5678-9abc-def012345678";
  ASSERT_TRUE(pp::apply_result_line(pp::encode_device(0, "NVIDIA H200", uuid), r));
  EXPECT_EQ(r.device_name, "NVIDIA H200");
  EXPECT_EQ(r.device_uuid, uuid);
  ASSERT_TRUE(pp::apply_result_line(pp::encode_smoke(0, Mode::bf16, pp::testing::passed(2e-3)), r));
  ASSERT_TRUE(r.smoke.contains(Mode::bf16));
  EXPECT_TRUE(r.smoke[Mode::bf16].ok);
  EXPECT_DOUBLE_EQ(*r.smoke[Mode::bf16].rel_error, 2e-3);
  for (Mode mode : pp::training_modes()) {
    const auto line = pp::encode_amp(0, mode, pp::testing::passed_amp(mode));
    const auto applied = pp::apply_result_line(line, r);
    ASSERT_TRUE(applied) << applied.error();
    EXPECT_TRUE(r.amp[mode].ok) << pp::mode_key(mode) << ": " << r.amp[mode].error;
  }
  EXPECT_FALSE(r.finished);
  const pp::WorkerResult before = r;
  ASSERT_TRUE(pp::apply_result_line(pp::encode_progress(0, "bench fp16"), r));
  EXPECT_EQ(r.smoke.size(), before.smoke.size());  // a progress line records nothing
  EXPECT_TRUE(r.bench.empty());
  EXPECT_FALSE(r.finished);
  ASSERT_TRUE(pp::apply_result_line(pp::encode_done(0), r));
  EXPECT_TRUE(r.finished);
}

// cuInit's answer (protocol 8) is the session's, as its hello is: no slot, read back as sent; a
// plan's result takes nothing of it. Malformed, it breaks the session as any malformed line does.
TEST(Protocol, CuInitsAnswerIsTheSessionsAndReadBackAsSent) {
  pp::CudaSnapshot sent;
  sent.loaded = true;
  sent.library = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04";
  sent.init_result = 0;
  sent.driver_cuda_version = pp::Version::from_cuda_number(13000);
  for (int i = 0; i < 2; ++i) {
    pp::CudaDevice d;
    d.name = "NVIDIA H200";
    d.uuid = "GPU-8f3a0c1e-1234-5678-9abc-def01234567" + std::to_string(i);
    d.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    d.cc = pp::ComputeCapability{9, 0};
    d.sm_count = 132;
    d.memory_total = 150754820096ULL;
    d.compute_mode = 0;
    d.clock_ghz = 1.98;
    sent.devices.push_back(d);
  }
  sent.peers = {{0, 1, true, 0, true}, {1, 0, true, 0, true}};
  const std::string line = pp::encode_cuda_answer(sent);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  pp::SessionFacts said;
  const auto note = pp::apply_engine_line(
      line, [](int) -> pp::WorkerResult* { return nullptr; }, said);
  ASSERT_TRUE(note) << note.error();
  EXPECT_FALSE(note->slot.has_value());
  ASSERT_TRUE(said.cuda.has_value());
  EXPECT_EQ(pp::encode_cuda_snapshot(*said.cuda), pp::encode_cuda_snapshot(sent));
  EXPECT_EQ(said.cuda->devices.at(1).uuid, sent.devices.at(1).uuid);
  pp::WorkerResult r;
  ASSERT_TRUE(pp::apply_result_line(line, r));  // a session of one plan: nowhere to go
  EXPECT_FALSE(r.stack.has_value());
  for (const char* bad : {R"({"type":"cuda"})", R"({"type":"cuda","snapshot":{"loaded":true}})",
                          R"({"type":"cuda","snapshot":{"loaded":true,"devices":[{"name":7}]}})",
                          R"({"type":"cuda","snapshot":{"loaded":"yes","devices":[]}})"}) {
    pp::SessionFacts broken;
    const auto refused = pp::apply_engine_line(
        bad, [](int) -> pp::WorkerResult* { return nullptr; }, broken);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().find("snapshot"), std::string::npos) << refused.error();
    EXPECT_FALSE(broken.cuda.has_value()) << bad;
  }
}

TEST(Protocol, NaNTravelsAsNullAndIsNeverOk) {
  pp::SmokeOutcome nan = pp::testing::passed(std::numeric_limits<double>::quiet_NaN());
  const std::string line = pp::encode_smoke(0, Mode::fp16, nan);
  EXPECT_NE(line.find("\"rel_error\":null"), std::string::npos);
  pp::WorkerResult r;
  ASSERT_TRUE(pp::apply_result_line(line, r));
  EXPECT_FALSE(r.smoke[Mode::fp16].ok);  // "ok" without a finite error is not believed
  EXPECT_EQ(r.smoke[Mode::fp16].error_kind, pp::ErrorKind::wrong_result);
}

TEST(Protocol, MalformedLinesAreRejectedWithWhere) {
  const auto refused = [](const std::string& line) {
    pp::WorkerResult r;
    const auto applied = pp::apply_result_line(line, r);
    EXPECT_FALSE(applied) << line;
    return applied ? std::string() : applied.error();
  };
  EXPECT_NE(refused("not json").find("malformed"), std::string::npos);
  EXPECT_NE(refused(R"({"slot":0,"type":"smoke","mode":"fp7","ran":true,"ok":true})").find("mode"),
            std::string::npos);
  EXPECT_NE(refused(R"({"slot":0,"type":"what"})").find("'what'"), std::string::npos);
  EXPECT_NE(refused(R"({"type":"hello","protocol":1,"stack":{}})").find("protocol 1"),
            std::string::npos);
  EXPECT_NE(refused(R"({"slot":0,"type":"smoke","mode":"fp16"})").find("no \"ran\""),
            std::string::npos);
  // A training mode in a smoke line, a matmul mode in a training line.
  refused(R"({"slot":0,"type":"smoke","mode":"amp_bf16","ran":false,"ok":false})");
  refused(R"({"slot":0,"type":"amp","mode":"bf16","ran":false,"ok":false})");
  // Values of the wrong type, and integers no field holds (1e20 is no int64), are refused, not
  // converted.
  EXPECT_NE(refused(R"({"slot":0,"type":"smoke","mode":"fp16","ran":"yes","ok":false})")
                .find("smoke.ran"),
            std::string::npos);
  EXPECT_NE(
      refused(R"({"slot":0,"type":"smoke","mode":"fp16","ran":true,"ok":false,"size":{"m":1e20}})")
          .find("smoke.size.m: expected an integer"),
      std::string::npos);
  EXPECT_NE(refused(R"({"slot":0,"type":"amp","mode":"amp_bf16","ran":true,"ok":false,)"
                    R"("memory":{"peak_bytes":18446744073709551615}})")
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(refused(R"({"slot":0,"type":"collective","dtype":"fp64","ran":false,"ok":false})")
                .find("collective.dtype"),
            std::string::npos);
}

TEST(Protocol, AWorkersLongTextIsCut) {
  pp::SmokeOutcome o;
  o.error = std::string(900 * 1024, 'x');
  o.error_kind = pp::ErrorKind::runtime;
  pp::WorkerResult r;
  ASSERT_TRUE(pp::apply_result_line(pp::encode_smoke(0, Mode::fp16, o), r));
  const std::string& error = r.smoke[Mode::fp16].error;
  EXPECT_LT(error.size(), 17U * 1024U);
  EXPECT_NE(error.find("bytes cut]"), std::string::npos);
}

TEST(Protocol, ErrorsAreClassified) {
  EXPECT_EQ(pp::classify_error("\"addmm_impl_cpu_\" not implemented for 'Half'"),
            pp::ErrorKind::not_supported);
  EXPECT_EQ(pp::classify_error("torch._scaled_mm is only supported on CUDA devices with compute "
                               "capability >= 9.0 or 8.9"),
            pp::ErrorKind::not_supported);
  EXPECT_EQ(
      pp::classify_error("CUDA error: no kernel image is available for execution on the device"),
      pp::ErrorKind::environment);
  EXPECT_EQ(pp::classify_error("CUDA error: an illegal memory access was encountered"),
            pp::ErrorKind::runtime);
  // The loader's own words: a library that cannot be mapped, a call it cannot bind (the engine
  // binds LibTorch's calls lazily, docs/engine.md): the machine's set-up.
  EXPECT_EQ(pp::classify_error("precision-probe-engine: error while loading shared libraries: "
                               "libc10.so: cannot open shared object file"),
            pp::ErrorKind::unavailable);
  EXPECT_EQ(pp::classify_error("precision-probe-engine: symbol lookup error: /x/libtorch_cpu.so: "
                               "undefined symbol: cublasLtCreate"),
            pp::ErrorKind::unavailable);
}

namespace {

// The outcome a result line leaves, as the probe reads it (from a GPU worker).
pp::WorkerResult applied(const std::string& line) {
  pp::WorkerResult r;
  r.kind = pp::DeviceKind::cuda;
  const auto applied = pp::apply_result_line(line, r);
  EXPECT_TRUE(applied) << applied.error();
  return r;
}

// Every outcome of a worker result: whether all are ok, and their errors.
std::pair<bool, std::string> verdict(const pp::WorkerResult& r) {
  bool ok = true;
  std::string error;
  for (const auto& [m, o] : r.smoke) ok = ok && o.ok, error += o.error;
  for (const auto& [m, o] : r.amp) ok = ok && o.ok, error += o.error;
  for (const auto& [m, o] : r.bench) ok = ok && o.ok, error += o.error;
  for (const auto& o : r.collectives) ok = ok && o.ok, error += o.error;
  return {ok, error};
}

// A training run's line with some fields changed.
std::string amp_line(Mode mode, const std::function<void(pp::AmpOutcome&)>& change) {
  pp::AmpOutcome o = pp::testing::passed_amp(mode);
  change(o);
  return pp::encode_amp(0, mode, o);
}

}  // namespace

TEST(Protocol, TheProbesToleranceNotTheWorkersDecides) {
  // The worker claims a tolerance of 0.5 and calls 0.3 ok; the probe's tolerance for bf16 is 1e-2.
  const auto r = applied(
      R"({"slot":0,"type":"smoke","mode":"bf16","ran":true,"ok":true,"rel_error":0.3,"tolerance":0.5,)"
      R"("ms":0.1,"size":{"m":256,"n":256,"k":256},"method":"at::mm","error_kind":"none"})");
  const pp::SmokeOutcome& o = r.smoke.at(Mode::bf16);
  EXPECT_FALSE(o.ok);
  EXPECT_DOUBLE_EQ(o.tolerance, pp::smoke_tolerance(Mode::bf16));
  EXPECT_NE(o.error.find("relative error 0.3 exceeds the tolerance 0.01"), std::string::npos)
      << o.error;
}

TEST(Protocol, ImpossibleValuesAreFailedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"slot":0,"type":"smoke","mode":"fp32","ran":true,"ok":true,"rel_error":-1e-7,"ms":0.1,)"
       R"("size":{"m":256,"n":256,"k":256},"error_kind":"none"})",
       "rel_error -1e-07"},
      {R"({"slot":0,"type":"smoke","mode":"fp32","ran":true,"ok":true,"rel_error":1e-7,"ms":1e12,)"
       R"("size":{"m":256,"n":256,"k":256},"error_kind":"none"})",
       "ms 1000000000000"},
      {R"({"slot":0,"type":"smoke","mode":"fp32","ran":true,"ok":true,"rel_error":1e-7,"ms":0.1,)"
       R"("size":{"m":0,"n":256,"k":256},"error_kind":"none"})",
       "a matrix size of 0"},
      {R"({"slot":0,"type":"smoke","mode":"fp32","ran":false,"ok":true,"rel_error":1e-7})",
       "ok for a check that did not run"},
      {amp_line(Mode::amp_bf16, [](pp::AmpOutcome& o) { o.loss_rel_diff = 0.001; }),
       "loss_rel_diff 0.001 where the losses give"},
      {amp_line(Mode::amp_bf16, [](pp::AmpOutcome& o) { o.loss_rel_diff = -1; }),
       "loss_rel_diff -1"},
      {amp_line(Mode::amp_fp16, [](pp::AmpOutcome& o) { o.skipped_steps = 31; }),
       "31 skipped steps of 30"},
      {R"({"slot":0,"type":"bench","mode":"bf16","ran":true,"ok":true,"error_kind":"none","size":8192,)"
       R"("reps":20,"ms":1.4,"tflops":7000})",
       "7000 TFLOP/s where its size and time give"},
      {R"({"slot":0,"type":"bench","mode":"bf16","ran":true,"ok":true,"error_kind":"none","size":8192,)"
       R"("reps":20,"ms":1e-9,"tflops":1.1e12})",
       "1100000000000 TFLOP/s"},
      // Figures from a benchmark that did not run are not used (they once flipped a verdict).
      {R"({"slot":0,"type":"bench","mode":"fp32","ran":false,"ok":true,"size":1,"reps":-1,"ms":-5,)"
       R"("tflops":99999})",
       "figures from a benchmark that did not run"},
      {R"({"slot":0,"type":"collective","dtype":"fp32","ran":false,"ok":true,"ranks":2})",
       "ok for a check that did not run"},
      {R"({"slot":0,"type":"collective","dtype":"bf16","ran":true,"ok":true,"error_kind":"none","ranks":4,)"
       R"("bytes":268435456,"time_ms":1.5,"algbw_gbps":178.96,"busbw_gbps":999})",
       "a bus bandwidth"},
      {R"({"slot":0,"type":"collective","dtype":"fp16","ran":true,"ok":true,"error_kind":"none","ranks":0,)"
       R"("bytes":268435456,"time_ms":1.5,"algbw_gbps":178.96,"busbw_gbps":0})",
       "0 ranks"},
  };
  for (const auto& [line, expected] : cases) {
    const auto [ok, error] = verdict(applied(line));
    EXPECT_FALSE(ok) << line;
    EXPECT_NE(error.find("impossible value: " + expected), std::string::npos) << line << "\n"
                                                                              << error;
  }
  // And what is consistent passes.
  const auto good = applied(
      R"({"slot":0,"type":"bench","mode":"bf16","ran":true,"ok":true,"error_kind":"none","size":8192,)"
      R"("reps":20,"ms":1.385,"tflops":793.8})");
  EXPECT_TRUE(good.bench.at(Mode::bf16).ok) << good.bench.at(Mode::bf16).error;
  // One GPU's all-reduce has one rank and no bus traffic (busbw = algbw * 2(n-1)/n).
  const auto one_rank = applied(
      R"({"slot":0,"type":"collective","dtype":"fp16","ran":true,"ok":true,"error_kind":"none","ranks":1,)"
      R"("bytes":268435456,"time_ms":1.5,"algbw_gbps":178.96,"busbw_gbps":0})");
  ASSERT_EQ(one_rank.collectives.size(), 1U);
  EXPECT_TRUE(one_rank.collectives[0].ok) << one_rank.collectives[0].error;
}

// A training run's "ok" is judged again from its figures: a run that did not train fails.
TEST(Protocol, ATrainingRunThatDidNotTrainIsNotBelieved) {
  const std::vector<std::pair<std::function<void(pp::AmpOutcome&)>, std::string>> cases = {
      {[](pp::AmpOutcome& o) { o.params_changed = false; }, "the parameters did not change"},
      {[](pp::AmpOutcome& o) { o.loss_end = 2.4; }, "the loss did not go down"},
      {[](pp::AmpOutcome& o) { o.loss_end.reset(); }, "NaN or Inf, or is missing"},
      {[](pp::AmpOutcome& o) { o.fp32_loss_end = 0.0; }, "not positive"},
      {[](pp::AmpOutcome& o) { o.fp32_loss_end = 0.8; }, "differs from the fp32 run's"},
      {[](pp::AmpOutcome& o) { o.matmul_dtype = pp::DType::fp32; }, "did not do the matmuls in"},
      {[](pp::AmpOutcome& o) { o.loss_dtype = pp::DType::fp16; }, "did not keep the loss in fp32"},
      {[](pp::AmpOutcome& o) { o.softmax_dtype = pp::DType::bf16; },
       "did not keep log-softmax and layer norm in fp32 (bf16, fp32)"},
      {[](pp::AmpOutcome& o) { o.layer_norm_dtype = pp::DType::fp16; },
       "did not keep log-softmax and layer norm in fp32 (fp32, fp16)"},
      {[](pp::AmpOutcome& o) { o.steps = 1; }, "a training run of 1 steps"},
  };
  for (const auto& [change, expected] : cases) {
    for (Mode mode : pp::training_modes()) {
      pp::AmpOutcome o = pp::testing::passed_amp(mode);
      change(o);
      o.loss_rel_diff.reset();  // the worker's own figure, if any, is not what is judged
      const auto r = applied(pp::encode_amp(0, mode, o));
      EXPECT_FALSE(r.amp.at(mode).ok) << expected;
      EXPECT_NE(r.amp.at(mode).error.find(expected), std::string::npos) << r.amp.at(mode).error;
    }
  }
  // A model without layer norm says "none" for it: that is no problem.
  for (Mode mode : pp::training_modes()) {
    pp::AmpOutcome o = pp::testing::passed_amp(mode);
    o.layer_norm_dtype = pp::DType::none;
    const auto r = applied(pp::encode_amp(0, mode, o));
    EXPECT_TRUE(r.amp.at(mode).ok) << r.amp.at(mode).error;
  }
  // Loss scaling that skipped every step, or none (the injected overflow was not caught).
  for (int skipped : {0, 30}) {
    pp::AmpOutcome o = pp::testing::passed_amp(Mode::amp_fp16);
    o.skipped_steps = skipped;
    const auto r = applied(pp::encode_amp(0, Mode::amp_fp16, o));
    EXPECT_FALSE(r.amp.at(Mode::amp_fp16).ok);
    EXPECT_NE(r.amp.at(Mode::amp_fp16).error.find("the loss scaler skipped"), std::string::npos);
  }
  // The distance to the fp32 run in the result is the probe's.
  const auto r =
      applied(amp_line(Mode::amp_bf16, [](pp::AmpOutcome& o) { o.loss_rel_diff.reset(); }));
  ASSERT_TRUE(r.amp.at(Mode::amp_bf16).loss_rel_diff.has_value());
  EXPECT_TRUE(r.amp.at(Mode::amp_bf16).ok) << r.amp.at(Mode::amp_bf16).error;
}

TEST(Protocol, ACollectiveWorkerOwesEveryAllReduce) {
  std::vector<pp::CollectiveOutcome> outcomes;
  for (pp::DType dtype : pp::kAllReduceDTypes) {
    pp::CollectiveOutcome o;
    o.dtype = dtype;
    o.ranks = 2;
    outcomes.push_back(o);
  }
  EXPECT_EQ(pp::collectives_problem(outcomes, 2), "");
  EXPECT_NE(pp::collectives_problem(outcomes, 4).find("over 2 GPUs, not 4"), std::string::npos);
  EXPECT_NE(pp::collectives_problem({}, 2).find("0 fp32 all-reduce results"), std::string::npos);
  auto twice = outcomes;
  twice.push_back(outcomes[0]);
  EXPECT_NE(pp::collectives_problem(twice, 2).find("2 fp32"), std::string::npos);
}
