#pragma once
// The host side of the engine's checks, in plain C++ (no LibTorch, so that it runs while LibTorch
// loads and is unit-tested without it): seeded random data, the float64 reference product, and
// how far a result is from it.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace precision_probe {

// Which build of the host's hot loops (the labels, the reference's rows) this CPU runs: the AVX2
// one where the CPU has AVX2 and the OS saves its registers (x86-64, read from cpuid), else the
// generic one. Both give the same numbers bit for bit (HostMath tests hold them to each other):
// each sum is taken in the same order, and neither fuses a multiplication into an addition. A
// function given HostSimd::avx2 on a CPU without it runs the generic build.
enum class HostSimd { generic, avx2 };
HostSimd host_simd();

// xoshiro256** seeded through splitmix64: the same numbers for the same seed on every machine. The
// normal values too, but for the 1.5 % the ziggurat judges by exp or log1p: a libm that rounded one
// of those differently could flip its accept or reject, and every later value of that seed would
// then differ (an x86-64 and an aarch64 build, zig's, gave the same values where compared).
class HostRandom {
 public:
  explicit HostRandom(std::uint64_t seed);
  std::uint64_t next();
  double uniform();  // [0, 1), 53 bits
  double normal();   // standard normal (a ziggurat of 256 layers: about one word a value)

 private:
  std::uint64_t s_[4];
};

// HostRandom::normal()'s ziggurat, a step at a time (its tests hold each): a 64-bit word's 8 low
// bits pick one of 256 layers of equal area, bit 8 the sign, the next 52 bits the position across
// the layer. `at_once` where the position lies under the density at every height of its layer (98.5
// % of words): `value` is then the normal value. Otherwise the layer's wedge decides with another
// draw, or, in the base layer (0) beyond its edge R, the value comes from the tail.
struct ZigguratDraw {
  std::size_t layer = 0;
  double value = 0.0;  // signed
  bool at_once = false;
};
ZigguratDraw ziggurat_draw(std::uint64_t word);
// A value from the normal's tail beyond R (Marsaglia's method), negative where asked.
double normal_tail(HostRandom& random, bool negative);

// `count` standard normal values from `seed`.
std::vector<double> normal_values(std::uint64_t seed, std::size_t count);

// One-hot labels [rows, classes] of x [rows, in] under a linear teacher [in, classes] (all
// row-major): row i gets the class of its largest logit x_i . teacher_:c, the first of equals. Each
// logit is summed in float64 in the order of `in`, so every machine draws the same labels.
std::vector<float> argmax_labels(const std::vector<float>& x, const std::vector<float>& teacher,
                                 std::int64_t rows, std::int64_t in, std::int64_t classes,
                                 HostSimd simd = host_simd());

// C = A x B in float64, A [m, k] and B [k, n] row-major, on up to `threads` threads. Products of
// values of at most 24 significant bits are exact in float64; the sums round at 2^-53.
std::vector<double> reference_product(const std::vector<double>& a, const std::vector<double>& b,
                                      std::int64_t m, std::int64_t k, std::int64_t n,
                                      unsigned threads = 1, HostSimd simd = host_simd());

// The relative Frobenius distance |got - ref| / |ref|: NaN where `got` holds a NaN or an
// infinity, or the sizes differ, or ref is zero.
double relative_error(const std::vector<double>& got, const std::vector<double>& ref);

// --- A sample of a product's rows: the smoke tests' reference ------------------------------------
//
// A smoke test's reference is `kSampledRows` rows of C = A x B, not all of C: on a machine of one
// CPU the whole float64 products of every mode were the engine's critical path. A sampled row still
// meets every K and every column of B, so every scale of B (a column's, a 128x128 tile's, a block
// of 16 or 32 along K) is in the comparison, and so is every K block of that row's scales of A. The
// rows are spread over the matrix, one from each of `kSampledRows` equal bands (the first and the
// last row always), so that every 128-row tile, and every 32-row band of a tile (the swizzled scale
// layout's period), has rows in the sample. An error confined to a few unsampled rows is missed
// unless it is NaN, Inf or a value beyond its Cauchy-Schwarz bound: the whole result is scanned
// for those.
inline constexpr std::int64_t kSampledRows = 32;

// `count` distinct rows of [0, m), ascending (all of them where m <= count), one from each of
// `count` equal bands of rows: the first band's first row, the last band's last row, and in each
// other band a row drawn from `seed`.
std::vector<std::int64_t> sampled_rows(std::int64_t m, std::uint64_t seed,
                                       std::int64_t count = kSampledRows);

// What the comparison of a result C [m, n] reads: C's rows `rows` in float64, and what bounds
// every element of C: |C_ij| <= |A_i| |B_:j| (Cauchy-Schwarz, the norms of A's row and B's column).
struct ProductSample {
  std::int64_t m = 0, n = 0;
  std::vector<std::int64_t> rows;    // ascending, distinct
  std::vector<double> values;        // [rows.size(), n]: row r is C's row rows[r]
  std::vector<double> row_norms;     // [m]: |A_i|
  std::vector<double> column_norms;  // [n]: |B_:j|
};
// From A [m, k] and B [k, n] row-major.
ProductSample sample_product(const std::vector<double>& a, const std::vector<double>& b,
                             std::int64_t m, std::int64_t k, std::int64_t n,
                             std::vector<std::int64_t> rows, HostSimd simd = host_simd());

// A result against its sample: the relative Frobenius distance over the sampled rows, and what
// the scan of every element found.
struct SampleComparison {
  double rel_error = 0.0;          // NaN where the sizes differ or the sampled rows are zero
  std::int64_t non_finite = 0;     // elements of the whole result that are NaN or Inf
  std::int64_t out_of_bounds = 0;  // finite elements above kBoundMargin times their bound
};
inline constexpr double kBoundMargin = 2.0;
// `got` is the whole result, [m, n] row-major.
SampleComparison compare_with_sample(const std::vector<double>& got, const ProductSample& sample);

}  // namespace precision_probe
