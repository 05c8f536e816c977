#pragma once

// Lua scripts embedded at build time (cmake/embed_scripts.cmake), and the EVALSHA commands that
// run them.

#include "io/outgoing.hpp"
#include "routing/router.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace redisync::detail {

struct script {
  std::string_view name;
  std::string_view sha1;
  std::string_view source;
  // A script that takes items (a line `-- items:` in its source): each call is one item, whose
  // first argument tells the script how many keys and arguments it has. Adjacent calls of it to
  // one slot are merged into one command (script.cpp); the script answers a call alone with
  // its item's reply and merged calls with an array of them, and each caller gets its own.
  bool takes_items = false;
  // It publishes on a lock's channel with the command its last argument names, 'spublish' in a
  // cluster (publish.lua); without it, PUBLISH. The script runner adds it.
  bool publishes = false;
};

struct script_args {
  std::vector<std::string> keys;
  std::vector<std::string> argv;
};

// The EVALSHA (or, `by_digest` false, EVAL) command of one call of `s` to `slot`. Calls of an item
// script may be merged with their neighbours.
io::outgoing script_call(script const& s, routing::slot_type slot, std::span<std::string_view const> keys,
                         std::span<std::string_view const> argv, bool by_digest = true,
                         resp::request::options opts = {});
io::outgoing script_call(script const& s, routing::slot_type slot, script_args const& args,
                         bool by_digest = true, resp::request::options opts = {});

// Adds `arg` after the arguments of a call made by script_call (merged calls each keep theirs).
void append_argument(io::outgoing& out, std::string_view arg);

// The NOSCRIPT rule of every script call: a NOSCRIPT reply is no outcome (the script ran nowhere);
// the caller waits for the node to have the script (script_runner::when_loaded) and sends the same
// call again, by digest up to loads_per_call times in a row, then with its source (a SCRIPT FLUSH
// storm ends there).
class script_reloads {
 public:
  static constexpr int loads_per_call = 3;

  // Whether the call goes by digest (EVALSHA) this time.
  bool by_digest() const noexcept { return in_a_row_ < loads_per_call; }
  // Whether `replies` ask for a load and the call again (counted); any other answer ends the row.
  bool must_reload(io::error_code ec, io::response const& replies) noexcept;

 private:
  int in_a_row_ = 0;
};

}  // namespace redisync::detail
