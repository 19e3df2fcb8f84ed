# Fails unless the C++ block that follows the marker in README.md is exactly the example file,
# so the README shows the program the tests compile and run.
#   cmake -DREADME=... -DEXAMPLE=... -DMARKER=... -P CheckReadmeExample.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "${MARKER}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no marker '${MARKER}'")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "```cpp\n" open)
math(EXPR start "${open} + 7")
string(SUBSTRING "${rest}" ${start} -1 rest)
string(FIND "${rest}" "```" close)
string(SUBSTRING "${rest}" 0 ${close} block)
if(NOT block STREQUAL example)
  message(FATAL_ERROR "the README example after '${MARKER}' differs from ${EXAMPLE}")
endif()
