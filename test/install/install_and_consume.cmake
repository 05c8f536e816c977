# Installs the build into a scratch prefix, then configures and builds test/install against it.
# Run by CTest: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -DCXX_FLAGS=... -P this
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/install -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    -DEXAMPLE_SOURCE=${SOURCE_DIR}/docs/examples/quickstart.cpp)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
# The fenced write's script, which the guide points to, is installed.
if(NOT EXISTS ${WORK_DIR}/prefix/share/redisync/fenced_set.lua)
  message(FATAL_ERROR "share/redisync/fenced_set.lua is not installed")
endif()
# Without CMake: the compiler, the headers, the archive and its link dependencies; no define needed.
separate_arguments(flags UNIX_COMMAND "${CXX_FLAGS}")
run(${CXX} -std=c++20 ${flags} ${SOURCE_DIR}/docs/examples/quickstart.cpp -I${WORK_DIR}/prefix/include
    ${WORK_DIR}/prefix/lib/libredisync.a -lboost_url -lfmt -lssl -lcrypto -pthread -o ${WORK_DIR}/plain)
file(REMOVE_RECURSE ${WORK_DIR})
