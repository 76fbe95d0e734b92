#pragma once
// One printer per format, each taking the finished report. Printers never collect anything.

#include <iosfwd>
#include <memory>
#include <string>

#include "probe/cli/options.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

struct PrintStyle {
  bool color = false;  // ANSI colour (text only)
  int width = 80;      // free text (notes, recommendations, fixes) wraps at this column
};

class Printer {
 public:
  virtual ~Printer() = default;
  void print(const Report& report, std::ostream& out) const { do_print(report, out); }

 private:
  virtual void do_print(const Report& report, std::ostream& out) const = 0;
};

std::unique_ptr<Printer> make_printer(Format format, PrintStyle style);

// One per format (printers.cpp picks among them).
std::unique_ptr<Printer> make_text_printer(PrintStyle style);  // text_printer.cpp
std::unique_ptr<Printer> make_markdown_printer();              // markdown_printer.cpp
std::unique_ptr<Printer> make_prometheus_printer();            // prometheus_printer.cpp

// What NVML said of a GPU during its soak, in one line for people (text and Markdown):
// "60 samples · up to 58 °C · SM clock 1365-1980 MHz · up to 696 W · clock events: sw_power_cap ·
// ECC errors +0 corrected, +0 uncorrectable · remapped rows +0 · no Xid".
std::string telemetry_summary(const SoakTelemetry& t);

}  // namespace precision_probe
