#include "sync/channels.hpp"

#include <boost/asio/bind_executor.hpp>

namespace redisync::detail::sync {

namespace asio = boost::asio;
using io::error_code;

void channels::acquire(std::string const& channel, routing::slot_type slot,
                       std::function<void(error_code)> confirmed) {
  if (stopped_) {
    confirmed(error::not_connected);
    return;
  }
  auto& slot_entry = entries_[channel];
  if (!slot_entry) {
    slot_entry = std::make_shared<entry>(router_.io_executor());
    slot_entry->slot = slot;
    update_count();
  }
  auto e = slot_entry;
  ++e->refs;
  e->unwanted = 0;
  e->linger.cancel();
  if (e->st == state::subscribed) {
    confirmed(e->result);
    return;
  }
  e->confirmed.push_back(std::move(confirmed));
  if (e->st == state::idle || e->st == state::unsubscribing) subscribe(channel, e);
}

void channels::subscribe(std::string const& channel, std::shared_ptr<entry> const& e) {
  e->st = state::subscribing;
  auto const generation = ++e->generation;
  auto on_done = [this, anchor = anchor_(), e, generation, channel](error_code ec) {
    if (e->generation != generation) return;
    e->result = ec;
    e->st = ec ? state::idle : state::subscribed;
    for (auto& f : std::exchange(e->confirmed, {})) f(ec);
    if (e->refs > 0) return;
    if (!ec) {
      start_linger(channel, e);  // every waiter left meanwhile
    } else {
      erase_if_unused(channel, e);
    }
  };
  router_.subscribe(true, e->slot, {channel}, asio::bind_executor(router_.strand(), std::move(on_done)));
}

void channels::release(std::string const& channel) {
  auto it = entries_.find(channel);
  if (it == entries_.end()) return;
  auto e = it->second;
  if (e->refs > 0) --e->refs;
  if (e->refs > 0 || stopped_) return;
  if (e->st == state::subscribed) {
    start_linger(channel, e);
  } else if (e->st == state::idle) {
    erase_if_unused(channel, e);
  }  // a subscribe in flight lingers once it is confirmed
}

void channels::start_linger(std::string const& channel, std::shared_ptr<entry> const& e) {
  e->linger.expires_after(linger_);
  e->linger.async_wait(asio::bind_executor(router_.strand(), [this, anchor = anchor_(), e, channel](error_code ec) {
    if (ec || stopped_ || e->refs > 0 || e->st != state::subscribed) return;
    unsubscribe(channel, e);
  }));
}

void channels::drop_unwanted(std::string const& channel) {
  auto it = entries_.find(channel);
  if (it == entries_.end() || stopped_) return;
  auto e = it->second;
  if (e->refs > 0 || e->st != state::subscribed || ++e->unwanted < unwanted_messages_to_drop) return;
  e->linger.cancel();
  unsubscribe(channel, e);
}

void channels::unsubscribe(std::string const& channel, std::shared_ptr<entry> const& e) {
  e->st = state::unsubscribing;
  auto const generation = ++e->generation;
  auto on_done = [this, anchor = anchor_(), e, generation, channel](error_code) {
    if (e->generation != generation) return;
    e->st = state::idle;
    erase_if_unused(channel, e);
  };
  router_.subscribe(false, e->slot, {channel}, asio::bind_executor(router_.strand(), std::move(on_done)));
}

void channels::erase_if_unused(std::string const& channel, std::shared_ptr<entry> const& e) {
  auto it = entries_.find(channel);
  if (it != entries_.end() && it->second == e && e->refs == 0) {
    entries_.erase(it);
    update_count();
  }
}

void channels::flush(std::function<void(error_code)> done) {
  std::vector<std::pair<std::string, std::shared_ptr<entry>>> dropping;
  for (auto& [channel, e] : entries_) {
    if (e->refs == 0 && e->st == state::subscribed) {
      e->linger.cancel();
      e->st = state::unsubscribing;
      ++e->generation;
      dropping.emplace_back(channel, e);
    }
  }
  if (dropping.empty()) {
    done({});
    return;
  }
  // One UNSUBSCRIBE per slot would be needed in a cluster; every channel here is in slot 0's node.
  std::vector<std::string> names;
  for (auto const& [channel, e] : dropping) names.push_back(channel);
  auto const slot = dropping.front().second->slot;
  auto on_done = [this, anchor = anchor_(), dropping = std::move(dropping), done = std::move(done)](error_code ec) {
    for (auto const& [channel, e] : dropping) {
      if (e->st == state::unsubscribing) erase_if_unused(channel, e);
    }
    done(ec);
  };
  router_.subscribe(false, slot, std::move(names), asio::bind_executor(router_.strand(), std::move(on_done)));
}

void channels::stop() {
  stopped_ = true;
  for (auto& [channel, e] : entries_) {
    e->linger.cancel();
    for (auto& f : std::exchange(e->confirmed, {})) f(error::not_connected);
  }
}

}  // namespace redisync::detail::sync
