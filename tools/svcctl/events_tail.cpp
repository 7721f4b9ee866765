#include "events_tail.h"

#include <Poco/JSON/Parser.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <chrono>
#include <memory>
#include <ostream>
#include <thread>

namespace svcctl {

namespace {

using svc::sdk::CliArgs;
using svc::sdk::CliCommand;
using svc::sdk::CliContext;
using svc::sdk::CliError;

// One event as the stream frames it: `id`, `event` and `data` lines, then a blank line.
struct Frame {
  std::string id, type, data;
};

// `ID TYPE CREATED IDENTITY OBJECT`: what happened, to what, in one line.
void printHuman(CliContext& cli, const Frame& frame) {
  std::string created = "-", identity = "-", object = "-";
  try {
    auto event = Poco::JSON::Parser().parse(frame.data).extract<Poco::JSON::Object::Ptr>();
    created = event->optValue<std::string>("created_dt", "-");
    if (!event->isNull("identity")) identity = event->optValue<std::string>("identity", "-");
    if (auto o = event->getObject("object")) {
      object = o->optValue<std::string>("id", o->optValue<std::string>("uuid", "-"));
    }
  } catch (const Poco::Exception&) {  // not the envelope: print what is known
  }
  cli.out() << frame.id << " " << frame.type << " " << created << " " << identity << " " << object
            << "\n";
}

class Tail {
 public:
  Tail(CliContext& cli, const CliArgs& args) : cli_(cli), args_(args) {
    last_id_ = args.value("--last-event-id");
    if (args.has("--count")) {
      try {
        limit_ = std::stol(args.value("--count"));
      } catch (const std::exception&) {
        limit_ = 0;
      }
      if (limit_ < 1) throw svc::sdk::CliUsageError("--count wants a number above 0");
    }
  }

  // Follows the stream until --count events have come; reconnects after a drop.
  int run() {
    bool connected_once = false;
    while (true) {
      try {
        if (follow(connected_once)) return 0;
      } catch (const CliError&) {
        throw;
      } catch (const Poco::Exception& e) {
        if (!connected_once) {
          throw CliError("cannot reach " + cli_.options().url + ": " + e.displayText(), 1,
                         "unreachable");
        }
        cli_.err() << "svcctl: the event stream dropped (" << e.displayText()
                   << "); reconnecting\n";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(retry_ms_));
    }
  }

 private:
  // One connection. @return true when --count events have been printed, false when the server
  // closed the stream (to reconnect). @throws CliError for an answer that is not the stream.
  bool follow(bool& connected_once) {
    Poco::URI uri(cli_.options().url);
    std::unique_ptr<Poco::Net::HTTPClientSession> session;
    if (uri.getScheme() == "https") {
      session = std::make_unique<Poco::Net::HTTPSClientSession>(uri.getHost(), uri.getPort());
    } else {
      session = std::make_unique<Poco::Net::HTTPClientSession>(uri.getHost(), uri.getPort());
    }
    // The server pings every 15 s: a minute of silence is a dead connection.
    session->setTimeout(Poco::Timespan(10, 0), Poco::Timespan(10, 0), Poco::Timespan(60, 0));
    std::string path = "/api/events/stream/";
    std::string query;
    if (args_.has("--types")) query += "&types=" + svc::sdk::urlComponent(args_.value("--types"));
    if (args_.has("--identity"))
      query += "&identity=" + svc::sdk::urlComponent(args_.value("--identity"));
    if (!query.empty()) path += "?" + query.substr(1);
    Poco::Net::HTTPRequest request("GET", path, Poco::Net::HTTPMessage::HTTP_1_1);
    request.set("Authorization", "Bearer " + cli_.key());
    request.set("Accept", "text/event-stream");
    if (!last_id_.empty()) request.set("Last-Event-ID", last_id_);
    session->sendRequest(request);
    Poco::Net::HTTPResponse response;
    std::istream& in = session->receiveResponse(response);
    if (response.getStatus() != 200) {
      svc::sdk::CliReply reply;
      reply.status = response.getStatus();
      Poco::StreamCopier::copyToString(in, reply.body);
      if (reply.status >= 500) {  // passing (a draining server): try again
        throw Poco::IOException("HTTP " + std::to_string(reply.status));
      }
      CliContext::expect(reply, 200);
    }
    connected_once = true;
    Frame frame;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) {
        // An id without data (the stream's opening position) is where to resume, as in SSE.
        if (frame.data.empty() && !frame.id.empty()) last_id_ = frame.id;
        if (!frame.data.empty() && dispatch(frame)) return true;
        frame = Frame();
        continue;
      }
      if (line.front() == ':') continue;  // a ping
      const auto colon = line.find(':');
      const std::string field = line.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.erase(0, 1);
      if (field == "id") {
        frame.id = value;
      } else if (field == "event") {
        frame.type = value;
      } else if (field == "data") {
        frame.data += (frame.data.empty() ? "" : "\n") + value;
      } else if (field == "retry") {
        try {
          retry_ms_ = std::stoi(value);
        } catch (const std::exception&) {
        }
      }
    }
    cli_.err() << "svcctl: the server closed the event stream; reconnecting\n";
    return false;
  }

  // Prints an event. @return true when it was the last one asked for.
  bool dispatch(const Frame& frame) {
    if (!frame.id.empty()) last_id_ = frame.id;
    if (cli_.json()) {
      cli_.out() << frame.data << "\n";
    } else {
      printHuman(cli_, frame);
    }
    cli_.out().flush();
    return limit_ > 0 && ++printed_ >= limit_;
  }

  CliContext& cli_;
  const CliArgs& args_;
  std::string last_id_;
  long limit_ = 0, printed_ = 0;
  int retry_ms_ = 3000;
};

}  // namespace

CliCommand eventsCommand() {
  return CliCommand::group(
      "events", "the live event stream",
      {CliCommand::leaf(
           "tail", "follow the events, one line each", {},
           {{"--identity", "UUID", "only this identity's (an account key sees them all)"},
            {"--types", "TYPE[,TYPE]", "only these event types (identity.created,...)"},
            {"--last-event-id", "ID", "resume after this event (0: every event kept)"},
            {"--count", "N", "stop after N events"}},
           [](CliContext& cli, const CliArgs& args) { return Tail(cli, args).run(); },
           "Prints `ID TYPE CREATED IDENTITY OBJECT` per event, or under --json the event itself\n"
           "(one JSON object per line: id, type, created_dt, account, identity, object). Runs\n"
           "until interrupted or --count events have come. A dropped connection is reopened\n"
           "after the server's retry delay with Last-Event-ID, so nothing is skipped or repeated.")
           .calls({"GET /api/events/stream/"})});
}

}  // namespace svcctl
