#include "engine/host/host_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "engine/host/ziggurat_tables.hpp"
#include "threads/threads.hpp"

// The hot loops' second build, for CPUs with AVX2: x86-64 with GCC or Clang (a function's target
// attribute; the CPU's features read once by host_simd(), from cpuid: zig's runtime answers
// __builtin_cpu_supports with a stub that says no).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PP_HOST_AVX2 1
#define PP_TARGET_AVX2 __attribute__((target("avx2")))
#include <cpuid.h>
#else
#define PP_HOST_AVX2 0
#endif
#define PP_ALWAYS_INLINE __attribute__((always_inline))

// GCC and Clang note that a function returning a 32-byte vector has another ABI with AVX than
// without: these are inlined, never called across builds.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace {

// Two or four doubles as one value (GCC's and Clang's vector extensions): the loops below say
// their vectors themselves rather than hope the optimiser finds them, which -O2 and -O3 did not
// agree on. Each build takes the widest its target has: four with AVX2, two on SSE2 and NEON.
struct Lanes2 {
  using Doubles = double __attribute__((vector_size(16)));
};
struct Lanes4 {
  using Doubles = double __attribute__((vector_size(32)));
};
template <typename L>
constexpr std::int64_t kWidth = sizeof(typename L::Doubles) / sizeof(double);

template <typename L>
PP_ALWAYS_INLINE inline typename L::Doubles load(const double* p) {
  typename L::Doubles v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename L>
PP_ALWAYS_INLINE inline void store(double* p, const typename L::Doubles& v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

namespace precision_probe {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << static_cast<unsigned>(k)) | (x >> static_cast<unsigned>(64 - k));
}

constexpr std::int64_t kBlock = 64;  // rows of C a task computes; columns of B kept hot

// Rows [r0, r1) of C, in blocks of k so that the B rows a block reads stay in cache. Inlined into
// each of product_rows' builds; no fused multiply-add in either (-ffp-contract=off, and the AVX2
// build's target has none), since a product of two scaled operands can need more than a double's
// 53 bits, and a fused one would round it otherwise.
template <typename L>
PP_ALWAYS_INLINE inline void rows_of_product(const double* a, const double* b, double* c,
                                             std::int64_t r0, std::int64_t r1, std::int64_t k,
                                             std::int64_t n) {
  constexpr std::int64_t kDepth = 128;
  for (std::int64_t p0 = 0; p0 < k; p0 += kDepth) {
    const std::int64_t p1 = std::min(k, p0 + kDepth);
    for (std::int64_t i = r0; i < r1; ++i) {
      double* ci = c + i * n;
      const double* ai = a + i * k;
      for (std::int64_t p = p0; p < p1; ++p) {
        const double x = ai[p];
        const double* bp = b + p * n;
        std::int64_t j = 0;
        for (; j + kWidth<L> <= n; j += kWidth<L>) {
          store<L>(ci + j, load<L>(ci + j) + x * load<L>(bp + j));
        }
        for (; j < n; ++j) ci[j] += x * bp[j];
      }
    }
  }
}

#if PP_HOST_AVX2
// Whether a loop asked to run `simd` runs its AVX2 build: only where this CPU has AVX2.
bool runs_avx2(HostSimd simd) { return simd == HostSimd::avx2 && host_simd() == HostSimd::avx2; }

PP_TARGET_AVX2 void product_rows_avx2(const double* a, const double* b, double* c, std::int64_t r0,
                                      std::int64_t r1, std::int64_t k, std::int64_t n) {
  rows_of_product<Lanes4>(a, b, c, r0, r1, k, n);
}
#endif

void product_rows(const double* a, const double* b, double* c, std::int64_t r0, std::int64_t r1,
                  std::int64_t k, std::int64_t n, HostSimd simd) {
#if PP_HOST_AVX2
  if (runs_avx2(simd)) {
    product_rows_avx2(a, b, c, r0, r1, k, n);
    return;
  }
#endif
  (void)simd;
  rows_of_product<Lanes2>(a, b, c, r0, r1, k, n);
}

// x with its sign bit xor'ed by `sign` (0 or the sign bit).
double with_sign_flipped(double x, std::uint64_t sign) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  bits ^= sign;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace

HostSimd host_simd() {
#if PP_HOST_AVX2
  static const HostSimd simd = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) return HostSimd::generic;
    if ((c & bit_AVX) == 0 || (c & bit_OSXSAVE) == 0) return HostSimd::generic;
    // The OS saves the vector registers' upper halves: XCR0's SSE and AVX bits.
    unsigned xcr0 = 0, xcr0_high = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
    if ((xcr0 & 6U) != 6U) return HostSimd::generic;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return HostSimd::generic;
    return (b & bit_AVX2) != 0 ? HostSimd::avx2 : HostSimd::generic;
  }();
  return simd;
#else
  return HostSimd::generic;
#endif
}

HostRandom::HostRandom(std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::uint64_t& s : s_) s = splitmix64(state);
}

std::uint64_t HostRandom::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17U;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double HostRandom::uniform() { return static_cast<double>(next() >> 11U) * 0x1.0p-53; }

ZigguratDraw ziggurat_draw(std::uint64_t word) {
  namespace z = ziggurat;
  constexpr std::uint64_t kPositionMask = (std::uint64_t{1} << 52U) - 1;
  ZigguratDraw d;
  d.layer = static_cast<std::size_t>(word & 0xFFU);
  const std::uint64_t sign = (word & 0x100U) << 55U;  // bit 8 moved to the sign bit
  const std::uint64_t position = (word >> 9U) & kPositionMask;
  // The sign by its bit, not a branch: a branch on a random bit is mispredicted half the time.
  d.value = with_sign_flipped(static_cast<double>(position) * z::kWidth[d.layer], sign);
  d.at_once = position < z::kAccept[d.layer];
  return d;
}

double normal_tail(HostRandom& random, bool negative) {
  namespace z = ziggurat;
  // Marsaglia's 1964 method; 1 - u keeps log's argument above zero.
  while (true) {
    const double beyond = -std::log1p(-random.uniform()) * z::kInverseBaseEdge;
    const double height = -std::log1p(-random.uniform());
    if (height + height > beyond * beyond) {
      return negative ? -(z::kBaseEdge + beyond) : z::kBaseEdge + beyond;
    }
  }
}

// Marsaglia and Tsang's ziggurat (ziggurat_tables.py): every value needs one word but the 1.5 %
// judged by the density or drawn from the tail, where Box-Muller needed a logarithm and a sine.
double HostRandom::normal() {
  namespace z = ziggurat;
  while (true) {
    const ZigguratDraw d = ziggurat_draw(next());
    if (d.at_once) return d.value;
    if (d.layer == 0) return normal_tail(*this, std::signbit(d.value));
    // The layer's wedge: a height drawn across the layer, under the density or not.
    const double y =
        z::kDensity[d.layer] + uniform() * (z::kDensity[d.layer - 1] - z::kDensity[d.layer]);
    if (y < std::exp(-0.5 * d.value * d.value)) return d.value;
  }
}

std::vector<double> normal_values(std::uint64_t seed, std::size_t count) {
  HostRandom random(seed);
  std::vector<double> values(count);
  for (double& v : values) v = random.normal();
  return values;
}

namespace {

// Classes whose logits are summed at once: independent sums keep the floating-point units busy,
// where one sum at a time waits for each addition (docs/performance.md: the training's labels).
constexpr std::int64_t kLabelLanes = 16;

// The logits of kLabelLanes classes from c0 for the row x_i, each summed in the order of j, the
// teacher widened to double beforehand. Inlined into each of argmax_rows' builds, so that the AVX2
// one sums 16 classes in four registers. Each build multiplies, then adds (no fused multiply-add:
// the library is built with -ffp-contract=off), so every build gives the same sums.
template <typename L>
PP_ALWAYS_INLINE inline void lane_logits(const float* xi, const double* teacher, std::int64_t in,
                                         std::int64_t classes, std::int64_t c0, double* out) {
  constexpr std::int64_t kVectors = kLabelLanes / kWidth<L>;
  typename L::Doubles sums[kVectors] = {};
  for (std::int64_t j = 0; j < in; ++j) {
    const double xij = xi[j];
    const double* t = teacher + j * classes + c0;
    // Unrolled at -O2 too, so that the sums stay in registers.
#pragma GCC unroll 8
    for (std::int64_t v = 0; v < kVectors; ++v) sums[v] += xij * load<L>(t + v * kWidth<L>);
  }
#pragma GCC unroll 8
  for (std::int64_t v = 0; v < kVectors; ++v) store<L>(out + v * kWidth<L>, sums[v]);
}

// One class's logit, summed in the order of j.
double logit(const float* xi, const double* teacher, std::int64_t in, std::int64_t classes,
             std::int64_t c) {
  double sum = 0.0;
  for (std::int64_t j = 0; j < in; ++j) {
    sum += static_cast<double>(xi[j]) * teacher[j * classes + c];
  }
  return sum;
}

// Each row's label: the class of its largest logit, the first of equals.
template <typename L>
PP_ALWAYS_INLINE inline void argmax_rows(const float* x, const double* teacher, std::int64_t rows,
                                         std::int64_t in, std::int64_t classes, float* onehot) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * in;
    std::int64_t best = 0;
    double best_logit = -std::numeric_limits<double>::infinity();
    for (std::int64_t c0 = 0; c0 < classes; c0 += kLabelLanes) {
      double logits[kLabelLanes];
      const std::int64_t lanes = std::min(kLabelLanes, classes - c0);
      if (lanes == kLabelLanes) {
        lane_logits<L>(xi, teacher, in, classes, c0, logits);
      } else {
        for (std::int64_t l = 0; l < lanes; ++l) {
          logits[l] = logit(xi, teacher, in, classes, c0 + l);
        }
      }
      for (std::int64_t l = 0; l < lanes; ++l) {
        if (logits[l] > best_logit) {
          best_logit = logits[l];
          best = c0 + l;
        }
      }
    }
    onehot[i * classes + best] = 1.0F;
  }
}

#if PP_HOST_AVX2
PP_TARGET_AVX2 void argmax_rows_avx2(const float* x, const double* teacher, std::int64_t rows,
                                     std::int64_t in, std::int64_t classes, float* onehot) {
  argmax_rows<Lanes4>(x, teacher, rows, in, classes, onehot);
}
#endif

}  // namespace

std::vector<float> argmax_labels(const std::vector<float>& x, const std::vector<float>& teacher,
                                 std::int64_t rows, std::int64_t in, std::int64_t classes,
                                 HostSimd simd) {
  if (rows < 0 || in < 1 || classes < 1 || x.size() != static_cast<std::size_t>(rows * in) ||
      teacher.size() != static_cast<std::size_t>(in * classes)) {
    throw std::invalid_argument("argmax_labels: sizes that do not match");
  }
  std::vector<float> onehot(static_cast<std::size_t>(rows * classes), 0.0F);
  const std::vector<double> wide(teacher.begin(), teacher.end());  // exact: a float is a double
#if PP_HOST_AVX2
  if (runs_avx2(simd)) {
    argmax_rows_avx2(x.data(), wide.data(), rows, in, classes, onehot.data());
    return onehot;
  }
#endif
  (void)simd;
  argmax_rows<Lanes2>(x.data(), wide.data(), rows, in, classes, onehot.data());
  return onehot;
}

std::vector<double> reference_product(const std::vector<double>& a, const std::vector<double>& b,
                                      std::int64_t m, std::int64_t k, std::int64_t n,
                                      unsigned threads, HostSimd simd) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  const std::int64_t blocks = (m + kBlock - 1) / kBlock;
  std::int64_t next = 0;
  std::mutex mutex;
  auto work = [&] {
    while (true) {
      std::int64_t block = 0;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (next >= blocks) return;
        block = next++;
      }
      product_rows(a.data(), b.data(), c.data(), block * kBlock, std::min(m, (block + 1) * kBlock),
                   k, n, simd);
    }
  };
  run_on_threads(std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(blocks))), work);
  return c;
}

double relative_error(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size() || ref.empty()) return std::numeric_limits<double>::quiet_NaN();
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::quiet_NaN();
    const double d = got[i] - ref[i];
    diff += d * d;
    norm += ref[i] * ref[i];
  }
  if (!(norm > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(diff / norm);
}

namespace {

// |A_i| for every row of A [m, k], |B_:j| for every column of B [k, n].
void bounds(const double* a, const double* b, std::int64_t m, std::int64_t k, std::int64_t n,
            ProductSample& s) {
  s.row_norms.assign(static_cast<std::size_t>(m), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    const double* ai = a + i * k;
    double sum = 0.0;
    for (std::int64_t p = 0; p < k; ++p) sum += ai[p] * ai[p];
    s.row_norms[static_cast<std::size_t>(i)] = std::sqrt(sum);
  }
  s.column_norms.assign(static_cast<std::size_t>(n), 0.0);
  double* norms = s.column_norms.data();
  for (std::int64_t p = 0; p < k; ++p) {
    const double* bp = b + p * n;
    for (std::int64_t j = 0; j < n; ++j) norms[j] += bp[j] * bp[j];
  }
  for (double& norm : s.column_norms) norm = std::sqrt(norm);
}

}  // namespace

std::vector<std::int64_t> sampled_rows(std::int64_t m, std::uint64_t seed, std::int64_t count) {
  std::vector<std::int64_t> rows;
  if (m <= count) {
    for (std::int64_t i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  HostRandom random(seed);
  for (std::int64_t band = 0; band < count; ++band) {
    const std::int64_t lo = band * m / count;
    const std::int64_t hi = (band + 1) * m / count;  // > lo, as m > count
    if (band == 0) {
      rows.push_back(lo);
    } else if (band + 1 == count) {
      rows.push_back(hi - 1);
    } else {
      rows.push_back(
          lo + static_cast<std::int64_t>(random.next() % static_cast<std::uint64_t>(hi - lo)));
    }
  }
  return rows;
}

ProductSample sample_product(const std::vector<double>& a, const std::vector<double>& b,
                             std::int64_t m, std::int64_t k, std::int64_t n,
                             std::vector<std::int64_t> rows, HostSimd simd) {
  if (static_cast<std::int64_t>(a.size()) != m * k ||
      static_cast<std::int64_t>(b.size()) != k * n) {
    throw std::invalid_argument("sample_product: the operands are not [m, k] and [k, n]");
  }
  ProductSample s;
  s.m = m;
  s.n = n;
  s.rows = std::move(rows);
  const auto count = static_cast<std::int64_t>(s.rows.size());
  std::vector<double> a_rows(static_cast<std::size_t>(count * k));
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t row = s.rows[static_cast<std::size_t>(r)];
    if (row < 0 || row >= m) throw std::invalid_argument("sample_product: a row out of range");
    std::copy_n(a.data() + row * k, k, a_rows.data() + r * k);
  }
  s.values.assign(static_cast<std::size_t>(count * n), 0.0);
  product_rows(a_rows.data(), b.data(), s.values.data(), 0, count, k, n, simd);
  bounds(a.data(), b.data(), m, k, n, s);
  return s;
}

SampleComparison compare_with_sample(const std::vector<double>& got, const ProductSample& sample) {
  SampleComparison c;
  const std::int64_t n = sample.n;
  if (static_cast<std::int64_t>(got.size()) != sample.m * n ||
      sample.values.size() != sample.rows.size() * static_cast<std::size_t>(n) ||
      static_cast<std::int64_t>(sample.row_norms.size()) != sample.m ||
      static_cast<std::int64_t>(sample.column_norms.size()) != n ||
      std::any_of(sample.rows.begin(), sample.rows.end(),
                  [&](std::int64_t row) { return row < 0 || row >= sample.m; })) {
    c.rel_error = std::numeric_limits<double>::quiet_NaN();
    return c;
  }
  for (std::int64_t i = 0; i < sample.m; ++i) {
    const double* gi = got.data() + i * n;
    const double row_bound = kBoundMargin * sample.row_norms[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < n; ++j) {
      if (!std::isfinite(gi[j])) {
        ++c.non_finite;
      } else if (std::fabs(gi[j]) > row_bound * sample.column_norms[static_cast<std::size_t>(j)]) {
        ++c.out_of_bounds;
      }
    }
  }
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t r = 0; r < sample.rows.size(); ++r) {
    const double* g = got.data() + sample.rows[r] * n;
    const double* ref = sample.values.data() + static_cast<std::int64_t>(r) * n;
    for (std::int64_t j = 0; j < n; ++j) {
      diff += (g[j] - ref[j]) * (g[j] - ref[j]);
      norm += ref[j] * ref[j];
    }
  }
  c.rel_error = norm > 0.0 ? std::sqrt(diff / norm) : std::numeric_limits<double>::quiet_NaN();
  return c;
}

}  // namespace precision_probe
