#pragma once
// The host side of the engine's checks, in plain C++ (no LibTorch, so that it runs while LibTorch
// loads and is unit-tested without it): seeded random data, the float64 reference product, and
// how far a result is from it.

#include <cstdint>
#include <vector>

namespace precision_probe {

// xoshiro256** seeded through splitmix64: the same numbers for the same seed on every machine.
class HostRandom {
 public:
  explicit HostRandom(std::uint64_t seed);
  std::uint64_t next();
  double uniform();  // [0, 1), 53 bits
  double normal();   // standard normal (Box-Muller)

 private:
  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// `count` standard normal values from `seed`.
std::vector<double> normal_values(std::uint64_t seed, std::size_t count);

// C = A x B in float64, A [m, k] and B [k, n] row-major, on up to `threads` threads. Products of
// values of at most 24 significant bits are exact in float64; the sums round at 2^-53.
std::vector<double> reference_product(const std::vector<double>& a, const std::vector<double>& b,
                                      std::int64_t m, std::int64_t k, std::int64_t n,
                                      unsigned threads = 1);

// The relative Frobenius distance |got - ref| / |ref|: NaN where `got` holds a NaN or an
// infinity, or the sizes differ, or ref is zero.
double relative_error(const std::vector<double>& got, const std::vector<double>& ref);

}  // namespace precision_probe
