#include "engine/torch/ops.hpp"

#include <fmt/format.h>

#include "strings/strings.hpp"

namespace precision_probe::engine {

namespace {

// Spaces collapsed: a schema as the yaml may lay it out.
std::string normalised(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : trim(text)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// "mm" or "mul.Tensor": the name a schema starts with, up to its "(".
std::string_view schema_name(std::string_view schema) { return schema.substr(0, schema.find('(')); }

}  // namespace

const OpInfo& op_info(Op op) { return kOps.at(static_cast<std::size_t>(op)); }

std::array<std::string, kOps.size()> compare_schemas(std::string_view yaml_text) {
  std::array<std::string, kOps.size()> problems;
  std::array<bool, kOps.size()> seen{};
  constexpr std::string_view kFunc = "- func: ";
  std::size_t at = 0;
  while ((at = yaml_text.find(kFunc, at)) != std::string_view::npos) {
    const std::size_t begin = at + kFunc.size();
    const std::size_t end = yaml_text.find('\n', begin);
    const std::string_view line = yaml_text.substr(begin, end - begin);
    at = begin;
    for (std::size_t i = 0; i < kOps.size(); ++i) {
      if (schema_name(line) != schema_name(kOps[i].schema)) continue;
      seen[i] = true;
      if (normalised(line) != normalised(kOps[i].schema)) {
        problems[i] = fmt::format("the image's schema of {} is `{}`; the engine calls `{}`",
                                  kOps[i].name, normalised(line), kOps[i].schema);
      }
    }
  }
  for (std::size_t i = 0; i < kOps.size(); ++i) {
    if (!seen[i]) {
      problems[i] =
          fmt::format("the image's native_functions.yaml has no {} (the engine calls `{}`)",
                      kOps[i].name, kOps[i].schema);
    }
  }
  return problems;
}

std::string op_problem(const Torch& torch, Op op) {
  const OpInfo& info = op_info(op);
  if (torch.release() < info.since || (info.since >= Version{2, 10} && !torch.features().lists)) {
    return lacks(torch, fmt::format("list arguments for {}", info.name), info.since);
  }
  return torch.schema_problem(static_cast<std::size_t>(op));
}

std::string op_problem_on(const Torch& torch, Op op, Device device) {
  std::string problem = op_problem(torch, op);
  if (problem.empty() && op == Op::scaled_mm_v2 && !device.cuda &&
      torch.release() < kCpuScaledMmV2) {
    problem = fmt::format("this LibTorch ({}) has no CPU kernel for {} (it came in {})",
                          torch.release_text(), op_info(op).name, kCpuScaledMmV2.to_string());
  }
  return problem;
}

void require(const Torch& torch, Op op) {
  if (std::string problem = op_problem(torch, op); !problem.empty()) throw CannotRun(problem);
}

Tensor mm(const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::mm)).tensor(a).tensor(b).run1();
}

Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                 Scalar out) {
  return Call(a.torch(), op_info(Op::scaled_mm))
      .tensor(a)
      .tensor(b)
      .tensor(scale_a)
      .tensor(scale_b)
      .none()
      .none()
      .optional_dtype(out)
      .boolean(false)
      .run1();
}

Tensor scaled_mm_v2(const Tensor& a, const Tensor& b, const std::vector<Tensor>& scales_a,
                    const std::vector<std::int64_t>& recipe_a,
                    const std::vector<std::int64_t>& swizzle_a, const std::vector<Tensor>& scales_b,
                    const std::vector<std::int64_t>& recipe_b,
                    const std::vector<std::int64_t>& swizzle_b, Scalar out) {
  Call call(a.torch(), op_info(Op::scaled_mm_v2));
  call.tensor(a).tensor(b).tensors(scales_a);
  call.int_list(recipe_a).int_list(swizzle_a).tensors(scales_b).int_list(recipe_b).int_list(
      swizzle_b);
  return call.none().optional_dtype(out).int_list({}).boolean(false).run1();
}

Tensor int_mm(const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::int_mm)).tensor(a).tensor(b).run1();
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return Call(input.torch(), op_info(Op::linear))
      .tensor(input)
      .tensor(weight)
      .optional_tensor(bias)
      .run1();
}

Tensor tanh(const Tensor& x) { return Call(x.torch(), op_info(Op::tanh)).tensor(x).run1(); }

Tensor tanh_backward(const Tensor& grad, const Tensor& output) {
  return Call(grad.torch(), op_info(Op::tanh_backward)).tensor(grad).tensor(output).run1();
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return Call(x.torch(), op_info(Op::log_softmax)).tensor(x).i64(dim).boolean(false).run1();
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, std::int64_t dim,
                            Scalar input) {
  return Call(grad.torch(), op_info(Op::log_softmax_backward))
      .tensor(grad)
      .tensor(output)
      .i64(dim)
      .dtype(input)
      .run1();
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::mul)).tensor(a).tensor(b).run1();
}

Tensor mv(const Tensor& m, const Tensor& v) {
  return Call(m.torch(), op_info(Op::mv)).tensor(m).tensor(v).run1();
}

Tensor sum(const Tensor& x) { return Call(x.torch(), op_info(Op::sum)).tensor(x).none().run1(); }

Tensor reciprocal(const Tensor& x) {
  return Call(x.torch(), op_info(Op::reciprocal)).tensor(x).run1();
}

Tensor isfinite(const Tensor& x) { return Call(x.torch(), op_info(Op::isfinite)).tensor(x).run1(); }

Tensor all(const Tensor& x) { return Call(x.torch(), op_info(Op::all)).tensor(x).run1(); }

Tensor logical_not(const Tensor& x) {
  return Call(x.torch(), op_info(Op::logical_not)).tensor(x).run1();
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::maximum)).tensor(a).tensor(b).run1();
}

Tensor eq(const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::eq)).tensor(a).tensor(b).run1();
}

Tensor ne(const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::ne)).tensor(a).tensor(b).run1();
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return Call(a.torch(), op_info(Op::where)).tensor(condition).tensor(a).tensor(b).run1();
}

Tensor abs(const Tensor& x) { return Call(x.torch(), op_info(Op::abs)).tensor(x).run1(); }

Tensor max(const Tensor& x) { return Call(x.torch(), op_info(Op::max)).tensor(x).run1(); }

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  const Torch& torch = a.torch();
  const auto shim =
      a.device().cuda ? torch.c().aoti_torch_cuda_add_Tensor : torch.c().aoti_torch_cpu_add_Tensor;
  torch_c::AtenTensorHandle out = nullptr;
  check(torch, shim(a.get(), b.get(), alpha, &out), "add_Tensor");
  return Tensor(torch, out);
}

void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                      double growth, double backoff, std::int64_t interval) {
  Call(scale.torch(), op_info(Op::amp_update_scale))
      .tensor(scale)
      .tensor(growth_tracker)
      .tensor(found_inf)
      .f64(growth)
      .f64(backoff)
      .i64(interval)
      .run(1);
}

void amp_unscale(const std::vector<Tensor>& grads, const Tensor& found_inf,
                 const Tensor& inv_scale) {
  Call(found_inf.torch(), op_info(Op::amp_unscale))
      .tensors(grads)
      .tensor(found_inf)
      .tensor(inv_scale)
      .run(0);
}

void fused_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, double lr,
               const Tensor* found_inf) {
  Call call(params.front().torch(), op_info(Op::fused_sgd));
  call.tensors(params).tensors(grads).tensors(std::vector<Tensor>{});
  call.f64(0.0).f64(0.0).f64(lr).f64(0.0).boolean(false).boolean(false).boolean(false).none();
  if (found_inf != nullptr) {
    call.optional_tensor(*found_inf);
  } else {
    call.none();
  }
  call.run(0);
}

Tensor view_as(const Tensor& x, Scalar scalar) {
  return Call(x.torch(), op_info(Op::view_dtype)).tensor(x).dtype(scalar).run1();
}

void bitwise_xor(const Tensor& x, const Tensor& other) {
  Call(x.torch(), op_info(Op::bitwise_xor)).tensor(x).tensor(other).run(1);
}

void normal(const Tensor& x) {
  Call(x.torch(), op_info(Op::normal)).tensor(x).f64(0.0).f64(1.0).none().run(1);
}

void random_from(const Tensor& x, std::int64_t from, std::int64_t to) {
  Call call(x.torch(), op_info(Op::random_from));
  call.tensor(x).i64(from);
  call.optional_i64(to).none().run(1);
}

}  // namespace precision_probe::engine
