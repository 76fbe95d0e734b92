#include "probe/fleet/fleet_reader.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <thread>

#include "common/strings.hpp"
#include "common/threads.hpp"
#include "precision_probe/report_json.hpp"

namespace precision_probe {

namespace {

// One report to read: a file, or a line of standard input already in memory.
struct Item {
  std::string source;
  std::string path;  // empty for a line
  std::string_view line;
};

// Reads a whole file (at most kMaxReportBytes) into `buffer`; "" or why not.
std::string read_file(const std::string& path, std::string& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error_string(errno);
  struct stat st {};
  std::string error;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) error = "a directory";
  if (error.empty() && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) > kMaxReportBytes) {
    error = "larger than 64 MiB: not a report";
  }
  // Read straight into the buffer, grown as needed (a regular file's size is known).
  std::size_t used = 0;
  buffer.resize(S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) + 1 : 65536);
  while (error.empty()) {
    if (used == buffer.size()) buffer.resize(buffer.size() * 2);
    const ssize_t n = ::read(fd, buffer.data() + used, buffer.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = error_string(errno);
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
    if (used > kMaxReportBytes) error = "larger than 64 MiB: not a report";
  }
  buffer.resize(used);
  ::close(fd);
  return error;
}

// A directory's *.json files, sorted; or the path itself.
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
    // Regular files only: a FIFO would block, a directory is not a report. The entry's type says
    // so without a stat, except for a link (followed) or where the file system does not tell.
    const bool regular = entry->d_type == DT_REG;
    struct stat file {};
    if (regular || ((entry->d_type == DT_LNK || entry->d_type == DT_UNKNOWN) &&
                    ::stat((prefix + name).c_str(), &file) == 0 && S_ISREG(file.st_mode))) {
      files.push_back(prefix + name);
    }
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());
  return files;
}

// Standard input as JSON Lines: one report a line, blank lines skipped.
std::string read_lines(int fd, std::string& text, std::vector<Item>& items) {
  char chunk[65536];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return error_string(errno);
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  std::size_t start = 0;
  for (std::size_t number = 1; start < text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (!trim(line).empty()) items.push_back({"-:" + std::to_string(number), "", line});
    start = end + 1;
  }
  return "";
}

struct Outcome {
  std::optional<NodeRecord> node;
  std::optional<Unreadable> unreadable;
};

Outcome read_one(const Item& item, std::size_t order, const std::vector<Mode>& required,
                 std::string& buffer) {
  std::string_view text = item.line;
  if (!item.path.empty()) {
    if (const std::string error = read_file(item.path, buffer); !error.empty()) {
      return {std::nullopt, Unreadable{item.source, error}};
    }
    text = buffer;
  }
  if (text.size() > kMaxReportBytes) {
    return {std::nullopt, Unreadable{item.source, "larger than 64 MiB: not a report"}};
  }
  Expected<Report> report = read_report_json(text, ReadDepth::verdicts);
  if (!report) return {std::nullopt, Unreadable{item.source, report.error()}};
  return {node_record(*report, item.source, order, required), std::nullopt};
}

}  // namespace

FleetInputs read_fleet_reports(const std::vector<std::string>& sources, int stdin_fd,
                               const std::vector<Mode>& required, unsigned threads) {
  FleetInputs inputs;
  std::vector<Item> items;
  std::string stdin_text;
  bool stdin_read = false;  // once: the lines point into stdin_text
  for (const std::string& source : sources) {
    if (source == "-") {
      if (stdin_read) continue;
      stdin_read = true;
      if (const std::string error = read_lines(stdin_fd, stdin_text, items); !error.empty()) {
        inputs.unreadable.push_back({"-", "cannot read standard input: " + error});
      }
      continue;
    }
    for (std::string& path : expand(source, inputs.unreadable)) {
      items.push_back({path, path, {}});
    }
  }
  std::vector<Outcome> outcomes(items.size());
  if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(
      {threads, 64U, static_cast<unsigned>(std::max<std::size_t>(items.size(), 1))});
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    std::string buffer;
    for (std::size_t i = next++; i < items.size(); i = next++)
      outcomes[i] = read_one(items[i], i, required, buffer);
  };
  run_on_threads(threads, work);  // an exception of any, such as std::bad_alloc, comes here
  for (Outcome& o : outcomes) {
    if (o.node) inputs.nodes.push_back(std::move(*o.node));
    if (o.unreadable) inputs.unreadable.push_back(std::move(*o.unreadable));
  }
  return inputs;
}

}  // namespace precision_probe
