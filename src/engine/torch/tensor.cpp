#include "engine/torch/tensor.hpp"

#include <algorithm>
#include <cstring>

#include "engine/host/float_formats.hpp"
#include "engine/host/quantise.hpp"

namespace precision_probe::engine {

namespace {

thread_local MemoryLedger* t_ledger = nullptr;

const void* storage_base(const Tensor& t) {
  std::int64_t offset = 0;
  t.torch().c().aoti_torch_get_storage_offset(t.get(), &offset);
  return static_cast<const std::uint8_t*>(t.data()) - offset * scalar_info(t.scalar()).bytes;
}

Scalar scalar_of(const Torch& torch, std::int32_t code) {
  for (int s = 0; s <= static_cast<int>(Scalar::boolean); ++s) {
    if (torch.dtypes().code[s] == code) return static_cast<Scalar>(s);
  }
  throw TorchError("a tensor of an element type the engine does not know (code " +
                   std::to_string(code) + ")");
}

std::int32_t device_type(const Torch& torch, Device device) {
  return device.cuda ? torch.cuda_device() : torch.cpu_device();
}

std::int32_t code_of(const Torch& torch, Scalar scalar) {
  const std::int32_t code = torch.dtypes().of(scalar);
  if (code < 0) {
    throw TorchError(
        lacks(torch, std::string("the ") + std::string(scalar_info(scalar).name) + " element type",
              Version{2, 11}));
  }
  return code;
}

template <typename T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double decode_one(Scalar scalar, const std::uint8_t* p) {
  switch (scalar) {
    case Scalar::f64: return load<double>(p);
    case Scalar::f32: return load<float>(p);
    case Scalar::f16: return decode_fp16(load<std::uint16_t>(p));
    case Scalar::bf16: return decode_bf16(load<std::uint16_t>(p));
    case Scalar::e4m3: return quantise::decode_e4m3(*p);
    case Scalar::e5m2: return decode_e5m2(*p);
    case Scalar::e8m0: return quantise::decode_e8m0(*p);
    case Scalar::i8: return load<std::int8_t>(p);
    case Scalar::u8: return *p;
    case Scalar::i16: return load<std::int16_t>(p);
    case Scalar::i32: return load<std::int32_t>(p);
    case Scalar::i64: return static_cast<double>(load<std::int64_t>(p));
    case Scalar::boolean: return *p != 0 ? 1.0 : 0.0;
    case Scalar::fp4x2: break;
  }
  throw TorchError("no host decoding of " + std::string(scalar_info(scalar).name));
}

}  // namespace

void check(const Torch& torch, torch_c::AOTITorchError rc, std::string_view what) {
  if (rc != 0) throw TorchError(torch.failure_text(what));
}

Tensor::Tensor(const Torch& torch, torch_c::AtenTensorHandle handle)
    : torch_(&torch), handle_(handle) {
  if (t_ledger != nullptr && handle_ != nullptr)
    t_ledger->made(storage_base(*this), storage_bytes());
}

Tensor::Tensor(Tensor&& other) noexcept : torch_(other.torch_), handle_(other.handle_) {
  other.handle_ = nullptr;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Tensor old(std::move(*this));
    torch_ = other.torch_;
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

Tensor::~Tensor() {
  if (handle_ == nullptr) return;
  if (t_ledger != nullptr) t_ledger->let_go(storage_base(*this));
  torch_->c().aoti_torch_delete_tensor_object(handle_);
}

Tensor Tensor::share() const {
  torch_c::AtenTensorHandle copy = nullptr;
  check(*torch_, torch_->c().aoti_torch_new_tensor_handle(handle_, &copy), "new_tensor_handle");
  return Tensor(*torch_, copy);
}

Scalar Tensor::scalar() const {
  std::int32_t code = -1;
  check(*torch_, torch_->c().aoti_torch_get_dtype(handle_, &code), "get_dtype");
  return scalar_of(*torch_, code);
}

Device Tensor::device() const {
  std::int32_t type = 0;
  std::int32_t index = 0;
  check(*torch_, torch_->c().aoti_torch_get_device_type(handle_, &type), "get_device_type");
  check(*torch_, torch_->c().aoti_torch_get_device_index(handle_, &index), "get_device_index");
  return Device{type == torch_->cuda_device(), type == torch_->cuda_device() ? index : 0};
}

Sizes Tensor::sizes() const {
  std::int64_t dim = 0;
  std::int64_t* sizes = nullptr;
  check(*torch_, torch_->c().aoti_torch_get_dim(handle_, &dim), "get_dim");
  check(*torch_, torch_->c().aoti_torch_get_sizes(handle_, &sizes), "get_sizes");
  return Sizes(sizes, sizes + dim);
}

Sizes Tensor::strides() const {
  std::int64_t dim = 0;
  std::int64_t* strides = nullptr;
  check(*torch_, torch_->c().aoti_torch_get_dim(handle_, &dim), "get_dim");
  check(*torch_, torch_->c().aoti_torch_get_strides(handle_, &strides), "get_strides");
  return Sizes(strides, strides + dim);
}

std::int64_t Tensor::numel() const { return element_count(sizes()); }

std::int64_t Tensor::storage_bytes() const {
  std::int64_t bytes = 0;
  check(*torch_, torch_->c().aoti_torch_get_storage_size(handle_, &bytes), "get_storage_size");
  return bytes;
}

void* Tensor::data() const {
  void* data = nullptr;
  check(*torch_, torch_->c().aoti_torch_get_data_ptr(handle_, &data), "get_data_ptr");
  return data;
}

Tensor Tensor::view(const Sizes& sizes, const Sizes& strides, std::int64_t offset) const {
  torch_c::AtenTensorHandle view = nullptr;
  check(*torch_,
        torch_->c().aoti_torch__reinterpret_tensor(handle_, static_cast<std::int64_t>(sizes.size()),
                                                   sizes.data(), strides.data(), offset, &view),
        "reinterpret_tensor");
  return Tensor(*torch_, view);
}

Tensor Tensor::t() const {
  const Sizes s = sizes();
  const Sizes st = strides();
  std::int64_t offset = 0;
  torch_->c().aoti_torch_get_storage_offset(handle_, &offset);
  return view({s.at(1), s.at(0)}, {st.at(1), st.at(0)}, offset);
}

Sizes contiguous_strides(const Sizes& sizes) {
  Sizes strides(sizes.size(), 1);
  std::int64_t step = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = step;
    step *= std::max<std::int64_t>(sizes[i], 1);
  }
  return strides;
}

std::int64_t element_count(const Sizes& sizes) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) n *= s;
  return n;
}

Tensor empty(const Torch& torch, const Sizes& sizes, Scalar scalar, Device device,
             const Sizes& strides, bool pinned) {
  const Sizes st = strides.empty() ? contiguous_strides(sizes) : strides;
  const std::int64_t none = 0;
  torch_c::AtenTensorHandle h = nullptr;
  const auto make = pinned && torch.c().aoti_torch_empty_strided_pinned != nullptr
                        ? torch.c().aoti_torch_empty_strided_pinned
                        : torch.c().aoti_torch_empty_strided;
  check(torch,
        make(static_cast<std::int64_t>(sizes.size()), sizes.empty() ? &none : sizes.data(),
             st.empty() ? &none : st.data(), code_of(torch, scalar), device_type(torch, device),
             device.index, &h),
        "empty_strided");
  return Tensor(torch, h);
}

Tensor upload(const Torch& torch, const void* bytes, const Sizes& sizes, Scalar scalar,
              Device device, const Sizes& strides) {
  const Sizes st = strides.empty() ? contiguous_strides(sizes) : strides;
  const std::int64_t none = 0;
  torch_c::AtenTensorHandle h = nullptr;
  check(torch,
        torch.c().aoti_torch_create_tensor_from_blob(
            const_cast<void*>(bytes), static_cast<std::int64_t>(sizes.size()),
            sizes.empty() ? &none : sizes.data(), st.empty() ? &none : st.data(), 0,
            code_of(torch, scalar), torch.cpu_device(), 0, &h),
        "create_tensor_from_blob");
  const Tensor host(torch, h);
  Tensor out = empty(torch, sizes, scalar, device, st);
  copy_into(out, host);
  return out;
}

Tensor converted(const Tensor& src, Scalar scalar) {
  Tensor out = empty(src.torch(), src.sizes(), scalar, src.device());
  copy_into(out, src);
  return out;
}

void copy_into(const Tensor& dst, const Tensor& src, bool non_blocking) {
  check(dst.torch(), dst.torch().c().aoti_torch_copy_(dst.get(), src.get(), non_blocking ? 1 : 0),
        "copy_");
}

std::vector<std::uint8_t> download_bytes(const Tensor& t) {
  const Sizes sizes = t.sizes();
  const Scalar scalar = t.scalar();
  std::vector<std::uint8_t> bytes(
      static_cast<std::size_t>(element_count(sizes) * scalar_info(scalar).bytes));
  const Torch& torch = t.torch();
  const Sizes st = contiguous_strides(sizes);
  const std::int64_t none = 0;
  torch_c::AtenTensorHandle h = nullptr;
  check(torch,
        torch.c().aoti_torch_create_tensor_from_blob(
            bytes.data(), static_cast<std::int64_t>(sizes.size()),
            sizes.empty() ? &none : sizes.data(), st.empty() ? &none : st.data(), 0,
            code_of(torch, scalar), torch.cpu_device(), 0, &h),
        "create_tensor_from_blob");
  const Tensor host(torch, h);
  copy_into(host, t);
  return bytes;
}

std::vector<double> download_values(const Tensor& t) {
  const Scalar scalar = t.scalar();
  const std::vector<std::uint8_t> bytes = download_bytes(t);
  return decode_values(scalar, bytes);
}

std::vector<double> decode_values(Scalar scalar, const std::vector<std::uint8_t>& bytes) {
  const std::size_t size = static_cast<std::size_t>(scalar_info(scalar).bytes);
  std::vector<double> values(bytes.size() / size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint8_t* p = bytes.data() + i * size;
    values[i] = decode_one(scalar, p);
  }
  return values;
}

void fill(const Tensor& t, double value) {
  check(t.torch(), t.torch().c().aoti_torch_aten_fill__Scalar(t.get(), value), "fill_");
}

MemoryLedger::MemoryLedger() : outer_(t_ledger) { t_ledger = this; }

MemoryLedger::~MemoryLedger() { t_ledger = outer_; }

void MemoryLedger::made(const void* base, std::int64_t bytes) {
  for (Entry& e : live_) {
    if (e.base == base) {
      ++e.handles;
      return;
    }
  }
  live_.push_back({base, bytes, 1});
  current_ += bytes;
  peak_ = std::max(peak_, current_);
}

void MemoryLedger::let_go(const void* base) {
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (live_[i].base != base || --live_[i].handles > 0) continue;
    current_ -= live_[i].bytes;
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

}  // namespace precision_probe::engine
