// Where svcctl gets the vault passphrase (e2e_cli.h): a file, or the terminal without echo. The
// passphrase is only ever held in SecretBytes.
#include <svc/sdk/e2e_cli.h>

#include <Poco/Environment.h>

#include <sodium.h>

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace svc::sdk::e2e {

namespace {

constexpr std::size_t kMaxPassphrase = 4096;

// The terminal's settings while echo is off, so that Ctrl-C at the prompt gives the terminal
// back as it was: the handler restores them, then the signal does what it would have done.
int g_tty = -1;
struct termios g_saved;

extern "C" void restoreAndReraise(int signo) {
  if (g_tty >= 0) ::tcsetattr(g_tty, TCSAFLUSH, &g_saved);
  std::signal(signo, SIG_DFL);
  std::raise(signo);
}

// Echo off on a terminal for as long as it lives, given back on every way out: returns,
// exceptions, and the signals that end a process at a prompt (a signal the process
// ignored stays ignored).
class EchoOff {
 public:
  explicit EchoOff(int fd) {
    if (::tcgetattr(fd, &g_saved) != 0) return;  // not a terminal: nothing to hide
    struct termios hidden = g_saved;
    hidden.c_lflag &= static_cast<tcflag_t>(~ECHO);
    hidden.c_lflag |= ECHONL;
    g_tty = fd;
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      old_[i] = std::signal(kSignals[i], SIG_IGN);
      if (old_[i] != SIG_IGN) std::signal(kSignals[i], restoreAndReraise);
    }
    ::tcsetattr(fd, TCSAFLUSH, &hidden);
  }
  ~EchoOff() {
    if (g_tty < 0) return;
    ::tcsetattr(g_tty, TCSAFLUSH, &g_saved);
    g_tty = -1;
    for (std::size_t i = 0; i < kSignals.size(); ++i) std::signal(kSignals[i], old_[i]);
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;

 private:
  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  std::array<void (*)(int), 4> old_{};
};

class Terminal {
 public:
  Terminal() : fd_(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)) {
    if (fd_ < 0) {
      // readPassphrase()'s ways; a command that asks through promptPassphrase() for another
      // passphrase (a new one) names its own option instead (code `no_terminal`).
      throw CliError(
          "a vault passphrase is needed and there is no terminal to ask it on: give it in a file "
          "(--passphrase-file FILE or SVC_VAULT_PASSPHRASE_FILE)",
          1, "no_terminal");
    }
  }
  ~Terminal() { ::close(fd_); }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  void write(const std::string& text) const {
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }

  // One line without echo. The line break is not part of it.
  SecretBytes readHidden(const std::string& prompt) {
    EchoOff quiet(fd_);
    // Asked once echo is off: what is typed from then on is not shown (and not flushed).
    write(prompt);
    SecretBytes line;
    bool complete = false;
    for (unsigned char c = 0; line.size() <= kMaxPassphrase;) {
      const ssize_t n = ::read(fd_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (c == '\n') {
        complete = true;
        break;
      }
      line.push_back(c);
    }
    if (line.size() > kMaxPassphrase) throw CliError("the passphrase is over 4 KiB");
    if (!line.empty() && line.view().back() == '\r') line.pop_back();
    if (!complete) throw CliError("no passphrase was entered");
    return line;
  }

 private:
  int fd_;
};

}  // namespace

CliOption passphraseFileOption() {
  return {"--passphrase-file", "FILE",
          "the vault passphrase from this file (else SVC_VAULT_PASSPHRASE_FILE, else a prompt)"};
}

SecretBytes promptPassphrase(const std::string& prompt, bool confirm) {
  Terminal tty;
  SecretBytes first = tty.readHidden(prompt);
  if (first.empty()) throw CliError("the passphrase is empty");
  if (confirm) {
    SecretBytes second = tty.readHidden("Again: ");
    if (first.view() != second.view()) throw CliError("the two passphrases differ");
  }
  return first;
}

SecretBytes readPassphraseFile(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw CliError("cannot read the passphrase file " + file + ": " + std::strerror(errno));
  }
  SecretBytes text;
  unsigned char buffer[256];
  int error = 0;
  // Up to one byte past the bound, then stop: /dev/zero is refused, not read forever.
  while (text.size() <= kMaxPassphrase) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n && text.size() <= kMaxPassphrase; ++i) text.push_back(buffer[i]);
  }
  sodium_memzero(buffer, sizeof buffer);
  ::close(fd);
  // A read that failed midway must not leave a shorter passphrase that then becomes the real one.
  if (error != 0) {
    throw CliError("cannot read the passphrase file " + file + ": " + std::strerror(error));
  }
  if (text.size() > kMaxPassphrase) throw CliError("the passphrase file holds over 4 KiB");
  // `echo PASSPHRASE > file` adds a line break (\n or \r\n) that is not the passphrase's.
  if (!text.empty() && text.view().back() == '\n') {
    text.pop_back();
    if (!text.empty() && text.view().back() == '\r') text.pop_back();
  }
  if (text.empty()) throw CliError("the passphrase file " + file + " is empty");
  return text;
}

SecretBytes readPassphrase(const CliArgs& args, const std::string& prompt, bool confirm) {
  if (args.has("--passphrase-file")) return readPassphraseFile(args.value("--passphrase-file"));
  const std::string file = Poco::Environment::get("SVC_VAULT_PASSPHRASE_FILE", "");
  if (!file.empty()) return readPassphraseFile(file);
  return promptPassphrase(prompt, confirm);
}

}  // namespace svc::sdk::e2e
