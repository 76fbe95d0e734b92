// The printer for each format; JSON is the report library's document as it is.

#include "probe/outputs/printers.hpp"

#include <ostream>

#include "precision_probe/report_json.hpp"

namespace precision_probe {
namespace {

class JsonPrinter final : public Printer {
  void do_print(const Report& report, std::ostream& out) const override {
    out << report_to_json(report) << '\n';
  }
};

}  // namespace

std::unique_ptr<Printer> make_printer(Format format, PrintStyle style) {
  switch (format) {
    case Format::json: return std::make_unique<JsonPrinter>();
    case Format::markdown: return make_markdown_printer();
    case Format::prometheus: return make_prometheus_printer();
    case Format::text: return make_text_printer(style);
  }
  return make_text_printer(style);
}

}  // namespace precision_probe
