# Writes docs/decks.md, the reference of every training-deck key, from what `hybrid3d deck-help`
# prints (the schema `train` and `check` validate decks against), so the page cannot drift from
# the code:
#
#   cmake -DHYBRID3D=<build>/bin/hybrid3d -DOUTPUT=docs/decks.md -P cmake/GenerateDeckDocs.cmake
#
# With -DCHECK=<committed docs/decks.md> it writes OUTPUT (a scratch file) and fails, naming the
# first line that differs, when CHECK is not the same text: the test docs.decks_md runs it so.
# -DMPIEXEC=<mpiexec> starts the command on one rank through it (as the tests do); without it the
# command runs alone, as a singleton MPI process.
#
# deck-help prints one line per key, "  PATH TYPE CONSTRAINTS" (PATH left-justified in a column
# of 36 characters, TYPE one of Teuchos's XML type names) and the key's meaning on the next line,
# indented by 6. CONSTRAINTS is "required" or "default VALUE", then "; " and the range of a
# number (">= A, <= B") and/or the choices of a string ("a | b | c"), as src/apps/deck/DeckHelp.cpp
# writes them.
cmake_minimum_required(VERSION 3.20)  # policies of the project, also in script mode
include("${CMAKE_CURRENT_LIST_DIR}/TakeUntil.cmake")
if(NOT HYBRID3D OR NOT OUTPUT)
  message(FATAL_ERROR "GenerateDeckDocs: pass -DHYBRID3D=<hybrid3d command> -DOUTPUT=<file>")
endif()

set(_command "${HYBRID3D}" deck-help)
if(MPIEXEC)
  set(_command "${MPIEXEC}" -n 1 ${_command})
endif()
execute_process(COMMAND ${_command} RESULT_VARIABLE _rc OUTPUT_VARIABLE _help ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "GenerateDeckDocs: '${_command}' failed (${_rc}):\n${_err}")
endif()

# Text for one table cell: a '|' would end the cell.
function(_h3d_cell out text)
  string(REPLACE "|" "\\|" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# "a | b | c" as `a`, `b`, `c` (a list's "or type string: a" keeps its words).
function(_h3d_choices out text)
  set(_prefix "")
  if(text MATCHES "^or type string: (.*)$")
    set(_prefix "or the string ")
    set(text "${CMAKE_MATCH_1}")
  endif()
  string(REPLACE " | " "`, `" text "${text}")
  set(${out} "${_prefix}`${text}`" PARENT_SCOPE)
endfunction()

# One key line and its meaning as a table row, appended to the section's rows.
set(_types "int|double|string|bool|Array\\(double\\)")
function(_h3d_row out line meaning)
  # The type is the first type name after the path column (a longer path pushes it right).
  string(SUBSTRING "${line}" 37 -1 _tail)
  if(NOT _tail MATCHES " (${_types})( |$)")
    message(FATAL_ERROR "GenerateDeckDocs: no type in deck-help's line '${line}'")
  endif()
  set(_type "${CMAKE_MATCH_1}")
  string(FIND "${_tail}" "${CMAKE_MATCH_0}" _at)
  math(EXPR _path_length "35 + ${_at}")
  string(SUBSTRING "${line}" 2 ${_path_length} _path)
  string(STRIP "${_path}" _path)
  string(LENGTH "${CMAKE_MATCH_0}" _n)
  math(EXPR _at "${_at} + ${_n}")
  string(SUBSTRING "${_tail}" ${_at} -1 _constraints)
  string(STRIP "${_constraints}" _constraints)

  # "required" or "default VALUE" first, then range and choices, separated by "; ".
  set(_default "")
  set(_allowed "")
  set(_rest "${_constraints}")
  while(NOT _rest STREQUAL "")
    hybrid3d_take_until(_rest "; " _part)
    if(_part STREQUAL "required")
      set(_default "**required**")
    elseif(_part MATCHES "^default (.*)$")
      set(_default "`${CMAKE_MATCH_1}`")
    elseif(_part MATCHES "^[<>]= ")
      string(APPEND _allowed "${_part}")
    else()
      _h3d_choices(_part "${_part}")
      if(NOT _allowed STREQUAL "")
        string(APPEND _allowed "; ")
      endif()
      string(APPEND _allowed "${_part}")
    endif()
  endwhile()
  foreach(_v _path _default _allowed meaning)
    _h3d_cell(${_v} "${${_v}}")
  endforeach()
  set(${out} "| `${_path}` | ${_type} | ${_default} | ${_allowed} | ${meaning} |" PARENT_SCOPE)
endfunction()

# The lines of the command's output, one at a time (no CMake lists: the text holds ';' and '[').
set(_sections "")  # section names in order of first appearance
set(_pending "")   # the key line waiting for its meaning
set(_keys 0)
set(_rest "${_help}")
while(NOT _rest STREQUAL "")
  hybrid3d_take_until(_rest "\n" _line)
  set(_meaning "")
  if(_line MATCHES "^      (.*)$")
    set(_meaning "${CMAKE_MATCH_1}")
  elseif(NOT _line MATCHES "^  [^ ]")
    continue()  # the title line
  endif()
  # A key line closes the key before it (a key without a meaning line has an empty one).
  if(NOT _pending STREQUAL "")
    string(REGEX MATCH "^  [^/]+" _section "${_pending}")
    string(STRIP "${_section}" _section)
    string(MAKE_C_IDENTIFIER "${_section}" _id)
    if(NOT DEFINED _rows_${_id})
      set(_rows_${_id} "")
      string(APPEND _sections "${_section}\n")
    endif()
    _h3d_row(_row "${_pending}" "${_meaning}")
    string(APPEND _rows_${_id} "${_row}\n")
    math(EXPR _keys "${_keys} + 1")
    set(_pending "")
  endif()
  if(_meaning STREQUAL "")
    set(_pending "${_line}")
  endif()
endwhile()
if(NOT _pending STREQUAL "")
  message(FATAL_ERROR "GenerateDeckDocs: the last key has no meaning line: '${_pending}'")
endif()
if(_keys EQUAL 0)
  message(FATAL_ERROR "GenerateDeckDocs: no keys in the output of '${_command}':\n${_help}")
endif()

string(CONCAT _page
  "# Training decks: every key\n\n"
  "<!-- Generated by cmake/GenerateDeckDocs.cmake from `hybrid3d deck-help`: do not edit. -->\n"
  "This page is generated from the schema that `hybrid3d train` and `hybrid3d check` validate a "
  "deck against (`hybrid3d deck-help` prints it); do not edit it by hand. After changing the "
  "schema, regenerate it from a build:\n\n"
  "```sh\n"
  "cmake -DHYBRID3D=build/bin/hybrid3d -DOUTPUT=docs/decks.md -P cmake/GenerateDeckDocs.cmake\n"
  "```\n\n"
  "The test `docs.decks_md` fails, naming the first differing line, while the committed page "
  "differs from what the command prints.\n\n"
  "A deck is a Teuchos XML file: `<ParameterList name=\"hybrid3d\">` holding one sublist per "
  "section below, and a key `Section/name` is the parameter `name` of the sublist `Section` "
  "(`/` separates sublists). The type column is the parameter's XML `type` attribute, e.g.\n"
  "`<ParameterList name=\"Model\"><Parameter name=\"precision\" type=\"string\" "
  "value=\"bfloat16\"/></ParameterList>`.\n"
  "A key with a default may be left out; a key without one and not required is off when left "
  "out. The decks under `inputs/` are complete examples.\n\n"
  "${_keys} keys in these sections:\n\n")
string(REPLACE "\n" ";" _section_list "${_sections}")
foreach(_section IN LISTS _section_list)
  if(NOT _section STREQUAL "")
    string(TOLOWER "${_section}" _anchor)
    string(REPLACE " " "-" _anchor "${_anchor}")
    string(APPEND _page "- [${_section}](#${_anchor})\n")
  endif()
endforeach()
foreach(_section IN LISTS _section_list)
  if(NOT _section STREQUAL "")
    string(MAKE_C_IDENTIFIER "${_section}" _id)
    string(APPEND _page "\n## ${_section}\n\n"
           "| key | type | default | allowed values | meaning |\n"
           "|---|---|---|---|---|\n"
           "${_rows_${_id}}")
  endif()
endforeach()
file(WRITE "${OUTPUT}" "${_page}")

if(NOT CHECK)
  message(STATUS "GenerateDeckDocs: ${_keys} keys written to ${OUTPUT}")
  return()
endif()

# The first line where CHECK and the text just written differ.
file(READ "${CHECK}" _committed)
if(_committed STREQUAL _page)
  message(STATUS "GenerateDeckDocs: ${CHECK} holds the ${_keys} keys deck-help prints")
  return()
endif()
set(_number 0)
set(_a "${_committed}")
set(_b "${_page}")
while(TRUE)
  math(EXPR _number "${_number} + 1")
  if(_a STREQUAL "" AND _b STREQUAL "")
    set(_a_line "(the two differ only in the final newline)")
    set(_b_line "")
    break()
  endif()
  foreach(_v _a _b)
    if(${_v} STREQUAL "")
      set(${_v}_line "(end of file)")
    else()
      hybrid3d_take_until(${_v} "\n" ${_v}_line)
    endif()
  endforeach()
  if(NOT _a_line STREQUAL _b_line)
    break()
  endif()
endwhile()
message(FATAL_ERROR "${CHECK}:${_number}: differs from what `hybrid3d deck-help` prints\n"
                    "  committed: ${_a_line}\n  generated: ${_b_line}\n"
                    "Regenerate it from the source tree (the generated page is ${OUTPUT}):\n"
                    "  cmake -DHYBRID3D=${HYBRID3D} -DOUTPUT=docs/decks.md "
                    "-P cmake/GenerateDeckDocs.cmake")
