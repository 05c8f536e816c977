#include <redisync/resp/parser.hpp>

#include <charconv>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

namespace redisync::resp {
namespace {

class parse_error_category_impl final : public boost::system::error_category {
 public:
  char const* name() const noexcept override { return "redisync.resp"; }
  std::string message(int ev) const override {
    switch (static_cast<parse_error>(ev)) {
      case parse_error::invalid_type_byte: return "unknown RESP3 type byte";
      case parse_error::invalid_integer: return "malformed integer";
      case parse_error::invalid_length: return "malformed length";
      case parse_error::invalid_double: return "malformed double";
      case parse_error::invalid_boolean: return "malformed boolean";
      case parse_error::invalid_big_number: return "malformed big number";
      case parse_error::invalid_null: return "malformed null";
      case parse_error::invalid_verbatim: return "malformed verbatim string";
      case parse_error::missing_crlf: return "missing CRLF after a bulk payload";
      case parse_error::line_too_long: return "header line exceeds the limit";
      case parse_error::bulk_too_large: return "bulk payload exceeds the limit";
      case parse_error::aggregate_too_large: return "aggregate exceeds the element limit";
      case parse_error::nesting_too_deep: return "aggregates nested too deeply";
      case parse_error::streaming_not_supported: return "streamed RESP3 types are not supported";
    }
    return "unknown RESP3 parse error";
  }
};

bool parse_int64(std::string_view s, std::int64_t& out) noexcept {
  if (s.empty()) return false;
  auto const [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

bool parse_double(std::string_view s, double& out) noexcept {
  if (s == "inf" || s == "+inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-inf") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "nan" || s == "-nan") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s.empty()) return false;
  // from_chars would also accept "infinity" and hex forms; RESP3 allows plain decimals only.
  for (char const c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) {
      return false;
    }
  }
  auto const [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

// The length after a blob's or an aggregate's marker: a size or a count, or -1, RESP2's null,
// which only '$' and '*' may carry.
std::optional<std::int64_t> read_length(char marker, std::string_view payload, boost::system::error_code& ec) {
  std::int64_t length = 0;
  if (payload == "?") {
    ec = parse_error::streaming_not_supported;
    return std::nullopt;
  }
  if (!parse_int64(payload, length) || length < -1 || (length == -1 && marker != '$' && marker != '*')) {
    ec = parse_error::invalid_length;
    return std::nullopt;
  }
  return length;
}

bool is_big_number(std::string_view s) noexcept {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char const c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

boost::system::error_category const& parse_error_category() noexcept {
  static parse_error_category_impl const instance;
  return instance;
}

void parser::reset() {
  stack_.clear();
  pending_attributes_.clear();
  has_pending_attributes_ = false;
  result_.reset();
}

value parser::take_value() {
  value v = std::move(*result_);
  result_.reset();
  return v;
}

std::size_t parser::feed(std::string_view input, boost::system::error_code& ec) {
  std::size_t consumed = 0;
  while (!result_ && consumed < input.size()) {
    std::size_t const n = parse_element(input.substr(consumed), ec);
    if (ec || n == 0) break;
    consumed += n;
  }
  return consumed;
}

void parser::attach_pending_attributes(value& v) {
  if (!has_pending_attributes_) return;
  v.set_attributes(std::move(pending_attributes_));
  pending_attributes_.clear();
  has_pending_attributes_ = false;
}

void parser::complete(value v) {
  attach_pending_attributes(v);
  for (;;) {
    if (stack_.empty()) {
      result_ = std::move(v);
      return;
    }
    frame& top = stack_.back();
    top.aggregate.mutable_elements().push_back(std::move(v));
    if (--top.remaining != 0) return;
    frame done = std::move(top);
    stack_.pop_back();
    if (done.is_attribute) {
      pending_attributes_ = std::move(done.aggregate.mutable_elements());
      has_pending_attributes_ = true;
      return;
    }
    v = std::move(done.aggregate);
  }
}

void parser::open_aggregate(type t, std::size_t count, bool is_attribute,
                            boost::system::error_code& ec) {
  if (stack_.size() >= limits_.max_depth) {
    ec = parse_error::nesting_too_deep;
    return;
  }
  std::size_t const elements = (t == type::map || is_attribute) ? count * 2 : count;
  if (count > limits_.max_elements || elements > limits_.max_elements) {
    ec = parse_error::aggregate_too_large;
    return;
  }
  if (elements == 0) {
    if (is_attribute) {
      pending_attributes_.clear();
      has_pending_attributes_ = true;
      return;
    }
    complete(value::make_aggregate(t, {}));
    return;
  }
  std::vector<value> storage;
  // Reserve only what a reasonable reply needs: a hostile length must not allocate gigabytes.
  storage.reserve(std::min<std::size_t>(elements, 1024));
  value aggregate = value::make_aggregate(t, std::move(storage));
  // Attributes belong to the element that follows them, which is this aggregate, not its first
  // element (an attribute map itself cannot carry attributes).
  if (!is_attribute) attach_pending_attributes(aggregate);
  stack_.push_back(frame{std::move(aggregate), elements, is_attribute});
}

std::size_t parser::parse_element(std::string_view input, boost::system::error_code& ec) {
  void const* cr = std::memchr(input.data(), '\r', std::min(input.size(), limits_.max_line + 2));
  if (cr == nullptr) {
    if (input.size() > limits_.max_line + 1) ec = parse_error::line_too_long;
    return 0;
  }
  std::size_t const line_end = static_cast<char const*>(cr) - input.data();
  if (line_end + 1 >= input.size()) return 0;  // the '\n' has not arrived yet
  if (input[line_end + 1] != '\n' || line_end == 0) {
    ec = line_end == 0 ? parse_error::invalid_type_byte : parse_error::missing_crlf;
    return 0;
  }
  char const marker = input[0];
  std::string_view const payload = input.substr(1, line_end - 1);
  std::size_t const header_size = line_end + 2;
  switch (marker) {
    case '$':
    case '!':
    case '=': return parse_blob(input, marker, payload, header_size, ec);
    case '*':
    case '%':
    case '~':
    case '>':
    case '|': return parse_aggregate(marker, payload, header_size, ec);
    default: return parse_line(marker, payload, header_size, ec);
  }
}

std::size_t parser::parse_line(char marker, std::string_view payload, std::size_t header_size,
                               boost::system::error_code& ec) {
  auto const fail = [&ec](parse_error e) {
    ec = e;
    return std::size_t{0};
  };
  switch (marker) {
    case '+': complete(value{type::simple_string, std::string{payload}}); break;
    case '-': complete(value{type::simple_error, std::string{payload}}); break;
    case ':': {
      std::int64_t v = 0;
      if (!parse_int64(payload, v)) return fail(parse_error::invalid_integer);
      complete(value::make_integer(v));
      break;
    }
    case ',': {
      double v = 0;
      if (!parse_double(payload, v)) return fail(parse_error::invalid_double);
      complete(value::make_double(v, std::string{payload}));
      break;
    }
    case '#':
      if (payload != "t" && payload != "f") return fail(parse_error::invalid_boolean);
      complete(value::make_boolean(payload == "t"));
      break;
    case '_':
      if (!payload.empty()) return fail(parse_error::invalid_null);
      complete(value{});
      break;
    case '(':
      if (!is_big_number(payload)) return fail(parse_error::invalid_big_number);
      complete(value{type::big_number, std::string{payload}});
      break;
    default: return fail(parse_error::invalid_type_byte);
  }
  return header_size;
}

std::size_t parser::parse_blob(std::string_view input, char marker, std::string_view payload, std::size_t header_size,
                               boost::system::error_code& ec) {
  auto const length = read_length(marker, payload, ec);
  if (!length) return 0;
  if (*length == -1) {
    complete(value{});
    return header_size;
  }
  if (static_cast<std::uint64_t>(*length) > limits_.max_bulk) {
    ec = parse_error::bulk_too_large;
    return 0;
  }
  auto const size = static_cast<std::size_t>(*length);
  if (input.size() - header_size < size + 2) return 0;
  if (input[header_size + size] != '\r' || input[header_size + size + 1] != '\n') {
    ec = parse_error::missing_crlf;
    return 0;
  }
  std::string_view const body = input.substr(header_size, size);
  if (marker == '=' && (size < 4 || body[3] != ':')) {
    ec = parse_error::invalid_verbatim;
    return 0;
  }
  type const t = marker == '$' ? type::bulk_string : marker == '!' ? type::bulk_error : type::verbatim_string;
  complete(value{t, std::string{body}});
  return header_size + size + 2;
}

std::size_t parser::parse_aggregate(char marker, std::string_view payload, std::size_t header_size,
                                    boost::system::error_code& ec) {
  auto const count = read_length(marker, payload, ec);
  if (!count) return 0;
  if (*count == -1) {
    complete(value{});
    return header_size;
  }
  type const t = marker == '*'   ? type::array
                 : marker == '%' ? type::map
                 : marker == '~' ? type::set
                 : marker == '>' ? type::push
                                 : type::map;
  open_aggregate(t, static_cast<std::size_t>(*count), marker == '|', ec);
  return ec ? 0 : header_size;
}

}  // namespace redisync::resp
