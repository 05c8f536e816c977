#pragma once

// A pipeline of Redis commands, serialised as RESP arrays of bulk strings (binary safe). The
// connection writes the payload as it is and expects one reply per command, except for the
// subscribe family, which Redis answers with one confirmation push per channel.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ranges>
#include <optional>
#include <chrono>
#include <string>
#include <string_view>

namespace redisync::resp {

template <class T>
concept command_argument = std::convertible_to<T const&, std::string_view> || std::integral<T>;

class request {
 public:
  // Every member has an initializer, so that `{.wait_for_connection = false}` may leave the others
  // out (GCC 12's -Wextra warns of an omitted member that has none).
  struct options {
    // false: fail at once with error::not_connected while disconnected instead of waiting.
    bool wait_for_connection = true;
    // How long to wait for a connection at most, if shorter than config::connection_wait_limit.
    std::optional<std::chrono::milliseconds> connection_wait{};
    // Like connection_wait, but only once a connect attempt has failed: a caller's own wait,
    // which should not fail a request while a connection is still being made.
    std::optional<std::chrono::milliseconds> connection_wait_when_down{};
    // false: do not resend after LOADING or BUSY replies.
    bool retry_transient = true;
    // How long refusals that pass (LOADING, BUSY, TRYAGAIN, CLUSTERDOWN) and redirects back and
    // forth between nodes are retried at most, if shorter than config::transient_retry_budget: a
    // caller's own wait.
    std::optional<std::chrono::milliseconds> retry_limit{};
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

  std::string_view payload() const noexcept { return payload_; }
  // The bytes, moved out (the request is empty afterwards).
  std::string take_payload() && noexcept;
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
  void append_argument(std::string_view s);
  void append_argument(std::int64_t v);
  template <std::integral T>
  void append_argument(T v) {
    append_argument(static_cast<std::int64_t>(v));
  }
  template <class T>
    requires(!std::integral<T> && std::convertible_to<T const&, std::string_view>)
  void append_argument(T const& v) {
    append_argument(std::string_view{v});
  }

  std::string payload_;
  std::size_t commands_ = 0;
  std::size_t expected_replies_ = 0;
  std::size_t expected_pushes_ = 0;
  options options_;
};

// True for SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE.
bool is_subscribe_family(std::string_view command) noexcept;

}  // namespace redisync::resp
