// The word lists of the verification-code finder (verification_code.cpp): which words name
// another kind of code or number, units, currencies, streets, and the words that join a label to
// its value. Internal to the SDK library. Words are lower-case (ASCII, Latin-1 and Cyrillic).
#pragma once

#include <initializer_list>
#include <string_view>

// Not part of the SDK's interface: kept out of the library's exported symbols.
#pragma GCC visibility push(hidden)
namespace svc::sdk::code_words {

bool startsWith(std::string_view s, std::string_view p);
bool endsWith(std::string_view s, std::string_view p);
bool oneOf(std::string_view s, std::initializer_list<std::string_view> list);
bool startsWithOneOf(std::string_view s, std::initializer_list<std::string_view> list);
bool namesOtherCodeBefore(std::string_view w);
bool namesOtherCodeAfter(std::string_view w);
bool isOtherCodeCompound(std::string_view w);
bool namesOtherNumber(std::string_view w);
bool namesUnit(std::string_view w);
bool namesCurrency(std::string_view w);
bool namesStreet(std::string_view w);
bool isLinkWord(std::string_view w);
bool endsWithCurrencySymbol(std::string_view s);
bool startsWithCurrencySymbol(std::string_view s);

}  // namespace svc::sdk::code_words
#pragma GCC visibility pop
