#include "script/script.hpp"

#include "resp/encode.hpp"

#include <algorithm>
#include <array>

namespace redisync::detail {

namespace {

// Writes merged calls of one item script as one EVALSHA: the digest, the number of keys of all
// calls, then every call's keys, then every call's arguments. Each call's marks say where its
// parts are: the digest, its keys and its arguments, and how many of each (packed in 16 bits).
class item_merge final : public io::merge_hook {
 public:
  void write(std::string& out, std::span<io::outgoing const* const> calls) const override {
    std::size_t keys = 0, args = 0;
    for (auto const* c : calls) {
      keys += c->merge.marks[3] & 0xffff;
      args += c->merge.marks[3] >> 16;
    }
    auto const& first = *calls.front();
    char count[24];
    resp::encode::array_header(out, 3 + keys + args);
    resp::encode::bulk(out, "EVALSHA");
    resp::encode::bulk(out, std::string_view{first.payload}.substr(first.merge.marks[0], 40));
    resp::encode::bulk(out, resp::encode::integer(count, static_cast<std::int64_t>(keys)));
    for (auto const* c : calls) out.append(c->payload, c->merge.marks[1], c->merge.marks[2] - c->merge.marks[1]);
    for (auto const* c : calls) out.append(c->payload, c->merge.marks[2]);
  }
};

item_merge const merge_items;

std::size_t digits(std::size_t n) {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

// The encoded size of a bulk string of `size` bytes: `$size\r\n...\r\n`.
std::size_t bulk_size(std::size_t size) { return 1 + digits(size) + 2 + size + 2; }

template <class Range>
std::size_t bytes_of(Range const& r) {
  std::size_t n = 0;
  for (auto const& s : r) n += bulk_size(std::string_view{s}.size());
  return n;
}

}  // namespace

io::outgoing script_call(script const& s, routing::slot_type slot, std::span<std::string_view const> keys,
                         std::span<std::string_view const> argv, bool by_digest, resp::request::options opts) {
  io::outgoing out;
  out.replies = 1;
  out.opts = opts;
  std::string_view const body = by_digest ? s.sha1 : s.source;
  // One allocation of the exact size: thousands of calls may wait to be written at once.
  std::size_t const count_size = 1 + digits(3 + keys.size() + argv.size()) + 2;
  out.payload.reserve(count_size + bulk_size(7) + bulk_size(body.size()) + bulk_size(digits(keys.size())) +
                      bytes_of(keys) + bytes_of(argv));
  char count[24];
  resp::encode::array_header(out.payload, 3 + keys.size() + argv.size());
  resp::encode::bulk(out.payload, by_digest ? "EVALSHA" : "EVAL");
  std::size_t const digest_begin = out.payload.size() + 5;  // after "$40\r\n"
  resp::encode::bulk(out.payload, body);
  resp::encode::bulk(out.payload, resp::encode::integer(count, static_cast<std::int64_t>(keys.size())));
  std::size_t const keys_begin = out.payload.size();
  for (auto const k : keys) resp::encode::bulk(out.payload, k);
  std::size_t const args_begin = out.payload.size();
  for (auto const a : argv) resp::encode::bulk(out.payload, a);
  out.merge = {s.takes_items && by_digest ? &merge_items : nullptr, &s, slot,
               {static_cast<std::uint32_t>(digest_begin), static_cast<std::uint32_t>(keys_begin),
                static_cast<std::uint32_t>(args_begin),
                static_cast<std::uint32_t>(keys.size() | argv.size() << 16)}};
  return out;
}

void append_argument(io::outgoing& out, std::string_view arg) {
  auto& marks = out.merge.marks;
  std::size_t const keys = marks[3] & 0xffff, args = marks[3] >> 16;
  std::size_t const old_header = out.payload.find("\r\n") + 2;
  std::string header;
  resp::encode::array_header(header, 3 + keys + args + 1);
  out.payload.replace(0, old_header, header);
  resp::encode::bulk(out.payload, arg);
  auto const shift = static_cast<std::int64_t>(header.size()) - static_cast<std::int64_t>(old_header);
  for (std::size_t i = 0; i < 3; ++i) marks[i] = static_cast<std::uint32_t>(marks[i] + shift);
  marks[3] = static_cast<std::uint32_t>(keys | (args + 1) << 16);
}

io::outgoing script_call(script const& s, routing::slot_type slot, script_args const& args, bool by_digest,
                         resp::request::options opts) {
  // The arguments as one list of views: on the stack for a lock call, on the heap for a batch.
  std::array<std::string_view, 8> small;
  std::vector<std::string_view> large;
  std::size_t const n = args.keys.size() + args.argv.size();
  if (n > small.size()) large.resize(n);
  std::span<std::string_view> const all =
      n > small.size() ? std::span<std::string_view>{large} : std::span<std::string_view>{small.data(), n};
  std::copy(args.argv.begin(), args.argv.end(), std::copy(args.keys.begin(), args.keys.end(), all.begin()));
  return script_call(s, slot, all.first(args.keys.size()), all.subspan(args.keys.size()), by_digest, opts);
}

bool script_reloads::must_reload(io::error_code ec, io::response const& replies) noexcept {
  if (!ec && by_digest() && replies.size() == 1 && replies[0].is_error() &&
      error_from_server_text(replies[0].text()) == error::no_script) {
    ++in_a_row_;
    return true;
  }
  in_a_row_ = 0;
  return false;
}

}  // namespace redisync::detail
