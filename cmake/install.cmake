# Installed as a CMake package: find_package(redisync) gives redisync::redisync.
