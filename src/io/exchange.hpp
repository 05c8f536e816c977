#pragma once

// One request and its replies over a stream of its own, without a connection's multiplexer: what
// a short-lived session needs (the Sentinel resolver asks a Sentinel and closes the stream).

#include "io/stream.hpp"

#include <redisync/resp/value.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

namespace redisync::detail::io {

struct exchange_result {
  std::vector<resp::value> replies;  // `count` of them, unless it failed
  std::string failure;               // the step that failed and why ("write: ...", "read: ...")
  bool not_resp = false;             // what came back was not RESP
};

// Writes `payload` to the connected `s` and reads `count` replies.
boost::asio::awaitable<exchange_result> exchange(stream& s, std::string payload, std::size_t count);

}  // namespace redisync::detail::io
