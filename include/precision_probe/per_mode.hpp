#pragma once
// Values by precision mode: what a device, a soak, a worker's answers or a benchmark run hold per
// mode. One slot a mode, in an array indexed by the mode, iterated in the mode table's order:
//
//   PerMode<SmokeOutcome> smoke;
//   smoke[Mode::bf16] = outcome;                  // made where absent, as a map's
//   if (const SmokeOutcome* o = smoke.find(mode)) ...
//   for (const auto& [mode, o] : smoke) ...       // the modes that have one, in the table's order

#include <array>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "precision_probe/modes.hpp"

namespace precision_probe {

// One mode's value, as PerMode's iteration gives it. It refers to the value: `auto [mode, o]`
// changes the value through `o`.
template <class T>
struct ModeEntry {
  Mode mode;
  T& value;
};

template <class T>
class PerMode {
  using Slots = std::array<std::optional<T>, kModeTable.size()>;

  // Over the slots that hold a value, in the table's order.
  template <class SlotsT, class V>
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = ModeEntry<V>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = ModeEntry<V>;

    Iterator(SlotsT* slots, std::size_t index) : slots_(slots), index_(index) { skip_empty(); }
    ModeEntry<V> operator*() const { return {static_cast<Mode>(index_), *(*slots_)[index_]}; }
    Iterator& operator++() {
      ++index_;
      skip_empty();
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.index_ == b.index_; }
    friend bool operator!=(const Iterator& a, const Iterator& b) { return a.index_ != b.index_; }

   private:
    void skip_empty() {
      while (index_ < slots_->size() && !(*slots_)[index_]) ++index_;
    }
    SlotsT* slots_;
    std::size_t index_;
  };

 public:
  using iterator = Iterator<Slots, T>;
  using const_iterator = Iterator<const Slots, const T>;

  PerMode() = default;
  PerMode(std::initializer_list<std::pair<Mode, T>> entries) {
    for (const auto& [mode, value] : entries) set(mode, value);
  }

  bool contains(Mode mode) const { return slots_[mode_index(mode)].has_value(); }
  // The mode's value; nullptr where it has none.
  T* find(Mode mode) {
    std::optional<T>& slot = slots_[mode_index(mode)];
    return slot ? &*slot : nullptr;
  }
  const T* find(Mode mode) const {
    const std::optional<T>& slot = slots_[mode_index(mode)];
    return slot ? &*slot : nullptr;
  }
  // The mode's value; std::out_of_range where it has none.
  const T& at(Mode mode) const {
    const T* value = find(mode);
    if (value == nullptr) throw std::out_of_range("no value for " + std::string(mode_key(mode)));
    return *value;
  }
  // The mode's value, made (T's default) where it has none.
  T& operator[](Mode mode) {
    std::optional<T>& slot = slots_[mode_index(mode)];
    if (!slot) slot.emplace();
    return *slot;
  }
  // The mode's value set to `value`, whether or not it had one.
  T& set(Mode mode, T value) { return slots_[mode_index(mode)].emplace(std::move(value)); }
  void erase(Mode mode) { slots_[mode_index(mode)].reset(); }
  void clear() {
    for (std::optional<T>& slot : slots_) slot.reset();
  }
  // The modes that have a value.
  std::size_t size() const {
    std::size_t n = 0;
    for (const std::optional<T>& slot : slots_) n += slot ? 1 : 0;
    return n;
  }
  bool empty() const { return size() == 0; }

  iterator begin() { return {&slots_, 0}; }
  iterator end() { return {&slots_, slots_.size()}; }
  const_iterator begin() const { return {&slots_, 0}; }
  const_iterator end() const { return {&slots_, slots_.size()}; }

  friend bool operator==(const PerMode& a, const PerMode& b) { return a.slots_ == b.slots_; }
  friend bool operator!=(const PerMode& a, const PerMode& b) { return !(a == b); }

 private:
  Slots slots_;
};

}  // namespace precision_probe
