// The human report: a header, the devices' tables (text_devices.cpp), collectives, diagnostics,
// requirements and the verdict; where no kernel ran, a last line that says so.

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "probe/outputs/printers.hpp"
#include "probe/outputs/text_writer.hpp"
#include "probe/verdicts/gate.hpp"

namespace precision_probe {

namespace text {

void Writer::row(const std::string& cells, const std::string& note) {
  const std::size_t used = visible_width(cells) + 2;
  if (note.empty()) {
    line(cells);
  } else if (used + visible_width(note) <= width_) {
    line(cells + "  " + note);
  } else if (width_ >= used + kMinNoteColumn) {
    const auto lines = wrap(note, width_ - used);
    line(cells + "  " + lines.front());
    for (std::size_t i = 1; i < lines.size(); ++i) line(std::string(used, ' ') + lines[i]);
  } else {
    line(cells);
    text(std::string(kNoteIndent, ' '), note, kNoteIndent);
  }
}

void Writer::text(const std::string& prefix, const std::string& body, std::size_t indent) {
  const std::size_t first = visible_width(prefix);
  const std::size_t room = width_ > first + 20 ? width_ - first : 20;
  const auto first_lines = wrap(body, room);
  line(prefix + first_lines.front());
  if (first_lines.size() < 2) return;
  // The rest, rewrapped at the continuation width.
  std::string rest;
  for (std::size_t i = 1; i < first_lines.size(); ++i) rest += (i > 1 ? " " : "") + first_lines[i];
  const std::size_t cont = width_ > indent + 20 ? width_ - indent : 20;
  for (const std::string& l : wrap(rest, cont)) line(std::string(indent, ' ') + l);
}

void Writer::line(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == ' ') --end;
  out_ << std::string_view(text).substr(0, end) << '\n';
}

std::string number_cell(const std::optional<double>& v, const char* spec_text, double scale) {
  if (!v) return "-";
  return fmt::format(fmt::runtime(spec_text), *v * scale);
}

}  // namespace text

namespace {

using text::Writer;

// "LibTorch 2.11.0+cu130 (CUDA 13.0, cuDNN 9.19.0, kernels: sm_80 sm_90; extras: sm_89) · loaded
// from /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so" (where a worker loaded it; "read
// from the image's files: DIR" where none did)
std::string stack_line(const StackInfo& s, const std::string& what) {
  std::string line =
      fmt::format("{} {} ({}{}{}{})", what, s.libtorch_version,
                  s.cuda_built ? "CUDA " + version_or_empty(s.cuda_version)
                               : (s.rocm_version.empty() ? "CPU only" : "ROCm " + s.rocm_version),
                  s.cudnn_version.empty() ? "" : ", cuDNN " + s.cudnn_version,
                  s.arch_list.empty() ? "" : ", kernels: " + join(s.arch_list, " "),
                  s.arch_extras.empty() ? "" : "; extras: " + join(s.arch_extras, " "));
  if (!s.library.empty() && s.load_error.empty()) {
    line += " · loaded from " + s.library;
  } else if (s.source == "image files") {
    line += " · read from the image's files: " + s.location;
  }
  return line;
}

void print_header(const Report& r, Writer& w) {
  // The node, and the kernel's hostname where it is another (a Kubernetes pod's name).
  const std::string hostname =
      r.host.node() != r.host.hostname ? "hostname " + r.host.hostname + ", " : "";
  std::string first = w.paint().bold(fmt::format("{} {}", r.tool.name, r.tool.version)) + " on " +
                      r.host.node() + " (" + hostname +
                      (r.host.os.empty() ? r.host.machine : r.host.os) +
                      (r.host.container ? ", container" : "") + ")";
  if (r.run.command == Command::probe) first += fmt::format(" · {:.2f} s", r.duration_ms / 1000.0);
  w.text("", first, 4);
  if (r.stack.available) {
    w.text("", stack_line(r.stack, "LibTorch"), 4);
  } else {
    w.text("LibTorch: ", r.stack.error.empty() ? "unknown" : r.stack.error, 4);
  }
  // The image's own PyTorch, where it is not what the verdicts rest on.
  if (r.image_stack && r.image_stack->available && r.stack.source != "image files") {
    w.text("", stack_line(*r.image_stack, "this image's PyTorch"), 4);
  }
  if (r.run.command == Command::probe) {
    if (r.driver.status == DriverStatus::ok) {
      w.text("",
             fmt::format("driver {} (supports CUDA {}) · {}", r.driver.version,
                         r.driver.cuda_version ? r.driver.cuda_version->to_string() : "?",
                         r.driver.message),
             4);
    } else {
      w.text("driver: ", fmt::format("{} · {}", to_string(r.driver.status), r.driver.message), 4);
    }
  }
  w.line("");
}

std::string mib(std::int64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// "yes, performance rank 0, native atomics"
std::string peer_attributes(const PeerLink& p) {
  return fmt::format(
      "{}{}{}", p.access ? "yes" : "no",
      p.performance_rank ? fmt::format(", performance rank {}", *p.performance_rank) : "",
      p.native_atomics ? ", native atomics" : "");
}

// Peer access between the GPUs: one line where every pair is alike, else a line per kind of link
// with the pairs that have it ("0->1, 1->0").
void print_peers(const std::vector<PeerLink>& peers, Writer& w) {
  if (peers.empty()) return;
  std::vector<std::pair<std::string, std::vector<std::string>>> kinds;
  std::vector<int> gpus;
  for (const PeerLink& p : peers) {
    for (int gpu : {p.from, p.to}) {
      if (std::find(gpus.begin(), gpus.end(), gpu) == gpus.end()) gpus.push_back(gpu);
    }
    const std::string attributes = peer_attributes(p);
    auto same = std::find_if(kinds.begin(), kinds.end(),
                             [&](const auto& k) { return k.first == attributes; });
    const std::string pair = fmt::format("{}->{}", p.from, p.to);
    if (same == kinds.end()) {
      kinds.push_back({attributes, {pair}});
    } else {
      same->second.push_back(pair);
    }
  }
  const std::size_t n = gpus.size();
  if (kinds.size() == 1 && n > 1 && peers.size() == n * (n - 1)) {
    const std::string between = n == 2 ? fmt::format("GPUs {} and {} both ways", gpus[0], gpus[1])
                                       : fmt::format("every pair of the {} GPUs", n);
    w.text("  ", fmt::format("peer access between {}: {}", between, kinds[0].first), 4);
    return;
  }
  for (const auto& [attributes, pairs] : kinds) {
    w.text("  ", fmt::format("peer access {}: GPU {}", attributes, join(pairs, ", ")), 4);
  }
}

void print_collectives(const CollectivesReport& c, Writer& w) {
  std::string heading = w.paint().bold("collectives") +
                        (c.nccl_version.empty() ? "" : " (NCCL " + c.nccl_version + ")");
  if (!c.devices.empty()) {
    std::vector<std::string> ids;
    for (int d : c.devices) ids.push_back(std::to_string(d));
    heading += " · GPUs " + join(ids, ",");
  }
  w.text("", heading, 4);
  if (c.requested) {
    w.row("  all_reduce  " + w.paint().status(c.status, 12), c.reason);
    if (!c.all_reduce.empty()) {
      w.line(fmt::format("  {:<6} {:<6} {:>9} {:>10} {:>12} {:>12}  {}", "dtype", "exact", "size",
                         "time", "algbw GB/s", "busbw GB/s", "note"));
    }
    for (const CollectiveOutcome& a : c.all_reduce) {
      w.row(fmt::format("  {:<6} {:<6} {:>9} {:>10} {:>12} {:>12}", to_string(a.dtype),
                        a.ran ? (a.ok ? "yes" : "NO") : "-", mib(a.bytes),
                        text::number_cell(a.time_ms, "{:.3f} ms"),
                        text::number_cell(a.algbw_gbps, "{:.1f}"),
                        text::number_cell(a.busbw_gbps, "{:.1f}")),
            a.error);
    }
    const bool one_rank =
        std::any_of(c.all_reduce.begin(), c.all_reduce.end(),
                    [](const CollectiveOutcome& a) { return a.ran && a.ranks == 1; });
    if (one_rank) {
      w.text("  ",
             "one GPU: its one-rank all-reduce moves no data, so it gives no bandwidth; it proves "
             "NCCL's set-up and kernels (two or more GPUs give algbw and busbw)",
             4);
    }
  }
  print_peers(c.peers, w);
  w.line("");
}

// Each diagnostic with its fix; a fix said for an earlier one is pointed back to.
void print_diagnostics(const Report& r, Writer& w) {
  if (r.diagnostics.empty()) return;
  w.line(w.paint().bold("diagnostics"));
  std::vector<const Diagnostic*> before;
  for (const Diagnostic& d : r.diagnostics) {
    const char* color = d.severity == Severity::error     ? "1;31"
                        : d.severity == Severity::warning ? "33"
                                                          : "36";
    w.text("  " + w.paint()(fmt::format("{:<8}", to_string(d.severity)), color),
           d.code + ": " + d.message, 10);
    if (d.hint.empty()) continue;
    auto same = std::find_if(before.begin(), before.end(),
                             [&](const Diagnostic* b) { return b->hint == d.hint; });
    if (same == before.end()) {
      before.push_back(&d);
      w.text("           fix: ", d.hint, 16);
    } else {
      w.text("           fix: ", "as for " + (*same)->code + " above", 16);
    }
  }
  w.line("");
}

const DeviceReport* device_labelled(const Report& r, const std::string& label) {
  for (const DeviceReport& d : r.devices) {
    if (d.label() == label) return &d;
  }
  return nullptr;
}

// A line per requirement; those alike but for their devices share one ("bf16 on GPU 0-7 met"). A
// reason said above is pointed back to.
void print_requirements(const Report& r, Writer& w, const text::SaidReasons& said) {
  if (r.requirements.empty()) return;
  w.line(w.paint().bold("requirements"));
  const auto& all = r.requirements;
  for (std::size_t i = 0; i < all.size();) {
    const RequirementResult& q = all[i];
    std::vector<const DeviceReport*> devices;
    std::size_t next = i;
    for (; next < all.size(); ++next) {
      const RequirementResult& o = all[next];
      const DeviceReport* d = device_labelled(r, o.device);
      const bool alike = o.mode == q.mode && o.met == q.met && o.status == q.status &&
                         o.reason == q.reason && d != nullptr;
      if (!alike && next > i) break;
      if (d == nullptr) {  // none selected: a line of its own
        ++next;
        break;
      }
      devices.push_back(d);
    }
    const std::string where = devices.empty() ? "none" : device_labels(devices);
    const auto before = said.find(q.reason);
    const std::string reason = q.reason.empty()       ? ""
                               : before == said.end() ? ": " + q.reason
                                                      : ": as for " + before->second + " above";
    w.text(fmt::format("  {:<13} on {:<7} ", mode_key(q.mode), where) +
               w.paint()(q.met ? "met    " : "NOT MET", q.met ? "32" : "1;31") + " ",
           fmt::format("({}){}", to_string(q.status), reason), 4);
    i = next;
  }
  w.line("");
}

// Whether any kernel ran: a smoke test, a training run, a benchmark, a soak or a collective.
bool any_kernel_ran(const Report& r) {
  for (const DeviceReport& d : r.devices) {
    for (const auto& [mode, p] : d.precisions) {
      if (p.smoke.ran || (p.amp && p.amp->ran) || (p.bench && p.bench->outcome.ran)) return true;
    }
    if (!d.soak) continue;
    for (const auto& [mode, o] : d.soak->modes) {
      if (o.ran) return true;
    }
  }
  return r.collectives &&
         std::any_of(r.collectives->all_reduce.begin(), r.collectives->all_reduce.end(),
                     [](const CollectiveOutcome& a) { return a.ran; });
}

// The gate a CI step would use: the first of bf16, fp16 and fp32 whose hardware is native on every
// gated device (on the CPU where none is gated: then with --device cpu), and the exit code it
// would give this run.
struct SuggestedGate {
  std::string flags;  // "--require bf16", "--device cpu --require fp32"
  Mode mode = Mode::fp32;
  int exit_code = 0;
};

SuggestedGate suggested_gate(const Report& r) {
  Report gated = r;
  std::string device;
  if (std::none_of(gated.devices.begin(), gated.devices.end(),
                   [](const DeviceReport& d) { return d.selected; })) {
    for (DeviceReport& d : gated.devices) {
      if (d.kind != DeviceKind::cpu) continue;
      d.selected = true;
      gated.run.gpus_selected = false;
      device = "--device cpu ";
    }
  }
  SuggestedGate out;
  for (Mode mode : {Mode::bf16, Mode::fp16, Mode::fp32}) {
    const bool native = std::all_of(gated.devices.begin(), gated.devices.end(), [&](const auto& d) {
      const PrecisionResult* p = d.find(mode);
      return !d.selected || (p != nullptr && p->hardware == Hardware::native);
    });
    out.mode = mode;
    if (native) break;
  }
  out.flags = device + "--require " + std::string(mode_key(out.mode));
  gated.requirements = evaluate_requirements(gated, {out.mode}, gated.run.quick);
  out.exit_code = decide_exit(gated).code;
  return out;
}

// The last line of a run in which no kernel ran: nothing in it is proven, and how a CI step gates.
std::string nothing_proven(const Report& r) {
  const char* quick = r.run.quick ? " (--quick)" : "";
  if (!r.requirements.empty()) {
    return fmt::format("no kernel ran{}: nothing here is proven{}", quick,
                       r.run.quick ? "; the requirements were judged on the hardware alone" : "");
  }
  const SuggestedGate gate = suggested_gate(r);
  // "a bf16 kernel", "an fp32 kernel"
  const std::string kernel =
      fmt::format("{} {} kernel", gate.mode == Mode::bf16 ? "a" : "an", mode_key(gate.mode));
  if (r.run.quick) {
    return fmt::format(
        "no kernel ran (--quick): nothing here is proven. {} gates a CI step: without --quick, "
        "exit 0 only where {} runs and is right; under --quick the hardware alone meets it "
        "(here: exit {}).",
        gate.flags, kernel, gate.exit_code);
  }
  return fmt::format(
      "no kernel ran: nothing here is proven. {} gates a CI step: exit 0 only where {} runs and "
      "is right (here: exit {}).",
      gate.flags, kernel, gate.exit_code);
}

class TextPrinter final : public Printer {
 public:
  explicit TextPrinter(PrintStyle style) : style_(style) {}

 private:
  void do_print(const Report& r, std::ostream& out) const override {
    if (!has_findings(r)) return;  // usage errors go to stderr as one line
    Writer w(out, style_);
    print_header(r, w);
    text::SaidReasons said;
    text::print_devices(r, w, said);
    if (r.collectives) print_collectives(*r.collectives, w);
    print_diagnostics(r, w);
    print_requirements(r, w, said);
    if (r.run.command == Command::probe || !r.requirements.empty()) {
      w.text(w.paint().bold(fmt::format("exit {}", r.exit_code)) + ": ", r.exit_reason, 4);
    }
    if (r.run.command == Command::probe && !any_kernel_ran(r)) {
      w.text("", nothing_proven(r), 4);
    }
  }

  PrintStyle style_;
};

}  // namespace

std::unique_ptr<Printer> make_text_printer(PrintStyle style) {
  return std::make_unique<TextPrinter>(style);
}

}  // namespace precision_probe
