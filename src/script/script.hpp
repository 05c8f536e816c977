#pragma once

// Lua scripts embedded at build time, run by EVALSHA with a transparent EVAL fallback.

#include <redisync/connection.hpp>

#include <boost/asio/awaitable.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace redisync::detail {

struct script {
  std::string_view name;
  std::string_view sha1;
  std::string_view source;
  // A script that takes items (a line `-- items:` in its source): each call is one item, whose
  // first argument tells the script how many keys and arguments it has. The connection merges
  // adjacent calls into one (resp::request::push_item_script_call); the script answers a call
  // alone with its item's reply and merged calls with an array of them, and the connection hands
  // each caller its own.
  bool takes_items = false;
};

struct script_args {
  std::vector<std::string> keys;
  std::vector<std::string> argv;
};

// The EVALSHA (or EVAL) command for one call.
resp::request script_request(script const& s, script_args const& args, bool by_digest,
                             resp::request::options opts = {});
// The EVALSHA command, from arguments the caller keeps alive meanwhile.
resp::request script_request(script const& s, std::initializer_list<std::string_view> keys,
                             std::initializer_list<std::string_view> argv);

// Runs the script and returns its reply, or a typed error for a transport failure or a server
// error reply. A NOSCRIPT reply (after SCRIPT FLUSH or a restart) is answered by sending the body
// with EVAL, which also loads it for later EVALSHA calls. `late` receives the reply of a call
// whose caller was cancelled after it was written.
boost::asio::awaitable<std::tuple<boost::system::error_code, resp::value>> run_script(
    connection& conn, script const& s, script_args const& args, late_reply_handler late = {},
    resp::request::options opts = {});

}  // namespace redisync::detail
