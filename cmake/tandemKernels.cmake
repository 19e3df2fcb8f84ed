# tandem_add_kernels(<target> CUDA <registration unit>.cu... [LIBRARIES <library>...])
#
# Compiles a program's CUDA registration units (sources with TANDEM_REGISTER_CUDA_KERNEL) into
# <target> where tandem's cuda component and a CUDA compiler exist, and leaves them out where
# they do not. One project thus builds on a machine without CUDA, where its kernels run on the
# simulator and the reference backend, and on a GPU machine, where they also run on CUDA.
#
# Where the units are compiled, <target> links tandem::cuda and gets the definition
# TANDEM_HAS_CUDA_KERNELS=1 (0 elsewhere), so the program can tell; the LIBRARIES (CUDA::cublas,
# say) are linked only there too. A macro, so that it enables
# the CUDA language in the caller's directory: call it at file scope, after find_package(tandem)
# (or after add_subdirectory of tandem). CMAKE_CUDA_ARCHITECTURES defaults to 90 (H100, H200).
macro(tandem_add_kernels _tandem_target)
  cmake_parse_arguments(_tandem_kernels "" "" "CUDA;LIBRARIES" ${ARGN})
  if(_tandem_kernels_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
            "tandem_add_kernels: unexpected arguments ${_tandem_kernels_UNPARSED_ARGUMENTS} "
            "(usage: tandem_add_kernels(<target> CUDA <file.cu>... [LIBRARIES <library>...]))")
  endif()
  if(NOT TARGET ${_tandem_target})
    message(FATAL_ERROR "tandem_add_kernels: ${_tandem_target} is not a target")
  endif()
  set(_tandem_kernels_cuda OFF)
  if(TARGET tandem::cuda)
    if(NOT CMAKE_CUDA_COMPILER)
      include(CheckLanguage)
      check_language(CUDA)
    endif()
    if(CMAKE_CUDA_COMPILER)
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 90)
      endif()
      enable_language(CUDA)
      set(_tandem_kernels_cuda ON)
    endif()
  endif()
  if(_tandem_kernels_cuda)
    _tandem_add_cuda_units(${_tandem_target} ${_tandem_kernels_CUDA})
    if(_tandem_kernels_LIBRARIES)
      target_link_libraries(${_tandem_target} PRIVATE ${_tandem_kernels_LIBRARIES})
    endif()
  else()
    target_compile_definitions(${_tandem_target} PRIVATE TANDEM_HAS_CUDA_KERNELS=0)
    message(STATUS "tandem: ${_tandem_target} is built without its CUDA kernels "
                   "(no CUDA compiler, or tandem without its cuda component)")
  endif()
endmacro()

function(_tandem_add_cuda_units target)
  target_sources(${target} PRIVATE ${ARGN})
  # Older CMake does not know C++20 for CUDA; nvcc 12 and later do.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr>)
  target_compile_definitions(${target} PRIVATE TANDEM_HAS_CUDA_KERNELS=1)
  target_link_libraries(${target} PRIVATE tandem::cuda)
endfunction()
