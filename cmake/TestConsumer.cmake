# The inkling-consumer test (cmake -P): install the build into a fresh
# prefix, configure examples/consumer against the installed package only
# (-DInkling_DIR=<prefix>/lib/cmake/inkling; MLIR through the package's
# recorded MLIR_DIR), build it and run its two programs.
#
#   -DINKLING_BUILD_DIR=  -DINKLING_SOURCE_DIR=  -DINKLING_PREFIX=
#   -DINKLING_GENERATOR=  [-DCMAKE_C_COMPILER= -DCMAKE_CXX_COMPILER=]

foreach(var INKLING_BUILD_DIR INKLING_SOURCE_DIR INKLING_PREFIX)
  if(NOT ${var})
    message(FATAL_ERROR "TestConsumer.cmake needs -D${var}=...")
  endif()
endforeach()
if(NOT INKLING_GENERATOR)
  set(INKLING_GENERATOR Ninja)
endif()

function(step name)
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "inkling-consumer: ${name} failed (${rc}): ${ARGN}")
  endif()
  message(STATUS "inkling-consumer: ${name}: ok (${seconds} s)")
endfunction()

# A fresh prefix every run: only what `cmake --install` puts there is used.
file(REMOVE_RECURSE "${INKLING_PREFIX}")
step("install" ${CMAKE_COMMAND} --install "${INKLING_BUILD_DIR}"
  --prefix "${INKLING_PREFIX}")

set(consumer_build "${INKLING_BUILD_DIR}/consumer-build")
# A fresh configure too (the object files stay, so ccache/ninja keep it cheap).
file(REMOVE "${consumer_build}/CMakeCache.txt")
set(compilers)
if(CMAKE_C_COMPILER)
  list(APPEND compilers -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER})
endif()
if(CMAKE_CXX_COMPILER)
  list(APPEND compilers -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
endif()
step("configure" ${CMAKE_COMMAND}
  -S "${INKLING_SOURCE_DIR}/examples/consumer" -B "${consumer_build}"
  -G "${INKLING_GENERATOR}" -DCMAKE_BUILD_TYPE=Release ${compilers}
  "-DInkling_DIR=${INKLING_PREFIX}/lib/cmake/inkling")
step("build" ${CMAKE_COMMAND} --build "${consumer_build}" --parallel 2)
step("run inkling-consumer" "${consumer_build}/inkling-consumer")
step("run inkling-consumer-c" "${consumer_build}/inkling-consumer-c")
