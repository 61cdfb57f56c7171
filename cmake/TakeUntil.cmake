# hybrid3d_take_until(TEXT SEPARATOR PIECE): cuts the text held in variable TEXT at the first
# SEPARATOR; PIECE gets what came before it and TEXT what comes after. Without a SEPARATOR, PIECE
# gets all of it and TEXT becomes empty. The scripts read text that a CMake list cannot hold
# (';' and '[' in deck help and tables) a piece at a time with it:
#
#   while(NOT rest STREQUAL "")
#     hybrid3d_take_until(rest "\n" line)
#     ...
#   endwhile()
function(hybrid3d_take_until text separator piece)
  string(FIND "${${text}}" "${separator}" _hybrid3d_at)
  if(_hybrid3d_at EQUAL -1)
    set(${piece} "${${text}}" PARENT_SCOPE)
    set(${text} "" PARENT_SCOPE)
    return()
  endif()
  string(SUBSTRING "${${text}}" 0 ${_hybrid3d_at} _hybrid3d_before)
  string(LENGTH "${separator}" _hybrid3d_length)
  math(EXPR _hybrid3d_at "${_hybrid3d_at} + ${_hybrid3d_length}")
  string(SUBSTRING "${${text}}" ${_hybrid3d_at} -1 _hybrid3d_after)
  set(${piece} "${_hybrid3d_before}" PARENT_SCOPE)
  set(${text} "${_hybrid3d_after}" PARENT_SCOPE)
endfunction()
