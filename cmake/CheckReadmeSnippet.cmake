# The inkling-readme-snippet test (cmake -P -DINKLING_SOURCE_DIR=...):
# README's "Use it from your compiler" CMake lines and C++ snippet must be
# the marked regions of examples/consumer/CMakeLists.txt and consumer.cpp,
# character for character, so the README shows code that CI builds and runs.

function(region file begin end out)
  file(READ "${file}" text)
  string(FIND "${text}" "${begin}" first)
  if(first EQUAL -1)
    message(FATAL_ERROR "${file}: no '${begin}'")
  endif()
  string(LENGTH "${begin}" length)
  math(EXPR first "${first} + ${length}")
  string(SUBSTRING "${text}" ${first} -1 rest)
  string(FIND "${rest}" "${end}" last)
  if(last EQUAL -1)
    message(FATAL_ERROR "${file}: no '${end}' after '${begin}'")
  endif()
  string(SUBSTRING "${rest}" 0 ${last} body)
  set(${out} "${body}" PARENT_SCOPE)
endfunction()

set(consumer "${INKLING_SOURCE_DIR}/examples/consumer")
set(readme "${INKLING_SOURCE_DIR}/README.md")
# In the sources, the region is whole lines between the marker lines.
region("${consumer}/CMakeLists.txt" "# [readme-cmake-begin]\n"
  "# [readme-cmake-end]" cmake_source)
region("${consumer}/consumer.cpp" "// [readme-snippet-begin]\n"
  "  // [readme-snippet-end]" cpp_source)
# In the README, the fenced block after the marker comment.
region("${readme}" "<!-- examples/consumer/CMakeLists.txt -->\n```cmake\n"
  "```\n<!-- end -->" cmake_readme)
region("${readme}" "<!-- examples/consumer/consumer.cpp -->\n```cpp\n"
  "```\n<!-- end -->" cpp_readme)

set(failed FALSE)
if(NOT cmake_source STREQUAL cmake_readme)
  message(SEND_ERROR "README's CMake lines differ from examples/consumer/"
    "CMakeLists.txt's readme-cmake region:\n--- README\n${cmake_readme}"
    "--- CMakeLists.txt\n${cmake_source}")
  set(failed TRUE)
endif()
if(NOT cpp_source STREQUAL cpp_readme)
  message(SEND_ERROR "README's C++ snippet differs from examples/consumer/"
    "consumer.cpp's readme-snippet region:\n--- README\n${cpp_readme}"
    "--- consumer.cpp\n${cpp_source}")
  set(failed TRUE)
endif()
if(NOT failed)
  message(STATUS "README snippets match examples/consumer")
endif()
