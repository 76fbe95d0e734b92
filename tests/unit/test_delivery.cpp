// How every command ends (probe/delivery.hpp), the probe's and summarize's: the exit code after a
// delivery, what stderr says, and what stdout carries when something could not be done.

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include "probe/delivery.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace pp = precision_probe;

namespace {

// Outputs whose delivery fails (`problem`), or succeeds ("").
class Outputs final : public pp::PreparedOutputs {
 public:
  Outputs(std::string problem, bool on_stdout) : problem_(std::move(problem)), stdout_(on_stdout) {}
  pp::Expected<void> deliver(const std::vector<std::string>&, std::chrono::steady_clock::time_point,
                             bool& stdout_failed, const std::function<bool()>&) override {
    stdout_failed = !problem_.empty() && stdout_;
    if (problem_.empty()) return {};
    return pp::Unexpected{problem_};
  }
  bool holds_a_file(std::size_t) const override { return false; }
  void leave_as_is(std::size_t) override {}

 private:
  std::string problem_;
  bool stdout_;
};

// A stream in memory, read back whole.
class Memory {
 public:
  Memory() : fd_(::memfd_create("pp-test", MFD_CLOEXEC)) {}
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() { ::close(fd_); }
  int fd() const { return fd_; }
  std::string text() const {
    std::string out(static_cast<std::size_t>(::lseek(fd_, 0, SEEK_END)), '\0');
    if (::pread(fd_, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) return "?";
    return out;
  }

 private:
  int fd_;
};

// stdout and stderr in memory.
struct Streams {
  Memory out, err;
  pp::StandardStreams streams;
  Streams() {
    streams.out_fd = out.fd();
    streams.err_fd = err.fd();
  }
};

struct Ended {
  pp::Delivered delivered;
  std::string err;
};

Ended end(const std::string& problem, pp::Verdict verdict, bool shows = false,
          bool on_stdout = false) {
  const Streams s;
  Outputs outputs(problem, on_stdout);
  pp::Delivery delivery;
  delivery.contents = {"report"};
  delivery.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  delivery.what = "the summary";
  delivery.stdout_shows_verdict = shows;
  const pp::Delivered d =
      pp::deliver(outputs, delivery, std::move(verdict), pp::Console(s.streams, false, false));
  EXPECT_EQ(s.out.text(), "");  // what stdout gets after a failure is the command's to say
  return {d, s.err.text()};
}

}  // namespace

// A summary or a report nobody received is no success, nor a plain "not met": 0 and 1 become 6;
// 3, 4 and 5 stand, and stderr says both.
TEST(Delivery, AFailedDeliveryRanksByTheOneSeverityOrder) {
  for (int code : {pp::exit_code::kOk, pp::exit_code::kRequirementNotMet}) {
    const Ended e = end("-o: /dev/full: No space left on device", {code, "why"});
    EXPECT_EQ(e.delivered.verdict.code, pp::exit_code::kOutputFailed);
    EXPECT_EQ(e.delivered.verdict.reason,
              "the summary could not be delivered: -o: /dev/full: No space left on device");
    EXPECT_EQ(e.err, "precision-probe: error: " + e.delivered.verdict.reason + "\n");
  }
  for (int code :
       {pp::exit_code::kEnvironment, pp::exit_code::kCheckFailed, pp::exit_code::kTimedOut}) {
    const Ended e = end("-o: x: broken", {code, "a GPU computes wrong numbers"});
    EXPECT_EQ(e.delivered.verdict.code, code);
    EXPECT_EQ(e.delivered.verdict.reason, "a GPU computes wrong numbers");
    EXPECT_EQ(e.err,
              "precision-probe: error: the summary could not be delivered: -o: x: broken "
              "(exit " +
                  std::to_string(code) + ": a GPU computes wrong numbers)\n");
  }
  EXPECT_TRUE(end("the report on stdout: EPIPE", {0, ""}, false, true).delivered.stdout_failed);
}

// The verdict reaches the CI log wherever stdout does not show it.
TEST(Delivery, AVerdictOtherThanZeroIsSaidWhereStdoutDoesNotShowIt) {
  EXPECT_EQ(end("", {1, "bf16 on GPU 0 is emulated"}).err,
            "precision-probe: exit 1: bf16 on GPU 0 is emulated\n");
  EXPECT_EQ(end("", {1, "bf16 on GPU 0 is emulated"}, true).err, "");
  EXPECT_EQ(end("", {0, "nothing failed"}).err, "");
  EXPECT_EQ(end("", {3, "no GPU"}).delivered.verdict.code, 3);
}

// An error is one line on stderr, and a JSON document on stdout where JSON was asked for, never
// under -q nor on a stdout that was closed.
TEST(Delivery, AnErrorIsOneLineAndADocumentWhereJsonWasAskedFor) {
  for (const bool json : {false, true}) {
    for (const bool quiet : {false, true}) {
      for (const bool closed : {false, true}) {
        Streams s;
        s.streams.out_closed = closed;
        const pp::Console console(s.streams, json, quiet);
        EXPECT_EQ(console.fail(2, "--format: 'xml' is not a format\x1b[2J", "{}\n"), 2);
        EXPECT_EQ(s.err.text(),
                  "precision-probe: error: --format: 'xml' is not a format\\x1b[2J\n");
        EXPECT_EQ(s.out.text(), json && !quiet && !closed ? "{}\n" : "");
      }
    }
  }
}
