#include "probe/fleet/summary_printers.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "report/json_fields.hpp"

namespace precision_probe {

// The summary's JSON (docs/summarize.md) through the field layer, as the report's. It is written,
// never read back: what the writer works out is `derived`.
namespace json_fields {

template <class V, class S>
std::enable_if_t<is<S, ModelCount>> fields(V& v, S& m) {
  v("model", m.model);
  v("nodes", m.nodes);
  v("gpus", m.gpus);
}

template <class V, class S>
std::enable_if_t<is<S, NotNativeGroup>> fields(V& v, S& g) {
  v("status", g.status);
  v("reason", g.reason);
  v("gpus", g.gpus);
  v("whole_nodes", g.whole_nodes);
  v("nodes", g.nodes);
  // Whole nodes are named by their hosts alone: a fleet's unsupported modes would otherwise list
  // every GPU.
  v.derived("devices", g.whole_nodes ? std::vector<std::string>() : g.devices);
}

template <class V, class S>
std::enable_if_t<is<S, ModeSummary>> fields(V& v, S& m) {
  for (const StatusInfo& st : kStatuses) v(st.key.data(), m.count(st.status));
  v("not_native", m.not_native);
}

template <class V, class S>
std::enable_if_t<is<S, ThroughputOutlier>> fields(V& v, S& o) {
  v("source", o.source);
  v("mode", o.mode);
  v("model", o.model);
  v("node", o.node);
  v("device", o.device);
  v("uuid", o.uuid);
  v("tflops", o.tflops);
  v("median_tflops", o.median);
  v("peers", o.peers);
}

template <class V, class S>
std::enable_if_t<is<S, FailedDevice>> fields(V& v, S& f) {
  v("node", f.node);
  v.when(!f.device.empty(), "device", f.device);
  v("uuid", f.uuid);
  v("what", f.what);
  v("corruption", f.corruption);
}

template <class V, class S>
std::enable_if_t<is<S, RequirementGap>> fields(V& v, S& g) {
  v("mode", g.mode);
  v("node", g.node);
  v.when(!g.device.empty(), "device", g.device);
  v("status", g.status);
  v("reason", g.reason);
}

template <class V, class S>
std::enable_if_t<is<S, UnknownNode>> fields(V& v, S& u) {
  v("node", u.node);
  v("source", u.source);
  v("why", u.why);
}

template <class V, class S>
std::enable_if_t<is<S, Unreadable>> fields(V& v, S& u) {
  v("source", u.source);
  v("error", u.error);
}

// A summary among the reports: its "why" is an Unreadable's error.
struct SkippedSource {
  const Unreadable* skipped;
};
template <class V>
void fields(V& v, const SkippedSource& s) {
  v.derived("source", s.skipped->source);
  v.derived("why", s.skipped->error);
}

template <class V, class S>
std::enable_if_t<is<S, Superseded>> fields(V& v, S& x) {
  v("node", x.node);
  v("source", x.source);
  v("newer_source", x.newer_source);
}

// What every summary document begins with: its schema's version and the tool.
template <class V>
void summary_head(V& v, const std::string& tool_version) {
  v.derived("summary_schema_version", kSummarySchemaVersion);
  v.group(true, "tool", [&](auto& g) {
    g.derived("name", std::string("precision-probe"));
    g.derived("version", tool_version);
  });
}

template <class V, class S>
std::enable_if_t<is<S, FleetSummary>> fields(V& v, S& s) {
  summary_head(v, s.tool_version);
  v("generated_at", s.generated_at);
  v("reports", s.reports);
  v("nodes", s.nodes);
  v("gpus", s.gpus);
  v("models", s.models);
  v.keyed("modes", s.modes, &ModeSummary::mode);
  v("outliers", s.outliers);
  v("failed", s.failed);
  v("required", s.required);
  v("unmet", s.unmet);
  v("missing", s.missing);
  v("max_age_s", s.max_age_s);
  v("stale", s.stale);
  v("unknown", s.unknown);
  v("future", s.future);
  v("unreadable", s.unreadable);
  std::vector<SkippedSource> skipped;
  for (const Unreadable& u : s.skipped) skipped.push_back({&u});
  v.derived("skipped", skipped);
  v("superseded", s.superseded);
  v("exit_code", s.exit_code);
  v("exit_reason", s.exit_reason);
  v.mapped("duration_ms", s.duration_ms, tenth_of_ms, ms_from);
}

// A summary that could not be made: what kind of error, and the exit code.
struct SummaryError {
  std::string kind;  // "usage", "interrupted", "internal"
  std::string message;
  int exit_code = 0;
  std::string tool_version;
};

template <class V, class S>
std::enable_if_t<is<S, SummaryError>> fields(V& v, S& e) {
  summary_head(v, e.tool_version);
  v.group(true, "error", [&](auto& g) {
    g("kind", e.kind);
    g("message", e.message);
  });
  v("exit_code", e.exit_code);
  v.derived("exit_reason", e.message);
}

}  // namespace json_fields

namespace {

std::vector<std::string> mode_keys(const std::vector<Mode>& modes) {
  std::vector<std::string> keys;
  keys.reserve(modes.size());
  for (Mode m : modes) keys.emplace_back(mode_key(m));
  return keys;
}

// "a, b, c and 7 more"
std::string some_of(const std::vector<std::string>& items, std::size_t shown) {
  std::vector<std::string> named(
      items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(shown, items.size())));
  std::string text = join(named, ", ");
  if (items.size() > named.size()) text += fmt::format(" and {} more", items.size() - named.size());
  return text;
}

// One entry of a list: its line, and what it says at length (a reason, the devices, a UUID).
struct Item {
  std::string line;
  std::vector<std::string> details;
};

Item outlier_item(const ThroughputOutlier& o) {
  Item item{fmt::format("{} {} {} {}: {:.4g} TFLOP/s, {:+.0f} % of the median {:.4g} of {}",
                        o.source, mode_key(o.mode), o.node, o.device, o.tflops,
                        (o.tflops / o.median - 1.0) * 100.0, o.median, o.peers),
            {}};
  if (!o.uuid.empty()) item.details.push_back(o.uuid);
  return item;
}

Item gap_item(const RequirementGap& g) {
  if (g.device.empty())
    return {fmt::format("{} {}: no verdict", mode_key(g.mode), g.node), {g.reason}};
  Item item{fmt::format("{} {} {}: {}", mode_key(g.mode), g.node, g.device, to_string(g.status)),
            {}};
  if (!g.reason.empty()) item.details.push_back(g.reason);
  return item;
}

Item failed_item(const FailedDevice& f) {
  return {fmt::format("{}{}{}", f.node, f.device.empty() ? "" : " " + f.device,
                      f.uuid.empty() ? "" : " (" + f.uuid + ")"),
          {f.what}};
}
struct Section {
  std::string heading;
  std::vector<Item> items;
};

std::vector<Item> not_native_items(const FleetSummary& s, std::size_t shown) {
  std::vector<Item> items;
  for (const ModeSummary& m : s.modes) {
    for (const NotNativeGroup& g : m.not_native) {
      Item item{fmt::format("{} {} on {} GPU(s) of {} node(s)", mode_key(m.mode),
                            to_string(g.status), g.gpus, g.nodes.size()),
                {}};
      if (!g.reason.empty()) item.details.push_back(g.reason);
      // Whole nodes by name; else the GPUs themselves.
      item.details.push_back(g.whole_nodes ? "every GPU of " + some_of(g.nodes, shown)
                                           : some_of(g.devices, shown));
      items.push_back(std::move(item));
    }
  }
  return items;
}

std::vector<Item> unknown_items(const std::vector<UnknownNode>& nodes) {
  std::vector<Item> items;
  items.reserve(nodes.size());
  for (const UnknownNode& u : nodes) items.push_back({u.node + ": " + u.why, {u.source}});
  return items;
}

// The lists of a summary, for text and Markdown alike; empty ones are left out.
std::vector<Section> sections(const FleetSummary& s, std::size_t shown) {
  std::vector<Section> out;
  auto add = [&out](std::string heading, std::vector<Item> items) {
    if (!items.empty()) out.push_back({std::move(heading), std::move(items)});
  };
  add("not native", not_native_items(s, shown));
  std::vector<Item> items;
  for (const FailedDevice& f : s.failed) {
    if (f.corruption) items.push_back(failed_item(f));
  }
  add("silent data corruption on gated devices (--soak: wrong numbers under load)",
      std::move(items));
  items = {};
  for (const ThroughputOutlier& o : s.outliers) items.push_back(outlier_item(o));
  add("throughput outliers (more than 10 % below the median of their model)", std::move(items));
  items = {};
  for (const FailedDevice& f : s.failed) {
    if (!f.corruption) items.push_back(failed_item(f));
  }
  add("failed checks on gated devices", std::move(items));
  items = {};
  for (const RequirementGap& g : s.unmet) items.push_back(gap_item(g));
  for (const RequirementGap& g : s.missing) items.push_back(gap_item(g));
  add(fmt::format("requirements not met (--require {})", join(mode_keys(s.required), ",")),
      std::move(items));
  add(fmt::format("stale reports (--max-age {})", s.max_age_s ? format_duration(*s.max_age_s) : ""),
      unknown_items(s.stale));
  add("nodes whose state is unknown", unknown_items(s.unknown));
  add("reports dated in the future (more than 5 minutes ahead of this clock)",
      unknown_items(s.future));
  items = {};
  for (const Unreadable& u : s.unreadable) items.push_back({u.source, {u.error}});
  add("reports that could not be read", std::move(items));
  items = {};
  for (const Unreadable& u : s.skipped) items.push_back({u.source, {u.error}});
  add("summaries among the reports (skipped: not reports)", std::move(items));
  items = {};
  for (const Superseded& x : s.superseded) {
    items.push_back({x.node + ": " + x.source, {"a newer report: " + x.newer_source}});
  }
  add("older reports of the same host (the newer one counts)", std::move(items));
  return out;
}

// `text` made terminal-safe and wrapped to kTextWidth columns: its first line indented by `first`
// spaces, the others by `next`. A word wider than a line (a long path) stands on a line of its own.
constexpr std::size_t kTextWidth = 80;

std::string wrapped(std::string_view text, std::size_t first, std::size_t next) {
  std::string out;
  const std::vector<std::string> lines = wrap(terminal_safe(text), kTextWidth - next);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].empty()) out += std::string(i == 0 ? first : next, ' ') + lines[i];
    out += "\n";
  }
  return out;
}

// The GPUs of each status per mode, within 80 columns: the statuses of checks that were kept
// from proving anything (not_tested, cannot_run, refused, out_of_time, interrupted) share the
// last column, and a line beneath says which they are where any is not not_tested.
std::string mode_table_text(const FleetSummary& s) {
  constexpr std::array<Status, 4> kColumns = {Status::native, Status::emulated, Status::unsupported,
                                              Status::failed};
  std::string out = "\n  mode            native  emulated  unsupported   failed  not proved\n";
  std::array<int, kStatuses.size()> not_proved{};
  for (const ModeSummary& m : s.modes) {
    int rest = 0;
    for (const StatusInfo& st : kStatuses) {
      if (std::find(kColumns.begin(), kColumns.end(), st.status) != kColumns.end()) continue;
      rest += m.count(st.status);
      not_proved.at(static_cast<std::size_t>(st.status)) += m.count(st.status);
    }
    out += fmt::format("  {:<14} {:>7} {:>9} {:>12} {:>8} {:>11}\n", mode_key(m.mode),
                       m.count(Status::native), m.count(Status::emulated),
                       m.count(Status::unsupported), m.count(Status::failed), rest);
  }
  std::vector<std::string> kinds;
  for (const StatusInfo& st : kStatuses) {
    if (const int n = not_proved.at(static_cast<std::size_t>(st.status)); n > 0) {
      kinds.push_back(fmt::format("{} {}", n, st.key));
    }
  }
  const bool only_not_tested =
      kinds.size() == 1 && not_proved.at(static_cast<std::size_t>(Status::not_tested)) > 0;
  if (!kinds.empty() && !only_not_tested) {
    out += wrapped("not proved, over all modes: " + join(kinds, ", "), 2, 4);
  }
  return out;
}

// Markdown has the width: a column per status.
std::string mode_table_markdown(const FleetSummary& s) {
  std::string out = "\n| mode |";
  std::string rule = "|---|";
  for (const StatusInfo& st : kStatuses) {
    std::string heading(st.key);
    std::replace(heading.begin(), heading.end(), '_', ' ');
    out += fmt::format(" {} |", heading);
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (const ModeSummary& m : s.modes) {
    out += fmt::format("| {} |", mode_key(m.mode));
    for (const StatusInfo& st : kStatuses) out += fmt::format(" {} |", m.count(st.status));
    out += "\n";
  }
  return out;
}

std::string print_text(const FleetSummary& s, std::size_t shown) {
  std::string out = wrapped(
      fmt::format("precision-probe {} summarize · {} report(s) · {} node(s) · {} GPU(s) · {:.2f} s",
                  s.tool_version, s.reports, s.nodes, s.gpus, s.duration_ms / 1000.0),
      0, 2);
  if (!s.models.empty()) {
    out += "\n  GPU model                        nodes     GPUs\n";
    for (const ModelCount& m : s.models) {
      out += fmt::format("  {:<30} {:>7} {:>8}\n", printable(m.model, 30), m.nodes, m.gpus);
    }
  }
  if (!s.modes.empty()) out += mode_table_text(s);
  // Every line within kTextWidth columns: the lists' lines and details wrapped, as the verdict.
  for (const Section& section : sections(s, shown)) {
    out += "\n" + wrapped(section.heading, 0, 2);
    for (std::size_t i = 0; i < section.items.size(); ++i) {
      if (i == shown * 4) {
        out += fmt::format("  ... and {} more\n", section.items.size() - i);
        break;
      }
      out += wrapped(section.items[i].line, 2, 4);
      for (const std::string& detail : section.items[i].details) out += wrapped(detail, 6, 6);
    }
  }
  out += "\n" + wrapped(fmt::format("exit {}: {}", s.exit_code, s.exit_reason), 0, 2);
  return out;
}

std::string cell(std::string_view text) {
  std::string out;
  for (char c : terminal_safe(text)) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string print_markdown(const FleetSummary& s, std::size_t shown) {
  std::string out = fmt::format(
      "## precision-probe fleet: {} {}\n\n{} report(s), {} node(s), {} GPU(s); exit {}: {}\n",
      s.exit_code == 0 ? "✅" : "❌", s.exit_code == 0 ? "ok" : "attention", s.reports, s.nodes,
      s.gpus, s.exit_code, cell(s.exit_reason));
  if (!s.models.empty()) {
    out += "\n| GPU model | nodes | GPUs |\n|---|---:|---:|\n";
    for (const ModelCount& m : s.models)
      out += fmt::format("| {} | {} | {} |\n", cell(m.model), m.nodes, m.gpus);
  }
  if (!s.modes.empty()) out += mode_table_markdown(s);
  for (const Section& section : sections(s, shown)) {
    out += "\n### " + cell(section.heading) + "\n\n";
    for (std::size_t i = 0; i < section.items.size(); ++i) {
      if (i == shown * 4) {
        out += fmt::format("- ... and {} more\n", section.items.size() - i);
        break;
      }
      const Item& item = section.items[i];
      out += "- " + cell(item.line);
      for (const std::string& detail : item.details) out += " — " + cell(detail);
      out += "\n";
    }
  }
  return out;
}

std::string print_json(const FleetSummary& s) {
  return json_fields::encode(s).dump(2, ' ', false, json_fields::json::error_handler_t::replace) +
         "\n";
}

}  // namespace

std::string print_summary(const FleetSummary& summary, SummaryFormat format, std::size_t shown) {
  switch (format) {
    case SummaryFormat::text: return print_text(summary, shown);
    case SummaryFormat::json: return print_json(summary);
    case SummaryFormat::markdown: return print_markdown(summary, shown);
  }
  return "";
}

std::string print_summary_error(const std::string& kind, int exit_code, const std::string& message,
                                const std::string& tool_version) {
  const json_fields::SummaryError e{kind, message, exit_code, tool_version};
  return json_fields::encode(e).dump(2, ' ', false, json_fields::json::error_handler_t::replace) +
         "\n";
}

}  // namespace precision_probe
