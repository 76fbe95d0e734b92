#pragma once
// Writing a report file so that readers never see half of it: a temporary file in the same
// directory, flushed and fsync'ed, then renamed over the target.

#include <string>
#include <utility>
#include <vector>

namespace precision_probe {

// Returns "" on success, else what went wrong (the target is then untouched).
std::string write_file_atomically(const std::string& path, const std::string& content);

// Writes several files so that either all are replaced or none is: every temporary file is
// written first, and only then are they renamed into place. Returns "" or what went wrong.
std::string write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

// Checks up front that `path` can be written (its directory exists and is writable, and the path
// is not a directory). Returns "" when it can, else the reason.
std::string check_writable(const std::string& path);

}  // namespace precision_probe
