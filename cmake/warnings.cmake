add_library(redisync_warnings INTERFACE)
target_compile_options(redisync_warnings INTERFACE -Wall -Wextra -Wpedantic)
