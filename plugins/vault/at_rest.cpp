#include "at_rest.h"

#include "aead.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Exception.h>
#include <Poco/File.h>
#include <Poco/Path.h>

#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace svc::plugins::vault {

namespace {

// What a data key's wrapping is bound to: a wrapped key copied to another id does not open.
std::string wrapAad(const std::string& key_id, const std::string& wrap_id) {
  return std::string("svc-vault-data-key") + '\0' + key_id + '\0' + wrap_id;
}

sdk::HttpError conflict(const std::string& message) {
  return sdk::HttpError(409, "conflict", message);
}

std::string joined(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out.empty() ? "none" : out;
}

}  // namespace

AtRestCipher::AtRestCipher(std::string key_file, sdk::Database& database)
    : path_(std::move(key_file)), store_(database) {
  requireAesGcm();
  Poco::File(Poco::Path(path_).parent()).createDirectories();
  KeyFileLock lock(path_);
  auto keys = MasterKeys::read(path_);
  if (!keys) {
    keys = MasterKeys::fresh();
    keys->save(path_);
    made_file_ = true;
  }
  first_file_key_ = keys->current().id;
  hold(*keys);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    stamp_ = Stamp{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                   static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  }
}

std::runtime_error AtRestCipher::fileProblem(const std::string& what) const {
  return std::runtime_error("vault.master_key_file " + path_ +
                            (made_file_ ? " (it did not exist and was made new)" : "") + " " +
                            what);
}

void AtRestCipher::hold(const MasterKeys& keys) {
  std::lock_guard lock(mutex_);
  for (const auto& k : keys.all()) {
    file_keys_.emplace(k.id, k.bytes);
    wraps_.emplace(k.id, wrappingKeyOf(k.bytes));
  }
}

void AtRestCipher::refreshFile() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return;  // vanished: what is held stays; never remade
  const Stamp stamp{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                    static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  {
    std::lock_guard lock(mutex_);
    if (stamp_ && *stamp_ == stamp) return;
  }
  try {
    if (auto keys = MasterKeys::read(path_)) {
      hold(*keys);
      std::lock_guard lock(mutex_);
      stamp_ = stamp;
    }
  } catch (const std::runtime_error&) {
    // A file being copied in, or wrong: what is held keeps working.
  }
}

bool AtRestCipher::holds(const std::string& wrap_id) {
  {
    std::lock_guard lock(mutex_);
    if (wraps_.count(wrap_id)) return true;
  }
  refreshFile();
  std::lock_guard lock(mutex_);
  return wraps_.count(wrap_id) > 0;
}

std::string AtRestCipher::wrapWith(const std::string& wrap_id, const std::string& key_id,
                                   const std::string& key) {
  std::string wrapping;
  {
    std::lock_guard lock(mutex_);
    wrapping = wraps_.at(wrap_id);
  }
  return sdk::base64(gcmSeal(wrapping, wrapAad(key_id, wrap_id), key));
}

std::optional<std::string> AtRestCipher::dataKey(const std::string& id, Poco::Data::Session* s) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = data_keys_.find(id); it != data_keys_.end()) return it->second;
  }
  // Another svcd's rotation: the key is in the database, wrapped under the file's key.
  std::vector<WrappedKey> rows;
  if (s) {
    rows = store_.wrapped(*s, id);
  } else {
    Poco::Data::Session own = store_.database().session();
    rows = store_.wrapped(own, id);
  }
  for (const auto& row : rows) {
    if (!holds(row.wrap_id)) continue;
    const auto raw = sdk::base64Decode(row.wrapped);
    std::string wrapping;
    {
      std::lock_guard lock(mutex_);
      wrapping = wraps_.at(row.wrap_id);
    }
    if (!raw) continue;
    if (auto key = gcmOpen(wrapping, wrapAad(row.key_id, row.wrap_id), *raw)) {
      std::lock_guard lock(mutex_);
      data_keys_.emplace(id, *key);
      return key;
    }
  }
  return std::nullopt;
}

void AtRestCipher::noteCurrent(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (seen_current_ == id) return;
  seen_current_ = id;
  generation_.fetch_add(1);
}

void AtRestCipher::start() {
  // Several svcd start at once on one database: a transient failure (a deadlock, a Galera
  // certification failure) is tried again; every step is idempotent.
  for (int attempt = 1;; ++attempt) {
    try {
      bootstrap();
      break;
    } catch (const Poco::Exception&) {
      if (attempt == 3) throw;
    }
  }
  Poco::Data::Session s = store_.database().session();
  std::vector<std::string> unopened;
  for (const auto& id : store_.keyIds(s)) {
    if (!dataKey(id, &s)) unopened.push_back(id);
  }
  if (!unopened.empty()) {
    throw fileProblem("does not open the database's data key(s) " + joined(unopened) +
                      ": it is not the key file the other svcd of this database use. Copy "
                      "theirs here (mode 0600), or restore it from backup.");
  }
  noteCurrent(store_.state(s, Lock::kNone)->current_key);
}

void AtRestCipher::bootstrap() {
  sdk::Database& db = store_.database();
  // The first svcd on a database makes its file's key the wrapping key.
  db.transaction([&](Poco::Data::Session& tx) { store_.claim(tx, first_file_key_); });
  Poco::Data::Session s = db.session();
  const KeyState state = *store_.state(s, Lock::kNone);
  std::vector<std::string> active{state.wrap_id};
  if (!state.next_wrap_id.empty()) active.push_back(state.next_wrap_id);
  std::vector<std::string> held;
  for (const auto& w : active) {
    if (holds(w)) held.push_back(w);
  }
  if (held.empty()) {
    std::vector<std::string> ids;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [id, bytes] : file_keys_) ids.push_back(id);
    }
    throw fileProblem("holds key(s) " + joined(ids) + ", not " + joined(active) +
                      ", which wraps the database's data keys: it is not the key file the other "
                      "svcd of this database use. Copy theirs here (mode 0600), or restore it "
                      "from backup.");
  }
  // An install from before data keys sealed its values directly under the file's keys: each
  // such key becomes a data key (same id, same bytes), wrapped like the others.
  const auto known = store_.keyIds(s);
  std::vector<std::string> missing;
  for (const auto& id : store_.valueKeyIds(s)) {
    if (std::find(known.begin(), known.end(), id) != known.end()) continue;
    std::string bytes;
    {
      std::lock_guard lock(mutex_);
      if (auto it = file_keys_.find(id); it != file_keys_.end()) bytes = it->second;
    }
    if (bytes.empty()) {
      missing.push_back(id);
      continue;
    }
    db.transaction([&](Poco::Data::Session& tx) {
      for (const auto& w : held) store_.add(tx, {id, w, wrapWith(w, id, bytes)}, true);
    });
  }
  if (!missing.empty()) {
    throw fileProblem("lacks key(s) " + joined(missing) +
                      " that the database holds values under, and the database has no data key "
                      "by that id. Point vault.master_key_file at the file that holds them "
                      "(restore it from backup).");
  }
  if (!state.current_key.empty()) return;
  db.transaction([&](Poco::Data::Session& tx) {
    const KeyState now = *store_.state(tx, Lock::kExclusive);
    if (!now.current_key.empty()) return;  // another svcd made it meanwhile
    const std::string id = sdk::hexEncode(randomBytes(8));
    const std::string bytes = randomBytes(32);
    for (const auto& w : held) store_.add(tx, {id, w, wrapWith(w, id, bytes)}, false);
    store_.setCurrent(tx, "", id);
  });
}

SealedAtRest AtRestCipher::seal(Poco::Data::Session& s, std::string_view aad,
                                std::string_view plaintext) {
  const auto state = store_.state(s, Lock::kNone);
  if (!state || state->current_key.empty()) {
    throw std::runtime_error(
        "vault: the database has no current data key (the vault has not started)");
  }
  const auto key = dataKey(state->current_key, &s);
  if (!key) {
    throw fileProblem("does not open the current data key " + state->current_key +
                      ": copy the key file the other svcd of this database use");
  }
  noteCurrent(state->current_key);
  return {state->current_key, sdk::base64(gcmSeal(*key, aad, plaintext))};
}

std::optional<std::string> AtRestCipher::open(const SealedAtRest& sealed, std::string_view aad) {
  const auto raw = sdk::base64Decode(sealed.data);
  if (!raw) return std::nullopt;
  const auto key = dataKey(sealed.key_id, nullptr);
  if (!key) return std::nullopt;
  return gcmOpen(*key, aad, *raw);
}

std::string AtRestCipher::currentKeyId() {
  Poco::Data::Session s = store_.database().session();
  const auto state = store_.state(s, Lock::kNone);
  return state ? state->current_key : "";
}

std::string AtRestCipher::rotate() {
  std::string made, made_bytes;
  store_.database().transaction([&](Poco::Data::Session& tx) {
    const KeyState state = *store_.state(tx, Lock::kExclusive);
    std::vector<std::string> active{state.wrap_id};
    if (!state.next_wrap_id.empty()) active.push_back(state.next_wrap_id);
    for (const auto& w : active) {
      if (!holds(w)) {
        throw conflict("This svcd's vault.master_key_file " + path_ + " lacks master key " + w +
                       " of the master key replacement under way: rotate on a svcd that holds "
                       "the new file, or finish (or cancel) the replacement first.");
      }
    }
    made = sdk::hexEncode(randomBytes(8));
    made_bytes = randomBytes(32);
    for (const auto& w : active) store_.add(tx, {made, w, wrapWith(w, made, made_bytes)}, false);
    if (!store_.setCurrent(tx, state.current_key, made)) {
      throw conflict("another rotation changed the current data key meanwhile");
    }
  });
  {
    std::lock_guard lock(mutex_);
    data_keys_.emplace(made, made_bytes);
  }
  noteCurrent(made);
  return made;
}

std::vector<std::string> AtRestCipher::retire() {
  std::vector<std::string> dropped;
  store_.database().transaction([&](Poco::Data::Session& tx) {
    dropped.clear();
    const KeyState state = *store_.state(tx, Lock::kExclusive);
    const auto used = store_.valueKeyIds(tx);
    for (const auto& id : store_.keyIds(tx)) {
      if (id == state.current_key || id == state.previous_key ||
          std::find(used.begin(), used.end(), id) != used.end()) {
        continue;
      }
      store_.dropKey(tx, id);
      dropped.push_back(id);
    }
  });
  if (!dropped.empty()) generation_.fetch_add(1);
  return dropped;
}

Replacement AtRestCipher::beginReplacement() {
  {
    Poco::Data::Session s = store_.database().session();
    const KeyState state = *store_.state(s, Lock::kNone);
    if (!state.next_wrap_id.empty()) {
      throw conflict("A replacement by master key " + state.next_wrap_id +
                     " is under way: copy its file to every svcd and finish it (svcctl vault "
                     "replace-master-key --finish), or cancel it (--cancel).");
    }
  }
  MasterKeys fresh = MasterKeys::fresh();
  const std::string next = fresh.current().id;
  const std::string file = path_ + ".new";
  fresh.save(file);
  hold(fresh);
  Replacement out{next, file, 0};
  store_.database().transaction([&](Poco::Data::Session& tx) {
    const KeyState state = *store_.state(tx, Lock::kExclusive);
    if (!state.next_wrap_id.empty() || state.wrap_id == next) {
      throw conflict("another master key replacement began meanwhile");
    }
    out.data_keys = wrapEveryDataKey(tx, next);
    store_.setNextWrap(tx, next);
  });
  return out;
}

long AtRestCipher::wrapEveryDataKey(Poco::Data::Session& tx, const std::string& wrap_id) {
  long wrapped = 0;
  for (const auto& id : store_.keyIds(tx)) {
    const auto key = dataKey(id, &tx);
    if (!key) throw fileProblem("does not open data key " + id);
    store_.add(tx, {id, wrap_id, wrapWith(wrap_id, id, *key)}, true);
    ++wrapped;
  }
  return wrapped;
}

Replacement AtRestCipher::finishReplacement() {
  std::string next;
  {
    Poco::Data::Session s = store_.database().session();
    next = store_.state(s, Lock::kNone)->next_wrap_id;
  }
  if (next.empty()) throw conflict("No master key replacement is under way.");
  const auto on_disk = MasterKeys::read(path_);
  if (!on_disk || !on_disk->find(next)) {
    throw conflict("This svcd's vault.master_key_file " + path_ + " does not hold master key " +
                   next +
                   " yet: copy the new file over it here and on every other machine, "
                   "then finish.");
  }
  refreshFile();
  Replacement out{next, "", 0};
  store_.database().transaction([&](Poco::Data::Session& tx) {
    const KeyState state = *store_.state(tx, Lock::kExclusive);
    if (state.next_wrap_id != next) throw conflict("the replacement changed meanwhile");
    // A data key made meanwhile is wrapped under both already; this is for safety's sake.
    out.data_keys = wrapEveryDataKey(tx, next);
    store_.finishWrap(tx, next);
  });
  return out;
}

std::string AtRestCipher::cancelReplacement() {
  std::string next;
  store_.database().transaction([&](Poco::Data::Session& tx) {
    next = store_.state(tx, Lock::kExclusive)->next_wrap_id;
    if (next.empty()) return;
    store_.dropWrap(tx, next);
    store_.setNextWrap(tx, "");
  });
  return next;
}

KeyStatus AtRestCipher::status() {
  KeyStatus out;
  Poco::Data::Session s = store_.database().session();
  out.state = *store_.state(s, Lock::kNone);
  out.data_keys = store_.keyIds(s);
  if (const auto keys = MasterKeys::read(path_)) {
    for (const auto& k : keys->all()) out.file_keys.push_back(k.id);
  }
  return out;
}

}  // namespace svc::plugins::vault
