#include "lock/subscriptions.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>

namespace redisync::detail {

namespace asio = boost::asio;
using boost::system::error_code;

subscriptions::subscriptions(connection& conn, std::chrono::milliseconds linger)
    : conn_{conn}, linger_{linger} {}

asio::awaitable<error_code> subscriptions::acquire(std::string const& channel) {
  if (stopped_) co_return error::not_connected;
  auto& slot = entries_[channel];
  if (!slot) {
    slot = std::make_shared<entry>(conn_.io_executor());
    update_count();
  }
  auto e = slot;
  ++e->refs;
  e->linger.cancel();
  if (e->st == state::idle || e->st == state::unsubscribing) subscribe(channel, e);
  while (e->st == state::subscribing && !stopped_) {
    e->confirmed.expires_at(asio::steady_timer::time_point::max());
    co_await e->confirmed.async_wait(asio::as_tuple(asio::deferred));
  }
  if (stopped_) co_return error::not_connected;
  co_return e->result;
}

void subscriptions::subscribe(std::string const& channel, std::shared_ptr<entry> const& e) {
  e->st = state::subscribing;
  auto const generation = ++e->generation;
  conn_.subscribe(std::vector<std::string>{channel}, [this, e, generation, channel](error_code ec) {
    if (e->generation != generation) return;
    e->result = ec;
    e->st = ec ? state::idle : state::subscribed;
    e->confirmed.cancel();
    if (e->refs > 0) return;
    if (!ec) {
      start_linger(channel, e);  // every waiter left meanwhile
    } else if (auto it = entries_.find(channel); it != entries_.end() && it->second == e) {
      entries_.erase(it);
      update_count();
    }
  });
}

void subscriptions::release(std::string const& channel) {
  auto it = entries_.find(channel);
  if (it == entries_.end()) return;
  auto e = it->second;
  if (e->refs > 0) --e->refs;
  if (e->refs > 0 || stopped_) return;
  if (e->st != state::subscribed) {
    if (e->st == state::idle) {
      entries_.erase(it);
      update_count();
    }
    return;  // a subscribe in flight lingers once it is confirmed
  }
  start_linger(channel, e);
}

void subscriptions::start_linger(std::string const& channel, std::shared_ptr<entry> const& e) {
  e->linger.expires_after(linger_);
  e->linger.async_wait(asio::bind_executor(conn_.get_executor(), [this, e, channel](error_code ec) {
    if (ec || stopped_ || e->refs > 0 || e->st != state::subscribed) return;
    unsubscribe(channel, e);
  }));
}

void subscriptions::drop_unwanted(std::string const& channel) {
  auto it = entries_.find(channel);
  if (it == entries_.end() || stopped_) return;
  auto e = it->second;
  if (e->refs > 0 || e->st != state::subscribed) return;
  e->linger.cancel();
  unsubscribe(channel, e);
}

void subscriptions::unsubscribe(std::string const& channel, std::shared_ptr<entry> const& e) {
  e->st = state::unsubscribing;
  auto const generation = ++e->generation;
  conn_.unsubscribe(std::vector<std::string>{channel}, [this, e, generation, channel](error_code) {
    if (e->generation != generation) return;
    e->st = state::idle;
    auto it = entries_.find(channel);
    if (it != entries_.end() && it->second == e && e->refs == 0) {
      entries_.erase(it);
      update_count();
    }
  });
}

asio::awaitable<error_code> subscriptions::flush() {
  std::vector<std::string> channels;
  for (auto& [channel, e] : entries_) {
    if (e->refs == 0 && e->st == state::subscribed) {
      e->linger.cancel();
      e->st = state::unsubscribing;
      ++e->generation;
      channels.push_back(channel);
    }
  }
  if (channels.empty()) co_return error_code{};
  auto [ec] = co_await conn_.unsubscribe(channels, asio::as_tuple(asio::deferred));
  for (auto const& channel : channels) {
    auto it = entries_.find(channel);
    if (it != entries_.end() && it->second->st == state::unsubscribing && it->second->refs == 0) {
      entries_.erase(it);
      update_count();
    }
  }
  co_return ec;
}

void subscriptions::stop() {
  stopped_ = true;
  for (auto& [channel, e] : entries_) {
    e->linger.cancel();
    e->confirmed.cancel();
  }
}

}  // namespace redisync::detail
