#pragma once

// Incremental RESP3 parser without I/O. Feed it bytes as they arrive; it consumes only whole
// elements (a header line with its CRLF, a bulk payload with its CRLF) and keeps the aggregates in
// progress, so a reply split at any byte boundary parses the same as one delivered at once.

#include <redisync/resp/value.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace redisync::resp {

enum class parse_error {
  invalid_type_byte = 1,
  invalid_integer,
  invalid_length,
  invalid_double,
  invalid_boolean,
  invalid_big_number,
  invalid_null,
  invalid_verbatim,
  missing_crlf,
  line_too_long,
  bulk_too_large,
  aggregate_too_large,
  nesting_too_deep,
  streaming_not_supported,
};

boost::system::error_category const& parse_error_category() noexcept;

inline boost::system::error_code make_error_code(parse_error e) noexcept {
  return {static_cast<int>(e), parse_error_category()};
}

struct parser_limits {
  std::size_t max_depth = 32;                 // nesting of aggregates
  std::size_t max_bulk = 512u * 1024 * 1024;  // Redis' own proto-max-bulk-len default
  std::size_t max_line = 64u * 1024;          // header lines and simple strings
  std::size_t max_elements = 1u << 24;        // elements of one aggregate
};

class parser {
 public:
  explicit parser(parser_limits limits = {}) : limits_{limits} {}

  // Consumes bytes from the front of `input` until one top-level message is complete or the input
  // runs out; returns how many bytes were consumed. The caller drops those bytes and calls again
  // with more. On a parse error `ec` is set and the parser must be reset before reuse.
  std::size_t feed(std::string_view input, boost::system::error_code& ec);

  bool has_value() const noexcept { return result_.has_value(); }
  value take_value();
  void reset();

 private:
  struct frame {
    value aggregate;
    std::size_t remaining;
    bool is_attribute;
  };

  // Parses one element header (and its payload when it is a scalar) at the front of `input`.
  // Returns bytes consumed, 0 when more input is needed.
  std::size_t parse_element(std::string_view input, boost::system::error_code& ec);
  // The three shapes of an element: a one-line scalar, a blob (a header line, then its bytes), an
  // aggregate's header. Each returns bytes consumed as parse_element does.
  std::size_t parse_line(char marker, std::string_view payload, std::size_t header_size, boost::system::error_code& ec);
  std::size_t parse_blob(std::string_view input, char marker, std::string_view payload, std::size_t header_size,
                         boost::system::error_code& ec);
  std::size_t parse_aggregate(char marker, std::string_view payload, std::size_t header_size,
                              boost::system::error_code& ec);
  void complete(value v);
  void attach_pending_attributes(value& v);
  void open_aggregate(type t, std::size_t count, bool is_attribute, boost::system::error_code& ec);

  parser_limits limits_;
  std::vector<frame> stack_;
  std::vector<value> pending_attributes_;
  bool has_pending_attributes_ = false;
  std::optional<value> result_;
};

}  // namespace redisync::resp

template <>
struct boost::system::is_error_code_enum<redisync::resp::parse_error> : std::true_type {};
