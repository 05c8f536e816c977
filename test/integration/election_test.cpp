// Leader election against a real redis-server: one leader at a time with a rising term, a
// resignation handing over to the next candidate at once (in this client and across clients),
// leader() reading who leads, observers in two clients seeing the same changes in order and
// catching up from the log after missing messages and after a reconnect, and a log key of the wrong
// type refused before anything is held.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::leader_change;

namespace {

// A campaign in the background; `done` once it leads.
struct background_campaign {
  explicit background_campaign(asio::any_io_executor ex) : done{std::move(ex)} {}
  error_code error;
  held leadership;
  std::chrono::steady_clock::time_point at{};
  redisync::test::event done;
};

std::shared_ptr<background_campaign> campaign_in_background(asio::io_context& ctx, redisync::election e,
                                                            std::string value) {
  auto state = std::make_shared<background_campaign>(ctx.get_executor());
  auto run = [](std::shared_ptr<background_campaign> s, redisync::election e,
                std::string value) -> asio::awaitable<void> {
    auto [ec, h] = co_await e.campaign(std::move(value), tuple_awaitable);
    s->at = std::chrono::steady_clock::now();
    s->error = ec;
    s->leadership = std::move(h);
    s->done.notify();
  };
  asio::co_spawn(ctx, run(state, std::move(e), std::move(value)), asio::detached);
  return state;
}

// An observer's next change, awaited in the background.
struct background_next {
  explicit background_next(asio::any_io_executor ex) : done{std::move(ex)} {}
  leader_change change;
  redisync::test::event done;
};

std::shared_ptr<background_next> next_in_background(asio::io_context& ctx, redisync::election_observer& o) {
  auto state = std::make_shared<background_next>(ctx.get_executor());
  auto run = [](std::shared_ptr<background_next> s, redisync::election_observer o) -> asio::awaitable<void> {
    auto [ec, change] = co_await o.next(5s, tuple_awaitable);
    if (!ec) s->change = std::move(change);
    s->done.notify();
  };
  asio::co_spawn(ctx, run(state, o), asio::detached);
  return state;
}

// Made outside the coroutine: GCC 12 cannot keep a braced list of literals in a coroutine frame.
std::vector<std::string> changes_expected() { return {"elected a", "resigned ", "elected b", "resigned ", "elected c"}; }

// Closes both clients' connections (not the fixture's own): they reconnect.
void drop_client_connections(redis_server const& redis) { redis.command({"CLIENT", "KILL", "TYPE", "normal"}); }

std::string describe(leader_change const& c) {
  return (c.what == leader_change::kind::elected ? "elected " : "resigned ") + c.value;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(election)

BOOST_FIXTURE_TEST_CASE(the_first_candidate_leads_and_everyone_reads_its_term_and_value, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const e = c.election("el:first");
    BOOST_TEST(!(co_await e.leader(asio::use_awaitable)).has_value());  // nobody campaigned
    auto h = co_await e.campaign("node-a", asio::use_awaitable);
    BOOST_TEST(h.is_held());
    BOOST_TEST(h.token() > 0u);  // the term
    auto const now = co_await e.leader(asio::use_awaitable);
    BOOST_TEST_REQUIRE(now.has_value());
    BOOST_TEST(now->term == h.token());
    BOOST_TEST(now->value == "node-a");
    // A second campaign is a candidate of its own: it does not re-enter the leadership.
    auto const other = co_await e.try_campaign("node-b", 0ms, asio::use_awaitable);
    BOOST_TEST(!other.has_value());
    co_await e.resign(h, asio::use_awaitable);
    BOOST_TEST((h.status() == hold_status::released));
    BOOST_TEST(!(co_await e.leader(asio::use_awaitable)).has_value());  // resigned, nobody leads
    auto [ec] = co_await e.resign(h, tuple_awaitable);
    BOOST_TEST((ec == error::not_held));
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"redisync_election_log:{el:first}"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_resignation_hands_over_to_the_next_candidate_with_a_larger_term, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other_client{ctx, fast_config(redis)};
    auto const e = c.election("el:handover");
    auto a = co_await e.campaign("a", asio::use_awaitable);
    auto const same_client = campaign_in_background(ctx, e, "b");
    auto const other = campaign_in_background(ctx, other_client->election("el:handover"), "c");
    co_await redisync::test::wait_until(
        [&] { return c.metrics().waiters == 1 && other_client->metrics().waiters == 1; }, 5s);
    auto const resigned_at = std::chrono::steady_clock::now();
    co_await e.resign(a, asio::use_awaitable);
    // One of the two leads next, the other still waits.
    co_await redisync::test::wait_until([&] { return same_client->done.is_set() || other->done.is_set(); }, 5s);
    auto& next = same_client->done.is_set() ? *same_client : *other;
    auto& last = same_client->done.is_set() ? *other : *same_client;
    BOOST_TEST(!next.error);
    BOOST_TEST(next.leadership.token() > a.token());
    BOOST_TEST_MESSAGE("hand-over on resign: "
                       << std::chrono::duration_cast<std::chrono::microseconds>(next.at - resigned_at).count() << " µs");
    BOOST_TEST((next.at - resigned_at < 1s));  // a wake-up, not a poll
    BOOST_TEST(!last.done.is_set());
    auto const elected = co_await e.leader(asio::use_awaitable);
    BOOST_TEST_REQUIRE(elected.has_value());
    BOOST_TEST(elected->term == next.leadership.token());
    co_await e.resign(next.leadership, asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await last.done.wait(5s));
    BOOST_TEST(last.leadership.token() > next.leadership.token());
    co_await e.resign(last.leadership, asio::use_awaitable);
    co_await other_client.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(the_log_keeps_the_last_1000_changes_and_no_more, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const e = c.election("el:bound");
    for (int i = 0; i < 510; ++i) {  // an election and a resignation each: 1,020 changes
      auto leadership = co_await e.campaign("v", asio::use_awaitable);
      co_await e.resign(leadership, asio::use_awaitable);
    }
    BOOST_TEST(redis.command({"XLEN", "redisync_election_log:{el:bound}"}).integer() == 1000);
  });
}

BOOST_FIXTURE_TEST_CASE(observers_in_two_clients_see_every_change_in_order_also_across_a_reconnect, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other_client{ctx, fast_config(redis)};
    auto const e = c.election("el:observed");
    std::vector<redisync::election_observer> observers{e.observe(), other_client->election("el:observed").observe()};
    // Both wait for the first change while it happens; the later ones come while nobody waits,
    // one of them across a reconnect of both clients: they are read from the log.
    auto const first_here = next_in_background(ctx, observers[0]);
    auto const first_there = next_in_background(ctx, observers[1]);
    co_await redisync::test::wait_until([&] { return c.metrics().waiters == 1 && other_client->metrics().waiters == 1; }, 5s);
    auto a = co_await e.campaign("a", asio::use_awaitable);
    auto const expected = changes_expected();
    BOOST_TEST_REQUIRE(co_await first_here->done.wait(5s));
    BOOST_TEST_REQUIRE(co_await first_there->done.wait(5s));
    std::vector<std::vector<std::string>> seen(2);
    seen[0].push_back(describe(first_here->change));
    seen[1].push_back(describe(first_there->change));
    co_await e.resign(a, asio::use_awaitable);
    auto b = co_await e.campaign("b", asio::use_awaitable);
    drop_client_connections(redis);
    co_await e.resign(b, asio::use_awaitable);
    auto last = co_await e.campaign("c", asio::use_awaitable);
    for (auto& o : observers) {
      auto& mine = seen[&o - observers.data()];
      std::uint64_t term = 0;
      while (mine.size() < expected.size()) {
        auto const change = co_await o.next(5s, asio::use_awaitable);
        BOOST_TEST(change.term >= term);  // terms never go back
        term = change.term;
        mine.push_back(describe(change));
      }
      BOOST_TEST(term == last.token());
      auto [ec, none] = co_await o.next(200ms, tuple_awaitable);
      BOOST_TEST((ec == error::timeout));  // nothing more happened
      BOOST_TEST(mine == expected, "every change, in order");
    }
    co_await e.resign(last, asio::use_awaitable);
    co_await other_client.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(a_log_key_of_the_wrong_type_is_refused_before_anything_is_held, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    redis.command({"SET", "redisync_election_log:{el:wrong}", "text"});
    auto const e = c.election("el:wrong");
    auto [ec, h] = co_await e.campaign("a", tuple_awaitable);
    BOOST_TEST((ec == error::wrong_type));
    BOOST_TEST(redis.command({"EXISTS", "redisync_election:{el:wrong}"}).integer() == 0);
    auto [lec, leader] = co_await e.leader(tuple_awaitable);
    BOOST_TEST((lec == error::wrong_type));
    redis.command({"DEL", "redisync_election_log:{el:wrong}"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_leader_whose_hold_ended_is_not_read_as_leader, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const e = c.election("el:gone");
    auto h = co_await e.campaign("a", asio::use_awaitable);
    redis.command({"DEL", "redisync_election:{el:gone}"});  // as if its lease had ended
    BOOST_TEST(!(co_await e.leader(asio::use_awaitable)).has_value());
    auto next = co_await e.campaign("b", asio::use_awaitable);
    BOOST_TEST(next.token() > h.token());
    co_await e.resign(next, asio::use_awaitable);
  });
}

BOOST_AUTO_TEST_SUITE_END()
