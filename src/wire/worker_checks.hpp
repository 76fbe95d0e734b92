#pragma once
// What a worker may not be believed on. The probe checks every figure a worker sends: a value that
// cannot be (a negative error, a time of 1000 s, a throughput its own size and time do not give),
// an "ok" for a check that did not run, or an "ok" its figures do not bear out fails the outcome
// with the reason. The tolerances are the probe's (the mode table's), never the worker's.

#include <string>
#include <vector>

#include "precision_probe/modes.hpp"
#include "precision_probe/results.hpp"

namespace precision_probe {

void check_smoke(Mode mode, SmokeOutcome& o);
void check_amp(Mode mode, AmpOutcome& o);
void check_bench(BenchOutcome& o);
void check_collective(CollectiveOutcome& o);
void check_soak(SoakOutcome& o);

// The all-reduces a collective worker owes: each of kAllReduceDTypes once, over `ranks` GPUs.
// "" when they are all there, else what is missing or extra.
std::string collectives_problem(const std::vector<CollectiveOutcome>& outcomes, int ranks);

}  // namespace precision_probe
