// The test fixtures themselves: a private server answers on loopback, stops by PID, and can have
// a replica.

#include "testbed/redis_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

using redisync::process::redis_options;
using redisync::process::redis_server;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// A socket bound to `port` of 127.0.0.1 without listening, as a client's connection may hold a port
// of the ephemeral range that the server had.
tcp::socket squat(asio::io_context& ctx, std::uint16_t port) {
  tcp::socket socket{ctx, tcp::v4()};
  socket.bind(tcp::endpoint{asio::ip::make_address("127.0.0.1"), port});
  return socket;
}

// Restarts `redis` (start_timeout 1 s) on a port that something else holds.
void restart_fails_in_time_naming_the_port(redis_server& redis) {
  auto const started = std::chrono::steady_clock::now();
  std::string message;
  try {
    redis.start();
  } catch (std::exception const& e) {
    message = e.what();
  }
  auto const took = std::chrono::steady_clock::now() - started;
  BOOST_TEST(message.find(std::to_string(redis.port())) != std::string::npos, message);
  BOOST_TEST(!redis.running());
  BOOST_TEST((took < 5s));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fixtures)

BOOST_AUTO_TEST_CASE(a_private_server_answers_and_stops_by_pid) {
  pid_t pid = 0;
  {
    redis_server redis;
    pid = redis.pid();
    BOOST_TEST(redis.command({"PING"}).text() == "PONG");
    BOOST_TEST(redis.command({"CONFIG", "GET", "save"}).elements()[1].text() == "");
    BOOST_TEST(redis.command({"CONFIG", "GET", "appendonly"}).elements()[1].text() == "no");
  }
  BOOST_TEST(::kill(pid, 0) == -1);  // reaped: no such process
}

BOOST_AUTO_TEST_CASE(a_replica_follows_its_master) {
  redis_server master;
  redis_options options;
  options.replica_of = master.port();
  redis_server replica{options};
  // WAIT counts the acknowledgements of this connection's writes: it returns once the replica,
  // first sync included, has applied the SET.
  BOOST_TEST(master.commands({{"SET", "replicated", "yes"}, {"WAIT", "1", "5000"}}).integer() == 1);
  BOOST_TEST(replica.command({"GET", "replicated"}).text() == "yes");
  BOOST_TEST(replica.command({"SET", "x", "1"}).text().starts_with("READONLY"));
}

// Clients keep the address they were given, so a restart must come back on the same port: while
// something else holds it for a moment, the restart waits for it rather than moving elsewhere.
BOOST_AUTO_TEST_CASE(a_restart_waits_for_its_port_rather_than_moving) {
  redis_server redis;
  auto const url = redis.url();
  redis.stop();
  asio::io_context ctx;
  auto squatter = squat(ctx, redis.port());
  // The scenario itself: the port is taken for 300 ms.
  std::thread freer{[&] {
    std::this_thread::sleep_for(300ms);
    squatter.close();
  }};
  redis.start();
  freer.join();
  BOOST_TEST(redis.url() == url);
  BOOST_TEST(redis.command({"PING"}).text() == "PONG");
}

// A port that stays taken ends the restart within its start-up bound, with an error that names it.
BOOST_AUTO_TEST_CASE(a_restart_whose_port_stays_taken_fails_in_time_and_names_the_port) {
  redis_options options;
  options.start_timeout = 1s;
  redis_server redis{options};
  redis.stop();
  asio::io_context ctx;
  auto const squatter = squat(ctx, redis.port());
  restart_fails_in_time_naming_the_port(redis);
}

// So does a listener that takes connections and never answers (another program that got the
// port): the start-up's PING does not wait for it without end.
BOOST_AUTO_TEST_CASE(a_restart_whose_port_a_silent_listener_holds_fails_in_time) {
  redis_options options;
  options.start_timeout = 1s;
  redis_server redis{options};
  redis.stop();
  asio::io_context ctx;
  tcp::acceptor const silent{ctx, tcp::endpoint{asio::ip::make_address("127.0.0.1"), redis.port()}};
  restart_fails_in_time_naming_the_port(redis);
}

BOOST_AUTO_TEST_SUITE_END()
