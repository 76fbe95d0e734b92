// node-feature-discovery's local feature file (the features.d directory): node labels a
// scheduler can select on, each GPU mode's node-wide verdict proven by this run. docs/nfd.md.

#include <algorithm>
#include <array>
#include <ostream>
#include <string>
#include <vector>

#include "strings/strings.hpp"
#include "probe/outputs/printers.hpp"
#include "probe/verdicts/verdict.hpp"

namespace precision_probe {

namespace {

// Node-wide, the worst verdict of the node's GPUs wins, in kStatuses' node order (worst first: a
// GPU that computes wrong numbers, then what the hardware lacks, then what a setting or the run
// kept from being proved). Native only where every GPU proved it.
int rank(Status status) { return status_info(status).node_rank; }

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

// One soak outcome as a status: a mismatch or a broken soak is failed, one cut off says what cut
// it, one that passed is native, one that did not run is not_tested.
Status soak_status(const SoakOutcome& o) {
  if (o.mismatches > 0) return Status::failed;
  if (o.ran && o.ok) return Status::native;
  if (o.error_kind == ErrorKind::none || o.error_kind == ErrorKind::not_run ||
      o.error_kind == ErrorKind::unavailable) {
    return Status::not_tested;
  }
  return status_of_broken_check(o.error_kind);
}

// "passed" where every GPU soaked at least one mode and each matched its golden results (and the
// like GPUs' goldens agreed); "failed" where one did not; what cut a soak off, or "not_tested"
// where a GPU soaked nothing; nothing when no GPU was asked to soak.
std::string node_soak(const std::vector<const DeviceReport*>& gpus) {
  bool asked = false;
  Status worst = Status::native;
  for (const DeviceReport* d : gpus) {
    if (!d->soak) continue;
    asked = true;
    Status device = d->soak->golden_disagreement.empty() ? Status::native : Status::failed;
    bool soaked = false;  // a mode that ran, or was cut off: not only modes that did not run
    for (const auto& [mode, o] : d->soak->modes) {
      const Status s = soak_status(o);
      if (s == Status::not_tested) continue;
      soaked = true;
      if (rank(s) < rank(device)) device = s;
    }
    if (!soaked && device == Status::native) device = Status::not_tested;
    if (rank(device) < rank(worst)) worst = device;
  }
  if (!asked) return "";
  return worst == Status::native ? "passed" : std::string(to_string(worst));
}

class NfdPrinter final : public Printer {
 public:
  explicit NfdPrinter(PrintStyle style) : style_(style) {}

 private:
  void do_print(const Report& r, std::ostream& out) const override {
    const std::int64_t from_s = style_.delivered_at_s > 0
                                    ? style_.delivered_at_s
                                    : parse_utc_timestamp(r.started_at).value_or(0) / 1000;
    out << "# +expiry-time=" << format_utc_timestamp(from_s + style_.label_ttl_s) << '\n';
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

  PrintStyle style_;
};

}  // namespace

std::unique_ptr<Printer> make_nfd_printer(PrintStyle style) {
  return std::make_unique<NfdPrinter>(style);
}

}  // namespace precision_probe
