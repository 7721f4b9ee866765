// svcctl commands: how a plugin adds its own to the operator's and agent's command line.
//
// svcctl is a table of commands. The kernel's (plugins, health, metrics) are built in; every other
// command comes from a plugin's shared library: svcctl opens each `svc_plugin_<name>.so` in its
// plugins directory (`--plugins-dir`, `SVC_PLUGINS_DIR`, else `<prefix>/lib/svc/plugins` as svcd)
// and asks it for `svc_cli_commands`. A plugin without that export adds nothing. Export the list
// with SVC_CLI_COMMANDS(fn), usually from the plugin's own cli.cpp compiled into its library:
//
//   std::vector<svc::sdk::CliCommand> commands() {
//     auto greet = [](svc::sdk::CliContext& cli, const svc::sdk::CliArgs& args) {
//       auto reply = cli.api("POST", "/api/hello/greetings/", ...args.arg(0)...);
//       cli.expect(reply, 201);    // else fail with the server's error
//       cli.print(reply, [&](const Poco::JSON::Object& o) { cli.out() << ...; });  // or --json
//       return 0;
//     };
//     return {svc::sdk::CliCommand::group("hello", "the hello plugin", {
//         svc::sdk::CliCommand::leaf("greet", "greet NAME", {"NAME"}, {}, greet)
//             .calls({"POST /api/hello/greetings/"})})};   // the operations it calls
//   }
//   SVC_CLI_COMMANDS(commands)
//
// The module is held to the same handshake as the plugin (version.h): svcctl refuses, with one line
// naming the file, a module built for another SDK version or with another build signature, and
// keeps its other commands. Top-level groups of the same name from several modules merge (a plugin
// may add `identities <its-command>`); the first module to name a command keeps it.
//
// Global options (`--url`, `--key`, `--admin`, `--admin-token`, `--admin-token-file`,
// `--key-file`, `--plugins-dir`, `--json`, `--help`/`-h`, `--version`) are taken wherever they
// stand on the line, so a command must not declare an option of the same name. `--help` works at
// every level, and `--json` is for every command that prints a resource: print it with
// CliContext::print(). Under `--json` a failure (CliError, the server's error through expect()) is
// printed as JSON. Every leaf declares the API operations it calls (calls()): a test holds them
// against the server's description, so every described route has a command.
#pragma once

#include <svc/sdk/version.h>

#include <Poco/JSON/Object.h>

#include <boost/dll/alias.hpp>

#include <functional>
#include <iosfwd>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace svc::sdk {

/// A failed command: svcctl prints `svcctl: <message>` and exits with `exit_code`. Under `--json`
/// it prints the error as JSON on stdout instead, in the contract's error shape: `server_error`
/// when the server answered one (CliContext::expect() keeps it), else `{"detail": message,
/// "code": code}`, so a script parses a failure as it parses an answer.
class CliError : public std::runtime_error {
 public:
  explicit CliError(const std::string& message, int exit_code = 1, std::string code = "failed",
                    std::string server_error = "")
      : std::runtime_error(message),
        exit_code(exit_code),
        code(std::move(code)),
        server_error(std::move(server_error)) {}
  int exit_code;
  std::string code;          ///< A machine code for a local failure: `usage`, `unreachable`...
  std::string server_error;  ///< The server's error object (JSON text), when it answered one.
  /// @return the error as the JSON text `--json` prints.
  std::string json() const;
};

/// A command line that does not fit the command: svcctl prints the message and the command's
/// usage, and exits 2.
class CliUsageError : public CliError {
 public:
  explicit CliUsageError(const std::string& message) : CliError(message, 2, "usage") {}
};

/// An option of one command.
struct CliOption {
  std::string name;         ///< With its dashes: `--identity`.
  std::string value_name;   ///< What it takes, for usage: `UUID`. Empty for a flag.
  std::string help;         ///< One line.
  bool repeatable = false;  ///< May be given more than once (usage shows `...`).
  /// Must be given: usage shows it after the arguments (`users add EMAIL --password-stdin`),
  /// help lists it apart from the optional ones, and the parser refuses a line without it.
  bool required = false;
};

/// A leaf command's parsed arguments.
class CliArgs {
 public:
  /// @return positional argument `i`, which the command's declaration makes present when required.
  const std::string& arg(std::size_t i) const;
  /// @return how many positional arguments there are.
  std::size_t count() const { return positional_.size(); }
  /// @return every positional argument, in order.
  const std::vector<std::string>& positional() const { return positional_; }
  /// @return whether the option (flag or valued) was given.
  bool has(const std::string& option) const { return options_.count(option) != 0; }
  /// @return the option's last value, or `fallback` when it was not given.
  std::string value(const std::string& option, const std::string& fallback = "") const;
  /// @return every value of a repeatable option, in order.
  std::vector<std::string> values(const std::string& option) const;

  /// For the parser and tests.
  void addPositional(std::string value) { positional_.push_back(std::move(value)); }
  void addOption(const std::string& option, std::string value) {
    options_[option].push_back(std::move(value));
  }

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::vector<std::string>> options_;
};

/// @param body a request body. @return it as JSON text, for CliContext::api() and friends.
std::string jsonText(const Poco::JSON::Object& body);

class CliContext;

/// A command's body. @return the exit code (0 on success). Throw CliError (or CliUsageError) to
/// fail with a message.
using CliHandler = std::function<int(CliContext&, const CliArgs&)>;

/// A command: a leaf with a handler, or a group of subcommands.
struct CliCommand {
  std::string name;     ///< One word, lower-case: `keys`, `create`.
  std::string summary;  ///< One line, shown in the parent's listing.
  /// Positional arguments, for usage and checking: `NAME`, optional `[NAME]`, and a last one
  /// ending in `...` takes the rest (`FILE...` one or more, `[FILE...]` any number).
  std::vector<std::string> arguments;
  std::vector<CliOption> options;  ///< The options a leaf accepts; any other is refused.
  std::string description;         ///< More text for --help (how it reads stdin, what it prints).
  CliHandler handler;              ///< Set for a leaf.
  std::vector<CliCommand> subcommands;  ///< Set for a group.
  /// The API operations a leaf calls, as `METHOD /path/` with the route's own pattern
  /// (`GET /api/identities/{uuid}/`; a parameter the command always fills may say with what:
  /// `POST /api/identities/{uuid}/{action=provision-phone}/`). `svcctl commands` lists them, and
  /// a test holds them against `GET /api/schema/`: every described operation has a command, and
  /// every operation named here exists. Set it with calls().
  std::vector<std::string> operations;

  /// @return a leaf: its name, summary, positional arguments, options, handler and more help.
  static CliCommand leaf(std::string name, std::string summary, std::vector<std::string> arguments,
                         std::vector<CliOption> options, CliHandler handler,
                         std::string description = "");
  /// @return a group named `name` holding `subcommands`.
  static CliCommand group(std::string name, std::string summary,
                          std::vector<CliCommand> subcommands);
  /// @return this leaf, declaring the operations it calls: `leaf(...).calls({"GET /api/x/"})`.
  CliCommand calls(std::vector<std::string> operations_called) &&;
  bool isGroup() const { return !subcommands.empty(); }
};

/// svcctl's global options: defaults, then the environment (`SVC_URL`, `SVC_KEY`, `SVC_KEY_FILE`,
/// `SVC_ADMIN_URL`, `SVC_ADMIN_TOKEN`, `SVC_PLUGINS_DIR`), then the command line.
struct CliOptions {
  std::string url = "http://127.0.0.1:8080";    ///< The public API.
  std::string key;                              ///< The API key (else the key file's).
  std::string key_file;                         ///< Where `login` keeps the key ("": default).
  std::string admin = "http://127.0.0.1:8081";  ///< The operator listener.
  std::string admin_token;                      ///< The operator token.
  std::string plugins_dir;                      ///< Where command modules are ("": default).
  bool json = false;                            ///< Print the server's JSON as it is.
  bool help = false;                            ///< `--help` or `-h` was given.
  bool version = false;                         ///< `--version` was given.

  /// @return the defaults overridden by the environment.
  static CliOptions fromEnvironment();
  /// Takes the global options out of `args`, wherever they stand (before `--`).
  /// @return the rest, in order. @throws CliUsageError for a global option without its value.
  std::vector<std::string> take(const std::vector<std::string>& args);
  /// @return the global options' usage lines.
  static std::string usage();
};

/// One answer from svcd.
struct CliReply {
  int status = 0;
  std::string body;
  std::string content_type;
  /// @return the body as a JSON object. @throws CliError when it is not one.
  Poco::JSON::Object::Ptr json() const;
};

/// Extra request headers: (name, value).
using CliHeaders = std::vector<std::pair<std::string, std::string>>;

/// Sends one HTTP request (the one HTTP client of svcctl and its modules).
/// @param base `http(s)://host:port`. @param method GET, POST... @param path `/api/...`.
/// @param token sent as `Authorization: Bearer` when not empty. @param body the body, or empty.
/// @param content_type the body's media type. @param headers more headers to send.
/// @throws CliError (code `unreachable`) when the server cannot be reached.
CliReply cliHttpCall(const std::string& base, const std::string& method, const std::string& path,
                     const std::string& token, const std::string& body = "",
                     const std::string& content_type = "application/json",
                     const CliHeaders& headers = {});

/// @param text a value for one path segment or query parameter. @return it percent-encoded, so
/// that no character of it (`/`, `?`, `&`, `#`, `+`, ...) reads as part of the URL's syntax.
std::string urlComponent(const std::string& text);

/// @param args a command's arguments. @param sep `?` or `&`: what comes before it in the path.
/// @return `?identity=UUID` from `--identity UUID`, or empty (an identity key needs none).
std::string identityQuery(const CliArgs& args, char sep = '?');

/// @param args a command's arguments. @param options (option, query parameter) pairs: each
/// option given adds `parameter=value` (URL-encoded, an empty value too).
/// @return `?identity=UUID&...` (--identity first, when given), or empty when nothing was given.
std::string queryFrom(const CliArgs& args,
                      const std::vector<std::pair<std::string, std::string>>& options);

/// What a one-call wait answered (`GET .../wait/`): 200 prints the message's `extracted_code`
/// (the message itself under `--json`) and returns 0. @throws CliError with exit code
/// kCliWaitTimeout and code `timeout` for 204 (nothing came in time), the server's error else.
int printWaited(const CliContext& cli, const CliReply& reply);
/// The exit status of a wait that timed out, as timeout(1)'s.
constexpr int kCliWaitTimeout = 124;

/// What a command gets: the global options, the way to svcd, and where to print.
class CliContext {
 public:
  /// @param options the parsed global options. @param out, err, in the streams commands use.
  explicit CliContext(CliOptions options, std::ostream& out, std::ostream& err, std::istream& in);

  const CliOptions& options() const { return options_; }
  /// @return whether `--json` was given: print resources with print(), which honours it.
  bool json() const { return options_.json; }
  std::ostream& out() const { return out_; }
  std::ostream& err() const { return err_; }
  std::istream& in() const { return in_; }
  /// @return everything on in() (a message body piped in).
  std::string readInput() const;

  /// Calls the public API with the caller's key (see key()), with `headers` besides.
  CliReply api(const std::string& method, const std::string& path, const std::string& body = "",
               const std::string& content_type = "application/json",
               const CliHeaders& headers = {}) const;
  /// Calls the public API without a key (device login, health).
  CliReply anonymous(const std::string& method, const std::string& path,
                     const std::string& body = "") const;
  /// Calls the operator listener with the operator token. @throws CliError when there is none.
  CliReply admin(const std::string& method, const std::string& path,
                 const std::string& body = "") const;

  /// @return `--key`/`SVC_KEY`, else the key file's. @throws CliError when there is neither.
  std::string key() const;
  /// @return where `login` keeps the key: `--key-file`, `SVC_KEY_FILE`, else
  /// `$XDG_CONFIG_HOME/svc/key` (`~/.config/svc/key`).
  std::string keyFile() const;
  /// Writes the key file readable only by its owner (0600, whatever the umask or an older file).
  void saveKey(const std::string& key) const;

  /// @throws CliError naming the server's error (`409 conflict: ...`, and keeping its JSON for
  /// `--json`) unless the reply has `status` (any 2xx when 0).
  static void expect(const CliReply& reply, int status = 0);
  /// Prints a resource: under `--json` the server's JSON as it is, else what `human` prints.
  void print(const CliReply& reply,
             const std::function<void(const Poco::JSON::Object&)>& human) const;

 private:
  CliOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  std::istream& in_;
};

/// Columns aligned to their widest cell: `CliTable t({"ID", "NAME"}); t.row({id, name});
/// t.print(out);`. A row may carry indented detail lines printed under it.
class CliTable {
 public:
  explicit CliTable(std::vector<std::string> headers);
  void row(std::vector<std::string> cells, std::vector<std::string> details = {});
  void print(std::ostream& out) const;

 private:
  struct Row {
    std::vector<std::string> cells;
    std::vector<std::string> details;
  };
  std::vector<std::string> headers_;
  std::vector<Row> rows_;
};

/// The command table: resolves a command line to its command, parses its options, prints help.
class CliCommandTable {
 public:
  /// Adds top-level commands from `source` (a title for help: "kernel", "plugin auth").
  /// @return one warning per command left out because an earlier source has it.
  std::vector<std::string> add(const std::vector<CliCommand>& commands, const std::string& source);
  /// Runs the command `args` names (the global options already taken out).
  /// @return the exit code: the handler's; 2 for a line that names no command or does not fit
  /// one (with its usage on `err`); 0 after help on `out`; 1 for CliError and other exceptions.
  int run(const std::vector<std::string>& args, CliContext& context) const;
  /// Prints the help of the command at `path` (empty: the whole table). @return false when the
  /// path names no command.
  bool help(const std::vector<std::string>& path, std::ostream& out) const;
  /// Calls `visit(path, leaf)` for every leaf command, depth first, in table order.
  void forEachLeaf(
      const std::function<void(const std::vector<std::string>&, const CliCommand&)>& visit) const;
  const std::vector<CliCommand>& commands() const { return commands_; }

 private:
  std::vector<CliCommand> commands_;
  std::vector<std::string> sources_;  // per command in commands_
};

/// Parses a leaf's arguments against its declaration. @throws CliUsageError.
CliArgs parseCliArgs(const CliCommand& command, const std::vector<std::string>& args);

/// Parses `NAME=VALUE` as in `--field NAME=VALUE`: the value as JSON when it parses as JSON (a
/// number, true, null, an object...), else as the string itself. @throws CliUsageError.
std::pair<std::string, Poco::Dynamic::Var> parseCliField(const std::string& assignment);

}  // namespace svc::sdk

/// The signature of `svc_cli_commands`.
using svc_cli_commands_fn = std::vector<svc::sdk::CliCommand>();
/// The signature of `svc_cli_abi`.
using svc_cli_abi_fn = const svc::sdk::AbiInfo*();

/// Exports a plugin's svcctl commands: `svc_cli_abi` (the handshake, as SVC_PLUGIN's) and
/// `svc_cli_commands`, which returns `fn()`, a std::vector<svc::sdk::CliCommand>. Use it once, at
/// namespace scope, in the plugin's library.
#define SVC_CLI_COMMANDS(fn)                                                            \
  static const ::svc::sdk::AbiInfo* svc_cli_abi_impl() {                                \
    static const ::svc::sdk::AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR, \
                                          SVC_SDK_BUILD_SIGNATURE};                     \
    return &info;                                                                       \
  }                                                                                     \
  static std::vector<::svc::sdk::CliCommand> svc_cli_commands_impl() {                  \
    return fn();                                                                        \
  }                                                                                     \
  BOOST_DLL_ALIAS(svc_cli_abi_impl, svc_cli_abi)                                        \
  BOOST_DLL_ALIAS(svc_cli_commands_impl, svc_cli_commands)
