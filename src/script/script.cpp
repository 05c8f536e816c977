#include "script/script.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

#include <algorithm>
#include <array>
#include <span>

namespace redisync::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

template <class T>
resp::request make_script_request(script const& s, std::span<T const> keys, std::span<T const> argv,
                                  bool by_digest, resp::request::options opts) {
  // The arguments as one list of views: on the stack for a lock call, on the heap for a batch.
  std::array<std::string_view, 8> small;
  std::vector<std::string_view> large;
  std::size_t const n = keys.size() + argv.size();
  if (n > small.size()) large.resize(n);
  std::span<std::string_view> const tail = n > small.size()
                                               ? std::span<std::string_view>{large}
                                               : std::span<std::string_view>{small.data(), n};
  std::copy(argv.begin(), argv.end(), std::copy(keys.begin(), keys.end(), tail.begin()));
  resp::request req{opts};
  if (s.takes_items) {
    req.push_item_script_call(by_digest, by_digest ? s.sha1 : s.source, tail.first(keys.size()),
                              tail.subspan(keys.size()));
    return req;
  }
  if (by_digest) {
    req.push_range("EVALSHA", tail, s.sha1, keys.size());
  } else {
    req.push_range("EVAL", tail, s.source, keys.size());
  }
  return req;
}

}  // namespace

resp::request script_request(script const& s, script_args const& args, bool by_digest,
                             resp::request::options opts) {
  return make_script_request<std::string>(s, args.keys, args.argv, by_digest, opts);
}

resp::request script_request(script const& s, std::initializer_list<std::string_view> keys,
                             std::initializer_list<std::string_view> argv) {
  return make_script_request<std::string_view>(s, {keys.begin(), keys.size()},
                                                {argv.begin(), argv.size()}, true, {});
}

asio::awaitable<std::tuple<error_code, resp::value>> run_script(connection& conn, script const& s,
                                                                script_args const& args,
                                                                late_reply_handler late,
                                                                resp::request::options opts) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool const by_digest = attempt == 0;
    auto [ec, replies] = co_await conn.exec(script_request(s, args, by_digest, opts), late,
                                            asio::as_tuple(asio::deferred));
    if (ec) co_return std::tuple{ec, resp::value{}};
    if (replies.size() != 1) co_return std::tuple{error_code{error::unexpected_reply}, resp::value{}};
    resp::value& reply = replies.front();
    if (!reply.is_error()) co_return std::tuple{error_code{}, std::move(reply)};
    error const code = error_from_server_text(reply.text());
    if (code != error::no_script || !by_digest) {
      co_return std::tuple{error_code{code}, std::move(reply)};
    }
  }
  co_return std::tuple{error_code{error::no_script}, resp::value{}};
}

}  // namespace redisync::detail
