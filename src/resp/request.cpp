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

// One append per header: requests are built on every lock operation.
void append_header(std::string& out, char marker, std::size_t n) {
  char buffer[24];
  buffer[0] = marker;
  auto const [end, ec] = std::to_chars(buffer + 1, buffer + sizeof buffer - 2, n);
  end[0] = '\r';
  end[1] = '\n';
  out.append(buffer, end + 2);
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

void request::clear() {
  payload_.clear();
  commands_ = 0;
  expected_replies_ = 0;
  expected_pushes_ = 0;
}

void request::begin_command(std::string_view command, std::size_t arguments) {
  append_header(payload_, '*', arguments);
  append_bulk(command);
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

void request::append_bulk(std::string_view s) {
  // Sized once and filled in place: requests are built on every lock operation.
  char header[24];
  header[0] = '$';
  auto const [end, ec] = std::to_chars(header + 1, header + sizeof header, s.size());
  auto const header_size = static_cast<std::size_t>(end - header);
  std::size_t const old_size = payload_.size();
  payload_.resize(old_size + header_size + s.size() + 4);
  char* out = payload_.data() + old_size;
  std::memcpy(out, header, header_size);
  out += header_size;
  *out++ = '\r';
  *out++ = '\n';
  if (!s.empty()) std::memcpy(out, s.data(), s.size());
  out += s.size();
  *out++ = '\r';
  *out = '\n';
}

std::string_view request::format_integer(char (&buffer)[24], std::int64_t v) noexcept {
  auto const [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return {buffer, static_cast<std::size_t>(end - buffer)};
}

}  // namespace redisync::resp
