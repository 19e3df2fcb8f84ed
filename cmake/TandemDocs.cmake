# tandem_docs: the HTML reference of the public headers (core, sim and cuda), from their `///`
# comments, with doxygen. Defined only where doxygen is installed; tools/test builds it when
# CI=true, and an undocumented public entity fails it (docs/Doxyfile.in).

find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "tandem: doxygen not found; no tandem_docs target")
  return()
endif()

set(TANDEM_DOCS_OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/docs)
set(TANDEM_DOCS_STRIP "${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}")
set(TANDEM_DOCS_INPUT
    "${PROJECT_SOURCE_DIR}/docs/api.dox ${PROJECT_SOURCE_DIR}/core/include ${PROJECT_BINARY_DIR}/core/include ${PROJECT_SOURCE_DIR}/sim/include ${PROJECT_SOURCE_DIR}/cuda/include ${PROJECT_SOURCE_DIR}/mpi/include")
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${TANDEM_DOCS_OUTPUT}/Doxyfile @ONLY)
add_custom_target(tandem_docs
  COMMAND ${DOXYGEN_EXECUTABLE} ${TANDEM_DOCS_OUTPUT}/Doxyfile
  WORKING_DIRECTORY ${TANDEM_DOCS_OUTPUT}
  COMMENT "API reference of the public headers: ${TANDEM_DOCS_OUTPUT}/html/index.html"
  VERBATIM)
