#include <redisync/reply.hpp>

#include <charconv>

namespace redisync {

namespace {

using boost::system::result;

boost::system::error_code shape_error(resp::value const& v) {
  return v.is_error() ? server_error_code(v.text()) : make_error_code(error::unexpected_reply);
}

// The whole text must be the number: no sign for an unsigned one, no space, nothing after it.
template <class T>
result<T> parse(resp::value const& v) {
  auto const text = v.text();
  T out{};
  auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) {
    return make_error_code(error::unexpected_reply);
  }
  return out;
}

result<std::string> string_of(resp::value const& v) {
  if (v.is_string()) return std::string{v.text()};
  return shape_error(v);
}

template <class T, class Read>
result<std::optional<T>> or_null(resp::value const& v, Read read) {
  if (v.is_null()) return std::optional<T>{};
  auto r = read(v);
  if (!r) return r.error();
  return std::optional<T>{std::move(*r)};
}

template <class T, class Read>
result<std::vector<T>> elements_of(resp::value const& v, Read read) {
  if (v.kind() != resp::type::array && v.kind() != resp::type::set) return shape_error(v);
  std::vector<T> out;
  out.reserve(v.elements().size());
  for (auto const& e : v.elements()) {
    auto r = read(e);
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace

namespace detail {

result<std::int64_t> read_signed(resp::value const& v) {
  if (v.kind() == resp::type::integer) return v.integer();
  if (v.is_string()) return parse<std::int64_t>(v);
  return shape_error(v);
}

result<std::uint64_t> read_unsigned(resp::value const& v) {
  if (v.kind() == resp::type::integer) {
    if (v.integer() < 0) return make_error_code(error::unexpected_reply);
    return static_cast<std::uint64_t>(v.integer());
  }
  if (v.is_string()) return parse<std::uint64_t>(v);
  return shape_error(v);
}

result<double> read_double(resp::value const& v) {
  if (v.kind() == resp::type::double_number) return v.number();
  if (v.kind() == resp::type::integer) return static_cast<double>(v.integer());
  if (v.is_string()) return parse<double>(v);
  return shape_error(v);
}

template <>
result<bool> read_other<bool>(resp::value const& v) {
  if (v.kind() == resp::type::boolean) return v.boolean();
  if (v.kind() == resp::type::integer && (v.integer() == 0 || v.integer() == 1)) return v.integer() == 1;
  return {boost::system::in_place_error, shape_error(v)};
}

template <>
result<std::string> read_other<std::string>(resp::value const& v) {
  return string_of(v);
}

template <>
result<std::optional<std::string>> read_other<std::optional<std::string>>(resp::value const& v) {
  return or_null<std::string>(v, string_of);
}

template <>
result<std::vector<std::string>> read_other<std::vector<std::string>>(resp::value const& v) {
  return elements_of<std::string>(v, string_of);
}

template <>
result<std::vector<std::optional<std::string>>> read_other<std::vector<std::optional<std::string>>>(
    resp::value const& v) {
  return elements_of<std::optional<std::string>>(
      v, [](resp::value const& e) { return or_null<std::string>(e, string_of); });
}

template <>
result<resp::value> read_other<resp::value>(resp::value const& v) {
  if (v.is_error()) return shape_error(v);
  return v;
}

}  // namespace detail

}  // namespace redisync
