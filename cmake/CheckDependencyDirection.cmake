# Fails when a part of the code includes a part above it (docs/design.md section 2): the parts, from
# the bottom up, and a file of part P may include its own part and those on lower rows only.
# model and optim share a row and must not include each other.
#
#   cmake -DROOT=<source tree> -P cmake/CheckDependencyDirection.cmake
#
# Reads every header under include/hybrid3d/<part>/ and every source under src/<part>/; a folder
# that is no part is an error too, so a new part must be given its place here.
set(_rows core grid comm kernels engines layers model/optim data train plan generate deck apps)

if(NOT ROOT)
  message(FATAL_ERROR "CheckDependencyDirection: pass -DROOT=<source tree>")
endif()

get_filename_component(ROOT "${ROOT}" ABSOLUTE)
set(_i 0)
foreach(_entry IN LISTS _rows)
  string(REPLACE "/" ";" _names "${_entry}")
  foreach(_name IN LISTS _names)
    set(_row_of_${_name} ${_i})
  endforeach()
  math(EXPR _i "${_i} + 1")
endforeach()

set(_violations "")
set(_checked 0)
foreach(_base "include/hybrid3d" "src")
  file(GLOB_RECURSE _files RELATIVE "${ROOT}/${_base}" "${ROOT}/${_base}/*.hpp" "${ROOT}/${_base}/*.cpp")
  foreach(_file IN LISTS _files)
    if(NOT _file MATCHES "/")
      continue()  # include/hybrid3d/Config.hpp and the like: no part
    endif()
    string(REGEX REPLACE "/.*" "" _part "${_file}")
    if(NOT DEFINED _row_of_${_part})
      list(APPEND _violations "${_base}/${_file}: ${_part}/ is no part of docs/design.md section 2")
      continue()
    endif()
    math(EXPR _checked "${_checked} + 1")
    file(STRINGS "${ROOT}/${_base}/${_file}" _lines)
    set(_line 0)
    foreach(_text IN LISTS _lines)
      math(EXPR _line "${_line} + 1")
      if(_text MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]hybrid3d/([A-Za-z_]+)/")
        set(_to "${CMAKE_MATCH_1}")
        if(_to STREQUAL _part)
          continue()
        endif()
        if(NOT DEFINED _row_of_${_to})
          list(APPEND _violations "${_base}/${_file}:${_line}: ${_part} includes ${_to}, no part")
        elseif(NOT _row_of_${_to} LESS _row_of_${_part})
          list(APPEND _violations
               "${_base}/${_file}:${_line}: ${_part} includes ${_to}, which is not below it")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(_violations)
  list(LENGTH _violations _n)
  string(REPLACE ";" "\n  " _text "${_violations}")
  message(FATAL_ERROR "${_n} include(s) against the direction of docs/design.md section 2 "
                      "(core -> grid -> comm -> kernels -> engines -> layers -> model | optim -> "
                      "data -> train -> plan -> generate -> deck -> apps):\n  ${_text}")
endif()
message(STATUS "dependency direction: ${_checked} files, every include points down")
