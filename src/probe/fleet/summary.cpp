#include "probe/fleet/summary.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "threads/threads.hpp"
#include "strings/strings.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/verdicts/gate.hpp"

namespace precision_probe {

std::string NodeDevice::label() const {
  return kind == DeviceKind::cpu ? "CPU" : fmt::format("GPU {}", index);
}

const NodeVerdict* NodeDevice::find(Mode mode) const {
  const auto& v = verdicts[static_cast<std::size_t>(mode)];
  return v ? &*v : nullptr;
}

std::string_view TextPool::add(std::string_view text) {
  if (text.empty()) return {};
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = texts_.find(text);
  if (it == texts_.end()) it = texts_.emplace(text).first;
  return *it;
}

namespace {

// What --soak found on a gated device that computes wrong numbers: the modes whose result differed
// from its golden one, and those its golden disagreement names ("bf16: its golden result differs
// ...; fp16: ..."), as verdicts/soak judged them. Returns a disagreement that names no mode, to be
// kept whole ("" where there is none).
std::string_view soak_corruption(const SoakReport& soak, NodeDevice& device) {
  const auto add = [&device](Mode mode) {
    if (std::find(device.corrupt.begin(), device.corrupt.end(), mode) == device.corrupt.end()) {
      device.corrupt.push_back(mode);
    }
  };
  for (const auto& [mode, o] : soak.modes) {
    if (o.mismatches > 0) add(mode);
  }
  bool named = false;
  std::string_view rest = soak.golden_disagreement;
  while (!rest.empty()) {
    const std::string_view part = rest.substr(0, rest.find("; "));
    rest.remove_prefix(std::min(rest.size(), part.size() + 2));
    if (const auto mode = parse_mode(part.substr(0, part.find(": ")))) {
      add(*mode);
      named = true;
    }
  }
  return named ? std::string_view() : std::string_view(soak.golden_disagreement);
}

// A report's texts into the pool: the same text of a report (the reason of a mode on each of its
// GPUs) is looked up once.
class ReportTexts {
 public:
  explicit ReportTexts(TextPool& pool) : pool_(pool) {}
  std::string_view operator()(std::string_view text) {
    if (text.empty()) return {};
    for (const auto& [seen, kept] : seen_) {
      if (seen == text) return kept;
    }
    return seen_.emplace_back(text, pool_.add(text)).second;
  }

 private:
  TextPool& pool_;
  std::vector<std::pair<std::string_view, std::string_view>> seen_;  // the report's, the pool's
};

NodeDevice device_record(const DeviceReport& d, ReportTexts& texts) {
  NodeDevice device;
  device.kind = d.kind;
  device.index = d.index;
  device.model = texts(d.gpu ? d.name : (d.cpu ? d.cpu->model : d.name));
  if (d.gpu) device.uuid = d.gpu->uuid;
  device.selected = d.selected;
  for (const auto& [mode, p] : d.precisions) {
    const auto m = static_cast<std::size_t>(mode);
    device.verdicts[m] = NodeVerdict{p.status, p.hardware, texts(p.reason)};
    if (p.status == Status::failed) device.failed.push_back(mode);
    if (p.bench && p.bench->outcome.ran && p.bench->outcome.ok) {
      const BenchOutcome& b = p.bench->outcome;
      device.bench_tflops[m] = std::max(0.0, b.sustained_tflops.value_or(b.tflops.value_or(0.0)));
    }
  }
  if (d.soak && d.selected) device.corruption_note = texts(soak_corruption(*d.soak, device));
  if (d.soak) {
    for (const auto& [mode, s] : d.soak->modes) {
      if (s.ran && s.tflops && *s.tflops > 0.0) {
        device.soak_tflops[static_cast<std::size_t>(mode)] = *s.tflops;
      }
    }
  }
  return device;
}

}  // namespace

NodeRecord node_record(const Report& report, std::string source, std::size_t order,
                       const std::vector<Mode>& required, TextPool& pool) {
  ReportTexts texts(pool);
  NodeRecord n;
  n.source = std::move(source);
  n.order = order;
  n.hostname = report.host.node();
  n.started_at = report.started_at;
  n.started_ms = parse_utc_timestamp(report.started_at);
  n.exit_code = report.exit_code;
  n.exit_reason = texts(report.exit_reason);
  n.devices.reserve(report.devices.size());
  for (const DeviceReport& d : report.devices) n.devices.push_back(device_record(d, texts));
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

// One report a host: the newest (by started_at; of equal ones, the last given) wins; one dated in
// the future never wins over one that is not (it is a finding of its own, and must not hide a
// newer failure), nor is it listed as superseded.
std::vector<NodeRecord> newest_per_host(std::vector<NodeRecord> nodes,
                                        std::vector<Superseded>& superseded) {
  auto newer = [](const NodeRecord& a, const NodeRecord& b) {  // a is newer than b
    if (a.future != b.future) return b.future;
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
    if (!n.future) superseded.push_back({host, n.source, held.source});
  }
  std::sort(kept.begin(), kept.end(),
            [](const NodeRecord& a, const NodeRecord& b) { return node_name(a) < node_name(b); });
  return kept;
}

std::vector<ModelCount> count_models(const std::vector<NodeRecord>& nodes) {
  std::map<std::string_view, ModelCount> by_model;  // views into the records' texts
  std::vector<std::string_view> seen;               // a node's models
  for (const NodeRecord& n : nodes) {
    seen.clear();
    for (const NodeDevice& d : n.devices) {
      if (d.kind != DeviceKind::cuda) continue;
      ModelCount& c = by_model[d.model];
      if (c.gpus++ == 0) c.model = d.model;
      if (std::find(seen.begin(), seen.end(), d.model) != seen.end()) continue;
      seen.push_back(d.model);
      ++c.nodes;
    }
  }
  std::vector<ModelCount> models;
  models.reserve(by_model.size());
  for (auto& [name, c] : by_model) models.push_back(std::move(c));
  return models;
}

// One mode's verdicts while the GPUs are walked: its groups of verdicts that are not native, found
// by (verdict, reason), and the GPUs in each.
struct ModeTally {
  ModeSummary summary;
  bool any = false;
  std::map<std::pair<Status, std::string_view>, std::size_t> groups;  // views into the nodes
  std::vector<std::vector<std::pair<const NodeRecord*, const NodeDevice*>>> members;
};

// The group of `tally` for a verdict that is not native, made where it is the first of its kind.
std::size_t group_of(ModeTally& tally, const NodeVerdict& v) {
  const auto [it, added] = tally.groups.emplace(
      std::make_pair(v.status, std::string_view(v.reason)), tally.members.size());
  if (added) {
    NotNativeGroup group;
    group.status = v.status;
    group.reason = std::string(v.reason);
    tally.summary.not_native.push_back(std::move(group));
    tally.members.emplace_back();
  }
  return it->second;
}

// One node's GPUs into the tallies: each verdict counted, those not native into their groups; a
// group holds whole nodes while each of its nodes has all its GPUs in it.
void tally_node(const NodeRecord& n, std::array<ModeTally, kModeTable.size()>& tallies) {
  struct Joined {
    std::size_t mode, group;
    int gpus;
  };
  std::vector<Joined> joined;  // the groups this node's GPUs joined
  int gpus = 0;
  for (const NodeDevice& d : n.devices) {
    if (d.kind != DeviceKind::cuda) continue;
    ++gpus;
    for (std::size_t m = 0; m < d.verdicts.size(); ++m) {
      if (!d.verdicts[m]) continue;
      const NodeVerdict& v = *d.verdicts[m];
      ModeTally& tally = tallies[m];
      tally.any = true;
      ++tally.summary.count(v.status);
      if (v.status == Status::native) continue;
      const std::size_t group = group_of(tally, v);
      NotNativeGroup& g = tally.summary.not_native[group];
      tally.members[group].emplace_back(&n, &d);
      ++g.gpus;
      if (g.nodes.empty() || g.nodes.back() != node_name(n)) g.nodes.push_back(node_name(n));
      const auto it = std::find_if(joined.begin(), joined.end(), [&](const Joined& j) {
        return j.mode == m && j.group == group;
      });
      if (it == joined.end()) {
        joined.push_back({m, group, 1});
      } else {
        ++it->gpus;
      }
    }
  }
  for (const Joined& j : joined) {
    if (j.gpus != gpus) tallies[j.mode].summary.not_native[j.group].whole_nodes = false;
  }
}

// Per mode, in the mode table's order: the GPUs' verdicts counted, those not native grouped by
// verdict and reason; a group's GPUs named only where it does not hold whole nodes (the nodes say
// it then). One walk over the GPUs for every mode: ten thousand nodes do not fit in a cache.
std::vector<ModeSummary> summarize_modes(const std::vector<NodeRecord>& nodes) {
  std::array<ModeTally, kModeTable.size()> tallies;
  for (std::size_t m = 0; m < tallies.size(); ++m) tallies[m].summary.mode = kModeTable[m].mode;
  for (const NodeRecord& n : nodes) tally_node(n, tallies);
  std::vector<ModeSummary> modes;
  for (ModeTally& tally : tallies) {
    if (!tally.any) continue;
    for (std::size_t i = 0; i < tally.summary.not_native.size(); ++i) {
      NotNativeGroup& g = tally.summary.not_native[i];
      if (g.whole_nodes) continue;
      for (const auto& [n, d] : tally.members[i]) g.devices.push_back(device_text(*n, *d));
    }
    modes.push_back(std::move(tally.summary));
  }
  return modes;
}

// The median, the values left reordered.
double median(std::vector<double>& values) {
  const std::size_t n = values.size();
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (n % 2 == 1) return *mid;
  return (*mid + *std::max_element(values.begin(), mid)) / 2.0;
}

// One model's figures: per kind (bench, soak) and mode, the values, then their median and count.
struct ModelFigures {
  std::array<std::array<std::vector<double>, kModeTable.size()>, 2> values;
  std::array<std::array<double, kModeTable.size()>, 2> median{};
  std::array<std::array<int, kModeTable.size()>, 2> peers{};
  std::array<std::array<std::vector<ThroughputOutlier>, kModeTable.size()>, 2> outliers;
};

const std::array<double, kModeTable.size()>& figures_of(const NodeDevice& d, std::size_t kind) {
  return kind == 0 ? d.bench_tflops : d.soak_tflops;
}

// A GPU more than 10 % below the median of the same model, per mode and per kind of figure: the
// values gathered and their medians found, then each GPU's figures compared in a second walk (no
// list of every figure with its GPU: 1.4 million of them for ten thousand nodes).
std::vector<ThroughputOutlier> find_outliers(const std::vector<NodeRecord>& nodes,
                                             const std::vector<ModelCount>& models) {
  std::map<std::string_view, ModelFigures> by_model;  // views into `models`
  for (const ModelCount& c : models) {
    ModelFigures& f = by_model[c.model];
    for (auto& kind : f.values) {
      for (auto& values : kind) values.reserve(static_cast<std::size_t>(c.gpus));
    }
  }
  // Each walk looks a model up where it changes from the GPU before.
  auto each_gpu = [&](auto&& visit) {
    ModelFigures* last = nullptr;
    std::string_view last_model;
    for (const NodeRecord& n : nodes) {
      for (const NodeDevice& d : n.devices) {
        if (d.kind != DeviceKind::cuda) continue;
        if (last == nullptr || d.model != last_model) {
          last = &by_model[d.model];
          last_model = d.model;
        }
        visit(n, d, *last);
      }
    }
  };
  each_gpu([](const NodeRecord&, const NodeDevice& d, ModelFigures& f) {
    for (std::size_t kind = 0; kind < 2; ++kind) {
      const auto& tflops = figures_of(d, kind);
      for (std::size_t m = 0; m < tflops.size(); ++m) {
        if (tflops[m] > 0.0) f.values[kind][m].push_back(tflops[m]);
      }
    }
  });
  for (auto& [model, f] : by_model) {
    for (std::size_t kind = 0; kind < 2; ++kind) {
      for (std::size_t m = 0; m < kModeTable.size(); ++m) {
        std::vector<double>& values = f.values[kind][m];
        f.peers[kind][m] = static_cast<int>(values.size());
        if (values.size() >= 2) f.median[kind][m] = median(values);
        std::vector<double>().swap(values);
      }
    }
  }
  each_gpu([](const NodeRecord& n, const NodeDevice& d, ModelFigures& f) {
    for (std::size_t kind = 0; kind < 2; ++kind) {
      const auto& tflops = figures_of(d, kind);
      for (std::size_t m = 0; m < tflops.size(); ++m) {
        if (tflops[m] <= 0.0 || f.peers[kind][m] < 2 || tflops[m] >= 0.9 * f.median[kind][m])
          continue;
        f.outliers[kind][m].push_back({kind == 0 ? "bench" : "soak", kModeTable[m].mode,
                                       std::string(d.model), node_name(n), d.label(), d.uuid,
                                       tflops[m], f.median[kind][m], f.peers[kind][m]});
      }
    }
  });
  // Per model, the bench's then the soak's, each in the mode table's order.
  std::vector<ThroughputOutlier> outliers;
  for (auto& [model, f] : by_model) {
    for (auto& kind : f.outliers) {
      for (auto& list : kind) std::move(list.begin(), list.end(), std::back_inserter(outliers));
    }
  }
  return outliers;
}

void check_age(const std::vector<NodeRecord>& nodes, const SummaryOptions& o, FleetSummary& s) {
  if (!o.max_age_s) return;
  for (const NodeRecord& n : nodes) {
    if (!n.started_ms) {
      s.stale.push_back(
          {node_name(n), n.source,
           n.started_at.empty()
               ? "the report says not when it ran (started_at)"
               : fmt::format("its started_at '{}' is not a time (RFC 3339 in UTC, a date the "
                             "calendar has)",
                             printable(n.started_at, 40))});
      continue;
    }
    if (n.future) {
      s.stale.push_back({node_name(n), n.source,
                         fmt::format("it says it ran {}, ahead of this summary's clock: its age "
                                     "is not known",
                                     n.started_at)});
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

// The reports dated in the future, each a finding of its own.
std::vector<UnknownNode> future_reports(const std::vector<NodeRecord>& all,
                                        const SummaryOptions& o) {
  std::vector<UnknownNode> future;
  for (const NodeRecord& n : all) {
    if (!n.future) continue;
    future.push_back(
        {node_name(n), n.source,
         fmt::format("started {}, {} ahead of this summary's clock (more than 5 "
                     "minutes: its clock is wrong, or the report is not what it says)",
                     n.started_at, format_duration((*n.started_ms - o.now_ms) / 1000))});
  }
  return future;
}

// Whether each host's report dated in the future counts (`kept`: the one report a host kept,
// sorted by host) or another one does.
void say_what_counts(std::vector<UnknownNode>& future, const std::vector<NodeRecord>& kept) {
  for (UnknownNode& u : future) {
    const auto it = std::lower_bound(
        kept.begin(), kept.end(), u.node,
        [](const NodeRecord& n, const std::string& name) { return node_name(n) < name; });
    if (it == kept.end() || node_name(*it) != u.node) continue;
    u.why += it->source == u.source ? "; the host has no other report: this one counts"
                                    : "; not counted: " + it->source + " counts";
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
      const auto corrupt = [&d](Mode mode) {
        return std::find(d.corrupt.begin(), d.corrupt.end(), mode) != d.corrupt.end();
      };
      for (const Mode mode : d.failed) {
        s.failed.push_back({node_name(n), d.label(), d.uuid,
                            fmt::format("{} failed: {}", mode_key(mode), d.find(mode)->reason),
                            corrupt(mode)});
        listed = true;
      }
      // Corruption whose mode's verdict does not say failed (a report that is not what the probe
      // writes) still counts.
      for (const Mode mode : d.corrupt) {
        if (std::find(d.failed.begin(), d.failed.end(), mode) != d.failed.end()) continue;
        s.failed.push_back(
            {node_name(n), d.label(), d.uuid,
             fmt::format("{}: --soak found results unlike the golden ones", mode_key(mode)), true});
        listed = true;
      }
      if (!d.corruption_note.empty()) {
        s.failed.push_back(
            {node_name(n), d.label(), d.uuid, "soak: " + std::string(d.corruption_note), true});
        listed = true;
      }
    }
    if (!listed && n.exit_code == exit_code::kCheckFailed) {
      s.failed.push_back({node_name(n), "", "", std::string(n.exit_reason)});
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

// The gate's precedence, silent data corruption first as in the probe's own gate: 2 (bad input,
// decided before), 4 a soak that found wrong numbers on a gated device, 3 a node unknown, 4 a
// gated device failed, 1 a requirement not met somewhere, 0. A report dated in the future is a
// finding that does not change it: it never counts over another report of its host, and where it
// is the only one, --max-age finds its age unknown.
void decide_exit(FleetSummary& s) {
  const std::size_t unknown = s.stale.size() + s.unknown.size() + s.unreadable.size();
  const auto corrupt = std::find_if(s.failed.begin(), s.failed.end(),
                                    [](const FailedDevice& f) { return f.corruption; });
  if (corrupt != s.failed.end()) {
    s.exit_code = exit_code::kCheckFailed;
    s.exit_reason = fmt::format("silent data corruption on {} gated device(s), first: {} {}: {}",
                                std::count_if(s.failed.begin(), s.failed.end(),
                                              [](const FailedDevice& f) { return f.corruption; }),
                                corrupt->node, corrupt->device, corrupt->what);
  } else if (s.reports == 0 && s.unreadable.empty()) {
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

// Frees the records' contents on two cores, half each: half a million allocations, each a likely
// cache miss; the emptied records are then freed at once.
void release(std::vector<NodeRecord>& nodes) {
  const std::size_t half = nodes.size() / 2;
  auto empty = [&nodes](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) nodes[i] = NodeRecord{};
  };
  run_both([&] { empty(0, half); }, [&] { empty(half, nodes.size()); });
}

}  // namespace

FleetSummary summarize(FleetInputs inputs, const SummaryOptions& options) {
  FleetSummary s;
  s.reports = static_cast<int>(inputs.nodes.size());
  s.unreadable = std::move(inputs.unreadable);
  s.skipped = std::move(inputs.skipped);
  s.required = options.require;
  s.max_age_s = options.max_age_s;
  for (NodeRecord& n : inputs.nodes) {
    n.future = n.started_ms && *n.started_ms > options.now_ms + kFutureSlackMs;
  }
  s.future = future_reports(inputs.nodes, options);
  std::vector<NodeRecord> nodes = newest_per_host(std::move(inputs.nodes), s.superseded);
  say_what_counts(s.future, nodes);
  s.nodes = static_cast<int>(nodes.size());
  s.models = count_models(nodes);
  for (const ModelCount& m : s.models) s.gpus += m.gpus;
  // The outliers on a second core while this one does the rest: each is a walk over every GPU,
  // and ten thousand nodes do not fit in a cache. The second writes s.outliers only; both read.
  run_both([&] { s.outliers = find_outliers(nodes, s.models); },
           [&] {
             s.modes = summarize_modes(nodes);
             check_age(nodes, options, s);
             check_outcomes(nodes, s);
             check_requirements(nodes, s);
           });
  decide_exit(s);
  release(nodes);
  return s;
}

}  // namespace precision_probe
