// The connection's multiplexer without a socket: requests in, bytes out; bytes in, replies out.

#include "io/multiplexer.hpp"
#include "script/script.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace io = redisync::detail::io;
using boost::system::error_code;
using redisync::error;
using redisync::resp::request;
using namespace std::chrono_literals;

namespace {

struct outcome {
  std::optional<error_code> ec;
  io::response replies;
};

// A multiplexer whose completions run on a private io_context, and the requests made through it.
class mux_fixture {
 public:
  mux_fixture()
      : mux{200ms, 1s,
            {.push = [this](redisync::resp::value const& v) { pushes.push_back(v); },
             .finish_later = [this](io::entry_ptr e, error_code ec) { e->handler.complete(ec, {}); },
             .redirect = [this](io::entry_ptr const& e) { return redirect && redirect(e); }}} {}

  // Submits `req`; its outcome lands in the returned slot once delivered().
  outcome& submit(io::outgoing out, bool priority = false, io::late_reply_handler late = {}) {
    auto& slot = outcomes.emplace_back();
    auto e = std::make_shared<io::exec_entry>();
    e->out = std::move(out);
    e->late = std::move(late);
    e->handler = {asio::any_completion_handler<void(error_code, io::response)>{[&slot](error_code ec, io::response r) {
                    slot.ec = ec;
                    slot.replies = std::move(r);
                  }},
                  home};
    entries.push_back(e);
    mux.submit(std::move(e), priority, now);
    return slot;
  }
  outcome& submit(request req, bool priority = false) { return submit(io::outgoing::from(std::move(req)), priority); }

  std::string written() {
    std::string out;
    mux.take_for_write(out);
    return out;
  }
  // Like the driver's read buffer: what the multiplexer did not use yet stays for the next bytes.
  error_code feed(std::string_view bytes) {
    error_code ec;
    unread += bytes;
    unread.erase(0, mux.on_bytes(unread, now, ec));
    return ec;
  }
  void delivered() {
    ctx.restart();  // an io_context that ran out of work stays stopped
    ctx.poll();
  }

  asio::io_context ctx;
  redisync::detail::completion_homes home{ctx.get_executor(), ctx.get_executor(), {}};
  io::clock_type::time_point now{std::chrono::seconds{100}};
  std::deque<outcome> outcomes;
  std::vector<io::entry_ptr> entries;
  std::vector<redisync::resp::value> pushes;
  std::string unread;
  std::function<bool(io::entry_ptr const&)> redirect;  // the router's hook; empty: none
  io::multiplexer mux;
};

request command(auto const&... args) {
  request req;
  req.push(args...);
  return req;
}

std::string const digest(40, 'd');
redisync::detail::script const items{"items", digest, "return 1", true};

io::outgoing item(std::string_view key) {
  std::array<std::string_view, 1> const keys{key};
  std::array<std::string_view, 1> const args{"x"};
  return redisync::detail::script_call(items, 0, keys, args);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multiplexer)

BOOST_AUTO_TEST_CASE(queued_requests_are_written_together_and_replies_matched_in_order) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& a = f.submit(command("GET", "a"));
  auto& b = f.submit(command("GET", "b"));
  BOOST_TEST(f.written() == std::string{command("GET", "a").payload()} + std::string{command("GET", "b").payload()});
  BOOST_TEST(!f.mux.has_writable());
  BOOST_TEST(!f.feed("$1\r\n1\r\n$1"));  // the second reply split mid-way
  BOOST_TEST(!f.feed("\r\n2\r\n"));
  f.delivered();
  BOOST_TEST_REQUIRE(a.ec.has_value());
  BOOST_TEST(a.replies.at(0).text() == "1");
  BOOST_TEST(b.replies.at(0).text() == "2");
}

BOOST_AUTO_TEST_CASE(ordinary_requests_wait_for_the_handshake_and_priority_ones_do_not) {
  mux_fixture f;
  f.submit(command("GET", "a"));
  f.submit(command("HELLO", "3"), true);
  BOOST_TEST(f.written() == command("HELLO", "3").payload());
  f.mux.set_ready(true);
  BOOST_TEST(f.written() == command("GET", "a").payload());
}

BOOST_AUTO_TEST_CASE(confirmations_complete_subscriptions_and_other_pushes_go_on) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& sub = f.submit(command("SUBSCRIBE", "x", "y"));
  f.written();
  BOOST_TEST(!f.feed(">3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n>3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$1\r\n0\r\n"));
  f.delivered();
  BOOST_TEST(!sub.ec.has_value());  // one confirmation still due
  BOOST_TEST(f.pushes.size() == 1u);
  BOOST_TEST(!f.feed(">3\r\n$9\r\nsubscribe\r\n$1\r\ny\r\n:2\r\n"));
  f.delivered();
  BOOST_TEST_REQUIRE(sub.ec.has_value());
  BOOST_TEST(sub.replies.size() == 2u);
}

BOOST_AUTO_TEST_CASE(adjacent_calls_of_an_item_script_go_out_as_one_command_and_each_gets_its_element) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& a = f.submit(item("k1"));
  auto& b = f.submit(item("k2"));
  auto& c = f.submit(item("k3"));
  request merged;
  merged.push("EVALSHA", digest, 3, "k1", "k2", "k3", "x", "x", "x");
  BOOST_TEST(f.written() == merged.payload());
  BOOST_TEST(!f.feed("*3\r\n:1\r\n:2\r\n:3\r\n"));
  f.delivered();
  BOOST_TEST(a.replies.at(0).integer() == 1);
  BOOST_TEST(b.replies.at(0).integer() == 2);
  BOOST_TEST(c.replies.at(0).integer() == 3);
}

BOOST_AUTO_TEST_CASE(a_reply_that_fails_a_merged_command_goes_to_every_call_and_a_lone_call_gets_it_whole) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& a = f.submit(item("k1"));
  auto& b = f.submit(item("k2"));
  f.written();
  BOOST_TEST(!f.feed("-NOSCRIPT No matching script\r\n"));
  auto& alone = f.submit(item("k3"));
  f.written();
  BOOST_TEST(!f.feed("*2\r\n:1\r\n:2\r\n"));  // a call alone: its item's reply is the whole reply
  f.delivered();
  BOOST_TEST(a.replies.at(0).is_error());
  BOOST_TEST(b.replies.at(0).text() == a.replies.at(0).text());
  BOOST_TEST(alone.replies.at(0).elements().size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_lost_connection_makes_written_requests_ambiguous_and_fails_those_that_must_not_wait) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& written = f.submit(item("k1"));
  auto& merged = f.submit(item("k2"));
  f.written();
  auto& waiting = f.submit(command("GET", "w"));
  request fail_fast_req{{.wait_for_connection = false}};
  fail_fast_req.push("GET", "f");
  auto& fail_fast = f.submit(std::move(fail_fast_req));
  f.mux.on_disconnect(f.now);
  f.delivered();
  BOOST_TEST((written.ec == error::ambiguous));
  BOOST_TEST((merged.ec == error::ambiguous));
  BOOST_TEST((fail_fast.ec == error::not_connected));
  BOOST_TEST(!waiting.ec.has_value());
  f.mux.set_ready(true);
  BOOST_TEST(f.written() == command("GET", "w").payload());
}

BOOST_AUTO_TEST_CASE(cancelling_an_unwritten_request_removes_it_and_tells_its_late_handler) {
  mux_fixture f;
  std::optional<error_code> late;
  auto& r = f.submit(io::outgoing::from(command("GET", "a")), false, [&](error_code ec, io::response) { late = ec; });
  f.mux.cancel(f.entries.back(), asio::cancellation_type::terminal);
  f.delivered();
  BOOST_TEST((r.ec == asio::error::operation_aborted));
  BOOST_TEST((late == asio::error::operation_aborted));
  f.mux.set_ready(true);
  BOOST_TEST(f.written().empty());
}

BOOST_AUTO_TEST_CASE(cancelling_a_written_request_completes_it_now_and_hands_the_reply_to_the_late_handler) {
  mux_fixture f;
  f.mux.set_ready(true);
  io::response late;
  auto& r = f.submit(io::outgoing::from(command("GET", "a")), false, [&](error_code, io::response x) { late = std::move(x); });
  f.written();
  f.mux.cancel(f.entries.back(), asio::cancellation_type::total);  // ignored: the command may run
  f.delivered();
  BOOST_TEST(!r.ec.has_value());
  f.mux.cancel(f.entries.back(), asio::cancellation_type::terminal);
  f.delivered();
  BOOST_TEST((r.ec == asio::error::operation_aborted));
  BOOST_TEST(!f.feed("$4\r\nlate\r\n"));
  BOOST_TEST(late.at(0).text() == "late");
}

BOOST_AUTO_TEST_CASE(loading_and_busy_replies_are_sent_again_after_a_pause_until_the_budget_ends) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& r = f.submit(command("GET", "a"));
  f.written();
  BOOST_TEST(!f.feed("-LOADING Redis is loading\r\n"));
  f.delivered();
  BOOST_TEST(!r.ec.has_value());
  BOOST_TEST_REQUIRE(f.mux.next_timer().has_value());
  BOOST_TEST((*f.mux.next_timer() == f.now + 10ms));
  f.mux.on_timer(f.now + 5ms);
  BOOST_TEST(f.written().empty());  // not yet
  f.now += 10ms;
  f.mux.on_timer(f.now);
  BOOST_TEST(f.written() == command("GET", "a").payload());
  BOOST_TEST(!f.feed("-BUSY Redis is busy\r\n"));
  BOOST_TEST((*f.mux.next_timer() == f.now + 20ms));  // doubled
  f.now += 300ms;  // past the 200 ms budget
  f.mux.on_timer(f.now);
  f.written();
  BOOST_TEST(!f.feed("-BUSY Redis is busy\r\n"));
  f.delivered();
  BOOST_TEST_REQUIRE(r.ec.has_value());
  BOOST_TEST(r.replies.at(0).is_error());
}

BOOST_AUTO_TEST_CASE(tryagain_and_clusterdown_replies_are_sent_again_like_loading) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& r = f.submit(command("GET", "a"));
  f.written();
  BOOST_TEST(!f.feed("-TRYAGAIN Multiple keys request during rehashing of slot\r\n"));
  f.now += 10ms;
  f.mux.on_timer(f.now);
  BOOST_TEST(f.written() == command("GET", "a").payload());
  BOOST_TEST(!f.feed("-CLUSTERDOWN The cluster is down\r\n"));
  f.now += 20ms;
  f.mux.on_timer(f.now);
  BOOST_TEST(f.written() == command("GET", "a").payload());
  BOOST_TEST(!f.feed("$1\r\nv\r\n"));
  f.delivered();
  BOOST_TEST_REQUIRE(r.ec.has_value());
  BOOST_TEST(!*r.ec);
  BOOST_TEST(r.replies.at(0).text() == "v");
}

// A node that stops serving the slot (a cluster master replaced) hands over what it has not
// written, including a request paused after a transient reply: stopping the node must not fail it.
BOOST_AUTO_TEST_CASE(a_request_waiting_to_retry_a_transient_reply_is_handed_over_with_the_queued_ones) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& paused = f.submit(command("GET", "a"));
  f.written();
  BOOST_TEST(!f.feed("-CLUSTERDOWN The cluster is down\r\n"));
  auto& queued = f.submit(command("GET", "b"));
  auto const taken = f.mux.take_queued();
  BOOST_TEST(taken.size() == 2u);
  f.mux.stop(asio::error::operation_aborted);
  f.delivered();
  BOOST_TEST(!paused.ec.has_value());
  BOOST_TEST(!queued.ec.has_value());
  BOOST_TEST(!f.mux.next_timer().has_value());
}

BOOST_AUTO_TEST_CASE(a_moved_reply_goes_to_the_redirect_hook_which_may_take_the_request_over) {
  mux_fixture f;
  f.mux.set_ready(true);
  io::entry_ptr taken;
  f.redirect = [&](io::entry_ptr const& e) {
    taken = e;
    return true;
  };
  auto& r = f.submit(command("GET", "a"));
  f.written();
  BOOST_TEST(!f.feed("-MOVED 15495 127.0.0.1:7002\r\n"));
  f.delivered();
  BOOST_TEST(!r.ec.has_value());  // not completed: the router has it
  BOOST_TEST_REQUIRE(taken != nullptr);
  BOOST_TEST(taken->redirects == 1u);
  BOOST_TEST(taken->replies.at(0).text() == "MOVED 15495 127.0.0.1:7002");
  // A hook that declines (or a request redirected too often) completes with the reply.
  f.redirect = [](io::entry_ptr const&) { return false; };
  auto& declined = f.submit(command("GET", "b"));
  f.written();
  BOOST_TEST(!f.feed("-ASK 3999 127.0.0.1:7001\r\n"));
  f.delivered();
  BOOST_TEST_REQUIRE(declined.ec.has_value());
  BOOST_TEST(declined.replies.at(0).text() == "ASK 3999 127.0.0.1:7001");
}

BOOST_AUTO_TEST_CASE(an_asking_request_is_written_after_asking_alone_and_the_asking_reply_is_dropped) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& first = f.submit(command("GET", "a"));
  f.entries.back()->asking = true;
  auto& second = f.submit(command("GET", "b"));
  BOOST_TEST(f.written() == std::string{"*1\r\n$6\r\nASKING\r\n"} + std::string{command("GET", "a").payload()} + std::string{command("GET", "b").payload()});
  BOOST_TEST(!f.feed("+OK\r\n$1\r\n1\r\n$1\r\n2\r\n"));
  f.delivered();
  BOOST_TEST_REQUIRE(first.ec.has_value());
  BOOST_TEST(first.replies.size() == 1u);
  BOOST_TEST(first.replies.at(0).text() == "1");
  BOOST_TEST_REQUIRE(second.ec.has_value());
  BOOST_TEST(second.replies.at(0).text() == "2");
}

BOOST_AUTO_TEST_CASE(a_request_waits_for_a_connection_no_longer_than_the_connection_wait) {
  mux_fixture f;
  auto& before = f.submit(command("GET", "a"));  // never connected yet
  f.now += 400ms;
  auto& later = f.submit(command("GET", "b"));
  BOOST_TEST_REQUIRE(f.mux.next_timer().has_value());
  BOOST_TEST((*f.mux.next_timer() == f.now - 400ms + 1s));
  f.now += 600ms;
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST((before.ec == error::not_connected));
  BOOST_TEST(!later.ec.has_value());
  f.now += 400ms;
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST((later.ec == error::not_connected));
}

BOOST_AUTO_TEST_CASE(a_request_may_wait_for_a_connection_less_than_the_connection_wait) {
  mux_fixture f;
  request brief{{.connection_wait = 100ms}};
  brief.push("GET", "a");
  auto& r = f.submit(std::move(brief));
  auto& other = f.submit(command("GET", "b"));
  BOOST_TEST((*f.mux.next_timer() == f.now + 100ms));
  f.now += 100ms;
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST((r.ec == error::not_connected));
  BOOST_TEST(!other.ec.has_value());
  BOOST_TEST((*f.mux.next_timer() == f.now - 100ms + 1s));
}

// try_acquire(0ms) right after start() failed with not_connected while the first connection was
// still being made: a caller's own wait counts only once a connect attempt has failed.
BOOST_AUTO_TEST_CASE(a_wait_for_when_down_applies_only_once_a_connect_attempt_failed) {
  mux_fixture f;
  request at_once{{.connection_wait_when_down = 0ms}};
  at_once.push("GET", "a");
  auto& first = f.submit(std::move(at_once));
  f.now += 300ms;
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST(!first.ec.has_value());  // still connecting: it waits as any request does
  request brief{{.connection_wait_when_down = 200ms}};
  brief.push("GET", "b");
  auto& second = f.submit(std::move(brief));
  auto& plain = f.submit(command("GET", "c"));
  f.mux.on_connect_failed(f.now);
  f.delivered();
  BOOST_TEST((first.ec == error::not_connected));
  BOOST_TEST(!second.ec.has_value());
  BOOST_TEST((*f.mux.next_timer() == f.now + 200ms));
  f.now += 200ms;
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST((second.ec == error::not_connected));
  BOOST_TEST(!plain.ec.has_value());
  // A handshake ends the known outage: the next wait counts from the limit again.
  f.mux.set_ready(true);
  f.mux.on_disconnect(f.now);
  request again{{.connection_wait_when_down = 0ms}};
  again.push("GET", "d");
  auto& third = f.submit(std::move(again));
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST(!third.ec.has_value());
}

BOOST_AUTO_TEST_CASE(the_wait_for_a_connection_starts_when_the_connection_is_lost_and_ends_with_it) {
  mux_fixture f;
  f.mux.set_ready(true);
  auto& queued = f.submit(command("GET", "a"));  // not written yet when the connection drops
  f.now += 5s;
  f.mux.on_disconnect(f.now);
  BOOST_TEST((*f.mux.next_timer() == f.now + 1s));
  f.now += 500ms;
  f.mux.on_timer(f.now);
  f.delivered();
  BOOST_TEST(!queued.ec.has_value());
  f.mux.set_ready(true);
  BOOST_TEST(f.written() == command("GET", "a").payload());
  BOOST_TEST(!f.mux.next_timer().has_value());  // connected: nothing waits for a connection
}

BOOST_AUTO_TEST_CASE(a_reply_nobody_asked_for_and_bytes_that_are_not_resp_are_protocol_errors) {
  mux_fixture f;
  f.mux.set_ready(true);
  BOOST_TEST((f.feed("+OK\r\n") == error::protocol_error));
  mux_fixture g;
  g.mux.set_ready(true);
  g.submit(command("PING"));
  g.written();
  BOOST_TEST((g.feed("?what\r\n") == error::protocol_error));
}

BOOST_AUTO_TEST_CASE(after_a_stop_queued_requests_fail_with_the_reason_and_later_ones_with_not_connected) {
  mux_fixture f;
  // Their late handlers hear it too: whoever waits for a late outcome (an acquire keeps its key
  // unsettled until then) learns that the request never ran.
  std::optional<error_code> late;
  auto& queued = f.submit(io::outgoing::from(command("GET", "a")), false, [&](error_code ec, io::response) { late = ec; });
  f.mux.stop(asio::error::operation_aborted);
  BOOST_TEST((late == asio::error::operation_aborted));
  auto& later = f.submit(command("GET", "b"));
  f.delivered();
  BOOST_TEST((queued.ec == asio::error::operation_aborted));
  BOOST_TEST((later.ec == error::not_connected));
  mux_fixture g;
  g.mux.stop(error::auth_failed);  // a fatal handshake error is what later callers learn
  auto& after_fatal = g.submit(command("GET", "c"));
  g.delivered();
  BOOST_TEST((after_fatal.ec == error::auth_failed));
}

BOOST_AUTO_TEST_SUITE_END()
