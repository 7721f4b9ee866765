// The identities plugin's svcctl commands, through the identity routes. Fields other plugins add
// to an identity are set with the generic `--field NAME=VALUE` (the contract's have shorthands:
// --email, --domain, --phone, --country), and what they add to its JSON with an `address` (an
// inbox) or a `number` (a phone) shows in the ADDRESSES column, so they need no change here.
#include <svc/sdk/cli.h>

#include <Poco/JSON/Array.h>

#include <sstream>

namespace svc::plugins::identities {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;

// Every `address` or `number` of the parts other plugins add to the identity (`email`'s
// address, `phone`'s number...).
std::string addresses(const Poco::JSON::Object& identity) {
  std::string out;
  for (const auto& [name, value] : identity) {
    if (value.type() != typeid(Poco::JSON::Object::Ptr)) continue;
    auto part = value.extract<Poco::JSON::Object::Ptr>();
    if (!part) continue;
    for (const char* member : {"address", "number"}) {
      if (!part->has(member) || !part->get(member).isString()) continue;
      out += (out.empty() ? "" : " ") + part->getValue<std::string>(member);
      break;
    }
  }
  return out.empty() ? "-" : out;
}

// The body of a create or update: the --field assignments, then the named options.
std::string body(const CliArgs& args, Poco::JSON::Object& fields) {
  for (const auto& assignment : args.values("--field")) {
    auto [name, value] = sdk::parseCliField(assignment);
    fields.set(name, value);
  }
  if (args.has("--name")) fields.set("name", args.value("--name"));
  // Shorthands kept from before --field: --email X is --field email_identifier=X.
  if (args.has("--email")) fields.set("email_identifier", args.value("--email"));
  if (args.has("--domain")) fields.set("domain", args.value("--domain"));
  // --phone [--country CC] is --field provision_phone=true [--field country_code=CC].
  if (args.has("--country") && !args.has("--phone")) {
    throw sdk::CliUsageError("--country is the country of --phone's number: give --phone too");
  }
  if (args.has("--phone")) fields.set("provision_phone", true);
  if (args.has("--country")) fields.set("country_code", args.value("--country"));
  return sdk::jsonText(fields);
}

void printOne(CliContext& cli, const sdk::CliReply& reply) {
  cli.print(reply, [&](const Poco::JSON::Object& identity) {
    cli.out() << identity.getValue<std::string>("uuid") << " " << addresses(identity) << "\n";
  });
}

int list(CliContext& cli, const CliArgs&) {
  auto reply = cli.api("GET", "/api/identities/?limit=200");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"UUID", "ADDRESSES", "NAME"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto identity = results->getObject(static_cast<unsigned>(i));
      table.row({identity->getValue<std::string>("uuid"), addresses(*identity),
                 identity->getValue<std::string>("name")});
    }
    table.print(cli.out());
  });
  return 0;
}

int show(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/identities/" + sdk::urlComponent(args.arg(0)) + "/");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& identity) {
    cli.out() << "UUID:      " << identity.getValue<std::string>("uuid") << "\n"
              << "Name:      " << identity.getValue<std::string>("name") << "\n"
              << "Addresses: " << addresses(identity) << "\n"
              << "Created:   " << identity.optValue<std::string>("created_dt", "") << "\n";
  });
  return 0;
}

int create(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object fields;
  fields.set("name", args.arg(0));
  auto reply = cli.api("POST", "/api/identities/", body(args, fields));
  cli.expect(reply, 201);
  printOne(cli, reply);
  return 0;
}

int update(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object fields;
  auto reply =
      cli.api(args.has("--replace") ? "PUT" : "PATCH",
              "/api/identities/" + sdk::urlComponent(args.arg(0)) + "/", body(args, fields));
  cli.expect(reply, 200);
  printOne(cli, reply);
  return 0;
}

void printVoiceAgent(CliContext& cli, const sdk::CliReply& reply) {
  cli.print(reply, [&](const Poco::JSON::Object& agent) {
    cli.out() << (agent.optValue<bool>("enabled", false) ? "enabled " : "disabled ")
              << (agent.isNull("response_url") ? "-" : agent.getValue<std::string>("response_url"))
              << "\n";
  });
}

int voiceAgentShow(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/identities/" + sdk::urlComponent(args.arg(0)) + "/voice-agent/");
  cli.expect(reply, 200);
  printVoiceAgent(cli, reply);
  return 0;
}

int voiceAgentSet(CliContext& cli, const CliArgs& args) {
  if (args.has("--enable") && args.has("--disable")) {
    throw sdk::CliUsageError("give --enable or --disable, not both");
  }
  Poco::JSON::Object fields;
  if (args.has("--response-url")) fields.set("response_url", args.value("--response-url"));
  if (args.has("--enable") || args.has("--disable")) fields.set("enabled", args.has("--enable"));
  if (fields.size() == 0) throw sdk::CliUsageError("give --response-url, --enable or --disable");
  auto reply = cli.api(args.has("--replace") ? "PUT" : "PATCH",
                       "/api/identities/" + sdk::urlComponent(args.arg(0)) + "/voice-agent/",
                       sdk::jsonText(fields));
  cli.expect(reply, 200);
  printVoiceAgent(cli, reply);
  return 0;
}

// An action another plugin declares (the contract's have their own commands, such as `phones
// provision`): the route takes no body, and the answer is that plugin's, printed as sent.
int act(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("POST", "/api/identities/" + sdk::urlComponent(args.arg(0)) + "/" +
                                   sdk::urlComponent(args.arg(1)) + "/");
  cli.expect(reply);
  if (!reply.body.empty()) cli.out() << reply.body << "\n";
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption field{"--field", "NAME=VALUE",
                             "set a field of the identity's JSON body; VALUE is JSON when it "
                             "parses as JSON, else a string",
                             true};
  return {CliCommand::group(
      "identities", "the personas agents act as",
      {CliCommand::leaf("list", "the account's identities and their addresses", {}, {}, list)
           .calls({"GET /api/identities/"}),
       CliCommand::leaf("show", "one identity", {"UUID"}, {}, show)
           .calls({"GET /api/identities/{uuid}/"}),
       CliCommand::leaf("create", "create an identity (with its inbox when email is enabled)",
                        {"NAME"},
                        {field,
                         {"--email", "LOCAL_PART", "the inbox's local part (email_identifier)"},
                         {"--domain", "DOMAIN", "the inbox's domain"},
                         {"--phone", "", "give it a phone number too (provision_phone)"},
                         {"--country", "CC",
                          "with --phone: the number's country, ISO 3166 alpha-2 (default US)"}},
                        create,
                        "Prints the new identity's UUID and addresses (its inbox, its number).\n"
                        "Any other field of the body (`svcctl schema --text` lists them):\n"
                        "  svcctl identities create Bot --field NAME=VALUE")
           .calls({"POST /api/identities/"}),
       CliCommand::leaf("update", "change an identity", {"UUID"},
                        {{"--name", "NAME", "its new name"},
                         field,
                         {"--replace", "", "send PUT (every field: --name) instead of PATCH"}},
                        update, "Prints the identity's UUID and addresses.")
           .calls({"PATCH /api/identities/{uuid}/", "PUT /api/identities/{uuid}/"}),
       CliCommand::leaf("act", "run an action another plugin declares for an identity",
                        {"UUID", "ACTION"}, {}, act,
                        "Prints the plugin's answer as the server sends it. The actions this "
                        "server's plugins declare are named in `svcctl schema --text` (the body "
                        "of POST /api/identities/{uuid}/{action}/).")
           .calls({"POST /api/identities/{uuid}/{action}/"}),
       CliCommand::group(
           "voice-agent", "where calls to an identity's number are handed",
           {CliCommand::leaf("show", "an identity's voice agent: enabled, response URL", {"UUID"},
                             {}, voiceAgentShow)
                .calls({"GET /api/identities/{uuid}/voice-agent/"}),
            CliCommand::leaf("set", "change an identity's voice agent", {"UUID"},
                             {{"--response-url", "URL", "where calls are handed (public http(s))"},
                              {"--enable", "", "hand calls to it"},
                              {"--disable", "", "answer calls with a short message"},
                              {"--replace", "",
                               "send PUT (--response-url needed) instead of "
                               "PATCH"}},
                             voiceAgentSet)
                .calls({"PATCH /api/identities/{uuid}/voice-agent/",
                        "PUT /api/identities/{uuid}/voice-agent/"})})})};
}

}  // namespace

}  // namespace svc::plugins::identities

SVC_CLI_COMMANDS(svc::plugins::identities::commands)
