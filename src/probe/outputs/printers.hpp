#pragma once
// One printer per format, each taking the finished report. Printers never collect anything.

#include <iosfwd>
#include <memory>

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

}  // namespace precision_probe
