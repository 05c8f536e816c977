#pragma once

// One RESP3 reply as a tree. Aggregates own their elements; a map stores its entries flattened as
// key, value, key, value. Attributes (`|`) sent before a reply are attached to that reply.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::resp {

enum class type : std::uint8_t {
  simple_string,    // +
  simple_error,     // -
  integer,          // :
  bulk_string,      // $
  null,             // _  (and RESP2 $-1 / *-1)
  double_number,    // ,
  boolean,          // #
  big_number,       // (
  bulk_error,       // !
  verbatim_string,  // =
  array,            // *
  map,              // %
  set,              // ~
  push,             // >
};

std::string_view to_string(type t) noexcept;

class value {
 public:
  value() = default;  // a null
  value(type t, std::string text) : type_{t}, text_{std::move(text)} {}

  static value make_integer(std::int64_t v);
  static value make_boolean(bool v);
  static value make_double(double v, std::string text);
  static value make_aggregate(type t, std::vector<value> elements);

  type kind() const noexcept { return type_; }
  bool is_null() const noexcept { return type_ == type::null; }
  bool is_error() const noexcept {
    return type_ == type::simple_error || type_ == type::bulk_error;
  }
  bool is_aggregate() const noexcept {
    return type_ == type::array || type_ == type::map || type_ == type::set || type_ == type::push;
  }
  bool is_string() const noexcept {
    return type_ == type::simple_string || type_ == type::bulk_string ||
           type_ == type::verbatim_string;
  }

  // Text of strings, errors, big numbers and doubles (as sent); for a verbatim string, the text
  // after its three-letter format and colon.
  std::string_view text() const noexcept;
  // The three-letter format of a verbatim string ("txt", "mkd").
  std::string_view verbatim_format() const noexcept;
  std::int64_t integer() const noexcept { return integer_; }
  bool boolean() const noexcept { return integer_ != 0; }
  double number() const noexcept { return number_; }
  std::span<value const> elements() const noexcept { return elements_; }
  std::vector<value>& mutable_elements() noexcept { return elements_; }
  // Entries of the attribute map that preceded this value, flattened like a map.
  std::span<value const> attributes() const noexcept;
  void set_attributes(std::vector<value> attributes);

  // The integer value of an integer reply, or of a string reply holding a decimal integer.
  bool as_integer(std::int64_t& out) const noexcept;
  // The value of the entry `key` of a map, or of a RESP2 array of key, value pairs (CLUSTER SHARDS,
  // SENTINEL SENTINELS); nullptr if there is none.
  value const* field(std::string_view key) const noexcept;
  // The text of that entry if it is a string; empty otherwise.
  std::string_view field_text(std::string_view key) const noexcept;

  friend bool operator==(value const& a, value const& b) noexcept;

 private:
  type type_ = type::null;
  std::int64_t integer_ = 0;
  double number_ = 0;
  std::string text_;
  std::vector<value> elements_;
  std::shared_ptr<std::vector<value> const> attributes_;
};

// A RESP-like rendering for logs and test failure messages.
std::string debug_string(value const& v);

}  // namespace redisync::resp
