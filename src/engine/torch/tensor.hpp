#pragma once
// A LibTorch tensor held through the C ABI: an owning AtenTensorHandle (move-only), made,
// viewed, copied and read with the C functions of c_api.hpp. Host data goes in and out through
// tensors over host memory (aoti_torch_create_tensor_from_blob) and aoti_torch_copy_, which also
// converts between element types.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/torch/torch.hpp"

namespace precision_probe::engine {

// Where a tensor lives: the CPU, or a CUDA device by index.
struct Device {
  bool cuda = false;
  int index = 0;
};

using Sizes = std::vector<std::int64_t>;

// A C call of LibTorch that failed: its message (torch.failure_text).
struct TorchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws TorchError with the failure's text when `rc` is not 0.
void check(const Torch& torch, torch_c::AOTITorchError rc, std::string_view what);

class Tensor {
 public:
  Tensor() = default;
  Tensor(const Torch& torch, torch_c::AtenTensorHandle handle);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor();

  bool defined() const { return handle_ != nullptr; }
  torch_c::AtenTensorHandle get() const { return handle_; }
  const Torch& torch() const { return *torch_; }
  // Another owning handle of the same tensor (the dispatcher takes its arguments' handles).
  Tensor share() const;

  Scalar scalar() const;
  Device device() const;
  Sizes sizes() const;
  Sizes strides() const;
  std::int64_t numel() const;
  // Bytes of its storage, and the address of its first element.
  std::int64_t storage_bytes() const;
  void* data() const;

  // A view of the same storage with other sizes, strides and offset (in elements).
  Tensor view(const Sizes& sizes, const Sizes& strides, std::int64_t offset = 0) const;
  // The transpose of a matrix, a view.
  Tensor t() const;

 private:
  const Torch* torch_ = nullptr;
  torch_c::AtenTensorHandle handle_ = nullptr;
};

// Row-major strides of `sizes`.
Sizes contiguous_strides(const Sizes& sizes);
std::int64_t element_count(const Sizes& sizes);

// An uninitialised tensor; `strides` empty: row-major. `pinned`: page-locked host memory.
Tensor empty(const Torch& torch, const Sizes& sizes, Scalar scalar, Device device,
             const Sizes& strides = {}, bool pinned = false);
// `bytes` (sizes and strides as given, elements of `scalar`) copied to `device`; a CPU target gets
// a tensor of its own. The host memory is read during the call only.
Tensor upload(const Torch& torch, const void* bytes, const Sizes& sizes, Scalar scalar,
              Device device, const Sizes& strides = {});
template <typename T>
Tensor upload(const Torch& torch, const std::vector<T>& host, const Sizes& sizes, Scalar scalar,
              Device device, const Sizes& strides = {}) {
  return upload(torch, static_cast<const void*>(host.data()), sizes, scalar, device, strides);
}
// `src` converted to `scalar` (on its device, its sizes, row-major).
Tensor converted(const Tensor& src, Scalar scalar);
// dst.copy_(src), converting the element type (non_blocking: queued behind the stream).
void copy_into(const Tensor& dst, const Tensor& src, bool non_blocking = false);
// A contiguous copy of the tensor's elements on the host, as raw bytes of its element type.
std::vector<std::uint8_t> download_bytes(const Tensor& t);
// Its elements on the host as float64 (floating types, and int8/int32/int64 values).
std::vector<double> download_values(const Tensor& t);
// Raw elements of `scalar` as float64.
std::vector<double> decode_values(Scalar scalar, const std::vector<std::uint8_t>& bytes);
// fill_ with one value.
void fill(const Tensor& t, double value);

// The peak bytes of the tensors made on this thread while a MemoryLedger lives (each storage
// counted once): what a training step holds, counted by the engine itself (the stable ABI has
// no reader of the caching allocator's statistics).
class MemoryLedger {
 public:
  MemoryLedger();
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;
  ~MemoryLedger();
  std::int64_t peak_bytes() const { return peak_; }

  // Called by Tensor: a handle of the storage at `base` was made (of `bytes`) or let go.
  void made(const void* base, std::int64_t bytes);
  void let_go(const void* base);

 private:
  struct Entry {
    const void* base;
    std::int64_t bytes;
    int handles;
  };
  std::vector<Entry> live_;
  std::int64_t current_ = 0;
  std::int64_t peak_ = 0;
  MemoryLedger* outer_ = nullptr;
};

}  // namespace precision_probe::engine
