#include <svc/sdk/waits.h>

#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Object.h>

namespace svc::sdk {

namespace {

// A check that failed answers the waiting client in the contract's error shape, as the same
// failure would have answered it before the hold.
Response errorAnswer(const HttpError& e) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("detail", e.detail());
  body->set("code", e.code());
  for (const auto& [name, value] : e.extras()) body->set(name, value);
  Response r = Response::json(e.status(), body);
  r.headers = e.headers();
  return r;
}

}  // namespace

std::vector<Param> waitWindowParams() {
  return {{"created_after", Schema::string().format("date-time"), false,
           "Only a message received after this time. Without it, any message that was not yet "
           "there when the call came. Pass the time you triggered the message to catch one that "
           "arrived before this call."},
          {"timeout", Schema::integer().minimum(1).maximum(120), false,
           "Seconds to wait at most (default 30)."}};
}

std::vector<RouteError> waitErrors() {
  return {{429, "throttled",
           "the identity holds 1,000 waits (or the server 20,000) already; Retry-After says when "
           "to call again"}};
}

std::int64_t waitAfterMicros(const Request& r) {
  if (auto raw = r.queryParam("created_after")) {
    auto at = parseIsoMicros(*raw);
    if (!at) throw HttpError::invalid("created_after", "must be an ISO 8601 time");
    return *at;
  }
  return nowMicros() - kWaitGraceMicros;
}

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
    jobs_.clear();
    held_ = 0;
  }
  for (auto& s : held) s->respond(Response::noContent());
}

Response HeldWaits::hold(const WaitWindow& window, Check check) {
  if (auto now = check(nullptr)) return *now;
  return Response::hold(
      [this, account = window.account, identity = window.identity, timeout = window.timeout,
       check](std::shared_ptr<Stream> s) { admit(account, identity, check, timeout, s); });
}

void HeldWaits::admit(const std::string& account, const std::string& identity, Check check,
                      std::chrono::milliseconds timeout, const std::shared_ptr<Stream>& s) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!running_) {
      s->respond(Response::noContent());
      return;
    }
    auto& list = waiters_[identity];
    if (list.size() >= kMaxPerIdentity || held_ >= kMaxHeld) {
      if (list.empty()) waiters_.erase(identity);
      // The contract's 429: `throttled`, saying when to come back.
      s->respond(errorAnswer(
          RateLimiter::throttled(5, "waits held for this identity (or on this server)")));
      return;
    }
    id = ++next_id_;
    list[id] = {account, check, s};
    ++held_;
    // What arrived between the first check and now had no waiter to wake: look once more.
    jobs_.push_back({identity, id, nullptr});
  }
  wake_.notify_one();
  s->onClose([this, identity, id] { forget(identity, id); });
  std::weak_ptr<Stream> weak = s;
  s->expireAfter(timeout, [weak] {
    if (auto held = weak.lock()) held->respond(Response::noContent());
  });
}

std::size_t HeldWaits::heldCount() const {
  std::lock_guard lock(mutex_);
  return held_;
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
    jobs_.push_back({event.identity, 0, std::make_shared<const Event>(event)});
  }
  wake_.notify_one();
}

void HeldWaits::run() {
  std::unique_lock lock(mutex_);
  while (running_) {
    wake_.wait(lock, [this] { return !running_ || !jobs_.empty(); });
    if (!running_) break;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    runJob(job);
    lock.lock();
  }
}

void HeldWaits::runJob(const Job& job) {
  std::vector<std::pair<Check, std::weak_ptr<Stream>>> list;
  {
    std::lock_guard lock(mutex_);
    auto it = waiters_.find(job.identity);
    if (it == waiters_.end()) return;
    if (job.event) {
      for (const auto& [id, w] : it->second) {
        if (w.account == job.event->account) list.emplace_back(w.check, w.stream);
      }
    } else if (auto w = it->second.find(job.waiter); w != it->second.end()) {
      list.emplace_back(w->second.check, w->second.stream);
    }
  }
  for (auto& [check, weak] : list) {
    auto stream = weak.lock();
    if (!stream || !stream->isOpen()) continue;
    try {
      if (auto answer = check(job.event.get())) stream->respond(*answer);
    } catch (const HttpError& e) {
      stream->respond(errorAnswer(e));
    } catch (const std::exception&) {
      stream->respond(errorAnswer(
          HttpError(503, "service_unavailable",
                    "The server could not look for what this request waits for; call again.")));
    }
  }
}

void HeldWaits::forget(const std::string& identity, std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = waiters_.find(identity);
  if (it == waiters_.end()) return;
  if (it->second.erase(id)) --held_;
  if (it->second.empty()) waiters_.erase(it);
}

}  // namespace svc::sdk
