# tandem_add_kernels(<target> CUDA <registration unit>.cu... [ARCHITECTURES <arch>...]
#                    [LIBRARIES <library>...])
#
# Compiles a program's CUDA registration units (sources with TANDEM_REGISTER_CUDA_KERNEL) into
# <target> where tandem's cuda component and a CUDA compiler exist, and leaves them out where
# they do not. One project thus builds on a machine without CUDA, where its kernels run on the
# simulator and the reference backend, and on a GPU machine, where they also run on CUDA.
#
# Where the units are compiled, <target> links tandem::cuda and gets the definition
# TANDEM_HAS_CUDA_KERNELS=1 (0 elsewhere), so the program can tell; the LIBRARIES (CUDA::cublas,
# say) are linked only there too. A macro, so that it enables the CUDA language in the caller's
# directory: call it at file scope, after find_package(tandem) (or after add_subdirectory of
# tandem), on a target made before or after.
#
# The GPU architectures the units are built for, first that is set: ARCHITECTURES; the target's
# own CUDA_ARCHITECTURES, set before this call; CMAKE_CUDA_ARCHITECTURES, set by the project or on
# its command line; the architectures tandem itself was built for (tandem_CUDA_ARCHITECTURES, which
# the installed package records).
macro(tandem_add_kernels _tandem_target)
  cmake_parse_arguments(_tandem_kernels "" "" "CUDA;ARCHITECTURES;LIBRARIES" ${ARGN})
  if(_tandem_kernels_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
            "tandem_add_kernels: unexpected arguments ${_tandem_kernels_UNPARSED_ARGUMENTS} "
            "(usage: tandem_add_kernels(<target> CUDA <file.cu>... [ARCHITECTURES <arch>...] "
            "[LIBRARIES <library>...]))")
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
      # Before the language is enabled, which would otherwise pick the compiler's default.
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
        _tandem_built_cuda_architectures(CMAKE_CUDA_ARCHITECTURES)
      endif()
      if(NOT DEFINED CMAKE_CUDA_RUNTIME_LIBRARY)
        set(CMAKE_CUDA_RUNTIME_LIBRARY Static)  # As tandem::cuda links it: one runtime.
      endif()
      enable_language(CUDA)
      set(_tandem_kernels_cuda ON)
    endif()
  endif()
  if(_tandem_kernels_cuda)
    _tandem_set_cuda_architectures(${_tandem_target} "${_tandem_kernels_ARCHITECTURES}")
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

# The architectures tandem was built for: the installed package's record, else those of the
# build tandem is part of (add_subdirectory), else 90 (H100, H200).
function(_tandem_built_cuda_architectures out)
  if(DEFINED tandem_CUDA_ARCHITECTURES AND NOT tandem_CUDA_ARCHITECTURES STREQUAL "")
    set(${out} "${tandem_CUDA_ARCHITECTURES}" PARENT_SCOPE)
    return()
  endif()
  get_property(_built GLOBAL PROPERTY TANDEM_CUDA_ARCHITECTURES)
  if(NOT _built)
    set(_built 90)
  endif()
  set(${out} "${_built}" PARENT_SCOPE)
endfunction()

# A target made before the CUDA language was enabled has an empty CUDA_ARCHITECTURES (the
# property takes CMAKE_CUDA_ARCHITECTURES when the target is made), which CMake refuses: set it
# here, unless the project set it on the target itself.
function(_tandem_set_cuda_architectures target asked)
  get_target_property(_own ${target} CUDA_ARCHITECTURES)
  if(asked)
    set(_architectures "${asked}")
  elseif(_own)
    set(_architectures "${_own}")
  elseif(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(_architectures "${CMAKE_CUDA_ARCHITECTURES}")
  else()
    _tandem_built_cuda_architectures(_architectures)
  endif()
  set_property(TARGET ${target} PROPERTY CUDA_ARCHITECTURES "${_architectures}")
  message(STATUS "tandem: ${target}'s CUDA kernels are built for ${_architectures}")
endfunction()
