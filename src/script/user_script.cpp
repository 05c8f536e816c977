#include "script/user_script.hpp"

#include <redisync/script.hpp>

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace redisync::detail {

namespace {

std::string sha1_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error{"redisync: SHA1 of a script failed (OpenSSL)"};
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace

user_script::user_script(std::string text)
    : source{std::move(text)}, sha1{sha1_hex(source)}, view{"application script", sha1, source} {}

}  // namespace redisync::detail

namespace redisync {

script::script(std::string source) : impl_{std::make_shared<detail::user_script const>(std::move(source))} {}

std::string const& script::source() const noexcept { return impl_->source; }

std::string const& script::sha1() const noexcept { return impl_->sha1; }

}  // namespace redisync
