#include <redisync/reply.hpp>

namespace redisync {

namespace {

using boost::system::result;

boost::system::error_code shape_error(resp::value const& v) {
  return make_error_code(v.is_error() ? error_from_server_text(v.text()) : error::unexpected_reply);
}

result<std::int64_t> integer_of(resp::value const& v) {
  std::int64_t out = 0;
  if ((v.kind() == resp::type::integer || v.is_string()) && v.as_integer(out)) return out;
  return shape_error(v);
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

template <>
result<std::int64_t> read_reply<std::int64_t>(resp::value const& v) {
  return integer_of(v);
}

template <>
result<std::optional<std::int64_t>> read_reply<std::optional<std::int64_t>>(resp::value const& v) {
  return or_null<std::int64_t>(v, integer_of);
}

template <>
result<bool> read_reply<bool>(resp::value const& v) {
  if (v.kind() == resp::type::boolean) return v.boolean();
  if (v.kind() == resp::type::integer && (v.integer() == 0 || v.integer() == 1)) return v.integer() == 1;
  return {boost::system::in_place_error, shape_error(v)};
}

template <>
result<std::string> read_reply<std::string>(resp::value const& v) {
  return string_of(v);
}

template <>
result<std::optional<std::string>> read_reply<std::optional<std::string>>(resp::value const& v) {
  return or_null<std::string>(v, string_of);
}

template <>
result<std::vector<std::string>> read_reply<std::vector<std::string>>(resp::value const& v) {
  return elements_of<std::string>(v, string_of);
}

template <>
result<std::vector<std::optional<std::string>>> read_reply<std::vector<std::optional<std::string>>>(
    resp::value const& v) {
  return elements_of<std::optional<std::string>>(
      v, [](resp::value const& e) { return or_null<std::string>(e, string_of); });
}

template <>
result<resp::value> read_reply<resp::value>(resp::value const& v) {
  if (v.is_error()) return shape_error(v);
  return v;
}

}  // namespace redisync
