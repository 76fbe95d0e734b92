// The smoke tests' reference (engine/host/host_math.hpp): a sample of the product's rows, spread
// over the matrix and drawn from the seed, and a comparison that reads those rows against the
// reference and every element of the result for NaN, Inf and values beyond their bound.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "engine/host/float_formats.hpp"
#include "engine/host/host_math.hpp"

namespace pp = precision_probe;

namespace {

struct Product {
  std::int64_t m, k, n;
  std::vector<double> a, b, c;  // c: the whole float64 product
};

Product random_product(std::int64_t m, std::int64_t k, std::int64_t n, std::uint64_t seed) {
  Product p{m,
            k,
            n,
            pp::normal_values(seed, static_cast<std::size_t>(m * k)),
            pp::normal_values(seed + 1, static_cast<std::size_t>(k * n)),
            {}};
  p.c = pp::reference_product(p.a, p.b, m, k, n);
  return p;
}

pp::ProductSample sample_of(const Product& p, std::uint64_t seed) {
  return pp::sample_product(p.a, p.b, p.m, p.k, p.n, pp::sampled_rows(p.m, seed));
}

// A row of [0, m) that the sample does not hold.
std::int64_t unsampled_row(const pp::ProductSample& s) {
  const std::set<std::int64_t> rows(s.rows.begin(), s.rows.end());
  for (std::int64_t i = 0; i < s.m; ++i) {
    if (rows.count(i) == 0) return i;
  }
  return -1;
}

// The product's result as a bf16 output would give it: each element rounded to 8 bits.
std::vector<double> rounded_to_bf16(const std::vector<double>& c) {
  std::vector<double> out;
  out.reserve(c.size());
  for (double v : c) out.push_back(pp::decode_bf16(pp::encode_bf16(static_cast<float>(v))));
  return out;
}

}  // namespace

// Every 128-row tile and every 32-row band of one (the swizzled scale layout's period) has rows
// in the sample, the first and the last row included; the same seed gives the same rows.
TEST(HostMath, TheSampledRowsAreSpreadOverTheMatrixAndDrawnFromTheSeed) {
  for (std::int64_t m : {128, 192, 256, 1000}) {
    const std::vector<std::int64_t> rows = pp::sampled_rows(m, 7);
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(pp::kSampledRows)) << m;
    EXPECT_EQ(rows.front(), 0);
    EXPECT_EQ(rows.back(), m - 1);
    for (std::size_t i = 1; i < rows.size(); ++i) ASSERT_LT(rows[i - 1], rows[i]) << m;
    for (std::int64_t band = 0; m <= 256 && band < m; band += 32) {  // the smoke tests' sizes
      const auto in_band = std::count_if(
          rows.begin(), rows.end(), [&](std::int64_t r) { return r >= band && r < band + 32; });
      EXPECT_GE(in_band, 4) << "m " << m << ", rows from " << band;
    }
    EXPECT_EQ(pp::sampled_rows(m, 7), rows);
    EXPECT_NE(pp::sampled_rows(m, 8), rows) << m;
  }
  const std::vector<std::int64_t> all = pp::sampled_rows(20, 7);
  ASSERT_EQ(all.size(), 20U);
  for (std::int64_t i = 0; i < 20; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], i);
}

// The sampled rows are the product's own rows, bit for bit, and the bounds are the norms.
TEST(HostMath, TheSampleHoldsTheProductsRowsAndEachElementsBound) {
  const Product p = random_product(192, 640, 320, 3);
  const pp::ProductSample s = sample_of(p, 11);
  ASSERT_EQ(s.values.size(), s.rows.size() * 320);
  for (std::size_t r = 0; r < s.rows.size(); ++r) {
    for (std::int64_t j = 0; j < 320; ++j) {
      ASSERT_EQ(s.values[r * 320 + static_cast<std::size_t>(j)],
                p.c[static_cast<std::size_t>(s.rows[r] * 320 + j)]);
    }
  }
  double row5 = 0.0;  // row 5 starts at 5 x 640
  for (std::size_t q = 0; q < 640; ++q)
    row5 += p.a[std::size_t{3200} + q] * p.a[std::size_t{3200} + q];
  EXPECT_DOUBLE_EQ(s.row_norms[5], std::sqrt(row5));
  double column7 = 0.0;
  for (std::size_t q = 0; q < 640; ++q) column7 += p.b[q * 320 + 7] * p.b[q * 320 + 7];
  EXPECT_DOUBLE_EQ(s.column_norms[7], std::sqrt(column7));
  const pp::SampleComparison exact = pp::compare_with_sample(p.c, s);
  EXPECT_EQ(exact.rel_error, 0.0);
  EXPECT_EQ(exact.non_finite, 0);
  EXPECT_EQ(exact.out_of_bounds, 0);
}

// On fresh random data (not zeros) with an output rounded as bf16 rounds it, the error over the
// sample is the whole product's within 5 % (2 % measured), for every seed tried.
TEST(HostMath, TheSampledErrorIsTheWholeProductsError) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const Product p = random_product(256, 256, 256, seed * 10);
    const std::vector<double> got = rounded_to_bf16(p.c);
    const double whole = pp::relative_error(got, p.c);
    const double sampled = pp::compare_with_sample(got, sample_of(p, seed)).rel_error;
    ASSERT_GT(whole, 1e-3) << "bf16 leaves its rounding";
    ASSERT_LT(whole, 4e-3);
    EXPECT_NEAR(sampled / whole, 1.0, 0.05) << "seed " << seed;
  }
}

// A wrong value in a sampled row is in the error: an integer product off by one is no longer
// exact (int8's tolerance is 0), and one element of a float product far off fails any tolerance.
TEST(HostMath, AWrongValueInASampledRowIsInTheError) {
  Product p = random_product(192, 64, 96, 5);
  for (double& v : p.a) v = std::nearbyint(v * 40.0);  // integers: an exact product
  for (double& v : p.b) v = std::nearbyint(v * 40.0);
  p.c = pp::reference_product(p.a, p.b, p.m, p.k, p.n);
  const pp::ProductSample s = sample_of(p, 2);
  ASSERT_EQ(pp::compare_with_sample(p.c, s).rel_error, 0.0);
  for (std::int64_t row : {s.rows.front(), s.rows[13], s.rows.back()}) {
    std::vector<double> got = p.c;
    got[static_cast<std::size_t>(row * p.n + 40)] += 1.0;
    const pp::SampleComparison off = pp::compare_with_sample(got, s);
    EXPECT_GT(off.rel_error, 0.0) << "row " << row;
    got[static_cast<std::size_t>(row * p.n + 40)] = 0.0;
    EXPECT_GT(pp::compare_with_sample(got, s).rel_error, 1e-3) << "row " << row;
  }
}

// NaN, Inf and values beyond twice their Cauchy-Schwarz bound are found in every row, the
// unsampled ones included; within its bound a value outside the sample is not compared.
TEST(HostMath, EveryElementIsScannedForNaNInfAndValuesBeyondTheirBound) {
  const Product p = random_product(192, 640, 320, 9);
  const pp::ProductSample s = sample_of(p, 4);
  const std::int64_t row = unsampled_row(s);
  ASSERT_GE(row, 0);
  const std::size_t at = static_cast<std::size_t>(row * p.n + 17);
  for (double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    std::vector<double> got = p.c;
    got[at] = bad;
    got[at + 1] = bad;
    const pp::SampleComparison c = pp::compare_with_sample(got, s);
    EXPECT_EQ(c.non_finite, 2) << bad;
    EXPECT_EQ(c.rel_error, 0.0) << "the sampled rows are right";
  }
  const double bound = s.row_norms[static_cast<std::size_t>(row)] * s.column_norms[17];
  std::vector<double> got = p.c;
  got[at] = -2.01 * bound;
  EXPECT_EQ(pp::compare_with_sample(got, s).out_of_bounds, 1);
  got[at] = 1.99 * bound;
  const pp::SampleComparison within = pp::compare_with_sample(got, s);
  EXPECT_EQ(within.out_of_bounds, 0);
  EXPECT_EQ(within.rel_error, 0.0);
}

// What cannot be compared is NaN, never a pass: a result of another size, a sample of zeros, a
// sample whose rows are not the result's.
TEST(HostMath, AResultThatCannotBeComparedGivesNaN) {
  const Product p = random_product(64, 32, 48, 1);
  const pp::ProductSample s = sample_of(p, 1);
  std::vector<double> shorter(p.c.begin(), p.c.end() - 1);
  EXPECT_TRUE(std::isnan(pp::compare_with_sample(shorter, s).rel_error));
  const std::vector<double> zeros(p.a.size(), 0.0);
  const pp::ProductSample of_zeros =
      pp::sample_product(zeros, p.b, 64, 32, 48, pp::sampled_rows(64, 1));
  EXPECT_TRUE(std::isnan(pp::compare_with_sample(p.c, of_zeros).rel_error));
  pp::ProductSample beyond = s;
  beyond.rows.back() = 64;
  EXPECT_TRUE(std::isnan(pp::compare_with_sample(p.c, beyond).rel_error));
  EXPECT_THROW(pp::sample_product(p.a, p.b, 64, 32, 48, {0, 64}), std::invalid_argument);
  EXPECT_THROW(pp::sample_product(p.a, p.b, 64, 33, 48, {0}), std::invalid_argument);
}

// The training check's labels: each row's class is its largest logit under the teacher, summed in
// float64 in the order of the inputs, the first class where two logits are equal; one label a row.
// Classes in blocks of sixteen and a remainder (24, 27), three blocks (48), fewer than a block
// (5), ties within a block, across two and in the remainder; by every build this CPU runs.
TEST(HostMath, TheTeachersLabelsAreEachRowsLargestLogit) {
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> cases[] = {
      {24, 3, 7}, {27, 15, 16}, {48, 20, 40}, {27, 24, 26}, {5, 1, 4}};
  for (const auto& [classes, tie_a, tie_b] : cases) {
    for (const pp::HostSimd build : {pp::HostSimd::generic, pp::host_simd()}) {
      SCOPED_TRACE(::testing::Message() << classes << " classes, " << tie_a << " = " << tie_b
                                        << (build == pp::HostSimd::avx2 ? ", AVX2" : ", generic"));
      constexpr std::int64_t kRows = 96, kIn = 40;
      const std::vector<double> x64 = pp::normal_values(11, static_cast<std::size_t>(kRows * kIn));
      const std::vector<double> t64 =
          pp::normal_values(12, static_cast<std::size_t>(kIn * classes));
      std::vector<float> x(x64.begin(), x64.end());
      std::vector<float> teacher(t64.begin(), t64.end());
      // Row 0 ties classes tie_a and tie_b at the largest logit: column tie_b is column tie_a, made
      // the largest by adding to it where row 0 is positive.
      for (std::int64_t j = 0; j < kIn; ++j) {
        float& ta = teacher[static_cast<std::size_t>(j * classes + tie_a)];
        if (x[static_cast<std::size_t>(j)] > 0) ta += 100.0F;
        teacher[static_cast<std::size_t>(j * classes + tie_b)] = ta;
      }
      const std::vector<float> labels = pp::argmax_labels(x, teacher, kRows, kIn, classes, build);
      ASSERT_EQ(labels.size(), static_cast<std::size_t>(kRows * classes));
      std::set<std::int64_t> classes_seen;
      for (std::int64_t i = 0; i < kRows; ++i) {
        // The definition, a class at a time.
        std::int64_t best = 0;
        double best_logit = -std::numeric_limits<double>::infinity();
        for (std::int64_t c = 0; c < classes; ++c) {
          double logit = 0.0;
          for (std::int64_t j = 0; j < kIn; ++j) {
            logit += static_cast<double>(x[static_cast<std::size_t>(i * kIn + j)]) *
                     teacher[static_cast<std::size_t>(j * classes + c)];
          }
          if (logit > best_logit) {
            best_logit = logit;
            best = c;
          }
        }
        const auto row = labels.begin() + i * classes;
        EXPECT_EQ(std::count(row, row + classes, 1.0F), 1) << "row " << i;
        EXPECT_EQ(std::count(row, row + classes, 0.0F), classes - 1) << "row " << i;
        EXPECT_EQ(row[best], 1.0F) << "row " << i << ": class " << best;
        classes_seen.insert(best);
      }
      EXPECT_EQ(labels[static_cast<std::size_t>(tie_a)], 1.0F) << "of two equal logits, the first";
      // tie_b's column is tie_a's: it never wins.
      EXPECT_GE(classes_seen.size(),
                std::min<std::size_t>(5, static_cast<std::size_t>(classes - 1)))
          << "random rows fall into many classes";
      EXPECT_THROW(pp::argmax_labels(x, teacher, kRows + 1, kIn, classes), std::invalid_argument);
      EXPECT_THROW(pp::argmax_labels(x, teacher, kRows, kIn, classes + 1), std::invalid_argument);
    }
  }
}

// The AVX2 build of the hot loops gives the generic build's numbers bit for bit: the labels at the
// GPU training's shapes, and a reference's rows and the whole product at a scaled recipe's shapes
// with a column count that leaves a remainder, on operands of more than 24 significant bits (a
// fused multiply-add would round them otherwise).
TEST(HostMath, TheAvx2BuildGivesTheGenericBuildsNumbers) {
  if (pp::host_simd() != pp::HostSimd::avx2) {
    GTEST_SKIP() << "this CPU has no AVX2: only the generic build runs here";
  }
  constexpr std::int64_t kRows = 2048, kIn = 256, kClasses = 256;
  const std::vector<double> x64 = pp::normal_values(21, static_cast<std::size_t>(kRows * kIn));
  const std::vector<double> t64 = pp::normal_values(22, static_cast<std::size_t>(kIn * kClasses));
  const std::vector<float> x(x64.begin(), x64.end());
  const std::vector<float> teacher(t64.begin(), t64.end());
  EXPECT_EQ(pp::argmax_labels(x, teacher, kRows, kIn, kClasses, pp::HostSimd::generic),
            pp::argmax_labels(x, teacher, kRows, kIn, kClasses, pp::HostSimd::avx2));
  for (const std::int64_t n : {std::int64_t{320}, std::int64_t{131}}) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    constexpr std::int64_t m = 192, k = 640;
    // Values of 53 significant bits: their products do not fit a double.
    const std::vector<double> a = pp::normal_values(23, static_cast<std::size_t>(m * k));
    const std::vector<double> b = pp::normal_values(24, static_cast<std::size_t>(k * n));
    const std::vector<std::int64_t> rows = pp::sampled_rows(m, 25);
    const pp::ProductSample generic =
        pp::sample_product(a, b, m, k, n, rows, pp::HostSimd::generic);
    const pp::ProductSample avx2 = pp::sample_product(a, b, m, k, n, rows, pp::HostSimd::avx2);
    EXPECT_EQ(generic.values, avx2.values);
    EXPECT_EQ(pp::reference_product(a, b, m, k, n, 1, pp::HostSimd::generic),
              pp::reference_product(a, b, m, k, n, 2, pp::HostSimd::avx2));
  }
}

// host_simd() reads the CPU itself (cpuid), as the kernel does for /proc/cpuinfo's flags: AVX2
// where the kernel lists it on x86-64, the generic build elsewhere. (zig's runtime answers
// __builtin_cpu_supports with a stub that says no: a release binary must not rely on it.)
TEST(HostMath, TheHostsBuildIsAvx2ExactlyWhereTheKernelListsAvx2) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool listed = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string flag;
    while (words >> flag) listed = listed || flag == "avx2";
    break;
  }
#if defined(__x86_64__)
  EXPECT_EQ(pp::host_simd(), listed ? pp::HostSimd::avx2 : pp::HostSimd::generic);
#else
  EXPECT_EQ(pp::host_simd(), pp::HostSimd::generic);
  (void)listed;
#endif
}
