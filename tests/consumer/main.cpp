// Reads a report (a file, or stdin with "-") and prints one line per device: its natively usable
// precisions. Exits 1 with the reader's error on a file that is not a report.

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "precision_probe/report_json.hpp"

int main(int argc, char** argv) {
  namespace pp = precision_probe;
  if (argc != 2) {
    std::cerr << "usage: report-consumer REPORT.json\n";
    return 2;
  }
  std::ifstream file(argv[1]);
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const pp::Expected<pp::Report> report = pp::read_report_json(text);
  if (!report) {
    std::cerr << "report-consumer: " << report.error() << '\n';
    return 1;
  }
  std::cout << "exit " << report->exit_code << '\n';
  for (const pp::DeviceReport& d : report->devices) {
    std::ostringstream native;
    for (const auto& [mode, p] : d.precisions) {
      if (p.status == pp::Status::native) native << ' ' << pp::mode_key(mode);
    }
    std::cout << d.label() << ":" << native.str() << '\n';
  }
  // And written back as the probe writes it.
  std::cout << (pp::report_to_json(*report) == text.substr(0, text.find_last_not_of('\n') + 1)
                    ? "same document\n"
                    : "a different document\n");
  return 0;
}
