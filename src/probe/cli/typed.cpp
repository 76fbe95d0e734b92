// What the user typed (command_line.hpp): read once before CLI11 parses, so that messages name
// each option as it was typed and a usage error is still a JSON document where JSON was asked for.

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "probe/cli/command_line.hpp"

namespace precision_probe::cli {

std::string AsTyped::name(const std::string& command, const std::string& long_name) const {
  const auto it = spelled.find(command + " " + long_name);
  return it != spelled.end() ? it->second : long_name;
}

namespace {

struct Found {
  const CommandSpec* command = nullptr;
  const OptionSpec* option = nullptr;
};

// The option `name` ("--json", "-o") of `command`, or of the command it falls through to (`arch`'s
// words after CC are the probe's options).
Found find_option(const CommandSpec* command, const std::string& name) {
  for (; command != nullptr; command = command->falls_through ? command->parent : nullptr) {
    for (const OptionSpec& option : command->options) {
      for (const std::string& spelled : split(option.names, ',')) {
        if (spelled == name) return {command, &option};
      }
    }
  }
  return {};
}

// "--json -q" is a forgotten value, not a file named "-q": for a file, the form that takes it as
// it is, --name=./VALUE, is said. No other value starting with '-' is one its option takes (no
// negative number is), so nothing is suggested there.
std::string looks_like_an_option(const OptionSpec& option, const std::string& as_typed,
                                 const std::string& value) {
  const std::string spelled = as_typed.compare(0, 2, "--") == 0 ? as_typed : option.name;
  const std::string shown = printable(value, 40);
  if (option.value != "FILE") {
    return fmt::format("{}: '{}' looks like an option, not a {}", as_typed, shown, option.value);
  }
  return fmt::format("{}: '{}' looks like an option, not a FILE (write {}=./{} if you mean it)",
                     as_typed, shown, spelled, shown);
}

// "-1", "-0.5": a negative number, which CLI11 takes as the value of an option that takes one
// (there is no option -1), for the option's own check to refuse in its words ("--seed: '-1' is
// not a whole number from 0 to ..."). Not a file's name: "--json -1" is a forgotten value.
bool negative_number(const OptionSpec& option, const std::string& value) {
  return option.value != "FILE" && value.size() > 1 && value[0] == '-' && value[1] >= '0' &&
         value[1] <= '9';
}

// The words that are options, each with the value it takes (the next word, where it is not
// attached).
class Reader {
 public:
  Reader(AsTyped& typed, int argc, const char* const* argv)
      : typed_(typed), argc_(argc), argv_(argv) {}

  std::string word(int i) const { return argv_[i] != nullptr ? argv_[i] : ""; }

  // Reads the option at argv[i]; returns the index of the last word it took.
  int option(const CommandSpec* scope, int i) {
    const std::string arg = word(i);
    const bool long_form = arg.compare(0, 2, "--") == 0;
    const std::size_t eq = long_form ? arg.find('=') : std::string::npos;
    const std::string name = long_form ? arg.substr(0, eq) : arg.substr(0, 2);
    const Found found = find_option(scope, name);
    if (found.option == nullptr) return i;  // CLI11 says it is unknown
    const OptionSpec& option = *found.option;
    typed_.spelled[found.command->name + " " + option.name] = name;
    const bool attached = eq != std::string::npos || (!long_form && arg.size() > 2);
    std::string value = eq != std::string::npos ? arg.substr(eq + 1)
                        : long_form             ? ""
                                                : arg.substr(2);
    if (option.value.empty()) {  // a flag
      // -q alone, or in a bundle of flags (-hq): CLI11 reads each letter of one.
      if (option.name == "--quiet" || (!long_form && arg.find('q', 1) != std::string::npos)) {
        typed_.quiet = true;
      }
      if (attached) fail(name + " takes no value");
      return i;
    }
    if (!attached) {
      if (i + 1 >= argc_) {
        typed_.lacks_value = fmt::format("{}: {} is missing", name, option.value);
        return i;
      }
      value = word(++i);
      if (value.size() > 1 && value.front() == '-' && !negative_number(option, value)) {
        fail(looks_like_an_option(option, name, value));
      }
    } else if (value.empty()) {
      fail(name + ": empty value");
    }
    if (option.name == "--format" && to_lower(value) == "json") typed_.json = true;
    return i;
  }

 private:
  void fail(std::string message) {
    if (typed_.error.empty()) typed_.error = std::move(message);
  }

  AsTyped& typed_;
  int argc_;
  const char* const* argv_;
};

}  // namespace

AsTyped read_as_typed(const CommandSpec& probe, int argc, const char* const* argv) {
  AsTyped typed;
  Reader reader(typed, argc, argv);
  const CommandSpec* scope = &probe;
  bool words_only = false;  // after "--"
  for (int i = 1; i < argc; ++i) {
    const std::string arg = reader.word(i);
    if (words_only || arg.size() < 2 || arg.front() != '-') {
      // One subcommand at most (as CLI11 is told): after it, a word is a word.
      if (scope == &probe && !words_only) {
        for (const CommandSpec* sub : probe.subcommands) scope = sub->name == arg ? sub : scope;
      }
      typed.summarize = typed.summarize || scope->name == "summarize";
      continue;
    }
    if (arg == "--") {
      // Only summarize takes words that could be options (its reports). Elsewhere CLI11 would
      // read what follows as no command at all: `-- arch 7.5` ran the probe on this machine.
      if (scope->name != "summarize" && typed.error.empty()) {
        typed.error =
            "'--' ends the options only before summarize's reports (precision-probe summarize "
            "[OPTIONS] -- FILE...); the probe and arch take no words after it";
      }
      words_only = true;
      continue;
    }
    i = reader.option(scope, i);
  }
  return typed;
}

}  // namespace precision_probe::cli
