#include <redisync/resp/request.hpp>

#include "resp/encode.hpp"

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

std::string request::take_payload() && noexcept {
  std::string out = std::move(payload_);
  clear();
  return out;
}

void request::clear() {
  payload_.clear();
  commands_ = 0;
  expected_replies_ = 0;
  expected_pushes_ = 0;
}

void request::begin_command(std::string_view command, std::size_t arguments) {
  encode::array_header(payload_, arguments);
  encode::bulk(payload_, command);
}

void request::end_command(std::string_view command, std::size_t arguments) {
  ++commands_;
  if (is_subscribe_family(command)) {
    // Redis confirms each channel with its own push. An unsubscribe from everything (no
    // channel given) is not counted: its confirmations depend on server state.
    expected_pushes_ += arguments;
  } else {
    ++expected_replies_;
  }
}

void request::append_argument(std::string_view s) { encode::bulk(payload_, s); }

void request::append_argument(std::int64_t v) {
  char buffer[24];
  encode::bulk(payload_, encode::integer(buffer, v));
}

}  // namespace redisync::resp

namespace redisync::resp::encode {

void array_header(std::string& out, std::size_t n) {
  char header[24];
  out.append(header, format_header(header, '*', n));
}

void bulk(std::string& out, std::string_view s) {
  char header[24];
  std::size_t const header_size = format_header(header, '$', s.size());
  std::size_t const old_size = out.size();
  out.resize(old_size + header_size + s.size() + 2);
  char* p = out.data() + old_size;
  std::memcpy(p, header, header_size);
  p += header_size;
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  p += s.size();
  p[0] = '\r';
  p[1] = '\n';
}

std::string_view integer(char (&buffer)[24], std::int64_t v) noexcept {
  auto const [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return {buffer, static_cast<std::size_t>(end - buffer)};
}

}  // namespace redisync::resp::encode
