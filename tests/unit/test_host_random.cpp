// The engine's random inputs (engine/host/host_math.hpp): HostRandom::normal()'s ziggurat, its
// tables against the layers recomputed in long double, and its values against the standard normal
// distribution (moments, the whole distribution, the tail beyond the base layer).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/host/host_math.hpp"
#include "engine/host/ziggurat_tables.hpp"

namespace pp = precision_probe;
namespace z = precision_probe::ziggurat;

namespace {

constexpr int kLayers = 256;
const long double kTwo52 = std::ldexp(1.0L, 52);

long double density(long double x) { return std::exp(-x * x / 2); }

// The standard normal's distribution function.
double cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Kolmogorov-Smirnov: the largest gap between the empirical distribution of `sorted` (ascending)
// and `distribution`, times sqrt(n), to hold under 1.95 (the 0.1 % critical value).
template <typename F>
double ks_statistic(const std::vector<double>& sorted, F distribution) {
  const double n = static_cast<double>(sorted.size());
  double gap = 0.0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const double f = distribution(sorted[i]);
    gap = std::max({gap, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return gap * std::sqrt(n);
}

// Values of seed 7: enough that the tail beyond R (a value in 3,900) holds hundreds.
const std::vector<double>& draws() {
  static const std::vector<double> values = pp::normal_values(7, std::size_t{1} << 21U);
  return values;
}

}  // namespace

// Marsaglia and Tsang's layers from R: each of area V (the base layer's with the tail), each edge
// x_i from the one above, x_i = sqrt(-2 log(V / x_(i+1) + f(x_(i+1)))), closing at the density's
// peak. The generated tables (ziggurat_tables.py, decimal arithmetic) must be those layers.
TEST(HostRandom, TheZigguratsTablesAreItsLayersRecomputedInLongDouble) {
  const long double r = z::kBaseEdge;
  const long double pi = std::acos(-1.0L);
  const long double v = r * density(r) + std::sqrt(pi / 2) * std::erfc(r / std::sqrt(2.0L));
  EXPECT_NEAR(static_cast<double>(1 / r), z::kInverseBaseEdge, 1e-16);
  const long double q = v / density(r);
  auto expect_close = [](long double want, double got, const char* what, int i) {
    EXPECT_LE(std::fabs(static_cast<long double>(got) - want), 1e-14L * std::fabs(want))
        << what << "[" << i << "]: " << got << " against " << static_cast<double>(want);
  };
  expect_close(r / q * kTwo52, static_cast<double>(z::kAccept[0]), "accept", 0);
  expect_close(q / kTwo52, z::kWidth[0], "width", 0);
  EXPECT_EQ(z::kDensity[0], 1.0);
  EXPECT_EQ(z::kAccept[1], 0U);  // the top layer is all wedge
  expect_close(r / kTwo52, z::kWidth[kLayers - 1], "width", kLayers - 1);
  expect_close(density(r), z::kDensity[kLayers - 1], "density", kLayers - 1);
  long double above = r;
  for (int i = kLayers - 2; i >= 1; --i) {
    const long double x = std::sqrt(-2 * std::log(v / above + density(above)));
    expect_close(x / above * kTwo52, static_cast<double>(z::kAccept[i + 1]), "accept", i + 1);
    expect_close(x / kTwo52, z::kWidth[i], "width", i);
    expect_close(density(x), z::kDensity[i], "density", i);
    above = x;
  }
  EXPECT_NEAR(static_cast<double>(v / above + density(above)), 1.0, 1e-12)
      << "the layers do not close at the density's peak";
}

TEST(HostRandom, NormalValuesHaveTheStandardNormalsMomentsAndBothSigns) {
  const std::vector<double>& x = draws();
  const double n = static_cast<double>(x.size());
  double sum = 0.0, squares = 0.0, fourth = 0.0;
  std::size_t negative = 0;
  for (double v : x) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    squares += v * v;
    fourth += v * v * v * v;
    negative += v < 0.0 ? 1 : 0;
  }
  // Five standard errors each: the mean's 1/sqrt(n), the variance's sqrt(2/n), the fourth
  // moment's sqrt(96/n), a sign's 0.5/sqrt(n).
  EXPECT_NEAR(sum / n, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(squares / n, 1.0, 5.0 * std::sqrt(2.0 / n));
  EXPECT_NEAR(fourth / n, 3.0, 5.0 * std::sqrt(96.0 / n));
  EXPECT_NEAR(static_cast<double>(negative) / n, 0.5, 2.5 / std::sqrt(n));
}

// Kolmogorov-Smirnov against the normal's distribution function: the largest gap between the
// values' empirical distribution and it, under the 0.1 % critical value 1.95 / sqrt(n).
TEST(HostRandom, NormalValuesFollowTheNormalDistributionFunction) {
  std::vector<double> x = draws();
  std::sort(x.begin(), x.end());
  EXPECT_LT(ks_statistic(x, cdf), 1.95);
}

// Every layer's boundary: a word at the last position below the layer's accept limit is a value at
// once, under the density at the top of its layer (its rectangle lies under the curve; the base
// layer's up to R), with the sign of bit 8; a word at the limit is not (its wedge or the tail
// decides).
TEST(HostRandom, AWordIsAValueAtOnceExactlyWhereItLiesUnderItsLayersTop) {
  for (std::uint64_t layer = 0; layer < kLayers; ++layer) {
    SCOPED_TRACE(::testing::Message() << "layer " << layer);
    auto word = [layer](std::uint64_t position, bool negative) {
      return (position << 9U) | (static_cast<std::uint64_t>(negative) << 8U) | layer;
    };
    const std::uint64_t limit = z::kAccept[layer];
    const pp::ZigguratDraw at_limit = pp::ziggurat_draw(word(limit, false));
    EXPECT_EQ(at_limit.layer, layer);
    EXPECT_FALSE(at_limit.at_once);
    EXPECT_FALSE(pp::ziggurat_draw(word((std::uint64_t{1} << 52U) - 1, true)).at_once);
    if (limit == 0) continue;  // the top layer is all wedge
    const pp::ZigguratDraw last = pp::ziggurat_draw(word(limit - 1, false));
    ASSERT_TRUE(last.at_once);
    EXPECT_GT(last.value, 0.0);
    const double top = layer == 0 ? z::kDensity[kLayers - 1] : z::kDensity[layer - 1];
    EXPECT_GE(std::exp(-0.5 * last.value * last.value), top * (1 - 1e-12)) << last.value;
    const pp::ZigguratDraw negative = pp::ziggurat_draw(word(limit - 1, true));
    EXPECT_TRUE(negative.at_once);
    EXPECT_EQ(negative.value, -last.value);
  }
}

// The tail beyond R, drawn alone: every value beyond R, with the sign asked for, distributed as
// the normal is beyond R (Kolmogorov-Smirnov against Q(x) / Q(R), Q the upper tail, under the
// 0.1 % critical value); and in the values of normal() as many beyond R as the normal puts there,
// on both sides.
TEST(HostRandom, TheTailBeyondTheBaseLayerIsTheNormals) {
  const double r = z::kBaseEdge;
  auto upper = [](double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); };
  pp::HostRandom random(9);
  std::vector<double> tail(100000);
  for (double& v : tail) v = pp::normal_tail(random, false);
  std::sort(tail.begin(), tail.end());
  ASSERT_GT(tail.front(), r);
  EXPECT_LT(ks_statistic(tail, [&](double x) { return 1.0 - upper(x) / upper(r); }), 1.95);
  for (int i = 0; i < 100; ++i) ASSERT_LT(pp::normal_tail(random, true), -r);

  std::size_t beyond = 0, negative = 0;
  for (double v : draws()) {
    if (std::fabs(v) > r) {
      ++beyond;
      negative += v < 0.0 ? 1 : 0;
    }
  }
  const double expected = static_cast<double>(draws().size()) * 2.0 * upper(r);
  EXPECT_NEAR(static_cast<double>(beyond), expected, 5.0 * std::sqrt(expected));
  EXPECT_NEAR(static_cast<double>(negative), 0.5 * static_cast<double>(beyond),
              2.5 * std::sqrt(static_cast<double>(beyond)));
}

// A seed gives the same values on every machine: the ziggurat's accepted values are integer work
// and one multiplication by a table's constant, so these are the values anywhere.
TEST(HostRandom, ASeedGivesTheSameValuesEverywhere) {
  const std::vector<double> first = pp::normal_values(1, 4);
  const std::vector<double> again = pp::normal_values(1, 4);
  EXPECT_EQ(first, again);
  const std::vector<double> expected = {0x1.4ae6ee7213148p+0, 0x1.ae1983fda2995p-2,
                                        -0x1.a186a38f77a8fp-2, -0x1.e57bcbb54d36ep-3};
  EXPECT_EQ(first, expected);
  EXPECT_NE(pp::normal_values(2, 4), first);
}
