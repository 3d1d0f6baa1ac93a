# MLIR's headers parsed once per build instead of once per source file.
#
# Parsing LLVM's and MLIR's headers was 85-90% of the compile of a source of
# the compiler (ParallelDispatch.cpp: 7.6 s, 6.3 s of it parsing; 2.4 s with
# the precompiled header). One header (cmake/pch/MLIRHeaders.h) is
# precompiled by its own target and reused by every target named in the
# top-level CMakeLists.txt (inkling_use_precompiled_mlir_headers).
# Clang accepts a precompiled header only where the optimization level, PIC,
# language options (-fopenmp, -fexceptions) and sanitizers match its own:
# the targets named share the directory-wide flags (their extra -D and -I
# are accepted), and the sanitizer build precompiles its own, with its
# flags.
option(INKLING_PRECOMPILED_HEADERS
  "Precompile LLVM's and MLIR's headers (cmake/pch/MLIRHeaders.h)" ON)

# Creates the target that owns the precompiled header. Call it where the
# directory-wide compile options are set, before the targets that reuse it.
function(inkling_add_precompiled_mlir_headers)
  if(NOT INKLING_PRECOMPILED_HEADERS)
    return()
  endif()
  add_library(InklingMLIRHeaders OBJECT
    ${PROJECT_SOURCE_DIR}/cmake/pch/MLIRHeaders.cpp)
  # The flags add_llvm_library and add_mlir_library give their targets
  # (-fno-exceptions and the like).
  llvm_update_compile_flags(InklingMLIRHeaders)
  target_precompile_headers(InklingMLIRHeaders PRIVATE
    ${PROJECT_SOURCE_DIR}/cmake/pch/MLIRHeaders.h)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(InklingMLIRHeaders PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-Xclang -fno-pch-timestamp>")
  endif()
endfunction()

# Compiles each of the named targets (for an MLIR library: its object
# library, obj.<name>, where it has one) with the precompiled header.
function(inkling_use_precompiled_mlir_headers)
  if(NOT INKLING_PRECOMPILED_HEADERS)
    return()
  endif()
  foreach(name ${ARGN})
    set(target ${name})
    if(TARGET obj.${name})
      set(target obj.${name})
    endif()
    if(NOT TARGET ${target})
      message(FATAL_ERROR "inkling_use_precompiled_mlir_headers: no target ${name}")
    endif()
    target_precompile_headers(${target} REUSE_FROM InklingMLIRHeaders)
  endforeach()
endfunction()
