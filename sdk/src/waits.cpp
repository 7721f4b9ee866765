#include <svc/sdk/waits.h>

#include <Poco/JSON/Object.h>

namespace svc::sdk {

namespace {

// A check that failed answers the waiting client in the contract's error shape, as the same
// failure would have answered it before the hold.
Response errorAnswer(int status, const std::string& code, const std::string& detail) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("detail", detail);
  body->set("code", code);
  return Response::json(status, body);
}

}  // namespace

HeldWaits::HeldWaits(EventBus& events, std::vector<std::string> types)
    : events_(events), types_(types.begin(), types.end()) {}

HeldWaits::~HeldWaits() {
  stop();
}

void HeldWaits::start() {
  std::lock_guard lock(mutex_);
  if (running_) return;
  running_ = true;
  thread_ = std::thread([this] { run(); });
  subscription_ = events_.subscribe([this](const Event& e) { onEvent(e); });
}

void HeldWaits::stop() {
  {
    std::lock_guard lock(mutex_);
    if (!running_) return;
    running_ = false;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (subscription_) events_.unsubscribe(*subscription_);
  subscription_.reset();
  std::vector<std::shared_ptr<Stream>> held;
  {
    std::lock_guard lock(mutex_);
    for (auto& [identity, list] : waiters_) {
      for (auto& [id, w] : list) {
        if (auto s = w.stream.lock()) held.push_back(s);
      }
    }
    waiters_.clear();
  }
  for (auto& s : held) s->respond(Response::noContent());
}

Response HeldWaits::hold(const std::string& account, const std::string& identity,
                         std::chrono::milliseconds timeout, Check check) {
  if (auto now = check()) return *now;
  return Response::hold([this, account, identity, timeout, check](std::shared_ptr<Stream> s) {
    std::uint64_t id = 0;
    {
      std::lock_guard lock(mutex_);
      if (!running_) {
        s->respond(Response::noContent());
        return;
      }
      id = ++next_id_;
      waiters_[identity][id] = {account, check, s};
      // What arrived between the first check and now had no waiter to wake: look once more.
      due_.insert(identity);
    }
    wake_.notify_one();
    s->onClose([this, identity, id] { forget(identity, id); });
    std::weak_ptr<Stream> weak = s;
    s->expireAfter(timeout, [weak] {
      if (auto held = weak.lock()) held->respond(Response::noContent());
    });
  });
}

std::size_t HeldWaits::heldCount() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [identity, list] : waiters_) n += list.size();
  return n;
}

void HeldWaits::onEvent(const Event& event) {
  if (event.identity.empty() || !types_.count(event.type)) return;
  {
    std::lock_guard lock(mutex_);
    auto it = waiters_.find(event.identity);
    if (it == waiters_.end()) return;
    bool mine = false;
    for (const auto& [id, w] : it->second) mine = mine || w.account == event.account;
    if (!mine) return;
    due_.insert(event.identity);
  }
  wake_.notify_one();
}

void HeldWaits::run() {
  std::unique_lock lock(mutex_);
  while (running_) {
    wake_.wait(lock, [this] { return !running_ || !due_.empty(); });
    if (!running_) break;
    std::set<std::string> due;
    due.swap(due_);
    lock.unlock();
    for (const auto& identity : due) checkIdentity(identity);
    lock.lock();
  }
}

void HeldWaits::checkIdentity(const std::string& identity) {
  std::vector<std::pair<Check, std::weak_ptr<Stream>>> list;
  {
    std::lock_guard lock(mutex_);
    auto it = waiters_.find(identity);
    if (it == waiters_.end()) return;
    for (const auto& [id, w] : it->second) list.emplace_back(w.check, w.stream);
  }
  for (auto& [check, weak] : list) {
    auto stream = weak.lock();
    if (!stream || !stream->isOpen()) continue;
    try {
      if (auto answer = check()) stream->respond(*answer);
    } catch (const HttpError& e) {
      stream->respond(errorAnswer(e.status(), e.code(), e.detail()));
    } catch (const std::exception&) {
      stream->respond(errorAnswer(503, "service_unavailable",
                                  "The server could not look for what this request waits for; "
                                  "call again."));
    }
  }
}

void HeldWaits::forget(const std::string& identity, std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = waiters_.find(identity);
  if (it == waiters_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) waiters_.erase(it);
}

}  // namespace svc::sdk
