# Compiles SOURCE and passes only if the compiler refuses it with the message its first line
# names ("// expect: ..."): a wrong use of the API must fail to build, saying what is expected.
file(STRINGS ${SOURCE} first LIMIT_COUNT 1)
string(REGEX REPLACE "^// expect: " "" expected "${first}")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE_DIR} ${SOURCE}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled; it must not")
endif()
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed without saying \"${expected}\":\n${out}")
endif()
string(FIND "${out}" "${SOURCE}" names_source)
if(names_source EQUAL -1)
  message(FATAL_ERROR "the error does not point at ${SOURCE}:\n${out}")
endif()
