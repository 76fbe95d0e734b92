#pragma once
// An operator called by name through LibTorch's dispatcher (torch_call_dispatcher from 2.10,
// aoti_torch_call_dispatcher before), its arguments boxed as StableIValues in the schema's order:
// a tensor is a new owning handle (the dispatcher takes it), an int, float or bool its bits, a
// dtype its aoti_torch_dtype code, None 0, an optional with a value a heap StableIValue LibTorch
// frees, a list a StableListHandle (2.10). Scalars and strings cannot be passed: the operators
// the engine calls take none (ops.hpp). The operator must be in ops.hpp's table, whose schemas are
// checked against the image's native_functions.yaml before anything is called.

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "engine/torch/tensor.hpp"

namespace precision_probe::engine {

struct OpInfo;  // ops.hpp

class Call {
 public:
  Call(const Torch& torch, const OpInfo& op);
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call();  // frees what was boxed and not handed to LibTorch

  Call& tensor(const Tensor& t);
  Call& none();
  Call& optional_tensor(const Tensor& t);
  Call& i64(std::int64_t v);
  Call& optional_i64(std::int64_t v);
  Call& f64(double v);
  Call& boolean(bool v);
  Call& dtype(Scalar s);
  Call& optional_dtype(Scalar s);
  Call& tensors(std::initializer_list<const Tensor*> ts);  // Tensor[] (2.10)
  Call& tensors(const std::vector<Tensor>& ts);
  Call& int_list(const std::vector<std::int64_t>& vs);  // int[] (2.10)
  Call& bools(std::initializer_list<bool> vs);          // bool[N] (2.10)

  // Calls the operator; the tensors it returns (its first `returns` results). Throws
  // TorchError with LibTorch's message, or with what this release lacks.
  std::vector<Tensor> run(std::size_t returns);
  Tensor run1();

 private:
  torch_c::StableIValue heap(torch_c::StableIValue inner);
  torch_c::StableListHandle list(std::size_t reserve);

  const Torch& torch_;
  const OpInfo& op_;
  std::vector<torch_c::StableIValue> stack_;
  // What is freed if the call is never made: tensor handles, heap values, lists.
  std::vector<torch_c::AtenTensorHandle> handles_;
  std::vector<torch_c::StableIValue*> heaps_;
  std::vector<torch_c::StableListHandle> lists_;
  bool called_ = false;
};

}  // namespace precision_probe::engine
