#pragma once

// A pipeline of Redis commands, serialised as RESP arrays of bulk strings (binary safe). The
// connection writes the payload as it is and expects one reply per command, except for the
// subscribe family, which Redis answers with one confirmation push per channel.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>

namespace redisync::resp {

template <class T>
concept command_argument = std::convertible_to<T const&, std::string_view> || std::integral<T>;

class request {
 public:
  struct options {
    // false: fail at once with error::not_connected while disconnected instead of waiting.
    bool wait_for_connection = true;
    // false: do not resend after LOADING or BUSY replies.
    bool retry_transient = true;
  };

  request() = default;
  explicit request(options opts) : options_{opts} {}

  template <command_argument... Args>
  void push(std::string_view command, Args const&... args) {
    begin_command(command, 1 + sizeof...(args));
    (append_argument(args), ...);
    end_command(command, sizeof...(args));
  }

  // A command whose trailing arguments come from a range (keys of a batch, channels).
  template <std::ranges::input_range Range, command_argument... Args>
    requires command_argument<std::ranges::range_value_t<Range>>
  void push_range(std::string_view command, Range const& tail, Args const&... head) {
    std::size_t const tail_size = static_cast<std::size_t>(std::ranges::distance(tail));
    std::size_t bytes = 32 + command.size() + 32 * sizeof...(head);
    for (auto const& a : tail) {
      if constexpr (std::integral<std::ranges::range_value_t<Range>>) {
        bytes += 32;
      } else {
        bytes += std::string_view{a}.size() + 16;
      }
    }
    payload_.reserve(payload_.size() + bytes);  // one allocation for the whole command
    begin_command(command, 1 + sizeof...(head) + tail_size);
    (append_argument(head), ...);
    for (auto const& a : tail) append_argument(a);
    end_command(command, sizeof...(head) + tail_size);
  }

  // One call of a script that takes items: the call is one item, and the script answers a call
  // alone with that item's reply and several calls merged into one command with an array of
  // their replies. `by_digest` sends EVALSHA with `script` as the digest, otherwise EVAL with
  // `script` as the body. Must be the request's only command. The connection writes adjacent
  // EVALSHA calls of one item script as one command (append_merged) and hands each call its own
  // item's reply.
  void push_item_script_call(bool by_digest, std::string_view script,
                             std::span<std::string_view const> keys,
                             std::span<std::string_view const> args);
  // Where the parts of an item script call are in the payload.
  struct item_script_call {
    std::size_t digest_begin = 0;  // the digest's bytes (EVALSHA)
    std::size_t digest_size = 0;   // 0 for EVAL, which is never merged
    std::size_t keys_begin = 0;    // where the keys' bulk strings begin
    std::size_t args_begin = 0;    // where the arguments' bulk strings begin
    std::size_t keys = 0;
    std::size_t args = 0;
  };
  std::optional<item_script_call> const& item_call() const noexcept { return item_call_; }
  // True if both are EVALSHA calls of the same item script.
  bool can_merge_with(request const& other) const noexcept;
  // Appends one EVALSHA command that carries the items of `calls` (EVALSHA calls of one item
  // script) in their order; the reply is an array with the items' replies in the same order.
  static void append_merged(std::string& out, std::span<request const* const> calls);

  std::string_view payload() const noexcept { return payload_; }
  std::size_t commands() const noexcept { return commands_; }
  // Replies the connection must match: one per ordinary command plus one confirmation push per
  // channel of a (un)subscribe command.
  std::size_t expected_replies() const noexcept { return expected_replies_; }
  std::size_t expected_pushes() const noexcept { return expected_pushes_; }
  options const& opts() const noexcept { return options_; }
  options& opts() noexcept { return options_; }
  bool empty() const noexcept { return commands_ == 0; }
  void clear();

 private:
  void begin_command(std::string_view command, std::size_t arguments);
  void end_command(std::string_view command, std::size_t arguments);
  void append_bulk(std::string_view s);
  void append_argument(std::string_view s) { append_bulk(s); }
  template <std::integral T>
  void append_argument(T v) {
    char buffer[24];
    append_bulk(format_integer(buffer, static_cast<std::int64_t>(v)));
  }
  template <class T>
    requires(!std::integral<T> && std::convertible_to<T const&, std::string_view>)
  void append_argument(T const& v) {
    append_bulk(std::string_view{v});
  }
  static std::string_view format_integer(char (&buffer)[24], std::int64_t v) noexcept;

  std::string payload_;
  std::optional<item_script_call> item_call_;
  std::size_t commands_ = 0;
  std::size_t expected_replies_ = 0;
  std::size_t expected_pushes_ = 0;
  options options_;
};

// True for SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE.
bool is_subscribe_family(std::string_view command) noexcept;

}  // namespace redisync::resp
