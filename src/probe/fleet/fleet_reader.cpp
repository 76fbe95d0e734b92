#include "probe/fleet/fleet_reader.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "strings/strings.hpp"
#include "threads/threads.hpp"
#include "precision_probe/report_json.hpp"
#include "report/json_document.hpp"
#include "report/report_reader.hpp"

namespace precision_probe {

namespace {

// How much of standard input is parsed at once: its complete lines, on every core.
constexpr std::size_t kBatchBytes = std::size_t{16} << 20;
constexpr const char* kTooLarge = "larger than 64 MiB: not a report";

// What a file that is not a regular one is: never read (a FIFO would block, a device never end).
struct FileKind {
  mode_t type;
  const char* name;
};
constexpr std::array<FileKind, 5> kFileKinds = {{
    {S_IFIFO, "a FIFO"},
    {S_IFCHR, "a character device"},
    {S_IFBLK, "a block device"},
    {S_IFSOCK, "a socket"},
    {S_IFDIR, "a directory"},
}};

std::string not_regular(mode_t mode) {
  const char* name = "a special file";
  for (const FileKind& k : kFileKinds) {
    if ((mode & S_IFMT) == k.type) name = k.name;
  }
  return std::string(name) +
         ", not a regular file: not read (JSON Lines are read from standard input, -)";
}

FileIdentity identity_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

// One report to read: a file, or a line of standard input.
struct Item {
  std::string source;
  std::string path;  // empty for a line
  std::string_view line;
  bool padded = false;  // the line is followed by kJsonPadding readable bytes
};

struct Outcome {
  std::optional<NodeRecord> node;
  std::optional<Unreadable> unreadable;
  std::optional<Unreadable> skipped;
  bool conflict = false;  // the summary's own output, and no summary: it must not be replaced
  std::optional<FileIdentity> file = std::nullopt;  // the file opened, where one was: counted once
};

// Reads a regular file whole (at most kMaxReportBytes) into `buffer`, and says whether it is the
// summary's own output; or why it cannot. It is opened without blocking and judged by fstat before
// a byte is read, so that a FIFO (or a device) is refused at once. `file` is what was opened,
// whether or not it could be read.
Expected<bool> read_file(const std::string& path, const std::optional<FileIdentity>& output,
                         std::string& buffer, std::optional<FileIdentity>& file) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Unexpected{error_string(errno)};
  struct stat st {};
  std::string error;
  if (::fstat(fd, &st) != 0) {
    error = error_string(errno);
  } else if (file = identity_of(st); !S_ISREG(st.st_mode)) {
    error = not_regular(st.st_mode);
  } else if (static_cast<std::size_t>(st.st_size) > kMaxReportBytes) {
    error = kTooLarge;
  }
  const bool is_output = error.empty() && output && identity_of(st) == *output;
  // Read straight into the buffer, grown as needed (the file may grow while it is read), with room
  // for the parser's padding after it.
  std::size_t used = 0;
  const std::size_t expected = error.empty() ? static_cast<std::size_t>(st.st_size) + 1 : 0;
  buffer.reserve(expected + json_fields::kJsonPadding);
  buffer.resize(expected);
  while (error.empty()) {
    if (used == buffer.size()) buffer.resize(buffer.size() * 2);
    const ssize_t n = ::read(fd, buffer.data() + used, buffer.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = error_string(errno);
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
    if (used > kMaxReportBytes) error = kTooLarge;
  }
  buffer.resize(used);
  ::close(fd);
  if (!error.empty()) return Unexpected{error};
  return is_output;
}

// A summary (what `summarize --format json` writes, its error documents too): not a report.
bool is_summary(std::string_view text) {
  thread_local json_fields::JsonDocument doc;
  if (!doc.parse(text)) return false;
  const json_fields::JsonValue root = doc.root();
  return root.is_object() && root.find("summary_schema_version") && !root.find("schema_version");
}

bool blank(std::string_view text) { return text.find_first_not_of(" \t\r\n\f\v") == text.npos; }

// What a report's text is: a report's record, or why it is not one.
Outcome judge_text(const Item& item, std::string_view text, bool padded, bool is_output,
                   std::size_t order, const FleetReadOptions& options, TextPool& texts) {
  if (text.size() > kMaxReportBytes) {
    return {std::nullopt, Unreadable{item.source, kTooLarge}, std::nullopt};
  }
  Expected<Report> report = json_fields::read_report(text, ReadDepth::verdicts, padded);
  if (report && !is_output) {
    return {node_record(*report, item.source, order, options.required, texts), std::nullopt,
            std::nullopt};
  }
  // The summary's own output may be replaced where it holds a summary (or nothing: stdout
  // redirected there was emptied by the shell); anything else there is kept, and the run refused.
  if (is_output && (blank(text) || is_summary(text))) {
    return {std::nullopt, std::nullopt,
            Unreadable{item.source, "the summary's own output (replaced by this summary)"}};
  }
  if (is_output) return {std::nullopt, std::nullopt, std::nullopt, true};
  if (!report && is_summary(text)) {
    return {std::nullopt, std::nullopt, Unreadable{item.source, "a summary, not a report"}};
  }
  return {std::nullopt, Unreadable{item.source, report.error()}, std::nullopt};
}

Outcome read_one(const Item& item, std::size_t order, const FleetReadOptions& options,
                 TextPool& texts, std::string& buffer) {
  if (item.path.empty()) {
    return judge_text(item, item.line, item.padded, false, order, options, texts);
  }
  std::optional<FileIdentity> file;
  const Expected<bool> read = read_file(item.path, options.output, buffer, file);
  Outcome outcome =
      read
          ? judge_text(item, buffer, buffer.capacity() - buffer.size() >= json_fields::kJsonPadding,
                       *read, order, options, texts)
          : Outcome{std::nullopt, Unreadable{item.source, read.error()}, std::nullopt};
  outcome.file = file;
  return outcome;
}

// A directory's *.json files, sorted, that are not directories (a FIFO or a device among them is
// listed, to be refused by name); or the path itself.
std::vector<std::string> expand(const std::string& path, std::vector<Unreadable>& unreadable) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {path};
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    unreadable.push_back({path, "cannot list the directory: " + error_string(errno)});
    return {};
  }
  std::vector<std::string> files;
  const std::string prefix = path.back() == '/' ? path : path + "/";
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): one thread
    const std::string name = entry->d_name;
    if (name.size() <= 5 || name.front() == '.' || name.compare(name.size() - 5, 5, ".json") != 0) {
      continue;
    }
    // The entry's type says what it is without a stat, except for a link (followed: one to
    // nothing is left out) or where the file system does not tell.
    struct stat file {};
    if (entry->d_type == DT_DIR ||
        ((entry->d_type == DT_LNK || entry->d_type == DT_UNKNOWN) &&
         (::stat((prefix + name).c_str(), &file) != 0 || S_ISDIR(file.st_mode)))) {
      continue;
    }
    files.push_back(prefix + name);
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());
  return files;
}

// A source named on the command line (or standard input) that is the summary's own output: ""
// or that source. Found before anything is read, as the probe finds one file named twice.
std::string named_conflict(const std::vector<std::string>& sources, int stdin_fd,
                           const std::optional<FileIdentity>& output) {
  if (!output) return "";
  for (const std::string& source : sources) {
    struct stat st {};
    const bool known =
        source == "-" ? ::fstat(stdin_fd, &st) == 0 : ::stat(source.c_str(), &st) == 0;
    if (known && S_ISREG(st.st_mode) && identity_of(st) == *output) return source;
  }
  return "";
}

// The reading of one call: the files listed so far, read together on every core; standard input
// in batches of lines.
class Reader {
 public:
  explicit Reader(const FleetReadOptions& options) : options_(options) {}

  FleetInputs& inputs() { return inputs_; }
  void add(const std::string& path) { pending_.push_back({path, path, {}, false}); }
  bool stopped() {
    if (!stopped_.load() && options_.stop && options_.stop()) stopped_.store(true);
    return stopped_.load();
  }
  void read_pending();
  void read_stdin(int fd);
  FleetInputs finish() {
    read_pending();
    inputs_.stopped = stopped_.load();
    return std::move(inputs_);
  }

 private:
  void read_lines(std::string& text, std::size_t& complete, std::size_t& line);

  const FleetReadOptions& options_;
  FleetInputs inputs_;
  std::vector<Item> pending_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> files_;  // the files read, by identity
  std::size_t order_ = 0;  // of the next report: of two equally old ones, the later counts
  std::atomic<bool> stopped_{false};
};

// The items listed so far, read and parsed on up to `threads` threads (64 at most), their
// outcomes kept in the order of the items.
void Reader::read_pending() {
  if (pending_.empty()) return;
  std::vector<Outcome> outcomes(pending_.size());
  unsigned threads = options_.threads;
  if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
  threads = std::min<unsigned>({threads, 64U, static_cast<unsigned>(pending_.size())});
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    std::string buffer;
    for (std::size_t i = next++; i < pending_.size() && !stopped(); i = next++)
      outcomes[i] = read_one(pending_[i], order_ + i, options_, *inputs_.texts, buffer);
  };
  run_on_threads(threads, work);  // an exception of any, such as std::bad_alloc, comes here
  inputs_.nodes.reserve(inputs_.nodes.size() + outcomes.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    Outcome& o = outcomes[i];
    // A file is counted once, however often it is named or found (a.json ./a.json, dir dir).
    if (o.file && !files_.insert({o.file->device, o.file->inode}).second) continue;
    if (o.node) inputs_.nodes.push_back(std::move(*o.node));
    if (o.unreadable) inputs_.unreadable.push_back(std::move(*o.unreadable));
    if (o.skipped) inputs_.skipped.push_back(std::move(*o.skipped));
    if (o.conflict && inputs_.conflict.empty()) inputs_.conflict = pending_[i].source;
  }
  order_ += pending_.size();
  pending_.clear();
}

// text[0, complete): whole lines, the first numbered `line`; read, then dropped from `text`.
void Reader::read_lines(std::string& text, std::size_t& complete, std::size_t& line) {
  for (std::size_t start = 0; start < complete; ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos || end > complete) end = complete;
    const std::string_view one(text.data() + start, end - start);
    // What follows a line in the buffer (the next lines, reserved room) is its padding.
    const bool padded = end + json_fields::kJsonPadding <= text.capacity();
    if (!blank(one)) pending_.push_back({"-:" + std::to_string(line), "", one, padded});
    start = end + 1;
  }
  read_pending();
  text.erase(0, complete);
  complete = 0;
}

// Standard input as JSON Lines, parsed as it comes: a batch of whole lines (about 16 MiB) at a
// time, so that a batch and one line stand in memory, never the stream. Blank lines are skipped;
// a line longer than kMaxReportBytes is unreadable, dropped as it is read. The wait for input
// asks `stop` ten times a second: a signal ends it.
void Reader::read_stdin(int fd) {
  std::string text;          // from the start of the first line not yet read
  std::size_t complete = 0;  // text[0, complete) is whole lines
  std::size_t line = 1;      // the number of text's first line
  bool dropping = false;     // inside a line over the limit, up to its newline
  std::vector<char> chunk(std::size_t{1} << 20);
  // Room for a batch and the longest line read: the text is never moved to a larger buffer (which
  // would hold both copies at once), and pages not yet written take no memory.
  text.reserve(kBatchBytes + kMaxReportBytes + 2 * chunk.size());
  std::string error;
  bool ended = false;
  while (!ended && error.empty() && !stopped()) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) error = error_string(errno);
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) error = error_string(errno);
    ended = n == 0;
    if (n <= 0) continue;
    std::string_view data(chunk.data(), static_cast<std::size_t>(n));
    if (dropping) {
      const std::size_t newline = data.find('\n');
      if (newline == std::string_view::npos) continue;
      dropping = false;
      ++line;
      data.remove_prefix(newline + 1);
    }
    const std::size_t before = text.size();
    text.append(data);
    if (const std::size_t last = data.rfind('\n'); last != std::string_view::npos) {
      complete = before + last + 1;
    }
    if (text.size() - complete > kMaxReportBytes) {  // the line being read is too long
      read_lines(text, complete, line);
      inputs_.unreadable.push_back({"-:" + std::to_string(line), kTooLarge});
      text.clear();
      dropping = true;
    } else if (complete >= kBatchBytes) {
      read_lines(text, complete, line);
    }
  }
  if (stopped()) return;
  if (!dropping) complete = text.size();  // the last line, without its newline
  read_lines(text, complete, line);
  if (!error.empty()) inputs_.unreadable.push_back({"-", "cannot read standard input: " + error});
}

}  // namespace

FleetInputs read_fleet_reports(const std::vector<std::string>& sources, int stdin_fd,
                               const FleetReadOptions& options) {
  Reader reader(options);
  reader.inputs().conflict = named_conflict(sources, stdin_fd, options.output);
  if (!reader.inputs().conflict.empty()) return reader.finish();
  bool stdin_read = false;
  for (const std::string& source : sources) {
    if (reader.stopped()) break;
    if (source != "-") {
      for (const std::string& path : expand(source, reader.inputs().unreadable)) reader.add(path);
    } else if (!stdin_read) {
      stdin_read = true;  // once
      reader.read_pending();
      reader.read_stdin(stdin_fd);
    }
  }
  return reader.finish();
}

}  // namespace precision_probe
