# Installed as a CMake package: find_package(redisync) gives redisync::redisync, and
# redisync::prometheus where the exporter was built.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS redisync EXPORT redisync-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET redisync_prometheus)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/redisync DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  # Its own export set: find_package(redisync) needs prometheus-cpp only where it was built.
  install(TARGETS redisync_prometheus EXPORT redisync-prometheus-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT redisync-prometheus-targets NAMESPACE redisync::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redisync)
else()
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/redisync DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          PATTERN prometheus.hpp EXCLUDE)
endif()
# The fenced write's script, for applications that run it from elsewhere (docs/guide.md).
install(FILES ${PROJECT_SOURCE_DIR}/src/primitives/fenced/fenced_set.lua DESTINATION ${CMAKE_INSTALL_DATADIR}/redisync)
install(EXPORT redisync-targets NAMESPACE redisync::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redisync)
if(TARGET redisync_tool)
  install(TARGETS redisync_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/redisync-config.cmake.in
                              ${PROJECT_BINARY_DIR}/redisync-config.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redisync)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/redisync-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/redisync-config.cmake
              ${PROJECT_BINARY_DIR}/redisync-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redisync)
