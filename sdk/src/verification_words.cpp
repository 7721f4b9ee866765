#include "verification_words.h"

#include <algorithm>

namespace svc::sdk::code_words {

bool startsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
bool oneOf(std::string_view s, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}
bool startsWithOneOf(std::string_view s, std::initializer_list<std::string_view> list) {
  return std::any_of(list.begin(), list.end(),
                     [&](std::string_view p) { return startsWith(s, p); });
}

// Words after which "code" means another kind of code.
bool namesOtherCodeBefore(std::string_view w) {
  return oneOf(
      w, {"promo",  "promotional", "promotion", "discount", "coupon",   "voucher", "gift",
          "zip",    "postal",      "post",      "area",     "country",  "error",   "status",
          "source", "qr",          "bar",       "tracking", "referral", "invite",  "invitation",
          "dress",  "tax",         "swift",     "sort",     "product",  "html",    "sample",
          "exit",   "rabatt",      "gutschein", "aktions"});
}

// Words after "code" / "código" (past de, of, ...) that make it another kind of code.
bool namesOtherCodeAfter(std::string_view w) {
  return oneOf(
      w, {"postal",     "promo",     "promocional", "promotionnel", "promotion", "descuento",
          "desconto",   "réduction", "reduction",   "rastreamento", "rastreio",  "seguimiento",
          "suivi",      "barras",    "cupom",       "cupón",        "envio",     "envío",
          "review",     "reviews",   "reviewer",    "owners",       "coverage",  "quality",
          "conduct",    "editor",    "snippet",     "base",         "sample",    "samples",
          "repository", "change",    "changes",     "commit",       "block",     "blocks",
          "sconto"});
}

// Compounds ending in "code" that name another kind of code.
bool isOtherCodeCompound(std::string_view w) {
  std::string_view stem = w.substr(0, w.size() - (endsWith(w, "codes") ? 5 : 4));
  if (!stem.empty() && stem.back() == '-') stem.remove_suffix(1);
  return oneOf(stem, {"de",       "en",         "uni",       "bar",      "post",    "zip",
                      "qr",       "geo",        "op",        "trans",    "short",   "source",
                      "promo",    "rabatt",     "gutschein", "aktions",  "voucher", "coupon",
                      "geschenk", "einladungs", "strich",    "quell",    "fehler",  "länder",
                      "laender",  "tracking",   "sendungs",  "referral", "area",    "country",
                      "error",    "status",     "product",   "produkt",  "artikel", "re"});
}

// Words that, just before a number, say it is something else (an order, an account, a phone).
bool namesOtherNumber(std::string_view w) {
  return oneOf(w, {"id",       "no",          "nr",           "nro",       "num",
                   "nº",       "box",         "suite",        "apt",       "unit",
                   "floor",    "room",        "seat",         "row",       "gate",
                   "flight",   "case",        "ref",          "sku",       "item",
                   "model",    "serial",      "version",      "v",         "build",
                   "release",  "issue",       "pr",           "pull",      "meeting",
                   "zip",      "plz",         "cp",           "cep",       "tel",
                   "fax",      "call",        "phone",        "mobile",    "hotline",
                   "whatsapp", "total",       "amount",       "balance",   "price",
                   "subtotal", "paid",        "charged",      "betrag",    "summe",
                   "montant",  "importe",     "valor",        "saldo",     "points",
                   "miles",    "ending",      "ends",         "card",      "acct",
                   "account",  "member",      "customer",     "client",    "policy",
                   "ticket",   "receipt",     "transaction",  "txn",       "tracking",
                   "booking",  "reservation", "confirmation", "reference", "locker",
                   "over",     "than",        "about",        "around",    "approximately",
                   "nearly",   "almost",      "reply",        "circa",     "ca",
                   "mehr",     "über",        "plus",         "environ",   "más",
                   "mais"}) ||
         w.find("nummer") != std::string_view::npos ||
         startsWithOneOf(
             w,
             {"bestell",  "rechnung", "auftrag", "sendung",     "kunden",    "vertrag", "konto",
              "commande", "facture",  "colis",   "numéro",      "número",    "numero",  "pedido",
              "factura",  "fatura",   "rastre",  "seguimiento", "encomenda", "telefon", "téléphone",
              "teléfono", "telefone", "gesamt",  "order",       "invoice"});
}

// Words that, just after a number, make it a quantity, an amount or a time.
bool namesUnit(std::string_view w) {
  return oneOf(
      w, {"minutes",   "minute",      "min",       "mins",    "seconds",   "sec",       "secs",
          "hours",     "hour",        "hrs",       "h",       "days",      "day",       "weeks",
          "months",    "years",       "minuten",   "stunden", "tage",      "sekunden",  "uhr",
          "minutos",   "horas",       "dias",      "días",    "segundos",  "heures",    "jours",
          "secondes",  "points",      "pts",       "miles",   "km",        "kg",        "lb",
          "lbs",       "mb",          "gb",        "kb",      "tb",        "followers", "views",
          "likes",     "people",      "members",   "users",   "customers", "accounts",  "teams",
          "employees", "subscribers", "downloads", "reviews", "steps",     "calories",  "kcal",
          "items",     "euro",        "euros",     "eur",     "usd",       "dollars",   "gbp",
          "chf",       "inr",         "rs",        "brl",     "mxn",       "jpy",       "cad",
          "aud",       "kr",          "sek",       "nok",     "dkk",       "pln",       "zł"});
}

bool namesCurrency(std::string_view w) {
  return oneOf(w, {"usd", "eur", "gbp", "inr", "rs", "brl", "chf", "jpy", "cad", "aud", "mxn",
                   "cop", "ars", "clp", "sek", "nok", "dkk", "pln", "r"});
}

bool namesStreet(std::string_view w) {
  return oneOf(w, {"street",  "st",    "avenue", "ave",    "road",    "rd",   "blvd", "boulevard",
                   "parkway", "pkwy",  "way",    "drive",  "dr",      "lane", "ln",   "court",
                   "ct",      "place", "pl",     "straße", "strasse", "str",  "weg",  "allee",
                   "platz",   "gasse", "rue",    "calle",  "avenida", "av",   "rua",  "via"});
}

// Words that join a label to its value: "code is 1234", "Code lautet 1234".
bool isLinkWord(std::string_view w) {
  return oneOf(w,
               {"is",       "ist", "lautet", "est",       "es",        "é",        "è",   "to",
                "je",       "er",  "是",     "are",       "was",       "sind",     "use", "enter",
                "utilisez", "usa", "digite", "introduce", "saisissez", "eingeben", "type"});
}

bool endsWithCurrencySymbol(std::string_view s) {
  return endsWith(s, "$") || endsWith(s, "€") || endsWith(s, "£") || endsWith(s, "¥") ||
         endsWith(s, "₹") || endsWith(s, "₽") || endsWith(s, "₩");
}
bool startsWithCurrencySymbol(std::string_view s) {
  return startsWith(s, "$") || startsWith(s, "€") || startsWith(s, "£") || startsWith(s, "¥") ||
         startsWith(s, "₹") || startsWith(s, "₽") || startsWith(s, "₩");
}

}  // namespace svc::sdk::code_words
