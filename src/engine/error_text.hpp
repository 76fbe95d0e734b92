#pragma once
// A LibTorch exception as one readable line: c10::Error without its C++ backtrace.

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace precision_probe::engine {

inline std::string error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  const std::size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  // LibTorch's out-of-memory message goes on about its allocator for several hundred characters:
  // what matters ends with how much was free ("... of which 25.50 MiB is free.").
  const std::size_t free_at = text.find(" is free.");
  if (text.rfind("CUDA out of memory", 0) == 0 && free_at != std::string::npos) {
    text.resize(free_at + 9);
  }
  constexpr std::size_t kMax = 400;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace precision_probe::engine
