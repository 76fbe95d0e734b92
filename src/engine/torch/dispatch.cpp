#include "engine/torch/dispatch.hpp"

#include <cstring>

#include "engine/torch/ops.hpp"

namespace precision_probe::engine {

namespace {

template <typename T>
torch_c::StableIValue bits(T value) {
  static_assert(sizeof(T) <= sizeof(torch_c::StableIValue));
  torch_c::StableIValue out = 0;
  std::memcpy(&out, &value, sizeof value);
  return out;
}

torch_c::StableIValue pointer(const void* p) {
  return static_cast<torch_c::StableIValue>(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace

Call::Call(const Torch& torch, const OpInfo& op) : torch_(torch), op_(op) { require(torch, op.op); }

Call::~Call() {
  if (called_) return;
  for (torch_c::AtenTensorHandle h : handles_) torch_.c().aoti_torch_delete_tensor_object(h);
  for (torch_c::StableIValue* p : heaps_) delete p;
  for (torch_c::StableListHandle l : lists_) torch_.c().torch_delete_list(l);
}

Call& Call::tensor(const Tensor& t) {
  torch_c::AtenTensorHandle h = nullptr;
  check(torch_, torch_.c().aoti_torch_new_tensor_handle(t.get(), &h), "new_tensor_handle");
  handles_.push_back(h);
  stack_.push_back(pointer(h));
  return *this;
}

Call& Call::none() {
  stack_.push_back(0);
  return *this;
}

torch_c::StableIValue Call::heap(torch_c::StableIValue inner) {
  // LibTorch frees it with delete, in every release (2.13's torch_delete_stable_ivalue too, which
  // takes what extensions built against 2.10's headers allocate this way).
  auto* p = new torch_c::StableIValue(inner);
  heaps_.push_back(p);
  return pointer(p);
}

Call& Call::optional_tensor(const Tensor& t) {
  tensor(t);
  stack_.back() = heap(stack_.back());
  return *this;
}

Call& Call::i64(std::int64_t v) {
  stack_.push_back(bits(v));
  return *this;
}

Call& Call::optional_i64(std::int64_t v) {
  stack_.push_back(heap(bits(v)));
  return *this;
}

Call& Call::f64(double v) {
  stack_.push_back(bits(v));
  return *this;
}

Call& Call::boolean(bool v) {
  stack_.push_back(bits(v));
  return *this;
}

Call& Call::dtype(Scalar s) {
  const std::int32_t code = torch_.dtypes().of(s);
  if (code < 0) throw CannotRun(lacks(torch_, std::string(scalar_info(s).name), Version{2, 11}));
  stack_.push_back(bits(code));
  return *this;
}

Call& Call::optional_dtype(Scalar s) {
  dtype(s);
  stack_.back() = heap(stack_.back());
  return *this;
}

torch_c::StableListHandle Call::list(std::size_t reserve) {
  if (!torch_.features().lists) throw CannotRun(lacks(torch_, "list arguments", Version{2, 10}));
  torch_c::StableListHandle l = nullptr;
  check(torch_, torch_.c().torch_new_list_reserve_size(reserve, &l), "new_list");
  lists_.push_back(l);
  stack_.push_back(pointer(l));
  return l;
}

Call& Call::tensors(std::initializer_list<const Tensor*> ts) {
  const torch_c::StableListHandle l = list(ts.size());
  for (const Tensor* t : ts) {
    torch_c::AtenTensorHandle h = nullptr;
    check(torch_, torch_.c().aoti_torch_new_tensor_handle(t->get(), &h), "new_tensor_handle");
    // Owned by the list from here: deleting the list (an uncalled Call) leaks the handle, never
    // frees it twice.
    check(torch_, torch_.c().torch_list_push_back(l, pointer(h)), "list_push_back");
  }
  return *this;
}

Call& Call::tensors(const std::vector<Tensor>& ts) {
  const torch_c::StableListHandle l = list(ts.size());
  for (const Tensor& t : ts) {
    torch_c::AtenTensorHandle h = nullptr;
    check(torch_, torch_.c().aoti_torch_new_tensor_handle(t.get(), &h), "new_tensor_handle");
    check(torch_, torch_.c().torch_list_push_back(l, pointer(h)), "list_push_back");
  }
  return *this;
}

Call& Call::int_list(const std::vector<std::int64_t>& vs) {
  const torch_c::StableListHandle l = list(vs.size());
  for (std::int64_t v : vs) check(torch_, torch_.c().torch_list_push_back(l, bits(v)), "push");
  return *this;
}

Call& Call::bools(std::initializer_list<bool> vs) {
  const torch_c::StableListHandle l = list(vs.size());
  for (bool v : vs) check(torch_, torch_.c().torch_list_push_back(l, bits(v)), "push");
  return *this;
}

std::vector<Tensor> Call::run(std::size_t returns) {
  if (stack_.size() < returns) stack_.resize(returns, 0);
  called_ = true;  // whatever happens now, LibTorch owns what was boxed
  const torch_c::AOTITorchError rc =
      torch_.features().versioned_dispatcher
          ? torch_.c().torch_call_dispatcher(op_.name, op_.overload, stack_.data(),
                                             torch_c::kBuildVersion)
          : torch_.c().aoti_torch_call_dispatcher(op_.name, op_.overload, stack_.data());
  check(torch_, rc, op_.name);
  std::vector<Tensor> out;
  out.reserve(returns);
  for (std::size_t i = 0; i < returns; ++i) {
    // A StableIValue holds a returned tensor's handle as its bits.
    out.emplace_back(
        torch_, reinterpret_cast<torch_c::AtenTensorHandle>(  // NOLINT(performance-no-int-to-ptr)
                    static_cast<std::uintptr_t>(stack_[i])));
  }
  return out;
}

Tensor Call::run1() { return std::move(run(1).front()); }

}  // namespace precision_probe::engine
