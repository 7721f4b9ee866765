// The webhooks plugin's svcctl commands: `svcctl webhooks list|create|get|edit|delete|
// rotate-secret|deliveries|replay`, through the routes. The secret is printed by create and
// rotate-secret only, as the API shows it only then.
#include <svc/sdk/cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::webhooks {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

std::string path(const CliArgs& args, const std::string& rest = "") {
  return "/api/webhooks/" + sdk::urlComponent(args.arg(0)) + "/" + rest + identityQuery(args);
}

std::string text(const Poco::JSON::Object& o, const std::string& name) {
  return o.has(name) && !o.isNull(name) ? o.getValue<std::string>(name) : "";
}

std::string types(const Poco::JSON::Object& w) {
  auto list = w.getArray("event_types");
  if (!list || list->size() == 0) return "(all)";
  std::string out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    out += (i ? "," : "") + list->getElement<std::string>(static_cast<unsigned>(i));
  }
  return out;
}

void show(CliContext& cli, const Poco::JSON::Object& w) {
  cli.out() << "uuid:        " << text(w, "uuid") << "\n"
            << "url:         " << sdk::safeForTerminal(text(w, "url")) << "\n"
            << "event types: " << types(w) << "\n"
            << "identity:    " << (text(w, "identity").empty() ? "(account)" : text(w, "identity"))
            << "\n"
            << "enabled:     " << (w.getValue<bool>("enabled") ? "yes" : "no") << "\n";
  if (!text(w, "disabled_reason").empty()) {
    cli.out() << "disabled:    " << sdk::safeForTerminal(text(w, "disabled_reason")) << "\n";
  }
  if (!text(w, "description").empty()) {
    cli.out() << "description: " << sdk::safeForTerminal(text(w, "description")) << "\n";
  }
  if (w.has("secret")) {
    cli.out() << "secret:      " << text(w, "secret") << "  (shown once: keep it)\n";
  }
}

// The body of create and edit, from the options given.
Poco::JSON::Object body(const CliArgs& args) {
  Poco::JSON::Object b;
  if (args.has("--endpoint")) b.set("url", args.value("--endpoint"));
  if (args.has("--event-type")) {
    Poco::JSON::Array::Ptr list = new Poco::JSON::Array;
    for (const auto& t : args.values("--event-type")) {
      if (!t.empty()) list->add(t);  // `--event-type ''` alone: every type
    }
    b.set("event_types", list);
  }
  if (args.has("--description")) b.set("description", args.value("--description"));
  if (args.has("--enable")) b.set("enabled", true);
  if (args.has("--disable")) b.set("enabled", false);
  return b;
}

int list(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/webhooks/?limit=200" + identityQuery(args, '&'));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"UUID", "ENABLED", "EVENT TYPES", "URL"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto w = results->getObject(static_cast<unsigned>(i));
      table.row({text(*w, "uuid"), w->getValue<bool>("enabled") ? "yes" : "no", types(*w),
                 sdk::safeForTerminal(text(*w, "url"))});
    }
    table.print(cli.out());
  });
  return 0;
}

int create(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object b = body(args);
  b.set("url", args.arg(0));
  auto reply = cli.api("POST", "/api/webhooks/" + identityQuery(args), sdk::jsonText(b));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& w) { show(cli, w); });
  return 0;
}

int get(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", path(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& w) { show(cli, w); });
  return 0;
}

int edit(CliContext& cli, const CliArgs& args) {
  if (args.has("--enable") && args.has("--disable")) {
    throw sdk::CliUsageError("--enable and --disable contradict each other");
  }
  auto reply = cli.api("PATCH", path(args), sdk::jsonText(body(args)));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& w) { show(cli, w); });
  return 0;
}

int remove(CliContext& cli, const CliArgs& args) {
  cli.expect(cli.api("DELETE", path(args)), 204);
  if (!cli.json()) cli.out() << "deleted " << args.arg(0) << "\n";
  return 0;
}

int rotate(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("POST", path(args, "rotate-secret/"), "{}");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& w) {
    cli.out() << "secret: " << text(w, "secret")
              << "  (shown once; the old one also signs for 24 hours)\n";
  });
  return 0;
}

int deliveries(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api(
      "GET", path(args, "deliveries/") + (identityQuery(args).empty() ? "?" : "&") + "limit=200");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"ID", "EVENT", "STATE", "ATTEMPTS", "LAST", "NEXT"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto d = results->getObject(static_cast<unsigned>(i));
      std::string last = d->isNull("last_status_code")
                             ? text(*d, "last_error").substr(0, 40)
                             : std::to_string(d->getValue<int>("last_status_code"));
      table.row({text(*d, "id"), text(*d, "event_type"), text(*d, "state"),
                 std::to_string(d->getValue<int>("attempts")), sdk::safeForTerminal(last),
                 text(*d, "next_attempt_dt").substr(0, 19)});
    }
    table.print(cli.out());
  });
  return 0;
}

int replay(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("POST",
                       "/api/webhooks/" + sdk::urlComponent(args.arg(0)) + "/deliveries/" +
                           sdk::urlComponent(args.arg(1)) + "/replay/" + identityQuery(args),
                       "{}");
  cli.expect(reply, 202);
  cli.print(reply, [&](const Poco::JSON::Object& d) {
    cli.out() << "replaying " << text(d, "id") << " (" << text(d, "event_type") << ")\n";
  });
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID",
                                "the identity (its events; with an account key)"};
  const std::vector<sdk::CliOption> settings = {
      {"--event-type", "TYPE", "an event type to receive (none: every type)", true},
      {"--description", "TEXT", "what it is for"},
      {"--enable", "", "deliver (resumes a disabled webhook)"},
      {"--disable", "", "stop it (events meanwhile are not delivered)"},
  };
  auto with = [&](std::vector<sdk::CliOption> extra) {
    extra.insert(extra.end(), settings.begin(), settings.end());
    return extra;
  };
  return {CliCommand::group(
      "webhooks", "outbound webhooks: events POSTed to your URLs",
      {CliCommand::leaf("list", "webhooks, newest first", {}, {identity}, list)
           .calls({"GET /api/webhooks/"}),
       CliCommand::leaf("create", "create a webhook (prints its secret, once)", {"URL"},
                        with({identity}), create,
                        "Without --identity (and with an account key) it receives the account's "
                        "events; with it, that identity's.")
           .calls({"POST /api/webhooks/"}),
       CliCommand::leaf("get", "one webhook", {"UUID"}, {identity}, get)
           .calls({"GET /api/webhooks/{uuid}/"}),
       CliCommand::leaf("edit", "change a webhook", {"UUID"},
                        with({identity, {"--endpoint", "URL", "where deliveries go"}}), edit)
           .calls({"PATCH /api/webhooks/{uuid}/"}),
       CliCommand::leaf("delete", "delete a webhook and its delivery log", {"UUID"}, {identity},
                        remove)
           .calls({"DELETE /api/webhooks/{uuid}/"}),
       CliCommand::leaf("rotate-secret", "a new secret (the old one signs 24 hours more)", {"UUID"},
                        {identity}, rotate)
           .calls({"POST /api/webhooks/{uuid}/rotate-secret/"}),
       CliCommand::leaf("deliveries", "a webhook's delivery log, newest first", {"UUID"},
                        {identity}, deliveries)
           .calls({"GET /api/webhooks/{uuid}/deliveries/"}),
       CliCommand::leaf("replay", "send a delivery again", {"UUID", "DELIVERY_ID"}, {identity},
                        replay)
           .calls({"POST /api/webhooks/{uuid}/deliveries/{id}/replay/"})})};
}

}  // namespace

}  // namespace svc::plugins::webhooks

SVC_CLI_COMMANDS(svc::plugins::webhooks::commands)
