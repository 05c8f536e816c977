#include "routing/sentinel.hpp"

#include "address.hpp"
#include "io/exchange.hpp"
#include "routing/sentinel_answer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <mutex>

namespace redisync::detail::routing {

namespace asio = boost::asio;
using io::error_code;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto tuple_token = asio::as_tuple(asio::deferred);
// A Sentinel that does not answer within this is passed over for the next.
constexpr std::chrono::milliseconds longest_sentinel_wait{1000};

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer timer{co_await asio::this_coro::executor, d};
  co_await timer.async_wait(tuple_token);
}

}  // namespace

struct sentinel::resolver {
  explicit resolver(config c) : cfg{std::move(c)}, sentinels{cfg.seed_nodes()} {}

  // The master's address, or an error and the reason in the string.
  asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>> resolve();
  asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>> ask(node_address at);
  asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>> exchange(io::stream& s, config const& sc,
                                                                            node_address const& at);
  void learn(node_address const& answered, std::vector<node_address> const& others);

  config const cfg;
  mutable std::mutex mutex;
  std::vector<node_address> sentinels;  // in the order they are asked
  std::string failure;                  // why the last resolve failed; empty after a success
  io::connection::handle data;  // the master's connection: set once, before it runs
  std::string master;  // the address of the master last connected to (on the strand)
};

asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>> sentinel::resolver::resolve() {
  std::vector<node_address> order;
  {
    std::lock_guard const lock{mutex};
    order = sentinels;
  }
  std::string reasons;
  for (auto const& at : order) {
    auto [ec, host, port] = co_await ask(at);
    if (!ec) {
      std::lock_guard const lock{mutex};
      failure.clear();
      co_return std::tuple{ec, std::move(host), port};
    }
    reasons += (reasons.empty() ? "" : "; ") + host;
  }
  auto text = fmt::format("no Sentinel named the master '{}': {}", cfg.sentinel_master_name, reasons);
  {
    std::lock_guard const lock{mutex};
    failure = text;
  }
  co_return std::tuple{error_code{error::not_connected}, std::move(text), std::uint16_t{0}};
}

asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>> sentinel::resolver::ask(node_address at) {
  config const sc = cfg.for_sentinel(at);
  io::stream s{co_await asio::this_coro::executor, sc};
  auto const wait = std::min(cfg.connect_timeout, longest_sentinel_wait);
  auto outcome = co_await (exchange(s, sc, at) || sleep_for(wait));
  s.close();
  if (outcome.index() == 1) {
    co_return std::tuple{error_code{asio::error::timed_out},
                         fmt::format("Sentinel {}: no answer within {} ms", address_text(at), wait.count()),
                         std::uint16_t{0}};
  }
  co_return std::move(std::get<0>(outcome));
}

// The Sentinels' own AUTH, the master's address and the other Sentinels, in one write.
asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>> sentinel::resolver::exchange(
    io::stream& s, config const& sc, node_address const& at) {
  auto fail = [&](std::string_view why) {
    return std::tuple{error_code{error::not_connected}, fmt::format("Sentinel {}: {}", address_text(at), why),
                      std::uint16_t{0}};
  };
  if (auto ec = co_await s.connect(sc)) co_return fail(fmt::format("{}: {}", s.step(), ec.message()));
  auto question = ask_sentinel(sc, cfg.sentinel_master_name);
  auto const replies = question.replies;
  auto result = co_await io::exchange(s, std::move(question.request).take_payload(), replies);
  if (!result.failure.empty()) co_return fail(result.not_resp ? result.failure + " (is it a Sentinel?)" : result.failure);
  auto answer = read_sentinel_answer(question, result.replies, cfg.sentinel_master_name);
  if (!answer.master) co_return fail(answer.failure);
  learn(at, answer.others);
  co_return std::tuple{error_code{}, std::move(answer.master->host), answer.master->port};
}

void sentinel::resolver::learn(node_address const& answered, std::vector<node_address> const& others) {
  std::lock_guard const lock{mutex};
  std::erase(sentinels, answered);
  sentinels.insert(sentinels.begin(), answered);
  for (auto const& o : others) {
    if (std::find(sentinels.begin(), sentinels.end(), o) == sentinels.end()) sentinels.push_back(o);
  }
}

// The events of the connection that listens for +switch-master: a hint to ask the Sentinels again.
io::connection_events sentinel::switch_master_watch(std::shared_ptr<resolver> const& r) {
  io::connection_events events;
  events.push = [r](resp::value const& v) {
    if (!announces_new_master(v, r->cfg.sentinel_master_name)) return;
    r->data.reconnect("a Sentinel announced a new master (+switch-master)");
  };
  return events;
}

// The events of the data connection: each handshake with a master at another address than the
// last one's is a change of master.
router_events sentinel::follow_master(router_events events, std::shared_ptr<resolver> const& r) {
  events.connected = [r, connected = std::move(events.connected), changed = events.master_changed](node_id n) {
    auto at = r->data.address();
    if (!r->master.empty() && at != r->master && changed) changed();
    r->master = std::move(at);
    if (connected) connected(n);
  };
  return events;
}

sentinel::sentinel(io::connection::executor_type ex, config cfg, router_events events)
    : sentinel{ex, cfg, std::move(events), std::make_shared<resolver>(cfg)} {}

sentinel::sentinel(io::connection::executor_type ex, config cfg, router_events events, std::shared_ptr<resolver> r)
    : standalone{ex, cfg, follow_master(std::move(events), r),
                 io::node_options{.must_be_master = true, .resolve = [r] { return r->resolve(); }},
                 // A READONLY reply: the master was demoted. The command did not run; it waits for
                 // the next session, with the master asked for again.
                 [r](io::entry_ptr const& e) {
                   if (error_from_server_text(e->replies.front().text()) != error::read_only) return false;
                   r->data.reconnect("the master answered READONLY: it was demoted");
                   auto taken = e;
                   return r->data.adopt(taken, false);
                 }},
      resolver_{std::move(r)},
      watch_{ex, cfg.for_sentinel(cfg.seed_nodes().front()), switch_master_watch(resolver_)} {
  resolver_->data = conn_.weak();
}

void sentinel::run(asio::any_completion_handler<void(error_code)> handler) {
  watch_.run(asio::detached);
  watch_.subscribe({"+switch-master"}, asio::detached);
  standalone::run(std::move(handler));
}

void sentinel::stop() {
  watch_.stop();
  standalone::stop();
}

std::string sentinel::last_failure() const {
  if (auto own = standalone::last_failure(); !own.empty()) return own;
  std::lock_guard const lock{resolver_->mutex};
  return resolver_->failure;
}

}  // namespace redisync::detail::routing
