# Link-time optimisation of tandem's own C++ in Release builds (the `gpu` preset): a launch's host
# path crosses some thirty small functions in a dozen files of two libraries, and inlining them
# across files takes a fifth to a half off what tandem adds to a launch (docs/PERFORMANCE.md,
# "Link-time optimisation"). The objects are fat (`-ffat-lto-objects`): a program that links
# the installed libraries without LTO, or with another compiler, uses their ordinary code; one
# that links them with `-flto` (CMAKE_INTERPROCEDURAL_OPTIMIZATION) gets the inlining too.
# `-fno-semantic-interposition`: no function of tandem is meant to be replaced at load time, so
# calls within a library may be inlined and bound locally.
option(TANDEM_LTO "Link-time optimisation of tandem's C++ in Release builds (GCC)" ON)

if(TANDEM_LTO AND CMAKE_BUILD_TYPE STREQUAL "Release")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(
      "$<$<COMPILE_LANGUAGE:CXX>:-flto=auto;-ffat-lto-objects;-fno-semantic-interposition>")
    add_link_options("$<$<LINK_LANGUAGE:CXX>:-flto=auto>")
    message(STATUS "tandem: link-time optimisation on (TANDEM_LTO)")
  else()
    message(STATUS "tandem: link-time optimisation is set up for GCC only; "
                   "${CMAKE_CXX_COMPILER_ID} builds without it")
  endif()
endif()
