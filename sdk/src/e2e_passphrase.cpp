// Where svcctl gets the vault passphrase (e2e_cli.h): a file, or the terminal without echo. The
// passphrase is only ever held in SecretBytes.
#include <svc/sdk/e2e_cli.h>

#include <Poco/Environment.h>

#include <sodium.h>

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

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

class Terminal {
 public:
  Terminal() : fd_(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)) {
    if (fd_ < 0) {
      throw CliError(
          "the vault passphrase is needed and there is no terminal to ask it on: give "
          "--passphrase-file FILE or set SVC_VAULT_PASSPHRASE_FILE");
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
    struct termios hidden;
    const bool is_tty = ::tcgetattr(fd_, &g_saved) == 0;
    if (is_tty) {
      hidden = g_saved;
      hidden.c_lflag &= static_cast<tcflag_t>(~ECHO);
      hidden.c_lflag |= ECHONL;
      g_tty = fd_;
      old_int_ = std::signal(SIGINT, restoreAndReraise);
      old_term_ = std::signal(SIGTERM, restoreAndReraise);
      ::tcsetattr(fd_, TCSAFLUSH, &hidden);
    }
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
    if (is_tty) {
      ::tcsetattr(fd_, TCSAFLUSH, &g_saved);
      g_tty = -1;
      std::signal(SIGINT, old_int_);
      std::signal(SIGTERM, old_term_);
    }
    if (!line.empty() && line.view().back() == '\r') line.pop_back();
    if (!complete) throw CliError("no passphrase was entered");
    return line;
  }

 private:
  int fd_;
  void (*old_int_)(int) = SIG_DFL;
  void (*old_term_)(int) = SIG_DFL;
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
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n && text.size() <= kMaxPassphrase; ++i) text.push_back(buffer[i]);
  }
  sodium_memzero(buffer, sizeof buffer);
  ::close(fd);
  if (text.size() > kMaxPassphrase) throw CliError("the passphrase file holds over 4 KiB");
  // `echo PASSPHRASE > file` adds a line break that is not the passphrase's.
  if (!text.empty() && text.view().back() == '\n') text.pop_back();
  if (!text.empty() && text.view().back() == '\r') text.pop_back();
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
