#include <redisync/resp/request.hpp>

#include <array>
#include <charconv>
#include <cstring>

namespace redisync::resp {
namespace {

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    if (x >= 'a' && x <= 'z') x = static_cast<char>(x - 'a' + 'A');
    if (x != b[i]) return false;
  }
  return true;
}

// A RESP header (`*3\r\n`, `$5\r\n`) into `buffer`; returns its length. Headers and bulk strings
// are written in one piece: requests are built on every lock operation.
std::size_t format_header(char (&buffer)[24], char marker, std::size_t n) {
  buffer[0] = marker;
  auto const [end, ec] = std::to_chars(buffer + 1, buffer + sizeof buffer - 2, n);
  end[0] = '\r';
  end[1] = '\n';
  return static_cast<std::size_t>(end + 2 - buffer);
}

}  // namespace

bool is_subscribe_family(std::string_view command) noexcept {
  static constexpr std::array<std::string_view, 6> names{
      "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE"};
  for (auto const n : names) {
    if (iequals(command, n)) return true;
  }
  return false;
}

void request::push_item_script_call(bool by_digest, std::string_view script,
                                    std::span<std::string_view const> keys,
                                    std::span<std::string_view const> args) {
  item_script_call call{.keys = keys.size(), .args = args.size()};
  std::string_view const command = by_digest ? "EVALSHA" : "EVAL";
  std::size_t bytes = 64 + script.size();
  for (auto const k : keys) bytes += k.size() + 16;
  for (auto const a : args) bytes += a.size() + 16;
  payload_.reserve(payload_.size() + bytes);  // one allocation for the whole command
  char count[24];
  begin_command(command, 3 + keys.size() + args.size());
  append_bulk(script);
  if (by_digest) {
    call.digest_size = script.size();
    call.digest_begin = payload_.size() - 2 - script.size();
  }
  append_bulk(format_integer(count, static_cast<std::int64_t>(keys.size())));
  call.keys_begin = payload_.size();
  for (auto const k : keys) append_bulk(k);
  call.args_begin = payload_.size();
  for (auto const a : args) append_bulk(a);
  end_command(command, 2 + keys.size() + args.size());
  if (commands_ == 1) item_call_ = call;  // the connection merges only requests of one call
}

bool request::can_merge_with(request const& other) const noexcept {
  auto const& a = item_call_;
  auto const& b = other.item_call_;
  return a && b && a->digest_size > 0 &&
         std::string_view{payload_}.substr(a->digest_begin, a->digest_size) ==
             std::string_view{other.payload_}.substr(b->digest_begin, b->digest_size);
}

void request::append_merged(std::string& out, std::span<request const* const> calls) {
  std::size_t keys = 0, args = 0;
  for (auto const* c : calls) {
    keys += c->item_call_->keys;
    args += c->item_call_->args;
  }
  request head;
  char count[24];
  head.begin_command("EVALSHA", 3 + keys + args);
  auto const& first = *calls.front();
  head.append_bulk(std::string_view{first.payload_}.substr(first.item_call_->digest_begin,
                                                          first.item_call_->digest_size));
  head.append_bulk(format_integer(count, static_cast<std::int64_t>(keys)));
  out += head.payload_;
  for (auto const* c : calls) {
    auto const& call = *c->item_call_;
    out.append(c->payload_, call.keys_begin, call.args_begin - call.keys_begin);
  }
  for (auto const* c : calls) out.append(c->payload_, c->item_call_->args_begin);
}

void request::clear() {
  item_call_.reset();
  payload_.clear();
  commands_ = 0;
  expected_replies_ = 0;
  expected_pushes_ = 0;
}

void request::begin_command(std::string_view command, std::size_t arguments) {
  char header[24];
  payload_.append(header, format_header(header, '*', arguments));
  append_bulk(command);
}

void request::end_command(std::string_view command, std::size_t arguments) {
  ++commands_;
  item_call_.reset();  // push_item_script_call() sets it again for a request of one call
  if (is_subscribe_family(command)) {
    // Redis confirms each channel with its own push. An unsubscribe from everything (no
    // channel given) is not counted: its confirmations depend on server state.
    expected_pushes_ += arguments;
  } else {
    ++expected_replies_;
  }
}

void request::append_bulk(std::string_view s) {
  char header[24];
  std::size_t const header_size = format_header(header, '$', s.size());
  std::size_t const old_size = payload_.size();
  payload_.resize(old_size + header_size + s.size() + 2);
  char* out = payload_.data() + old_size;
  std::memcpy(out, header, header_size);
  out += header_size;
  if (!s.empty()) std::memcpy(out, s.data(), s.size());
  out += s.size();
  out[0] = '\r';
  out[1] = '\n';
}

std::string_view request::format_integer(char (&buffer)[24], std::int64_t v) noexcept {
  auto const [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return {buffer, static_cast<std::size_t>(end - buffer)};
}

}  // namespace redisync::resp
