# Fails when a C++ file of the tree is not as clang-format (with the tree's .clang-format) would
# write it, naming the files:
#
#   cmake -DROOT=<source tree> -DCLANG_FORMAT=<clang-format> -P cmake/CheckFormat.cmake
#
# Registered as a test only for the clang-format major version the tree was formatted with
# (unit_tests/CMakeLists.txt): other versions break some lines differently.
# To format after a change:  clang-format -i $(git ls-files '*.hpp' '*.cpp')
if(NOT ROOT OR NOT CLANG_FORMAT)
  message(FATAL_ERROR "CheckFormat: pass -DROOT=<source tree> -DCLANG_FORMAT=<program>")
endif()
file(GLOB_RECURSE _files "${ROOT}/include/*.hpp" "${ROOT}/src/*.hpp" "${ROOT}/src/*.cpp"
     "${ROOT}/unit_tests/*.hpp" "${ROOT}/unit_tests/*.cpp" "${ROOT}/perf_tests/*.hpp"
     "${ROOT}/perf_tests/*.cpp")
set(_unformatted "")
foreach(_file IN LISTS _files)
  execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror "${_file}"
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    file(RELATIVE_PATH _rel "${ROOT}" "${_file}")
    list(APPEND _unformatted "${_rel}")
  endif()
endforeach()
list(LENGTH _files _n)
if(_unformatted)
  list(LENGTH _unformatted _bad)
  string(REPLACE ";" "\n  " _text "${_unformatted}")
  message(FATAL_ERROR "${_bad} of ${_n} files differ from clang-format (.clang-format):\n  ${_text}")
endif()
message(STATUS "format: ${_n} files as clang-format writes them")
