#pragma once

// RESP encoding pieces, written in one piece each: requests are built on every lock operation.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace redisync::resp::encode {

// `*n\r\n`
void array_header(std::string& out, std::size_t n);
// `$len\r\n<s>\r\n`
void bulk(std::string& out, std::string_view s);
// `v` in decimal, in `buffer`.
std::string_view integer(char (&buffer)[24], std::int64_t v) noexcept;

}  // namespace redisync::resp::encode
