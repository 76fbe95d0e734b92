// node-feature-discovery's local feature file (the features.d directory): node labels a
// scheduler can select on, each GPU mode's node-wide verdict proven by this run. docs/nfd.md.

#include <algorithm>
#include <array>
#include <ostream>
#include <string>
#include <vector>

#include "common/strings.hpp"
#include "probe/outputs/printers.hpp"

namespace precision_probe {

namespace {

// Node-wide, the worst verdict of the node's GPUs wins, in this order (worst first): a GPU that
// computes wrong numbers, then one that cannot run the mode, one that runs it slowly, one whose
// check did not run. Native only where every GPU proved it.
constexpr std::array<Status, 5> kWorstFirst = {
    Status::failed, Status::unsupported, Status::emulated, Status::not_tested, Status::native};

int rank(Status status) {
  return static_cast<int>(std::find(kWorstFirst.begin(), kWorstFirst.end(), status) -
                          kWorstFirst.begin());
}

// A Kubernetes label value: at most 63 characters of [A-Za-z0-9-_.], beginning and ending with
// a letter or digit; anything else becomes '-'.
std::string label_value(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
    out += ok ? c : '-';
  }
  if (out.size() > kNfdMaxValue) out.resize(kNfdMaxValue);
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  const auto first = std::find_if(out.begin(), out.end(), alnum);
  return {first, out.end()};
}

std::vector<const DeviceReport*> gpus_of(const Report& r) {
  std::vector<const DeviceReport*> gpus;
  for (const DeviceReport& d : r.devices) {
    if (d.kind == DeviceKind::cuda && d.index >= 0) gpus.push_back(&d);
  }
  return gpus;
}

Status node_verdict(const std::vector<const DeviceReport*>& gpus, Mode mode) {
  Status worst = Status::native;
  for (const DeviceReport* d : gpus) {
    const PrecisionResult* p = d->find(mode);
    const Status s = p != nullptr ? p->status : Status::not_tested;
    if (rank(s) < rank(worst)) worst = s;
  }
  return worst;
}

// The recommendation every GPU shares, or "mixed".
std::string node_recommendation(const std::vector<const DeviceReport*>& gpus) {
  const DType first = gpus.front()->recommendation.dtype;
  for (const DeviceReport* d : gpus) {
    if (d->recommendation.dtype != first) return "mixed";
  }
  return first == DType::none ? "none" : std::string(to_string(first));
}

// "passed" where every GPU's soak matched its golden results, "failed" where one did not; nothing
// when no GPU soaked.
std::string node_soak(const std::vector<const DeviceReport*>& gpus) {
  bool soaked = false;
  for (const DeviceReport* d : gpus) {
    if (!d->soak) continue;
    soaked = true;
    for (const auto& [mode, o] : d->soak->modes) {
      if (o.ran && !o.ok) return "failed";
    }
  }
  return soaked ? "passed" : "";
}

class NfdPrinter final : public Printer {
 public:
  explicit NfdPrinter(std::int64_t ttl_s) : ttl_s_(ttl_s) {}

 private:
  void do_print(const Report& r, std::ostream& out) const override {
    const std::int64_t started_ms = parse_utc_timestamp(r.started_at).value_or(0);
    out << "# +expiry-time=" << format_utc_timestamp(started_ms / 1000 + ttl_s_) << '\n';
    out << "# precision-probe " << label_value(r.tool.version) << ", report " << r.report_id
        << " (docs/nfd.md)\n";
    auto label = [&out](std::string_view name, std::string_view value) {
      out << kNfdDomain << '/' << name << '=' << label_value(value) << '\n';
    };
    label("probe.version", r.tool.version);
    label("probe.severity", overall_severity(r));
    if (!has_findings(r)) return;  // bad input: no verdict to label
    const std::vector<const DeviceReport*> gpus = gpus_of(r);
    label("gpu.count", std::to_string(gpus.size()));
    if (gpus.empty()) return;
    for (Mode mode : all_modes()) {
      label("gpu." + std::string(mode_key(mode)), to_string(node_verdict(gpus, mode)));
    }
    label("gpu.recommendation", node_recommendation(gpus));
    if (const std::string soak = node_soak(gpus); !soak.empty()) label("gpu.soak", soak);
  }

  std::int64_t ttl_s_;
};

}  // namespace

std::unique_ptr<Printer> make_nfd_printer(std::int64_t ttl_s) {
  return std::make_unique<NfdPrinter>(ttl_s);
}

}  // namespace precision_probe
