#pragma once
// What a mixed-precision training run must show to count as training: the engine decides with it
// after a run, and the probe decides again with it from the worker's figures (a worker's "ok" is
// not believed).

#include <string>

#include "precision_probe/modes.hpp"
#include "precision_probe/results.hpp"

namespace precision_probe {

// |loss_end - fp32_loss_end| / fp32_loss_end, when both losses are there, finite and the fp32
// one positive (the losses the engine trains on are).
std::optional<double> loss_distance(const AmpOutcome& o);

// "" when the outcome shows a run that trained correctly in `mode`: losses finite and going down,
// the parameters changed, the dtypes autocast would give (matmuls in the low precision; loss and
// log-softmax, and layer norm where there is one, in fp32), the final loss within the mode's
// tolerance of the fp32 run's, and for amp_fp16 a loss scaler that skipped the injected overflow
// without skipping every step. Else the first problem.
std::string training_problem(Mode mode, const AmpOutcome& o);

}  // namespace precision_probe
