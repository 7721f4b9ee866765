// The command table of svcctl: parsing, dispatch and help (cli.h). The HTTP side is cli_client.cpp.
#include <svc/sdk/cli.h>

#include <Poco/Environment.h>
#include <Poco/FileStream.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/URI.h>

#include <algorithm>
#include <iostream>
#include <sstream>

namespace svc::sdk {

namespace {

bool optional(const std::string& argument) {
  return !argument.empty() && argument.front() == '[';
}

bool rest(const std::string& argument) {
  const std::string dots = optional(argument) ? "...]" : "...";
  return argument.size() > dots.size() &&
         argument.compare(argument.size() - dots.size(), dots.size(), dots) == 0;
}

const CliCommand* findChild(const std::vector<CliCommand>& children, const std::string& name) {
  for (const auto& c : children) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += " " + w;
  return out;
}

// `  name    summary` lines, the names padded to the longest.
void listing(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& lines) {
  std::size_t width = 0;
  for (const auto& [left, right] : lines) width = std::max(width, left.size());
  for (const auto& [left, right] : lines) {
    out << "  " << left << std::string(width - left.size() + 2, ' ') << right << "\n";
  }
}

std::string optionUsage(const CliOption& o) {
  std::string text = o.name + (o.value_name.empty() ? "" : " " + o.value_name);
  return o.repeatable ? text + " ..." : text;
}

// `svcctl keys create [options] ARGS --required VALUE` or `svcctl keys COMMAND`.
std::string usageLine(const std::vector<std::string>& path, const CliCommand* command) {
  std::string line = "usage: svcctl" + joined(path);
  if (command == nullptr) return line + " [options] COMMAND ...";
  if (command->isGroup()) return line + " COMMAND ...";
  const bool any_optional = std::any_of(command->options.begin(), command->options.end(),
                                        [](const CliOption& o) { return !o.required; });
  if (any_optional) line += " [options]";
  line += joined(command->arguments);
  for (const auto& o : command->options) {
    if (o.required) line += " " + optionUsage(o);
  }
  return line;
}

// `heading:` and the options that are (or are not) required, with their help.
void optionListing(std::ostream& out, const std::string& heading, const CliCommand& command,
                   bool required) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const auto& o : command.options) {
    if (o.required == required) lines.emplace_back(optionUsage(o), o.help);
  }
  if (lines.empty()) return;
  out << "\n" << heading << ":\n";
  listing(out, lines);
}

void commandHelp(const std::vector<std::string>& path, const CliCommand& command,
                 std::ostream& out) {
  out << usageLine(path, &command) << "\n\n  " << command.summary << "\n";
  if (!command.description.empty()) out << "\n" << command.description << "\n";
  if (command.isGroup()) {
    out << "\ncommands:\n";
    std::vector<std::pair<std::string, std::string>> lines;
    for (const auto& c : command.subcommands) lines.emplace_back(c.name, c.summary);
    listing(out, lines);
    out << "\nRun 'svcctl" << joined(path) << " COMMAND --help' for a command's options.\n";
    return;
  }
  optionListing(out, "required options", command, true);
  optionListing(out, "options", command, false);
  if (!command.operations.empty()) {
    out << "\ncalls:\n";
    for (const auto& operation : command.operations) out << "  " << operation << "\n";
  }
  out << "\nGlobal options (--url, --key, --json...) stand anywhere: see 'svcctl --help'.\n";
}

// Under --json a failure is printed as JSON on stdout, where a script reads the answer; the
// message goes to stderr either way.
int report(CliContext& context, const CliError& e) {
  context.err() << "svcctl: " << e.what() << "\n";
  if (context.json()) context.out() << e.json() << "\n";
  return e.exit_code;
}

}  // namespace

// ---- arguments ----

const std::string& CliArgs::arg(std::size_t i) const {
  if (i >= positional_.size()) throw CliUsageError("missing argument " + std::to_string(i + 1));
  return positional_[i];
}

std::string CliArgs::value(const std::string& option, const std::string& fallback) const {
  auto it = options_.find(option);
  return it == options_.end() ? fallback : it->second.back();
}

std::vector<std::string> CliArgs::values(const std::string& option) const {
  auto it = options_.find(option);
  return it == options_.end() ? std::vector<std::string>{} : it->second;
}

CliCommand CliCommand::leaf(std::string name, std::string summary,
                            std::vector<std::string> arguments, std::vector<CliOption> options,
                            CliHandler handler, std::string description) {
  CliCommand c;
  c.name = std::move(name);
  c.summary = std::move(summary);
  c.arguments = std::move(arguments);
  c.options = std::move(options);
  c.description = std::move(description);
  c.handler = std::move(handler);
  return c;
}

CliCommand CliCommand::group(std::string name, std::string summary,
                             std::vector<CliCommand> subcommands) {
  CliCommand c;
  c.name = std::move(name);
  c.summary = std::move(summary);
  c.subcommands = std::move(subcommands);
  return c;
}

CliCommand CliCommand::calls(std::vector<std::string> operations_called) && {
  operations = std::move(operations_called);
  return std::move(*this);
}

std::string CliError::json() const {
  if (!server_error.empty()) return server_error;
  Poco::JSON::Object error;
  error.set("detail", std::string(what()));
  error.set("code", code);
  return jsonText(error);
}

CliArgs parseCliArgs(const CliCommand& command, const std::vector<std::string>& args) {
  CliArgs parsed;
  bool options_end = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_end || a.size() < 2 || a[0] != '-') {
      parsed.addPositional(a);
      continue;
    }
    if (a == "--") {
      options_end = true;
      continue;
    }
    const auto eq = a.find('=');
    const std::string name = a.substr(0, eq);
    auto declared = std::find_if(command.options.begin(), command.options.end(),
                                 [&](const CliOption& o) { return o.name == name; });
    if (declared == command.options.end()) throw CliUsageError("unknown option " + name);
    if (declared->value_name.empty()) {
      if (eq != std::string::npos) throw CliUsageError(name + " takes no value");
      parsed.addOption(name, "");
    } else if (eq != std::string::npos) {
      parsed.addOption(name, a.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      parsed.addOption(name, args[++i]);
    } else {
      throw CliUsageError(name + " needs a value (" + declared->value_name + ")");
    }
    if (!declared->repeatable && parsed.values(name).size() > 1) {
      throw CliUsageError(name + " may be given once");
    }
  }
  std::size_t required = 0;
  bool unbounded = false;
  for (const auto& argument : command.arguments) {
    if (!optional(argument)) ++required;
    unbounded = unbounded || rest(argument);
  }
  if (parsed.count() < required) {
    throw CliUsageError("missing " + command.arguments[parsed.count()]);
  }
  if (!unbounded && parsed.count() > command.arguments.size()) {
    throw CliUsageError("unexpected argument '" + parsed.positional()[command.arguments.size()] +
                        "'");
  }
  for (const auto& o : command.options) {
    if (o.required && !parsed.has(o.name)) throw CliUsageError("missing " + optionUsage(o));
  }
  return parsed;
}

std::pair<std::string, Poco::Dynamic::Var> parseCliField(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw CliUsageError("--field wants NAME=VALUE, not '" + assignment + "'");
  }
  const std::string value = assignment.substr(eq + 1);
  try {
    // Inside an array: Poco's parser does not give a top-level scalar its JSON value.
    auto array = Poco::JSON::Parser().parse("[" + value + "]").extract<Poco::JSON::Array::Ptr>();
    if (array->size() == 1) return {assignment.substr(0, eq), array->get(0)};
  } catch (const Poco::Exception&) {
  }
  return {assignment.substr(0, eq), value};  // not JSON: the text itself
}

// ---- global options ----

CliOptions CliOptions::fromEnvironment() {
  CliOptions o;
  o.url = Poco::Environment::get("SVC_URL", o.url);
  o.key = Poco::Environment::get("SVC_KEY", "");
  o.key_file = Poco::Environment::get("SVC_KEY_FILE", "");
  o.admin = Poco::Environment::get("SVC_ADMIN_URL", o.admin);
  o.admin_token = Poco::Environment::get("SVC_ADMIN_TOKEN", "");
  o.plugins_dir = Poco::Environment::get("SVC_PLUGINS_DIR", "");
  return o;
}

std::vector<std::string> CliOptions::take(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // the command's own: leave it and what follows
      rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    const auto eq = a.find('=');
    const std::string name = a.rfind("--", 0) == 0 ? a.substr(0, eq) : a;
    auto value = [&]() -> std::string {
      if (eq != std::string::npos) return a.substr(eq + 1);
      if (i + 1 >= args.size()) throw CliUsageError(name + " needs a value");
      return args[++i];
    };
    if (name == "--url") {
      url = value();
    } else if (name == "--key") {
      key = value();
    } else if (name == "--key-file") {
      key_file = value();
    } else if (name == "--admin") {
      admin = value();
    } else if (name == "--admin-token") {
      admin_token = value();
    } else if (name == "--admin-token-file") {
      const std::string file = value();
      try {
        Poco::FileInputStream in(file);
        std::getline(in, admin_token);
      } catch (const Poco::Exception& e) {
        throw CliError("cannot read the operator token: " + e.displayText());
      }
    } else if (name == "--plugins-dir") {
      plugins_dir = value();
    } else if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      help = true;
    } else if (a == "--version") {
      version = true;
    } else {
      rest.push_back(a);
    }
  }
  return rest;
}

std::string CliOptions::usage() {
  return "  --url URL                public API (SVC_URL; default http://127.0.0.1:8080)\n"
         "  --key KEY                API key (SVC_KEY; else the key file)\n"
         "  --key-file FILE          where login keeps the key (SVC_KEY_FILE; default\n"
         "                           ~/.config/svc/key)\n"
         "  --admin URL              operator listener (SVC_ADMIN_URL; default "
         "http://127.0.0.1:8081)\n"
         "  --admin-token TOKEN      operator token (SVC_ADMIN_TOKEN)\n"
         "  --admin-token-file FILE  read the operator token from FILE (e.g. "
         "data.dir/admin.token)\n"
         "  --plugins-dir DIR        where plugins' commands are (SVC_PLUGINS_DIR; default\n"
         "                           <prefix>/lib/svc/plugins, as svcd)\n"
         "  --json                   print the server's JSON as it is (errors too, as JSON on\n"
         "                           stdout, with a non-zero exit status)\n"
         "  -h, --help               help on svcctl or on the command before it\n"
         "  --version                svcctl's version and the SDK version it was built with\n";
}

// ---- table printer ----

CliTable::CliTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void CliTable::row(std::vector<std::string> cells, std::vector<std::string> details) {
  cells.resize(headers_.size());
  rows_.push_back({std::move(cells), std::move(details)});
}

void CliTable::print(std::ostream& out) const {
  std::vector<std::size_t> widths;
  for (const auto& h : headers_) widths.push_back(h.size());
  for (const auto& r : rows_) {
    for (std::size_t c = 0; c < r.cells.size(); ++c) {
      widths[c] = std::max(widths[c], r.cells[c].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      out << cells[c];
      if (c + 1 < cells.size()) out << std::string(widths[c] - cells[c].size() + 2, ' ');
    }
    out << "\n";
  };
  line(headers_);
  for (const auto& r : rows_) {
    line(r.cells);
    for (const auto& d : r.details) out << "    " << d << "\n";
  }
}

// ---- the command table ----

namespace {

// Global options are taken from the whole line before a command sees it (CliOptions::take): a
// command's own option of the same name would never reach it, and `--url` meant as a webhook's
// address would send the caller's key to that host. @return the first such option, or "".
std::string globalOptionIn(const CliCommand& command) {
  static const char* const kGlobal[] = {
      "--url",         "--key",  "--key-file", "--admin", "--admin-token", "--admin-token-file",
      "--plugins-dir", "--json", "--help",     "-h",      "--version"};
  for (const auto& o : command.options) {
    for (const char* g : kGlobal) {
      if (o.name == g) return o.name;
    }
  }
  for (const auto& sub : command.subcommands) {
    std::string found = globalOptionIn(sub);
    if (!found.empty()) return found;
  }
  return "";
}

// The server names an identity as HTTP does (`?identity=`, `X-Svc-Identity`); a command that
// takes --identity names it so in its refusal, keeping the server's error for --json.
CliError inCommandTerms(const CliCommand& command, const CliError& e) {
  const bool takes_identity =
      std::any_of(command.options.begin(), command.options.end(),
                  [](const CliOption& o) { return o.name == "--identity"; });
  const std::string code = "identity_required";
  const std::string message = e.what();
  const auto at = message.find(code + ": ");
  if (e.code != code || !takes_identity || at == std::string::npos) return e;
  return CliError(message.substr(0, at + code.size() + 2) +
                      "name the identity with --identity UUID (a management key acts for the "
                      "whole account), or use an identity key.",
                  e.exit_code, e.code, e.server_error);
}

}  // namespace

std::vector<std::string> CliCommandTable::add(const std::vector<CliCommand>& commands,
                                              const std::string& source) {
  std::vector<std::string> warnings;
  for (const auto& command : commands) {
    const std::string global = globalOptionIn(command);
    if (!global.empty()) {
      warnings.push_back("command '" + command.name + "' of " + source +
                         " is left out: it declares " + global + ", a global option");
      continue;
    }
    auto it = std::find_if(commands_.begin(), commands_.end(),
                           [&](const CliCommand& c) { return c.name == command.name; });
    if (it == commands_.end()) {
      commands_.push_back(command);
      sources_.push_back(source);
      continue;
    }
    const std::string owner = sources_[static_cast<std::size_t>(it - commands_.begin())];
    if (!it->isGroup() || !command.isGroup()) {
      warnings.push_back("command '" + command.name + "' of " + source + " is left out: " + owner +
                         " has it");
      continue;
    }
    if (it->summary.empty()) it->summary = command.summary;
    for (const auto& sub : command.subcommands) {  // groups merge
      if (findChild(it->subcommands, sub.name)) {
        warnings.push_back("command '" + command.name + " " + sub.name + "' of " + source +
                           " is left out: " + owner + " has it");
      } else {
        it->subcommands.push_back(sub);
      }
    }
  }
  return warnings;
}

bool CliCommandTable::help(const std::vector<std::string>& path, std::ostream& out) const {
  if (path.empty()) {
    out << usageLine({}, nullptr) << "\n\n"
        << "The command line of svcd, for operators and agents.\n\noptions:\n"
        << CliOptions::usage();
    std::string source;
    std::vector<std::pair<std::string, std::string>> lines;
    auto flush = [&] {
      if (lines.empty()) return;
      out << "\ncommands" << (source == "kernel" ? "" : " of " + source) << ":\n";
      listing(out, lines);
      lines.clear();
    };
    for (std::size_t i = 0; i < commands_.size(); ++i) {
      if (sources_[i] != source) flush();
      source = sources_[i];
      lines.emplace_back(commands_[i].name, commands_[i].summary);
    }
    flush();
    out << "\nRun 'svcctl COMMAND --help' for a command's subcommands and options.\n";
    return true;
  }
  const std::vector<CliCommand>* level = &commands_;
  const CliCommand* found = nullptr;
  for (const auto& word : path) {
    found = findChild(*level, word);
    if (found == nullptr) return false;
    level = &found->subcommands;
  }
  commandHelp(path, *found, out);
  return true;
}

int CliCommandTable::run(const std::vector<std::string>& args, CliContext& context) const {
  std::vector<std::string> words(args);
  if (!words.empty() && words.front() == "help") {  // `svcctl help keys create`
    words.erase(words.begin());
    if (help(words, context.out())) return 0;
    report(context, CliUsageError("no command 'svcctl" + joined(words) + "'"));
    help({}, context.err());
    return 2;
  }
  // Descend through groups as far as the words name commands.
  std::vector<std::string> path;
  const CliCommand* command = nullptr;
  const std::vector<CliCommand>* level = &commands_;
  std::size_t i = 0;
  for (; i < words.size(); ++i) {
    const CliCommand* next = findChild(*level, words[i]);
    if (next == nullptr) break;
    command = next;
    path.push_back(words[i]);
    if (!command->isGroup()) {
      ++i;
      break;
    }
    level = &command->subcommands;
  }
  if (context.options().help && (i == words.size() || (command && !command->isGroup()))) {
    help(path, context.out());
    return 0;
  }
  auto usageError = [&](const std::string& message) {
    report(context, CliUsageError(message));
    if (command == nullptr) {
      help({}, context.err());
    } else {
      commandHelp(path, *command, context.err());
    }
    return 2;
  };
  if (command == nullptr || command->isGroup()) {
    if (i == words.size()) {
      return usageError(command == nullptr ? "no command given"
                                           : "'svcctl" + joined(path) + "' needs a command");
    }
    const std::string named = joined(path) + " " + words[i];
    return usageError("unknown command '" + named.substr(1) + "'");
  }
  if (!command->handler) {
    return report(context,
                  CliError("'svcctl" + joined(path) + "' has neither a handler nor commands"));
  }
  try {
    const CliArgs parsed =
        parseCliArgs(*command, std::vector<std::string>(words.begin() + i, words.end()));
    return command->handler(context, parsed);
  } catch (const CliUsageError& e) {
    return usageError(e.what());
  } catch (const CliError& e) {
    return report(context, inCommandTerms(*command, e));
  } catch (const std::exception& e) {
    return report(context, CliError(e.what()));
  }
}

void CliCommandTable::forEachLeaf(
    const std::function<void(const std::vector<std::string>&, const CliCommand&)>& visit) const {
  std::function<void(std::vector<std::string>&, const CliCommand&)> walk =
      [&](std::vector<std::string>& path, const CliCommand& command) {
        path.push_back(command.name);
        if (command.isGroup()) {
          for (const auto& sub : command.subcommands) walk(path, sub);
        } else {
          visit(path, command);
        }
        path.pop_back();
      };
  std::vector<std::string> path;
  for (const auto& command : commands_) walk(path, command);
}

std::string jsonText(const Poco::JSON::Object& body) {
  std::ostringstream out;
  body.stringify(out);
  return out.str();
}

std::string identityQuery(const CliArgs& args, char sep) {
  const std::string identity = args.value("--identity");
  return identity.empty() ? "" : std::string(1, sep) + "identity=" + urlComponent(identity);
}

std::string urlComponent(const std::string& text) {
  std::string out;
  Poco::URI::encode(text, "!#$&'()*+,/:;=?@[]", out);
  return out;
}

std::string queryFrom(const CliArgs& args,
                      const std::vector<std::pair<std::string, std::string>>& options) {
  std::string query = identityQuery(args, '&');
  for (const auto& [option, parameter] : options) {
    for (const auto& value : args.values(option)) {
      query += "&" + parameter + "=" + urlComponent(value);  // "" too: the server says why
    }
  }
  return query.empty() ? "" : "?" + query.substr(1);
}

int printWaited(const CliContext& cli, const CliReply& reply) {
  if (reply.status == 204) {
    throw CliError("nothing came in time (the server answered 204)", kCliWaitTimeout, "timeout");
  }
  CliContext::expect(reply, 200);
  const auto message = reply.json();
  const std::string no_code = "the message " + message->optValue<std::string>("id", "") +
                              " carries no code that could be found (--json prints it)";
  if (cli.json()) {  // the message either way; the status says whether it had a code
    cli.out() << reply.body << "\n";
    if (!message->isNull("extracted_code")) return 0;
    cli.err() << "svcctl: " << no_code << "\n";
    return 1;
  }
  if (message->isNull("extracted_code")) throw CliError(no_code);
  cli.out() << message->getValue<std::string>("extracted_code") << "\n";
  return 0;
}

std::string CliContext::readInput() const {
  std::ostringstream all;
  all << in_.rdbuf();
  return all.str();
}

}  // namespace svc::sdk
