// The search index of contacts: `search/?q=` matches a case-insensitive substring of a contact's
// email, display name, nickname or phone number, and must stay fast at 100,000 contacts per
// identity (p50 under 10 ms), where scanning every row is not.
//
// Each contact keeps `search_text`: those four fields case-folded (foldCase), one per line. Each
// distinct trigram (three characters, never across lines) of it is a row of `contact_grams`
// `(gram_key, contact_id)`, where gram_key is a 63-bit FNV-1a hash of the account and the
// trigram: a contact matching q holds every trigram of q. A search counts (up to a bound) how many
// contacts hold each of q's trigrams, takes the contacts holding both of the two rarest as
// candidates, and `INSTR(search_text, q)` keeps the true matches (which also discards hash
// collisions). When even the rarest is common (`example`), or q is shorter than three
// characters, candidates would cost more than the rows themselves: then the scope's rows are read
// newest first until the page is full, and counted up to a limit.
// The hash is part of the stored data: changing it needs a migration that rebuilds grams.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::contacts {

/// @param fields a contact's searchable fields, each valid UTF-8 (empty ones are skipped).
/// @return them case-folded, one per line.
std::string searchText(const std::vector<std::string>& fields);

/// @param account the contact's account. @param folded case-folded text (lines are kept apart).
/// @return the distinct gram keys of its trigrams, in ascending order.
std::vector<std::int64_t> gramKeys(std::string_view account, std::string_view folded);

/// @param folded case-folded text. @return how many characters it has.
std::size_t characterCount(std::string_view folded);

}  // namespace svc::plugins::contacts
