#include "probe/fleet/summary.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/strings.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/verdicts/gate.hpp"

namespace precision_probe {

std::string NodeDevice::label() const {
  return kind == DeviceKind::cpu ? "CPU" : fmt::format("GPU {}", index);
}

const NodeVerdict* NodeDevice::find(Mode mode) const {
  for (const auto& [m, v] : modes) {
    if (m == mode) return &v;
  }
  return nullptr;
}

NodeRecord node_record(const Report& report, std::string source, std::size_t order,
                       const std::vector<Mode>& required) {
  NodeRecord n;
  n.source = std::move(source);
  n.order = order;
  n.hostname = report.host.hostname;
  n.report_id = report.report_id;
  n.started_at = report.started_at;
  n.started_ms = parse_utc_timestamp(report.started_at);
  n.tool_version = report.tool.version;
  n.quick = report.run.quick;
  n.exit_code = report.exit_code;
  n.exit_reason = report.exit_reason;
  for (const DeviceReport& d : report.devices) {
    NodeDevice device;
    device.kind = d.kind;
    device.index = d.index;
    device.model = d.gpu ? d.name : (d.cpu ? d.cpu->model : d.name);
    if (d.gpu) {
      device.uuid = d.gpu->uuid;
      device.pci_bus_id = d.gpu->pci_bus_id;
    }
    device.selected = d.selected;
    for (const auto& [mode, p] : d.precisions) {
      device.modes.emplace_back(mode, NodeVerdict{p.status, p.hardware, p.reason});
      if (p.bench && p.bench->outcome.ran && p.bench->outcome.ok) {
        const BenchOutcome& b = p.bench->outcome;
        const double tflops = b.sustained_tflops.value_or(b.tflops.value_or(0.0));
        if (tflops > 0.0) device.bench_tflops.emplace_back(mode, tflops);
      }
    }
    if (d.soak) {
      for (const auto& [mode, s] : d.soak->modes) {
        if (s.ran && s.tflops && *s.tflops > 0.0) device.soak_tflops.emplace_back(mode, *s.tflops);
      }
    }
    n.devices.push_back(std::move(device));
  }
  for (RequirementResult& r : evaluate_requirements(report, required, report.run.quick)) {
    bool missing = r.device.empty();
    for (const DeviceReport& d : report.devices) {
      if (d.label() == r.device && d.find(r.mode) == nullptr) missing = true;
    }
    n.requirements.push_back({std::move(r), missing});
  }
  return n;
}

namespace {

std::string node_name(const NodeRecord& n) {
  return n.hostname.empty() ? "(no hostname) " + n.source : n.hostname;
}

std::string device_text(const NodeRecord& n, const NodeDevice& d) {
  std::string text = node_name(n) + " " + d.label();
  if (!d.uuid.empty()) text += " (" + d.uuid + ")";
  return text;
}

// One report a host: the newest (by started_at; of equal ones, the last given) wins.
std::vector<NodeRecord> newest_per_host(std::vector<NodeRecord> nodes,
                                        std::vector<Superseded>& superseded) {
  auto newer = [](const NodeRecord& a, const NodeRecord& b) {  // a is newer than b
    const std::int64_t ta = a.started_ms.value_or(INT64_MIN);
    const std::int64_t tb = b.started_ms.value_or(INT64_MIN);
    return ta != tb ? ta > tb : a.order > b.order;
  };
  std::map<std::string, std::size_t> by_host;
  std::vector<NodeRecord> kept;
  for (NodeRecord& n : nodes) {
    const std::string host = node_name(n);
    const auto it = by_host.find(host);
    if (it == by_host.end()) {
      by_host.emplace(host, kept.size());
      kept.push_back(std::move(n));
      continue;
    }
    NodeRecord& held = kept[it->second];
    if (newer(n, held)) std::swap(n, held);
    superseded.push_back({host, n.source, held.source});
  }
  std::sort(kept.begin(), kept.end(),
            [](const NodeRecord& a, const NodeRecord& b) { return node_name(a) < node_name(b); });
  return kept;
}

std::vector<ModelCount> count_models(const std::vector<NodeRecord>& nodes) {
  std::map<std::string, ModelCount> by_model;
  for (const NodeRecord& n : nodes) {
    std::set<std::string> seen;
    for (const NodeDevice& d : n.devices) {
      if (d.kind != DeviceKind::cuda) continue;
      ModelCount& c = by_model[d.model];
      c.model = d.model;
      ++c.gpus;
      if (seen.insert(d.model).second) ++c.nodes;
    }
  }
  std::vector<ModelCount> models;
  models.reserve(by_model.size());
  for (auto& [name, c] : by_model) models.push_back(std::move(c));
  return models;
}

void count_status(ModeSummary& m, Status status) {
  switch (status) {
    case Status::native: ++m.native; break;
    case Status::emulated: ++m.emulated; break;
    case Status::unsupported: ++m.unsupported; break;
    case Status::failed: ++m.failed; break;
    case Status::not_tested: ++m.not_tested; break;
  }
}

// Per mode, in the mode table's order: the GPUs' verdicts counted, those not native grouped by
// verdict and reason.
// One mode over every GPU: its verdicts counted, those not native grouped by verdict and reason;
// a group's GPUs named only where it does not hold whole nodes (the nodes say it then).
ModeSummary summarize_mode(const std::vector<NodeRecord>& nodes, Mode mode, bool& any) {
  ModeSummary m;
  m.mode = mode;
  std::map<std::pair<Status, std::string_view>, std::size_t> groups;  // views into `nodes`
  std::vector<std::vector<std::pair<const NodeRecord*, const NodeDevice*>>> members;
  for (const NodeRecord& n : nodes) {
    std::vector<std::pair<std::size_t, int>> joined;  // group, this node's GPUs in it
    int gpus = 0;
    for (const NodeDevice& d : n.devices) {
      const NodeVerdict* v = d.kind == DeviceKind::cuda ? d.find(mode) : nullptr;
      gpus += d.kind == DeviceKind::cuda ? 1 : 0;
      if (v == nullptr) continue;
      any = true;
      count_status(m, v->status);
      if (v->status == Status::native) continue;
      const auto [it, added] =
          groups.emplace(std::make_pair(v->status, std::string_view(v->reason)), members.size());
      if (added) {
        NotNativeGroup group;
        group.status = v->status;
        group.reason = v->reason;
        m.not_native.push_back(std::move(group));
        members.emplace_back();
      }
      NotNativeGroup& g = m.not_native[it->second];
      members[it->second].emplace_back(&n, &d);
      ++g.gpus;
      if (g.nodes.empty() || g.nodes.back() != node_name(n)) g.nodes.push_back(node_name(n));
      if (joined.empty() || joined.back().first != it->second) joined.emplace_back(it->second, 0);
      ++joined.back().second;
    }
    for (const auto& [group, count] : joined) {
      if (count != gpus) m.not_native[group].whole_nodes = false;
    }
  }
  for (std::size_t i = 0; i < m.not_native.size(); ++i) {
    if (m.not_native[i].whole_nodes) continue;
    for (const auto& [n, d] : members[i]) m.not_native[i].devices.push_back(device_text(*n, *d));
  }
  return m;
}

std::vector<ModeSummary> summarize_modes(const std::vector<NodeRecord>& nodes) {
  std::vector<ModeSummary> modes;
  for (const ModeInfo& info : kModeTable) {
    bool any = false;
    ModeSummary m = summarize_mode(nodes, info.mode, any);
    if (any) modes.push_back(std::move(m));
  }
  return modes;
}

double median(std::vector<double> values) {
  const std::size_t n = values.size();
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (n % 2 == 1) return *mid;
  return (*mid + *std::max_element(values.begin(), mid)) / 2.0;
}

// A GPU more than 10 % below the median of the same model, per mode and per kind of figure.
std::vector<ThroughputOutlier> find_outliers(const std::vector<NodeRecord>& nodes) {
  struct Figure {
    const NodeRecord* node;
    const NodeDevice* device;
    double tflops;
  };
  // Per model, one list a mode for each kind of figure: a model looked up once a GPU.
  struct ByMode {
    std::map<Mode, std::vector<Figure>> bench, soak;
  };
  std::map<std::string_view, ByMode> groups;  // views into `nodes`
  for (const NodeRecord& n : nodes) {
    for (const NodeDevice& d : n.devices) {
      if (d.kind != DeviceKind::cuda) continue;
      ByMode& model = groups[d.model];
      for (const auto& [mode, tflops] : d.bench_tflops)
        model.bench[mode].push_back({&n, &d, tflops});
      for (const auto& [mode, tflops] : d.soak_tflops) model.soak[mode].push_back({&n, &d, tflops});
    }
  }
  std::vector<ThroughputOutlier> outliers;
  auto judge = [&outliers](const char* source, std::string_view model, Mode mode,
                           const std::vector<Figure>& figures) {
    if (figures.size() < 2) return;
    std::vector<double> values;
    values.reserve(figures.size());
    for (const Figure& f : figures) values.push_back(f.tflops);
    const double mid = median(std::move(values));
    for (const Figure& f : figures) {
      if (f.tflops >= 0.9 * mid) continue;
      outliers.push_back({source, mode, std::string(model), node_name(*f.node), f.device->label(),
                          f.device->uuid, f.tflops, mid, static_cast<int>(figures.size())});
    }
  };
  for (const auto& [model, by_mode] : groups) {
    for (const auto& [mode, figures] : by_mode.bench) judge("bench", model, mode, figures);
    for (const auto& [mode, figures] : by_mode.soak) judge("soak", model, mode, figures);
  }
  return outliers;
}

void check_age(const std::vector<NodeRecord>& nodes, const SummaryOptions& o, FleetSummary& s) {
  if (!o.max_age_s) return;
  for (const NodeRecord& n : nodes) {
    if (!n.started_ms) {
      s.stale.push_back({node_name(n), n.source, "the report says not when it ran (started_at)"});
      continue;
    }
    const std::int64_t age_s = (o.now_ms - *n.started_ms) / 1000;
    if (age_s > *o.max_age_s) {
      s.stale.push_back({node_name(n), n.source,
                         fmt::format("ran {} ({} ago), older than --max-age", n.started_at,
                                     format_duration(age_s))});
    }
  }
}

void check_outcomes(const std::vector<NodeRecord>& nodes, FleetSummary& s) {
  for (const NodeRecord& n : nodes) {
    if (n.exit_code == exit_code::kUsage || n.exit_code == exit_code::kEnvironment ||
        n.exit_code == exit_code::kTimedOut) {
      s.unknown.push_back({node_name(n), n.source,
                           fmt::format("its report exited {}: {}", n.exit_code, n.exit_reason)});
    }
    bool listed = false;
    for (const NodeDevice& d : n.devices) {
      if (!d.selected) continue;
      for (const auto& [mode, v] : d.modes) {
        if (v.status != Status::failed) continue;
        s.failed.push_back({node_name(n), d.label(), d.uuid,
                            fmt::format("{} failed: {}", mode_key(mode), v.reason)});
        listed = true;
      }
    }
    if (!listed && n.exit_code == exit_code::kCheckFailed) {
      s.failed.push_back({node_name(n), "", "", n.exit_reason});
    }
  }
}

void check_requirements(const std::vector<NodeRecord>& nodes, FleetSummary& s) {
  for (const NodeRecord& n : nodes) {
    for (const NodeRequirement& q : n.requirements) {
      if (q.result.met) continue;
      RequirementGap gap{q.result.mode, node_name(n), q.result.device, q.result.status,
                         q.result.reason};
      if (q.missing) {
        gap.reason = fmt::format(
            "its report ({}) has no {} verdict{}", n.source, mode_key(q.result.mode),
            q.result.device.empty() ? " (it gated no device)" : " for " + q.result.device);
        gap.device.clear();
        s.missing.push_back(std::move(gap));
      } else {
        s.unmet.push_back(std::move(gap));
      }
    }
  }
}

// The gate's precedence: 2 (bad input, decided before), 3 a node unknown, 4 a gated device
// failed, 1 a requirement not met somewhere, 0.
void decide_exit(FleetSummary& s) {
  const std::size_t unknown = s.stale.size() + s.unknown.size() + s.unreadable.size();
  if (s.reports == 0 && s.unreadable.empty()) {
    // Nothing to judge (an empty directory, an empty stream): no node is known.
    s.exit_code = exit_code::kEnvironment;
    s.exit_reason = "no report was read: no node is known";
  } else if (unknown > 0) {
    s.exit_code = exit_code::kEnvironment;
    s.exit_reason =
        fmt::format("{} node(s) unknown: {} stale, {} unreadable, {} whose report exited 2, 3 or 5",
                    unknown, s.stale.size(), s.unreadable.size(), s.unknown.size());
  } else if (!s.failed.empty()) {
    s.exit_code = exit_code::kCheckFailed;
    s.exit_reason =
        fmt::format("{} failed check(s) on gated devices, first: {} {}: {}", s.failed.size(),
                    s.failed[0].node, s.failed[0].device, s.failed[0].what);
  } else if (!s.unmet.empty() || !s.missing.empty()) {
    s.exit_code = exit_code::kRequirementNotMet;
    s.exit_reason = fmt::format(
        "a required mode is not native: {} device(s), {} report(s) "
        "without a verdict for it",
        s.unmet.size(), s.missing.size());
  } else {
    s.exit_code = exit_code::kOk;
    s.exit_reason = s.required.empty() ? "every node known, nothing failed"
                                       : "every required mode native on every gated device";
  }
}

}  // namespace

FleetSummary summarize(FleetInputs inputs, const SummaryOptions& options) {
  FleetSummary s;
  s.reports = static_cast<int>(inputs.nodes.size());
  s.unreadable = std::move(inputs.unreadable);
  s.required = options.require;
  s.max_age_s = options.max_age_s;
  const std::vector<NodeRecord> nodes = newest_per_host(std::move(inputs.nodes), s.superseded);
  s.nodes = static_cast<int>(nodes.size());
  s.models = count_models(nodes);
  for (const ModelCount& m : s.models) s.gpus += m.gpus;
  s.modes = summarize_modes(nodes);
  s.outliers = find_outliers(nodes);
  check_age(nodes, options, s);
  check_outcomes(nodes, s);
  check_requirements(nodes, s);
  decide_exit(s);
  return s;
}

}  // namespace precision_probe
