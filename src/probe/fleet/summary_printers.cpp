#include "probe/fleet/summary_printers.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/strings.hpp"

namespace precision_probe {

namespace {

using json = nlohmann::ordered_json;

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
  if (!s.modes.empty()) {
    out += "\n  mode            native  emulated  unsupported   failed  not_tested\n";
    for (const ModeSummary& m : s.modes) {
      out += fmt::format("  {:<14} {:>7} {:>9} {:>12} {:>8} {:>11}\n", mode_key(m.mode), m.native,
                         m.emulated, m.unsupported, m.failed, m.not_tested);
    }
  }
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
  if (!s.modes.empty()) {
    out +=
        "\n| mode | native | emulated | unsupported | failed | not tested "
        "|\n|---|---:|---:|---:|---:|---:|\n";
    for (const ModeSummary& m : s.modes) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", mode_key(m.mode), m.native,
                         m.emulated, m.unsupported, m.failed, m.not_tested);
    }
  }
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

json gap_json(const RequirementGap& g) {
  return {{"mode", mode_key(g.mode)},
          {"node", g.node},
          {"device", g.device.empty() ? json(nullptr) : json(g.device)},
          {"status", to_string(g.status)},
          {"reason", g.reason}};
}

json unknown_json(const std::vector<UnknownNode>& nodes) {
  json list = json::array();
  for (const UnknownNode& u : nodes)
    list.push_back({{"node", u.node}, {"source", u.source}, {"why", u.why}});
  return list;
}

json modes_json(const FleetSummary& s) {
  json modes = json::object();
  for (const ModeSummary& m : s.modes) {
    json groups = json::array();
    for (const NotNativeGroup& g : m.not_native) {
      // Whole nodes are named by their hosts alone: a fleet's unsupported modes would otherwise
      // list every GPU.
      groups.push_back({{"status", to_string(g.status)},
                        {"reason", g.reason},
                        {"gpus", g.gpus},
                        {"whole_nodes", g.whole_nodes},
                        {"nodes", g.nodes},
                        {"devices", g.whole_nodes ? json::array() : json(g.devices)}});
    }
    modes[std::string(mode_key(m.mode))] = {
        {"native", m.native}, {"emulated", m.emulated},     {"unsupported", m.unsupported},
        {"failed", m.failed}, {"not_tested", m.not_tested}, {"not_native", std::move(groups)}};
  }
  return modes;
}

std::string print_json(const FleetSummary& s) {
  json j = {{"summary_schema_version", kSummarySchemaVersion},
            {"tool", {{"name", "precision-probe"}, {"version", s.tool_version}}},
            {"generated_at", s.generated_at},
            {"reports", s.reports},
            {"nodes", s.nodes},
            {"gpus", s.gpus}};
  json models = json::array();
  for (const ModelCount& m : s.models)
    models.push_back({{"model", m.model}, {"nodes", m.nodes}, {"gpus", m.gpus}});
  j["models"] = std::move(models);
  j["modes"] = modes_json(s);
  json outliers = json::array();
  for (const ThroughputOutlier& o : s.outliers) {
    outliers.push_back({{"source", o.source},
                        {"mode", mode_key(o.mode)},
                        {"model", o.model},
                        {"node", o.node},
                        {"device", o.device},
                        {"uuid", o.uuid},
                        {"tflops", o.tflops},
                        {"median_tflops", o.median},
                        {"peers", o.peers}});
  }
  j["outliers"] = std::move(outliers);
  json failed = json::array();
  for (const FailedDevice& f : s.failed) {
    failed.push_back({{"node", f.node},
                      {"device", f.device.empty() ? json(nullptr) : json(f.device)},
                      {"uuid", f.uuid},
                      {"what", f.what},
                      {"corruption", f.corruption}});
  }
  j["failed"] = std::move(failed);
  j["required"] = mode_keys(s.required);
  json unmet = json::array();
  for (const RequirementGap& g : s.unmet) unmet.push_back(gap_json(g));
  j["unmet"] = std::move(unmet);
  json missing = json::array();
  for (const RequirementGap& g : s.missing) missing.push_back(gap_json(g));
  j["missing"] = std::move(missing);
  j["max_age_s"] = s.max_age_s ? json(*s.max_age_s) : json(nullptr);
  j["stale"] = unknown_json(s.stale);
  j["unknown"] = unknown_json(s.unknown);
  j["future"] = unknown_json(s.future);
  json unreadable = json::array();
  for (const Unreadable& u : s.unreadable)
    unreadable.push_back({{"source", u.source}, {"error", u.error}});
  j["unreadable"] = std::move(unreadable);
  json skipped = json::array();
  for (const Unreadable& u : s.skipped) skipped.push_back({{"source", u.source}, {"why", u.error}});
  j["skipped"] = std::move(skipped);
  json superseded = json::array();
  for (const Superseded& x : s.superseded) {
    superseded.push_back(
        {{"node", x.node}, {"source", x.source}, {"newer_source", x.newer_source}});
  }
  j["superseded"] = std::move(superseded);
  j["exit_code"] = s.exit_code;
  j["exit_reason"] = s.exit_reason;
  j["duration_ms"] = std::round(s.duration_ms * 10.0) / 10.0;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
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

}  // namespace precision_probe
