#pragma once
// One printer per format, each taking the finished report. Printers never collect anything.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "precision_probe/report.hpp"
#include "probe/outputs/format.hpp"

namespace precision_probe {

struct PrintStyle {
  bool color = false;  // ANSI colour (text only)
  int width = 80;      // free text (notes, recommendations, fixes) wraps at this column
  std::int64_t label_ttl_s = 3600;  // nfd: how long the node's labels stand (--nfd-ttl)
  std::int64_t delivered_at_s = 0;  // nfd: when the labels are delivered (Unix seconds), from
                                    // which they expire; 0: the run's start
};

// The node labels' domain (nfd), the project's own: NFD accepts any domain but kubernetes.io's
// since v0.13, and GPU feature discovery owns nvidia.com/gpu.*.
inline constexpr std::string_view kNfdDomain = "precision-probe.io";
inline constexpr std::size_t kNfdMaxValue = 63;  // a Kubernetes label value's length

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
std::unique_ptr<Printer> make_nfd_printer(PrintStyle style);   // nfd_printer.cpp

// What NVML said of a GPU during its soak, in one line for people (text and Markdown):
// "60 samples · up to 58 °C · SM clock 1365-1980 MHz · up to 696 W · clock events: sw_power_cap ·
// ECC errors +0 corrected, +0 uncorrectable · remapped rows +0 · no Xid".
std::string telemetry_summary(const SoakTelemetry& t);

// Devices named together (text and Markdown): "GPU 0-7", "GPU 0,2,4-7", "GPU 3, CPU"; runs of
// three or more GPUs as a range.
std::string device_labels(const std::vector<const DeviceReport*>& devices);

}  // namespace precision_probe
