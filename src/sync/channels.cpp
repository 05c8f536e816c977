#include "sync/channels.hpp"

#include <boost/asio/bind_executor.hpp>

#include <map>

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
    slot_entry = std::make_shared<entry>(io_.strand());
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
  io_.subscribe(true, e->slot, {channel}, asio::bind_executor(io_.strand(), std::move(on_done)));
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
  e->linger.async_wait(asio::bind_executor(io_.strand(), [this, anchor = anchor_(), e, channel](error_code ec) {
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
  io_.subscribe(false, e->slot, {channel}, asio::bind_executor(io_.strand(), std::move(on_done)));
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
  // One command per slot: a cluster node serves (and a sharded UNSUBSCRIBE names) one slot's.
  std::map<routing::slot_type, std::vector<std::string>> by_slot;
  for (auto const& [channel, e] : dropping) by_slot[e->slot].push_back(channel);
  struct progress {
    std::size_t left;
    error_code first_error;
  };
  auto state_of_flush = std::make_shared<progress>(progress{by_slot.size(), {}});
  auto shared_done = std::make_shared<std::function<void(error_code)>>(std::move(done));
  auto shared_dropping = std::make_shared<decltype(dropping)>(std::move(dropping));
  for (auto& [slot, names] : by_slot) {
    auto on_done = [this, anchor = anchor_(), state_of_flush, shared_done, shared_dropping](error_code ec) {
      if (ec && !state_of_flush->first_error) state_of_flush->first_error = ec;
      if (--state_of_flush->left > 0) return;
      for (auto const& [channel, e] : *shared_dropping) {
        if (e->st == state::unsubscribing) erase_if_unused(channel, e);
      }
      (*shared_done)(state_of_flush->first_error);
    };
    io_.subscribe(false, slot, std::move(names), asio::bind_executor(io_.strand(), std::move(on_done)));
  }
}

void channels::stop() {
  stopped_ = true;
  for (auto& [channel, e] : entries_) {
    e->linger.cancel();
    for (auto& f : std::exchange(e->confirmed, {})) f(error::not_connected);
  }
}

}  // namespace redisync::detail::sync
