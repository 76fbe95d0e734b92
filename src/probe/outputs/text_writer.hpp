#pragma once
// The text report's pieces (text_printer.cpp, text_devices.cpp): colour, a writer of table rows
// and free text that wraps at the width, and the reasons the report has said.

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "precision_probe/report.hpp"
#include "probe/outputs/printers.hpp"

namespace precision_probe::text {

class Paint {
 public:
  explicit Paint(bool enabled) : enabled_(enabled) {}
  std::string operator()(std::string_view text, std::string_view code) const {
    if (!enabled_ || code.empty()) return std::string(text);
    return fmt::format("\033[{}m{}\033[0m", code, text);
  }
  // A status padded to `width`, coloured by what it means; a status this table does not know is
  // left plain.
  std::string status(Status s, int width) const;
  std::string bold(std::string_view text) const { return (*this)(text, "1"); }

 private:
  bool enabled_;
};

// Writes lines of fixed-width table cells and free text that wraps at the width.
class Writer {
 public:
  Writer(std::ostream& out, PrintStyle style)
      : out_(out), width_(static_cast<std::size_t>(style.width)), paint_(style.color) {}

  const Paint& paint() const { return paint_; }

  // Cells followed by a note: on the same line where it fits, else wrapped in the note's column,
  // else beneath the row, indented.
  void row(const std::string& cells, const std::string& note);
  // Free text after `prefix`, its continuation lines indented by `indent`.
  void text(const std::string& prefix, const std::string& body, std::size_t indent);
  // One line, without trailing spaces.
  void line(const std::string& text);

 private:
  static constexpr std::size_t kMinNoteColumn = 30;
  static constexpr std::size_t kNoteIndent = 6;
  std::ostream& out_;
  std::size_t width_;
  Paint paint_;
};

// "-" for none, else the value scaled and formatted.
std::string number_cell(const std::optional<double>& v, const char* spec_text, double scale = 1.0);

// The reasons the report has said, each with where it was said first ("GPU 0-7"): a reason is
// said once, and where it comes again the report points back to it.
using SaidReasons = std::map<std::string, std::string>;

// The devices' tables: identical GPUs share one; a device reported beside gated ones, not
// gated itself, gets a summary. Fills `said`.
void print_devices(const Report& r, Writer& w, SaidReasons& said);

}  // namespace precision_probe::text
