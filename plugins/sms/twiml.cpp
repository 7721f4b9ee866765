#include "twiml.h"

#include <Poco/SAX/AttributesImpl.h>
#include <Poco/XML/XMLWriter.h>

#include <functional>
#include <sstream>

namespace svc::plugins::sms {

namespace {

// A document `<?xml ...?><Response>...</Response>` whose content `body` writes.
std::string document(const std::function<void(Poco::XML::XMLWriter&)>& body) {
  std::ostringstream out;
  Poco::XML::XMLWriter writer(out, Poco::XML::XMLWriter::WRITE_XML_DECLARATION);
  writer.startDocument();
  writer.startElement("", "", "Response");
  body(writer);
  writer.endElement("", "", "Response");
  writer.endDocument();
  return out.str();
}

void textElement(Poco::XML::XMLWriter& writer, const std::string& name, const std::string& text,
                 const Poco::XML::AttributesImpl& attributes = {}) {
  writer.startElement("", "", name, attributes);
  writer.characters(text);
  writer.endElement("", "", name);
}

}  // namespace

std::string twimlEmpty() {
  return document([](Poco::XML::XMLWriter&) {});
}

std::string twimlRedirect(const std::string& url) {
  return document([&](Poco::XML::XMLWriter& writer) {
    Poco::XML::AttributesImpl attributes;
    attributes.addAttribute("", "", "method", "CDATA", "POST");
    textElement(writer, "Redirect", url, attributes);
  });
}

std::string twimlSayAndHangUp(const std::string& message) {
  return document([&](Poco::XML::XMLWriter& writer) {
    textElement(writer, "Say", message);
    writer.emptyElement("", "", "Hangup");
  });
}

}  // namespace svc::plugins::sms
