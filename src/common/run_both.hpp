#pragma once
// Two pieces of work on two cores: `beside` on a second thread (on this one where none can be
// started), `here` on this one. Both run to their end; an exception of either is thrown here once
// both are done (here's first), so that no thread is left running and none ends the program.

#include <exception>
#include <optional>
#include <system_error>
#include <thread>

namespace precision_probe {

template <class Beside, class Here>
void run_both(Beside&& beside, Here&& here) {
  std::exception_ptr beside_error;
  std::exception_ptr here_error;
  const auto guarded = [&] {
    try {
      beside();
    } catch (...) {
      beside_error = std::current_exception();
    }
  };
  std::optional<std::thread> second;
  try {
    second.emplace(guarded);
  } catch (const std::system_error&) {  // no thread to be had: one core does both
    guarded();
  }
  try {
    here();
  } catch (...) {
    here_error = std::current_exception();
  }
  if (second) second->join();
  if (here_error) std::rethrow_exception(here_error);
  if (beside_error) std::rethrow_exception(beside_error);
}

}  // namespace precision_probe
