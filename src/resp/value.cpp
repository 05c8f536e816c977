#include <redisync/resp/value.hpp>

#include <algorithm>
#include <charconv>

namespace redisync::resp {

std::string_view to_string(type t) noexcept {
  switch (t) {
    case type::simple_string: return "simple_string";
    case type::simple_error: return "simple_error";
    case type::integer: return "integer";
    case type::bulk_string: return "bulk_string";
    case type::null: return "null";
    case type::double_number: return "double";
    case type::boolean: return "boolean";
    case type::big_number: return "big_number";
    case type::bulk_error: return "bulk_error";
    case type::verbatim_string: return "verbatim_string";
    case type::array: return "array";
    case type::map: return "map";
    case type::set: return "set";
    case type::push: return "push";
  }
  return "unknown";
}

value value::make_integer(std::int64_t v) {
  value out;
  out.type_ = type::integer;
  out.integer_ = v;
  return out;
}

value value::make_boolean(bool v) {
  value out;
  out.type_ = type::boolean;
  out.integer_ = v ? 1 : 0;
  return out;
}

value value::make_double(double v, std::string text) {
  value out{type::double_number, std::move(text)};
  out.number_ = v;
  return out;
}

value value::make_aggregate(type t, std::vector<value> elements) {
  value out;
  out.type_ = t;
  out.elements_ = std::move(elements);
  return out;
}

std::string_view value::text() const noexcept {
  std::string_view const all = text_;
  if (type_ == type::verbatim_string) return all.size() >= 4 ? all.substr(4) : std::string_view{};
  return all;
}

std::string_view value::verbatim_format() const noexcept {
  if (type_ != type::verbatim_string) return {};
  return std::string_view{text_}.substr(0, 3);
}

std::span<value const> value::attributes() const noexcept {
  if (!attributes_) return {};
  return *attributes_;
}

void value::set_attributes(std::vector<value> attributes) {
  attributes_ = std::make_shared<std::vector<value> const>(std::move(attributes));
}

value const* value::field(std::string_view key) const noexcept {
  for (std::size_t i = 0; i + 1 < elements_.size(); i += 2) {
    if (elements_[i].is_string() && elements_[i].text() == key) return &elements_[i + 1];
  }
  return nullptr;
}

std::string_view value::field_text(std::string_view key) const noexcept {
  auto const* v = field(key);
  return v != nullptr && v->is_string() ? v->text() : std::string_view{};
}

bool value::as_integer(std::int64_t& out) const noexcept {
  if (type_ == type::integer) {
    out = integer_;
    return true;
  }
  if (!is_string()) return false;
  auto const t = text();
  auto const [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc{} && end == t.data() + t.size() && !t.empty();
}

bool operator==(value const& a, value const& b) noexcept {
  if (a.type_ != b.type_ || a.integer_ != b.integer_ || a.text_ != b.text_ ||
      a.elements_ != b.elements_) {
    return false;
  }
  // Doubles compare by their text so that NaN equals NaN.
  auto const attributes_a = a.attributes();
  auto const attributes_b = b.attributes();
  return std::equal(attributes_a.begin(), attributes_a.end(), attributes_b.begin(),
                    attributes_b.end());
}

std::string debug_string(value const& v) {
  std::string out{to_string(v.kind())};
  switch (v.kind()) {
    case type::integer: return out + "(" + std::to_string(v.integer()) + ")";
    case type::boolean: return out + (v.boolean() ? "(true)" : "(false)");
    case type::null: return out;
    case type::array:
    case type::map:
    case type::set:
    case type::push: {
      out += "[";
      bool first = true;
      for (auto const& e : v.elements()) {
        if (!first) out += ", ";
        first = false;
        out += debug_string(e);
      }
      return out + "]";
    }
    default: return out + "(\"" + std::string{v.text()} + "\")";
  }
}

}  // namespace redisync::resp
