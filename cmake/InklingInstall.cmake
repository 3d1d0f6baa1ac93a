# Installation and the CMake package (find_package(Inkling CONFIG)).
#
#   cmake --install build --prefix <prefix>
#
# installs, under <prefix>:
#   include/inkling/...        compiler headers, generated *.h.inc, Version.h
#   include/inkling/Runtime/   the runtime's C++ headers and inkling_runtime.h
#   include/inkling-c/         the MLIR-C-API-style entry points
#   lib/lib*.a                 dialect, passes, conversion, pipelines, GPU
#                              target, embedding API, C API, runtime
#   lib/libinkling_runtime.so  the runtime's C API
#   lib/libinkling_layer.so    compile and call a layer (inkling-c/Layer.h)
#   lib/python3/dist-packages/inkling/   the Python package (python/)
#   bin/inkling-opt, bin/inkling-run
#   lib/cmake/inkling/         InklingConfig.cmake, InklingConfigVersion.cmake,
#                              InklingTargets*.cmake (namespace Inkling::)
#
# Included at the end of the top-level CMakeLists.txt, after every target.
# The LLVM/MLIR helpers install nothing here (LLVM_INSTALL_TOOLCHAIN_ONLY):
# every target is installed once, into the InklingTargets export set.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(INKLING_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/inkling" CACHE
  STRING "Where the Inkling CMake package goes, under the prefix")
set(INKLING_MLIR_VERSION "${LLVM_PACKAGE_VERSION}")

# Umbrella: everything a compiler links to use and lower sconv IR.
add_library(InklingSConv INTERFACE)
add_library(Inkling::SConv ALIAS InklingSConv)
target_link_libraries(InklingSConv INTERFACE
  MLIRSConvDialect
  MLIRSConvTransforms
  InklingSConvToLoops
  InklingPipelines
  InklingNVVMPipeline
  InklingTargetCPU
  InklingTargetGPU
  InklingEmbed
)
target_compile_features(InklingSConv INTERFACE cxx_std_17)

# target -> exported name (Inkling::<name>).
set(INKLING_EXPORTED_LIBRARIES
  MLIRSConvDialect:SConvDialect
  MLIRSConvTransforms:SConvTransforms
  InklingSConvToLoops:SConvToLoops
  InklingPipelines:Pipelines
  InklingNVVMPipeline:NVVMPipeline
  InklingTargetCPU:TargetCPU
  InklingTargetGPU:TargetGPU
  InklingEmbed:Embed
  InklingCAPI:CAPI
  InklingSConv:SConv
  InklingRuntime:Runtime
  InklingRuntimeC:RuntimeC
  InklingRuntimeCuda:RuntimeCuda
)
set(INKLING_INSTALLED_TARGETS)
foreach(entry IN LISTS INKLING_EXPORTED_LIBRARIES)
  string(REPLACE ":" ";" pair "${entry}")
  list(GET pair 0 target)
  list(GET pair 1 name)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "cmake/InklingInstall.cmake: no target ${target}")
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  # The MLIR libraries take their include paths from include_directories();
  # installed, every target finds the headers under <prefix>/include.
  target_include_directories(${target} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  list(APPEND INKLING_INSTALLED_TARGETS ${target})
endforeach()
if(INKLING_SANITIZE)
  # Instrumented static libraries need the sanitizer runtimes at link time.
  target_link_options(InklingSConv INTERFACE -fsanitize=address,undefined)
endif()

install(TARGETS ${INKLING_INSTALLED_TARGETS}
  EXPORT InklingTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
)
# Tools (Inkling::inkling-opt, Inkling::inkling-run as imported executables).
foreach(tool inkling-opt inkling-run)
  if(TARGET ${tool})
    # Installed, they find libMLIR.so (and libLLVM.so) where the build did.
    set_target_properties(${tool} PROPERTIES
      INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
    install(TARGETS ${tool} EXPORT InklingTargets
      RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# Headers: the sources', the generated ones (ODS *.h.inc, Version.h), the
# runtime's and the C API's.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/inkling
                  ${PROJECT_SOURCE_DIR}/include/inkling-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/inkling
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.h.inc"
  PATTERN "CMakeFiles" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/inkling
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

install(EXPORT InklingTargets
  NAMESPACE Inkling::
  DESTINATION ${INKLING_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/InklingConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lib/cmake/inkling/InklingConfig.cmake
  INSTALL_DESTINATION ${INKLING_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor release may break the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/lib/cmake/inkling/InklingConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/lib/cmake/inkling/InklingConfig.cmake
  ${PROJECT_BINARY_DIR}/lib/cmake/inkling/InklingConfigVersion.cmake
  DESTINATION ${INKLING_INSTALL_CMAKEDIR})

# ctest: install into a temporary prefix, then configure, build and run
# examples/consumer against it (and check README's copy of its code). Not in
# the sanitizer stage: the same test, twice the build, nothing new checked.
if(NOT INKLING_SANITIZE)
  set(INKLING_CONSUMER_PREFIX ${PROJECT_BINARY_DIR}/consumer-prefix)
  add_test(NAME inkling-consumer
    COMMAND ${CMAKE_COMMAND}
      -DINKLING_BUILD_DIR=${PROJECT_BINARY_DIR}
      -DINKLING_SOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DINKLING_PREFIX=${INKLING_CONSUMER_PREFIX}
      -DINKLING_GENERATOR=${CMAKE_GENERATOR}
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -P ${PROJECT_SOURCE_DIR}/cmake/TestConsumer.cmake)
  set_tests_properties(inkling-consumer PROPERTIES
    LABELS "package" TIMEOUT 600
    FIXTURES_SETUP inkling-installed)
  # A consumer whose MLIR is not the one Inkling was built against gets a
  # clear configure error (a fake MLIR 21 package stands in for it).
  add_test(NAME inkling-package-mlir-mismatch
    COMMAND ${CMAKE_COMMAND}
      -S ${PROJECT_SOURCE_DIR}/cmake/tests/mlir-mismatch
      -B ${PROJECT_BINARY_DIR}/mlir-mismatch-build
      -DInkling_DIR=${INKLING_CONSUMER_PREFIX}/${INKLING_INSTALL_CMAKEDIR}
      -DMLIR_DIR=${PROJECT_SOURCE_DIR}/cmake/tests/fake-mlir-21)
  set_tests_properties(inkling-package-mlir-mismatch PROPERTIES
    LABELS "package" FIXTURES_REQUIRED inkling-installed
    PASS_REGULAR_EXPRESSION
      "built[ \n]+against[ \n]+MLIR[ \n]+${INKLING_MLIR_VERSION}.*found[ \n]+MLIR[ \n]+21\\.1\\.0")
  add_test(NAME inkling-readme-snippet
    COMMAND ${CMAKE_COMMAND} -DINKLING_SOURCE_DIR=${PROJECT_SOURCE_DIR}
      -P ${PROJECT_SOURCE_DIR}/cmake/CheckReadmeSnippet.cmake)
  set_tests_properties(inkling-readme-snippet PROPERTIES LABELS "package")
endif()
