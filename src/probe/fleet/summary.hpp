#pragma once
// `precision-probe summarize`: a fleet's reports in one view. Each report is read through the
// public report API (read_report_json, so that older schemas it accepts are read the same way),
// cut down to what the view needs (NodeRecord) and then summarised (FleetSummary): plain data,
// printed by summary_printers. docs/summarize.md describes the view, its JSON and its exit codes.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "precision_probe/report.hpp"

namespace precision_probe {

// --- One report, as the summary needs it ---------------------------------------------------------

// Texts that many records hold alike (a verdict's reason is the same on every GPU of a model, a
// GPU's model on every node): each kept once, so that ten thousand records stay small. A text
// added is a view that lives as long as the pool; add() may be called from several threads.
class TextPool {
 public:
  std::string_view add(std::string_view text);

 private:
  std::mutex mutex_;
  std::set<std::string, std::less<>> texts_;  // a set's strings never move
};

struct NodeVerdict {
  Status status = Status::not_tested;
  Hardware hardware = Hardware::unsupported;
  std::string_view reason;  // in the records' TextPool
};

struct NodeDevice {
  DeviceKind kind = DeviceKind::cpu;
  int index = -1;
  bool selected = false;
  std::string_view model;  // the GPU's name ("NVIDIA H200"), the CPU's model; in the TextPool
  std::string uuid;
  // By mode (Mode's value): the verdict where the report has one, and the TFLOP/s measured (0 where
  // none): the bench's sustained figure where measured, else its burst; the soak's. Held in the
  // device, not in lists of their own: a summary walks 80,000 of them several times.
  std::array<std::optional<NodeVerdict>, kModeTable.size()> verdicts;
  std::array<double, kModeTable.size()> bench_tflops{};
  std::array<double, kModeTable.size()> soak_tflops{};
  std::vector<Mode> failed;  // the modes whose verdict is failed, in the report's order
  // Gated devices: the modes in which --soak found silent data corruption (a result unlike its
  // golden one, or a golden result unlike those of its like GPUs), and a golden disagreement that
  // names no mode (in the TextPool).
  std::vector<Mode> corrupt;
  std::string_view corruption_note;

  std::string label() const;  // "GPU 3", "CPU"
  const NodeVerdict* find(Mode mode) const;
};

// A required mode on one gated device, judged by the probe's own gate (verdicts/gate); `missing`
// when the report has no verdict for it there (or gated no device).
struct NodeRequirement {
  RequirementResult result;
  bool missing = false;
};

struct NodeRecord {
  std::string source;  // the file, or "-:LINE" for a line of standard input
  std::size_t order = 0;
  std::string hostname;  // the node's name: the report's host.node_name, else host.hostname
  std::string started_at;
  std::optional<std::int64_t> started_ms;  // started_at, parsed
  bool future = false;  // started more than kFutureSlackMs after the summary's clock (summarize())
  int exit_code = 0;
  std::string_view exit_reason;  // in the TextPool
  std::vector<NodeDevice> devices;
  std::vector<NodeRequirement> requirements;  // of the summary's --require
};

// The record of a report, its shared texts kept in `texts`.
NodeRecord node_record(const Report& report, std::string source, std::size_t order,
                       const std::vector<Mode>& required, TextPool& texts);

// What could not be read: the source and why.
struct Unreadable {
  std::string source;
  std::string error;
};

struct FleetInputs {
  std::shared_ptr<TextPool> texts = std::make_shared<TextPool>();  // the records' shared texts
  std::vector<NodeRecord> nodes;
  std::vector<Unreadable> unreadable;
  std::vector<Unreadable> skipped;  // summary documents among the reports: not reports, not read
  std::string conflict;  // a source that is the summary's own output (nothing may be written)
  bool stopped = false;  // the reading was stopped (a signal): the inputs are incomplete
};

// --- The fleet
// -------------------------------------------------------------------------------------

// A report that says it started more than this after the summary's clock is dated in the future:
// a finding (its node's clock is wrong, or the report is not what it says), never the newest.
inline constexpr std::int64_t kFutureSlackMs = std::int64_t{5} * 60 * 1000;

struct SummaryOptions {
  std::vector<Mode> require;
  std::optional<std::int64_t> max_age_s;
  std::int64_t now_ms = 0;
};

struct ModelCount {
  std::string model;
  int nodes = 0;
  int gpus = 0;
};

// GPUs that share a verdict that is not native, for one mode.
struct NotNativeGroup {
  Status status = Status::not_tested;
  std::string reason;
  int gpus = 0;                      // GPUs in the group
  std::vector<std::string> nodes;    // the hosts, each once
  bool whole_nodes = true;           // every GPU of each of those nodes is in the group
  std::vector<std::string> devices;  // "host GPU 3 (GPU-uuid)", where not whole_nodes
};

struct ModeSummary {
  Mode mode = Mode::fp32;
  std::array<int, kStatuses.size()> gpus_by_status{};  // GPUs of each status (kStatuses' order)
  std::vector<NotNativeGroup> not_native;

  int& count(Status status) { return gpus_by_status.at(static_cast<std::size_t>(status)); }
  int count(Status status) const { return gpus_by_status.at(static_cast<std::size_t>(status)); }
};

// A GPU more than 10 % below the median of its model for a mode, by --bench or --soak figures.
struct ThroughputOutlier {
  std::string source;  // "bench" or "soak"
  Mode mode = Mode::fp32;
  std::string model;
  std::string node;
  std::string device;  // "GPU 3"
  std::string uuid;
  double tflops = 0.0;
  double median = 0.0;
  int peers = 0;  // GPUs of that model measured in that mode
};

// A node whose state is unknown: its report is stale, or it exited 2, 3 or 5 itself.
struct UnknownNode {
  std::string node;
  std::string source;
  std::string why;
};

// A device that its report gated and that failed a check.
struct FailedDevice {
  std::string node;
  std::string device;
  std::string uuid;
  std::string what;         // "bf16 failed: ..." or the report's exit reason
  bool corruption = false;  // silent data corruption found by --soak: it decides the exit first
};

struct RequirementGap {
  Mode mode = Mode::fp32;
  std::string node;
  std::string device;  // "" when the report has no device for the mode (missing)
  Status status = Status::not_tested;
  std::string reason;
};

struct Superseded {
  std::string node;
  std::string source;
  std::string newer_source;
};

struct FleetSummary {
  int reports = 0;  // read and parsed
  int nodes = 0;
  int gpus = 0;
  std::vector<ModelCount> models;
  std::vector<ModeSummary> modes;
  std::vector<ThroughputOutlier> outliers;
  std::vector<UnknownNode> stale;    // older than --max-age, or of no known age
  std::vector<UnknownNode> unknown;  // reports that exited 2, 3 or 5
  std::vector<UnknownNode> future;   // reports that started after the summary's clock
  std::vector<Unreadable> unreadable;
  std::vector<Unreadable> skipped;  // summaries among the reports
  std::vector<FailedDevice> failed;
  std::vector<Mode> required;
  std::vector<RequirementGap> missing;  // a required mode absent from a node's report
  std::vector<RequirementGap> unmet;    // a required mode not native on a gated device
  std::vector<Superseded> superseded;
  std::optional<std::int64_t> max_age_s;
  std::string generated_at;  // when the summary was made, RFC 3339 in UTC
  std::string tool_version;
  double duration_ms = 0.0;  // reading and summarising
  int exit_code = 0;
  std::string exit_reason;
};

FleetSummary summarize(FleetInputs inputs, const SummaryOptions& options);

}  // namespace precision_probe
