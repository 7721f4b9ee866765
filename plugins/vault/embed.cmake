# Turns a file into C++: a function returning its bytes exactly (a byte array, whatever they are).
# Run at build time: cmake -DINPUT=file -DOUTPUT=file.cpp -DFUNCTION=name -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
if(length EQUAL 0)
  message(FATAL_ERROR "embed.cmake: ${INPUT} is empty")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "// Generated at build time from ${name} by embed.cmake: do not edit.
#include <string_view>

namespace svc::plugins::vault::web {
namespace {
const unsigned char kBytes[] = {${bytes}};
}  // namespace
std::string_view ${FUNCTION}() {
  return {reinterpret_cast<const char*>(kBytes), sizeof kBytes};
}
}  // namespace svc::plugins::vault::web
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
