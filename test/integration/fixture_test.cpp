// The test fixtures themselves: a private server answers on loopback, stops by PID, and can have
// a replica.

#include "process/redis_server.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>

using redisync::process::redis_options;
using redisync::process::redis_server;

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

BOOST_AUTO_TEST_SUITE_END()
