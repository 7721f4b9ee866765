#include "logging.h"

#include <Poco/AutoPtr.h>
#include <Poco/ConsoleChannel.h>
#include <Poco/DateTimeFormat.h>
#include <Poco/DateTimeFormatter.h>
#include <Poco/Formatter.h>
#include <Poco/FormattingChannel.h>
#include <Poco/JSON/Object.h>
#include <Poco/Logger.h>
#include <Poco/Message.h>
#include <Poco/PatternFormatter.h>

#include <sstream>

namespace svc::kernel {

namespace {

// One JSON object a line: ts, level, logger, msg, plus any structured fields of the message.
class JsonLineFormatter : public Poco::Formatter {
 public:
  void format(const Poco::Message& msg, std::string& text) override {
    static const char* kLevels[] = {"",       "fatal",       "critical", "error", "warning",
                                    "notice", "information", "debug",    "trace"};
    Poco::JSON::Object line(Poco::JSON_PRESERVE_KEY_ORDER);
    line.set("ts", Poco::DateTimeFormatter::format(msg.getTime(), "%Y-%m-%dT%H:%M:%S.%FZ"));
    int prio = static_cast<int>(msg.getPriority());
    line.set("level", prio >= 1 && prio <= 8 ? kLevels[prio] : "unknown");
    line.set("logger", msg.getSource());
    line.set("msg", msg.getText());
    // Structured fields set with Message::set (for example by the access log).
    for (const char* field : {"method", "path", "status", "duration_ms", "request_id", "client"}) {
      if (msg.has(field)) line.set(field, msg.get(field));
    }
    std::ostringstream out;
    line.stringify(out);
    text = out.str();
  }
};

}  // namespace

void configureLogging(const std::string& format, const std::string& level) {
  Poco::AutoPtr<Poco::Formatter> formatter;
  if (format == "json") {
    formatter = new JsonLineFormatter;
  } else {
    formatter = new Poco::PatternFormatter("%Y-%m-%dT%H:%M:%S.%FZ %p %s: %t");
  }
  Poco::AutoPtr<Poco::ConsoleChannel> console(new Poco::ConsoleChannel);
  Poco::AutoPtr<Poco::FormattingChannel> channel(new Poco::FormattingChannel(formatter, console));
  Poco::Logger::root().setChannel(channel);
  Poco::Logger::setLevel("", Poco::Logger::parseLevel(level));
  // Loggers created before this call keep their old channel; reset the ones we know.
  std::vector<std::string> names;
  Poco::Logger::names(names);
  for (const auto& name : names) {
    Poco::Logger::get(name).setChannel(channel);
    Poco::Logger::get(name).setLevel(Poco::Logger::parseLevel(level));
  }
}

}  // namespace svc::kernel
