#pragma once
// The ATen operators the engine calls through the dispatcher, one table: name, overload, the
// schema the engine builds its argument stack for (native_functions.yaml's `func:` line, the same
// in 2.9.1 to 2.15.0), and the release whose C ABI can pass its arguments. Operators called by
// name carry no stability promise: before the first call, every schema is compared with the
// image's own native_functions.yaml (check_schemas); a mismatch makes the checks that use that
// operator not tested, naming both schemas, and the operator is never called.

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "engine/torch/dispatch.hpp"

namespace precision_probe::engine {

enum class Op {
  mm,
  scaled_mm,
  scaled_mm_v2,
  int_mm,
  linear,
  tanh,
  tanh_backward,
  log_softmax,
  log_softmax_backward,
  mul,
  mv,
  sum,
  reciprocal,
  isfinite,
  all,
  logical_not,
  maximum,
  eq,
  ne,
  where,
  abs,
  max,
  amp_update_scale,
  amp_unscale,
  fused_sgd,
  view_dtype,
  bitwise_xor,
  normal,
  random_from,
};

struct OpInfo {
  Op op;
  const char* name;      // "aten::mm"
  const char* overload;  // "" or "Tensor"
  const char* schema;    // native_functions.yaml's func: line
  Version since;         // the release whose C ABI can pass its arguments
};

inline constexpr std::array<OpInfo, 29> kOps = {{
    {Op::mm, "aten::mm", "", "mm(Tensor self, Tensor mat2) -> Tensor", {2, 9}},
    {Op::scaled_mm,
     "aten::_scaled_mm",
     "",
     "_scaled_mm(Tensor self, Tensor mat2, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
     "Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor",
     {2, 9}},
    {Op::scaled_mm_v2,
     "aten::_scaled_mm_v2",
     "",
     "_scaled_mm_v2(Tensor self, Tensor mat2, Tensor[] scale_a, int[] recipe_a, int[] swizzle_a, "
     "Tensor[] scale_b, int[] recipe_b, int[] swizzle_b, Tensor? bias, ScalarType? out_dtype, "
     "int[] contraction_dim=[], bool use_fast_accum=False) -> Tensor",
     {2, 10}},
    {Op::int_mm, "aten::_int_mm", "", "_int_mm(Tensor self, Tensor mat2) -> Tensor", {2, 9}},
    {Op::linear,
     "aten::linear",
     "",
     "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
     {2, 9}},
    {Op::tanh, "aten::tanh", "", "tanh(Tensor self) -> Tensor", {2, 9}},
    {Op::tanh_backward,
     "aten::tanh_backward",
     "",
     "tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
     {2, 9}},
    {Op::log_softmax,
     "aten::_log_softmax",
     "",
     "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
     {2, 9}},
    {Op::log_softmax_backward,
     "aten::_log_softmax_backward_data",
     "",
     "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType "
     "input_dtype) -> Tensor",
     {2, 9}},
    {Op::mul, "aten::mul", "Tensor", "mul.Tensor(Tensor self, Tensor other) -> Tensor", {2, 9}},
    {Op::mv, "aten::mv", "", "mv(Tensor self, Tensor vec) -> Tensor", {2, 9}},
    {Op::sum, "aten::sum", "", "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", {2, 9}},
    {Op::reciprocal, "aten::reciprocal", "", "reciprocal(Tensor self) -> Tensor", {2, 9}},
    {Op::isfinite, "aten::isfinite", "", "isfinite(Tensor self) -> Tensor", {2, 9}},
    {Op::all, "aten::all", "", "all(Tensor self) -> Tensor", {2, 9}},
    {Op::logical_not, "aten::logical_not", "", "logical_not(Tensor self) -> Tensor", {2, 9}},
    {Op::maximum, "aten::maximum", "", "maximum(Tensor self, Tensor other) -> Tensor", {2, 9}},
    {Op::eq, "aten::eq", "Tensor", "eq.Tensor(Tensor self, Tensor other) -> Tensor", {2, 9}},
    {Op::ne, "aten::ne", "Tensor", "ne.Tensor(Tensor self, Tensor other) -> Tensor", {2, 9}},
    {Op::where,
     "aten::where",
     "self",
     "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
     {2, 9}},
    {Op::abs, "aten::abs", "", "abs(Tensor self) -> Tensor", {2, 9}},
    {Op::max, "aten::max", "", "max(Tensor self) -> Tensor", {2, 9}},
    {Op::amp_update_scale,
     "aten::_amp_update_scale_",
     "",
     "_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float "
     "scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)",
     {2, 9}},
    {Op::amp_unscale,
     "aten::_amp_foreach_non_finite_check_and_unscale_",
     "",
     "_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor "
     "inv_scale) -> ()",
     {2, 10}},
    {Op::fused_sgd,
     "aten::_fused_sgd_",
     "",
     "_fused_sgd_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] momentum_buffer_list, *, "
     "float weight_decay, float momentum, float lr, float dampening, bool nesterov, bool "
     "maximize, bool is_first_step, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()",
     {2, 10}},
    {Op::view_dtype,
     "aten::view",
     "dtype",
     "view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)",
     {2, 9}},
    {Op::bitwise_xor,
     "aten::bitwise_xor_",
     "Tensor",
     "bitwise_xor_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     {2, 9}},
    {Op::normal,
     "aten::normal_",
     "",
     "normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> "
     "Tensor(a!)",
     {2, 9}},
    {Op::random_from,
     "aten::random_",
     "from",
     "random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> "
     "Tensor(a!)",
     {2, 9}},
}};

const OpInfo& op_info(Op op);

// Compares every schema of kOps with the `func:` lines of `yaml_text` (the image's
// native_functions.yaml); what differs or is missing, per operator ("" where it matches).
std::array<std::string, kOps.size()> compare_schemas(std::string_view yaml_text);

// Why `op` cannot be called with this LibTorch ("" where it can): its release lacks what the
// arguments need, or the image's schema differs from the engine's.
std::string op_problem(const Torch& torch, Op op);

// A check this release cannot run (the reason names the release and what it lacks): not tested,
// not failed.
struct CannotRun : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The first release whose _scaled_mm_v2 has a CPU kernel (native_functions.yaml: 2.10 and 2.11
// dispatch it to CUDA and XPU only, 2.12 adds CPU, per-tensor and row-wise scales).
inline constexpr Version kCpuScaledMmV2{2, 12};

// Why `op` cannot run on `device` with this LibTorch ("" where it can): op_problem, or an
// operator this release has no kernel for on the CPU (_scaled_mm_v2 before kCpuScaledMmV2).
std::string op_problem_on(const Torch& torch, Op op, Device device);

// Throws CannotRun where op_problem says so.
void require(const Torch& torch, Op op);

// --- The operators, typed -------------------------------------------------------------------

Tensor mm(const Tensor& a, const Tensor& b);
// _scaled_mm(a, b, scale_a, scale_b) -> out_dtype.
Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                 Scalar out);
// _scaled_mm_v2 with a recipe and swizzle per scale tensor (at::blas::ScalingType, SwizzleType).
Tensor scaled_mm_v2(const Tensor& a, const Tensor& b, const std::vector<Tensor>& scales_a,
                    const std::vector<std::int64_t>& recipe_a,
                    const std::vector<std::int64_t>& swizzle_a, const std::vector<Tensor>& scales_b,
                    const std::vector<std::int64_t>& recipe_b,
                    const std::vector<std::int64_t>& swizzle_b, Scalar out);
Tensor int_mm(const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias);
Tensor tanh(const Tensor& x);
Tensor tanh_backward(const Tensor& grad, const Tensor& output);
Tensor log_softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, std::int64_t dim,
                            Scalar input);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& m, const Tensor& v);
Tensor sum(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor all(const Tensor& x);
Tensor logical_not(const Tensor& x);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor abs(const Tensor& x);
Tensor max(const Tensor& x);
// a + alpha * b, through the device's generated C shim (aoti_torch_{cpu,cuda}_add_Tensor: the
// dispatcher takes no Scalar).
Tensor add(const Tensor& a, const Tensor& b, double alpha);
void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                      double growth, double backoff, std::int64_t interval);
void amp_unscale(const std::vector<Tensor>& grads, const Tensor& found_inf,
                 const Tensor& inv_scale);
// found_inf: nullptr for none.
void fused_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, double lr,
               const Tensor* found_inf);
Tensor view_as(const Tensor& x, Scalar scalar);
void bitwise_xor(const Tensor& x, const Tensor& other);
void normal(const Tensor& x);
void random_from(const Tensor& x, std::int64_t from, std::int64_t to);

}  // namespace precision_probe::engine
