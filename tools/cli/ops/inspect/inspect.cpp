// redisync inspect: what Redis knows about one lock (reentrant, fair, or read-write), or semaphore
// (inspect_permits.cpp).

#include "cli/common/json_text.hpp"
#include "cli/ops/inspect/inspect.hpp"
#include "cli/ops/inspect/lock_state.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "primitives/rw_lock/protocol.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <iostream>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// What NAME is, when its keys cannot say: a latch's string looks like a Redisson semaphore's, and
// an election's keys are its own.
enum class read_as { found, latch, election };

void print_lock(json::object const& state);

asio::awaitable<int> inspect(asio::io_context& ctx, std::string url, std::string name, bool as_json, read_as what) {
  client c{ctx.get_executor(), config_from_url(url)};
  c.start();
  co_await connect(c);
  if (what != read_as::found) {
    if (what == read_as::latch) {
      co_await inspect_latch(c, name, as_json);
    } else {
      co_await inspect_election(c, name, as_json);
    }
    c.stop();
    co_return 0;
  }
  auto const state = co_await read_lock_state(c, name);
  std::string const type{state.at("type").as_string()};
  if (co_await inspect_semaphore(c, name, type, as_json)) {
    c.stop();
    co_return 0;
  }
  c.stop();
  if (as_json) {
    std::cout << json_text(state) << std::endl;
    co_return 0;
  }
  print_lock(state);
  co_return 0;
}

// The lock of `state` (read_lock_state) for a reader.
void print_lock(json::object const& state) {
  auto const text = [](json::value const& v) { return std::string_view{v.as_string()}; };
  auto const name = text(state.at("name"));
  auto const type = text(state.at("type"));
  auto const* rw = state.if_contains("read_write");
  auto const mode = rw ? text(rw->at("mode")) : std::string_view{};
  fmt::print("lock          {}\n", name);
  fmt::print("node          {}\n", text(state.at("node")));
  if (type == "none") {
    fmt::print("state         free\n");
  } else if (type != "hash") {
    fmt::print("state         the key holds a {}, not a lock\n", type);
  } else if (auto const* foreign = state.if_contains("not_a_lock")) {
    fmt::print("state         the key holds a hash that is not a lock: {}\n", text(*foreign));
  } else {
    fmt::print("state         held{}\n", mode.empty() ? "" : fmt::format(" (read-write lock, mode {})", mode));
    if (mode.empty()) {
      for (auto const& [owner, count] : state.at("holders").as_object()) {
        fmt::print("holder        {} (hold count {})\n", std::string_view{owner}, count.as_int64());
      }
    }
    if (rw) {
      for (auto const& r : rw->at("readers").as_array()) {
        auto const& o = r.as_object();
        std::string ttls;
        for (auto const& t : o.at("ttls_ms").as_array()) ttls += fmt::format("{}{} ms", ttls.empty() ? "" : ", ", t.as_int64());
        fmt::print("reader        {} (hold count {}; levels' ttl {})\n", text(o.at("owner")), o.at("count").as_int64(),
                   ttls);
      }
      if (auto const& writer = rw->at("writer"); writer.is_object()) {
        fmt::print("writer        {} (hold count {})\n", text(writer.at("owner")), writer.at("count").as_int64());
      }
    }
    auto const pttl = state.at("pttl_ms").as_int64();
    fmt::print("ttl           {}\n", pttl >= 0 ? fmt::format("{} ms", pttl) : std::string{"no expiry"});
  }
  fmt::print("fencing token {}\n", state.at("fencing_token").as_int64());
  std::string const name_text{name};
  if (mode.empty()) {
    fmt::print("subscribers   {} client(s) on {}\n", state.at("subscribers").as_int64(),
               detail::lock_protocol::channel_of(name_text));
  } else {
    fmt::print("subscribers   {} client(s) on {}\n", rw->at("subscribers").as_int64(),
               detail::rw_protocol::channel_of(name_text));
  }
  if (rw) {
    for (auto const& w : rw->at("waiting_writers").as_array()) {
      fmt::print("waiting writer {} (client {}, alive for another {} ms; keeps new readers out meanwhile)\n",
                 text(w.at("owner")), text(w.at("client")), w.at("alive_for_ms").as_int64());
    }
  }
  // A waiter counts as alive while its client's key lasts; 0: dead, dropped at the next look.
  auto const& queue = state.at("fair_queue").as_array();
  for (std::size_t i = 0; i < queue.size(); ++i) {
    auto const& w = queue[i].as_object();
    fmt::print("fair queue {:<3}{} (client {}, alive for another {} ms)\n", i + 1, text(w.at("owner")),
               text(w.at("client")), w.at("alive_for_ms").as_int64());
  }
}

}  // namespace

std::string_view numsub_command(client const& c) {
  return c.cfg().mode == topology::cluster ? "SHARDNUMSUB" : "NUMSUB";
}

std::int64_t subscribers_in(resp::value const& numsub) {
  return numsub.elements().size() == 2 ? numsub.elements()[1].integer() : 0;
}

int inspect_main(std::vector<std::string> const& args) {
  std::string url, name;
  po::options_description options{"inspect options"};
  options.add_options()
      ("redis", po::value(&url)->required(), "Redis URL")
      ("name", po::value(&name)->required(),
       "lock, semaphore, latch or election name (also the first positional argument)")
      ("latch", "read NAME as a count-down latch (its string is the count; otherwise a string is a Redisson semaphore)")
      ("election", "read NAME as a leader election: its leader, candidates, observers and last changes")
      ("json", "print one JSON object");
  po::positional_options_description positional;
  positional.add("name", 1);
  po::variables_map vm;
  int code = 0;
  if (!parse("inspect", "Holders with hold counts, TTL, fencing token, subscribers, the fair queue of a lock, and a read-write lock's mode, readers, writer and waiting writers; a semaphore's permits, holders with their leases and tokens, and listeners; a latch's count and listeners; an election's leader, candidates, observers and last changes.",
             options, positional, args, vm, code)) {
    return code;
  }
  in_range("the lock name's length in bytes", static_cast<std::int64_t>(name.size()), 1, 64 * 1024);
  asio::io_context ctx{1};
  if (vm.count("latch") && vm.count("election")) throw usage_error{"--latch and --election exclude each other"};
  auto const what = vm.count("latch") ? read_as::latch : vm.count("election") ? read_as::election : read_as::found;
  return run(ctx, inspect(ctx, url, name, vm.count("json") > 0, what));
}

}  // namespace redisync::cli
