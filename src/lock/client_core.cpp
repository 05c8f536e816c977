#include "lock/client_core.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>

#include <fmt/core.h>

#include <random>

namespace redisync::detail {

namespace asio = boost::asio;

namespace {

std::string make_client_id() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint32_t> dist;
  std::uint32_t const a = dist(rd), b = dist(rd), c = dist(rd), d = dist(rd);
  // A version-4 UUID: 122 random bits.
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:04x}{:08x}", a, b >> 16, b & 0xfff,
                     (c >> 16 & 0x3fff) | 0x8000, c & 0xffff, d);
}

// Helper keys wrap the name in {} (one cluster slot for all keys of a lock) unless it has braces.
std::string prefixed(std::string_view prefix, std::string_view name) {
  bool const tagged = name.find('{') != std::string_view::npos;
  std::string out;
  out.reserve(prefix.size() + name.size() + 2);
  out.append(prefix);
  if (!tagged) out += '{';
  out.append(name);
  if (!tagged) out += '}';
  return out;
}

}  // namespace

std::string channel_of(std::string_view name) { return prefixed("redisson_lock__channel:", name); }

std::string token_key_of(std::string_view name) { return prefixed("redisson_lock_token:", name); }

std::string hold_key(std::string_view owner, std::string_view name) {
  // The owner's length first, so that no owner/name pair collides with another.
  std::string out = std::to_string(owner.size());
  out.reserve(out.size() + owner.size() + name.size() + 1);
  out += ':';
  out.append(owner);
  out.append(name);
  return out;
}

error_code validate_name(std::string_view name) {
  if (name.empty() || name.size() > 64 * 1024) return error::invalid_argument;
  return {};
}

error_code validate_owner(std::string_view owner) {
  if (owner.empty() || owner.size() > 256) return error::invalid_argument;
  for (unsigned char c : owner) {
    if (c <= ' ' || c == 0x7f) return error::invalid_argument;
  }
  return {};
}

error_code validate_duration(std::chrono::milliseconds d, bool zero_allowed) {
  // Longer than a year is a mistake, and it keeps deadline arithmetic far from overflow.
  constexpr auto longest = std::chrono::hours{24 * 366};
  if (d.count() < 0 || (d.count() == 0 && !zero_allowed) || d > longest) {
    return error::invalid_argument;
  }
  return {};
}

client_core::client_core(asio::any_io_executor ex, config cfg)
    : conn{std::move(ex), std::move(cfg)},
      executor{conn.get_executor()},
      id{make_client_id()},
      subs{conn, conn.cfg().subscription_linger},
      wheel{conn.cfg().watchdog_tick, 512, clock_type::now()},
      wheel_timer{conn.io_executor()} {}

void client_core::init() {
  std::weak_ptr<client_core> weak = shared_from_this();
  conn.set_push_handler([weak](resp::value const& push) {
    if (auto self = weak.lock()) self->on_push(push);
  });
  conn.set_connect_handler([weak] {
    if (auto self = weak.lock()) self->on_connected();
  });
}

// ---------------------------------------------------------------------------------- holds

std::shared_ptr<hold_state> client_core::find_hold(std::string const& key) const {
  auto it = holds.find(key);
  if (it == holds.end() || !it->second->active()) return nullptr;
  return it->second;
}

std::shared_ptr<hold_state> client_core::new_hold(acquire_args const& a, std::string key,
                                                  std::string channel) {
  auto hold = std::make_shared<hold_state>();
  hold->name = a.name;
  hold->owner = a.owner;
  hold->key = std::move(key);
  hold->channel = std::move(channel);
  hold->token_key = token_key_of(a.name);
  hold->lease = a.lease.value_or(conn.cfg().watchdog_lease);
  hold->watchdog = !a.lease;
  return hold;
}

clock_type::time_point client_core::validity_deadline(clock_type::time_point sent,
                                                      std::chrono::milliseconds lease) const {
  // Clock drift between this host and Redis, and the time Redis needs to expire the key.
  auto const drift = lease / 100 + std::chrono::milliseconds{2};
  return sent + lease - drift;
}

void client_core::grant(std::shared_ptr<hold_state> const& hold, std::uint64_t token,
                        std::int64_t count, clock_type::time_point sent) {
  if (!hold->granted) hold->token = token;
  hold->granted = true;
  hold->count = count;
  hold->set_valid_until(validity_deadline(sent, hold->lease));
  hold->status = hold_status::held;
  auto& slot = holds[hold->key];
  if (slot != hold) {
    if (slot) forget_hold(slot);
    slot = hold;
  }
  holds_count = holds.size();
  if (hold->watchdog) schedule_renewal(hold, sent);
  schedule_validity_check(hold);
}

void client_core::forget_hold(std::shared_ptr<hold_state> const& hold) {
  wheel.cancel(hold->renewal_entry);
  wheel.cancel(hold->validity_entry);
  auto it = holds.find(hold->key);
  if (it != holds.end() && it->second == hold) holds.erase(it);
  holds_count = holds.size();
}

void client_core::lose(std::shared_ptr<hold_state> const& hold) {
  if (!hold->active()) return;
  hold->status = hold_status::lost;
  hold->levels.clear();
  forget_hold(hold);
  emit(event_kind::hold_lost, event_level::error, hold->name, hold->owner);
  for (auto* t : std::exchange(hold->loss_timers, {})) t->cancel();
  for (auto& weak : std::exchange(hold->notifiers, {})) {
    if (auto n = weak.lock()) {
      asio::post(n->ex, [n] { n->signal.emit(asio::cancellation_type::terminal); });
    }
  }
  // The lock may be free now: a waiter of this client need not wait for its PTTL.
  wake_first_waiter(hold->channel);
}

void client_core::finish_hold(std::shared_ptr<hold_state> const& hold) {
  hold->status = hold_status::released;
  hold->count = 0;
  for (auto& level : std::exchange(hold->levels, {})) level->state = level_state::released;
  forget_hold(hold);
  for (auto* t : std::exchange(hold->loss_timers, {})) t->cancel();
  hold->notifiers.clear();
}

// ---------------------------------------------------------------------------- settlement

void client_core::unsettle(std::string const& key) {
  auto& slot = unsettled[key];
  if (!slot) slot = std::make_shared<unsettled_key>(io());
  ++slot->pending;
}

void client_core::settle(std::string const& key) {
  auto it = unsettled.find(key);
  if (it == unsettled.end()) return;
  if (--it->second->pending > 0) return;
  it->second->settled.cancel();
  unsettled.erase(it);
}

asio::awaitable<void> client_core::wait_settled(std::string const& key) {
  for (;;) {
    auto it = unsettled.find(key);
    if (it == unsettled.end() || stopped) co_return;
    auto entry = it->second;
    entry->settled.expires_at(asio::steady_timer::time_point::max());
    co_await entry->settled.async_wait(asio::as_tuple(asio::deferred));
  }
}

// -------------------------------------------------------------------------------- waiting

void client_core::on_push(resp::value const& push) {
  auto const e = push.elements();
  if (e.size() != 3 || !e[0].is_string() || e[0].text() != "message") return;
  std::string channel{e[1].text()};
  auto it = queues.find(channel);
  if (it == queues.end()) {
    subs.drop_unwanted(channel);
    return;
  }
  // Redisson's unlock message: one waiter of this client may now take the lock.
  if (e[2].text() == "0") it->second.wake_head();
}

void client_core::wake_first_waiter(std::string const& channel) {
  if (auto it = queues.find(channel); it != queues.end()) it->second.wake_head();
}

void client_core::emit(event_kind kind, event_level level, std::string_view lock,
                       std::string_view owner, error_code ec, std::string_view detail) const {
  auto const& handler = conn.cfg().on_event;
  if (handler) handler(event{kind, level, lock, owner, ec, detail});
}

void client_core::on_connected() {
  // Messages may have been missed while disconnected: every waiter tries again.
  for (auto& [channel, q] : queues) q.wake_all();
}

void client_core::drop_queue_if_empty(std::string const& channel) {
  auto it = queues.find(channel);
  if (it != queues.end() && it->second.empty()) queues.erase(it);
}

void client_core::stop() {
  stopped = true;
  conn.stop();
  subs.stop();
  wheel_timer.cancel();
  ++wheel_generation;
  // Nothing renews or releases them any more: each hold ends here, reported lost (its key
  // expires on the server at the end of its lease).
  std::vector<std::shared_ptr<hold_state>> ending;
  for (auto const& [key, hold] : holds) ending.push_back(hold);
  for (auto const& hold : ending) lose(hold);
  for (auto& [channel, q] : queues) q.wake_all();
  for (auto& [key, u] : unsettled) u->settled.cancel();
}

}  // namespace redisync::detail
