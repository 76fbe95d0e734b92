// What preparing the smoke tests costs on the host, and what the sampled reference saves: for
// every matmul mode of a GPU plan (the GPU's shapes; --cpu for the CPU's), each round times, one
// after the other and in alternating order,
//   inputs    drawing the float64 inputs and quantising them (host_operands), every mode;
//   full      the whole float64 product of every mode (reference_product: the reference before
//             the sample, one thread a mode as the engine ran it);
//   sample    the sampled rows and every element's bound (sample_product: the reference now);
//   engine    the engine's own prepare_smoke for the plan (inputs and sampled reference).
// Before = inputs + full, after = inputs + sample; the change is the median of the per-round
// ratios after / before, both measured in the same round. Run it on one CPU, as a starved machine
// has it: `taskset -c 0 build/bin/pp_bench_references` (docs/performance.md).
//
//   usage: pp_bench_references [--rounds 9] [--threads 1] [--cpu]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "engine/host/host_math.hpp"
#include "engine/checks/checks.hpp"
#include "engine/checks/kernels.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int rounds = 9;
  unsigned threads = 1;
  bool gpu = true;
};

struct Round {
  double inputs = 0.0, full = 0.0, sample = 0.0, engine = 0.0;  // ms
};

template <class Work>
double ms_of(Work&& work) {
  const auto start = Clock::now();
  work();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<pp::Mode> matmul_modes() {
  std::vector<pp::Mode> modes;
  for (const pp::ModeInfo& info : pp::kModeTable) {
    if (info.kind == pp::ModeKind::matmul) modes.push_back(info.mode);
  }
  return modes;
}

// The inputs of every mode, drawn and quantised as the engine's prepare_smoke draws them.
std::vector<eng::HostOperands> draw_inputs(const std::vector<pp::Mode>& modes, bool gpu,
                                           std::uint64_t seed) {
  std::vector<eng::HostOperands> operands;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const eng::Shape s = eng::smoke_shape(modes[i], gpu);
    pp::HostRandom random(seed * 1000003ULL + i + 1);
    std::vector<double> a(static_cast<std::size_t>(s.m * s.k));
    std::vector<double> b(static_cast<std::size_t>(s.k * s.n));
    for (double& v : a) v = random.normal();
    for (double& v : b) v = random.normal();
    operands.push_back(eng::host_operands(modes[i], a, b, s));
  }
  return operands;
}

Round one_round(const std::vector<pp::Mode>& modes, const Options& opt, std::uint64_t seed,
                bool engine_first) {
  Round r;
  const auto engine = [&] {
    r.engine = ms_of([&] { (void)eng::prepare_smoke(modes, opt.gpu, seed, opt.threads); });
  };
  if (engine_first) engine();
  std::vector<eng::HostOperands> operands;
  r.inputs = ms_of([&] { operands = draw_inputs(modes, opt.gpu, seed); });
  auto full = [&] {
    for (std::size_t i = 0; i < modes.size(); ++i) {
      const eng::Shape s = eng::smoke_shape(modes[i], opt.gpu);
      (void)pp::reference_product(operands[i].a_values, operands[i].b_values, s.m, s.k, s.n, 1);
    }
  };
  auto sample = [&] {
    for (std::size_t i = 0; i < modes.size(); ++i) {
      const eng::Shape s = eng::smoke_shape(modes[i], opt.gpu);
      (void)pp::sample_product(operands[i].a_values, operands[i].b_values, s.m, s.k, s.n,
                               pp::sampled_rows(s.m, seed + i));
    }
  };
  if (engine_first) {
    r.sample = ms_of(sample);
    r.full = ms_of(full);
  } else {
    r.full = ms_of(full);
    r.sample = ms_of(sample);
    engine();
  }
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// The options, or nothing where they are wrong (the usage printed).
std::optional<Options> parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cpu") {
      opt.gpu = false;
      continue;
    }
    const long value = i + 1 < argc ? std::strtol(argv[i + 1], nullptr, 10) : 0;
    if ((arg != "--rounds" && arg != "--threads") || value < 1 || value > 1000) {
      std::fprintf(stderr,
                   "usage: pp_bench_references [--rounds 9] [--threads 1] [--cpu] "
                   "(rounds and threads 1 to 1000)\n");
      return std::nullopt;
    }
    ++i;
    if (arg == "--rounds") {
      opt.rounds = static_cast<int>(value);
    } else {
      opt.threads = static_cast<unsigned>(value);
    }
  }
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> parsed = parse(argc, argv);
  if (!parsed) return 2;
  const Options& opt = *parsed;
  const std::vector<pp::Mode> modes = matmul_modes();
  std::vector<double> inputs, full, sample, engine, ratios;
  for (int round = 0; round < opt.rounds; ++round) {
    const Round r = one_round(modes, opt, 1000 + static_cast<std::uint64_t>(round), round % 2 == 1);
    inputs.push_back(r.inputs);
    full.push_back(r.full);
    sample.push_back(r.sample);
    engine.push_back(r.engine);
    ratios.push_back((r.inputs + r.sample) / (r.inputs + r.full));
  }
  std::printf("%zu matmul modes, %s shapes, %u thread(s), %d rounds; medians in ms\n", modes.size(),
              opt.gpu ? "GPU" : "CPU", opt.threads, opt.rounds);
  std::printf("inputs %.1f  full reference %.1f  sampled reference %.1f  engine's prepare %.1f\n",
              median(inputs), median(full), median(sample), median(engine));
  std::printf(
      "before (inputs + full) %.1f  after (inputs + sample) %.1f  change %.3fx (median of "
      "the per-round ratios)\n",
      median(inputs) + median(full), median(inputs) + median(sample), median(ratios));
  return 0;
}
