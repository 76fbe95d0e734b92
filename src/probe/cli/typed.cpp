// What the user typed (command_line.hpp): read once before CLI11 parses, so that messages name
// each option as it was typed and a usage error is still a JSON document where JSON was asked for;
// and CLI11's refusals said in those words.

#include <fmt/format.h>

#include "common/strings.hpp"
#include "probe/cli/command_line.hpp"

namespace precision_probe::cli {

std::string AsTyped::name(const CLI::Option& option) const {
  const auto it = spelled.find(&option);
  return it != spelled.end() ? it->second : option.get_name();
}

namespace {

// The option `name` ("--json", "-o") of `app`, or of the app it falls through to (`arch`'s words
// after CC are the probe's options).
const CLI::Option* find_option(const CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_fallthrough() ? app->get_parent() : nullptr) {
    if (const CLI::Option* option = app->get_option_no_throw(name)) return option;
  }
  return nullptr;
}

// The subcommand a word names from `app` (or from the app it falls through to), else null.
const CLI::App* find_subcommand(const CLI::App* app, const std::string& word) {
  for (; app != nullptr; app = app->get_fallthrough() ? app->get_parent() : nullptr) {
    const auto named = app->get_subcommands(
        [&word](const CLI::App* sub) { return !sub->get_name().empty() && sub->check_name(word); });
    if (!named.empty()) return named.front();
  }
  return nullptr;
}

// "--json -q" is a forgotten value, not a file named "-q": the form that takes it as it is,
// --name=VALUE (a short option keeps an '=' in its value), is said.
std::string looks_like_an_option(const CLI::Option& option, const std::string& as_typed,
                                 const std::string& value) {
  const std::string spelled = as_typed.compare(0, 2, "--") == 0 ? as_typed : option.get_name();
  const std::string shown = printable(value, 40);
  return fmt::format("{}: '{}' looks like an option, not a {} (write {}={} if you mean it)",
                     as_typed, shown, option.get_option_text(), spelled,
                     option.get_option_text() == "FILE" ? "./" + shown : shown);
}

// One word that is an option, and the value it takes (the next word, where it is not attached).
class Reader {
 public:
  Reader(AsTyped& typed, int argc, const char* const* argv)
      : typed_(typed), argc_(argc), argv_(argv) {}

  std::string word(int i) const { return argv_[i] != nullptr ? argv_[i] : ""; }

  // Reads the option at argv[i]; returns the index of the last word it took.
  int option(const CLI::App* scope, int i) {
    const std::string arg = word(i);
    const bool long_form = arg.compare(0, 2, "--") == 0;
    const std::size_t eq = long_form ? arg.find('=') : std::string::npos;
    const std::string name = long_form ? arg.substr(0, eq) : arg.substr(0, 2);
    const CLI::Option* option = find_option(scope, name);
    if (option == nullptr) return i;  // CLI11 says it is unknown
    typed_.spelled[option] = name;
    const bool attached = eq != std::string::npos || (!long_form && arg.size() > 2);
    std::string value = eq != std::string::npos ? arg.substr(eq + 1)
                        : long_form             ? ""
                                                : arg.substr(2);
    if (option->get_items_expected_max() == 0) {  // a flag
      if (option->get_name() == "--quiet") typed_.quiet = true;
      if (attached) fail(name + " takes no value");
      return i;
    }
    if (!attached) {
      if (i + 1 >= argc_) {
        typed_.lacks_value = fmt::format("{}: {} is missing", name, option->get_option_text());
        return i;
      }
      value = word(++i);
      if (value.size() > 1 && value.front() == '-')
        fail(looks_like_an_option(*option, name, value));
    } else if (value.empty()) {
      fail(name + ": empty value");
    }
    if (option->get_name() == "--format" && value == "json") typed_.json = true;
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

AsTyped read_as_typed(const Apps& apps, int argc, const char* const* argv) {
  AsTyped typed;
  Reader reader(typed, argc, argv);
  const CLI::App* scope = &apps.probe;
  bool words_only = false;  // after "--"
  for (int i = 1; i < argc; ++i) {
    const std::string arg = reader.word(i);
    if (words_only || arg.size() < 2 || arg.front() != '-') {
      // One subcommand at most (as CLI11 is told): after it, a word is a word.
      const CLI::App* sub =
          words_only || scope != &apps.probe ? nullptr : find_subcommand(scope, arg);
      if (sub != nullptr) scope = sub;
      typed.summarize = typed.summarize || sub == &apps.summarize;
      continue;
    }
    if (arg == "--") {
      words_only = true;
      continue;
    }
    i = reader.option(scope, i);
  }
  return typed;
}

namespace {

// An unknown option's name as typed: "--bogus" of "--bogus=3", "-x" of "-x5".
std::string option_name(const std::string& word) {
  return printable(
      word.compare(0, 2, "--") == 0 ? word.substr(0, word.find('=')) : word.substr(0, 2), 40);
}

// A word no app took: an unknown option, or a word where none belongs.
std::string unexpected(const Apps& apps) {
  for (const CLI::App* app : {&apps.probe, &apps.arch, &apps.summarize}) {
    for (const std::string& word : app->remaining()) {
      if (word == "--") continue;
      const bool option = word.size() > 1 && word.front() == '-';
      if (app == &apps.summarize) {
        return fmt::format(
            "summarize: unknown option '{}' (precision-probe summarize --help lists them)",
            option_name(word));
      }
      if (option) {
        return fmt::format("unknown option '{}' (precision-probe --help lists them)",
                           option_name(word));
      }
      if (apps.arch.parsed()) {
        return fmt::format("arch: unexpected argument '{}' after the compute capability",
                           printable(word, 40));
      }
      return fmt::format("unexpected argument '{}' (precision-probe --help lists the options)",
                         printable(word, 40));
    }
  }
  return "";
}

// An option given twice that takes one value once.
std::string given_twice(const Apps& apps, const AsTyped& typed) {
  for (const CLI::App* app : {&apps.probe, &apps.arch, &apps.summarize}) {
    for (const CLI::Option* option : app->get_options()) {
      if (option->count() > 1 && option->get_items_expected_max() == 1 &&
          option->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw) {
        return typed.name(*option) + " is given more than once";
      }
    }
  }
  return "";
}

// Options that exclude or need each other (the table's excludes and needs), the first in the
// order the user is best told: summarize's place, what arch refuses, what --quick refuses, needs.
std::string excluded_or_needed(const Apps& apps, const AsTyped& typed) {
  if (apps.summarize.parsed()) {
    return "summarize comes first, its options after it (precision-probe summarize --help)";
  }
  const std::vector<CLI::Option*> options = apps.probe.get_options();
  for (const CLI::Option* option : options) {
    if (apps.arch.parsed() && option->count() > 0 && option->get_group() != kAlsoArch) {
      return typed.name(*option) + " does not apply to arch, which runs no kernels";
    }
  }
  const CLI::Option& quick = *apps.probe.get_option_no_throw("--quick");
  for (const CLI::Option* option : options) {
    if (quick.count() > 0 && option->count() > 0 && option->get_group() == kKernels) {
      return fmt::format("{} needs kernels to run and {} runs none: choose one",
                         typed.name(*option), typed.name(quick));
    }
  }
  for (const CLI::Option* option : options) {
    for (const CLI::Option* need : option->get_needs()) {
      if (option->count() > 0 && need->count() == 0) {
        return fmt::format("{} needs {} {}", typed.name(*option), need->get_name(),
                           need->get_option_text());
      }
    }
  }
  return "";
}

// A word a subcommand needs and did not get.
std::string missing_word(const Apps& apps) {
  if (apps.summarize.parsed()) {
    return "summarize: no reports given (name files, directories, or - for JSON Lines on stdin)";
  }
  if (apps.arch.parsed()) return "arch: the compute capability is missing (e.g. arch 8.9)";
  return "";
}

}  // namespace

std::string explain(const CLI::ParseError& error, const Apps& apps, const AsTyped& typed) {
  std::string message;
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    message = typed.lacks_value.empty() ? given_twice(apps, typed) : typed.lacks_value;
  } else if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    message = unexpected(apps);
  } else if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr ||
             dynamic_cast<const CLI::RequiresError*>(&error) != nullptr) {
    message = excluded_or_needed(apps, typed);
  } else if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    message = missing_word(apps);
  }
  if (!message.empty()) return message;
  // Anything else CLI11 refuses is said plainly.
  const std::string what = error.what();
  return "cannot read the command line: " + printable(what.substr(0, what.find('\n')), 160);
}

}  // namespace precision_probe::cli
