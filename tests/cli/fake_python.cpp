// A stand-in for an image's python3 (an ELF executable, as the probe asks only a real interpreter),
// and, given as the probe's own executable, for an image reader that misbehaves. The probe runs
// python3 with an empty environment, so what it does is told by the file `fake-python-mode` in its
// own directory:
//   prefix DIR   print DIR twice (sys.prefix, sys.exec_prefix) and exit 0
//   hang         write its PID to `fake-python-started` beside it, then wait for ever (until
//   killed) say TEXT     print TEXT and a newline, and exit 0
// Anything else: exit 1.

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

int main(int /*argc*/, char** argv) {
  const std::string self = argv[0];
  const std::size_t slash = self.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  std::ifstream in(dir + "/fake-python-mode");
  std::stringstream text;
  text << in.rdbuf();
  std::string mode = text.str();
  while (!mode.empty() && mode.back() == '\n') mode.pop_back();
  if (mode.rfind("prefix ", 0) == 0) {
    std::cout << mode.substr(7) << '\n' << mode.substr(7) << '\n';
    return std::cout.flush() ? 0 : 1;
  }
  if (mode.rfind("say ", 0) == 0) {
    std::cout << mode.substr(4) << '\n';
    return std::cout.flush() ? 0 : 1;
  }
  if (mode == "hang") {
    // Written whole, then renamed: the test that waits for it never reads half a PID.
    const std::string started = dir + "/fake-python-started";
    {
      std::ofstream out(started + ".tmp");
      out << ::getpid() << '\n';
    }
    if (std::rename((started + ".tmp").c_str(), started.c_str()) != 0) return 1;
    for (;;) ::pause();
  }
  return 1;
}
