# Fails when clang++ rejects a translation unit the build compiles: the tree is C++17 for every
# compiler family (GCC here, nvcc's host compiler, clang under hipcc), so a construct one of them
# accepts and another rejects (a lambda capturing a structured binding is C++20: GCC takes it,
# clang 14 refuses it) must not land.
#
#   cmake -DDATABASE=<build>/compile_commands.json -DCOMPILER=<the build's C++ compiler>
#         -DCLANG=<clang++> [-DSHARD=i -DSHARDS=n] [-DPRECOMPILE=<header>]
#         -P cmake/CheckClangSyntax.cmake
#
# Each entry of the compilation database is compiled again by CLANG with -fsyntax-only (parse and
# check, no code generated: the cheap part of a compile) and the entry's own flags: everything
# after COMPILER in its command, less the output and dependency-file options. Warnings (those the
# entry's flags ask for: -Wall -Wextra on ours) are errors, as hipcc's clang must build the tree
# without one; so are the C++20 extensions clang accepts with a warning only when asked
# (designated initialisers, `[=, this]`): nvcc warns about them and the tree promises C++17.
# SHARD of SHARDS (1 to n): the entries i, i + n, i + 2n, ... so that n tests split the work
# evenly and CTest runs them side by side. Prints, for each failing file, clang's first error.
# PRECOMPILE (Kokkos_Core.hpp in the tests): a header nearly every unit includes and that is much
# of parsing one, precompiled once per set of flags (the include paths aside) and loaded by the
# units with those flags; it takes a third off the check's CPU time. Loading it before a unit's own
# first line is safe here: no source of the tree defines a macro before its first #include.
if(NOT DATABASE OR NOT COMPILER)
  message(FATAL_ERROR "CheckClangSyntax: pass -DDATABASE=<compile_commands.json> -DCOMPILER=<c++>")
endif()
if(NOT CLANG)
  # The test is registered with SKIP_REGULAR_EXPRESSION on this line: reported as not run.
  message("clang_syntax: skipped, no clang++ found (Debian: apt-get install clang)")
  return()
endif()
if(NOT SHARDS)
  set(SHARD 1)
  set(SHARDS 1)
endif()
if(NOT EXISTS "${DATABASE}")
  message(FATAL_ERROR "CheckClangSyntax: ${DATABASE} is missing (configure with "
                      "CMAKE_EXPORT_COMPILE_COMMANDS=ON and a Makefile or Ninja generator)")
endif()

get_filename_component(_work "${DATABASE}" DIRECTORY)
set(_work "${_work}/clang_syntax/${SHARD}of${SHARDS}")  # this shard's precompiled headers
if(PRECOMPILE)
  file(MAKE_DIRECTORY "${_work}")
  file(WRITE "${_work}/precompile.hpp" "#include <${PRECOMPILE}>\n")
endif()

file(READ "${DATABASE}" _db)
string(JSON _entries LENGTH "${_db}")
set(_checked 0)
set(_failed 0)
set(_report "")
math(EXPR _i "${SHARD} - 1")
while(_i LESS _entries)
  # One parse of the whole database per entry; the fields come from the entry alone.
  string(JSON _entry GET "${_db}" ${_i})
  math(EXPR _i "${_i} + ${SHARDS}")
  string(JSON _dir GET "${_entry}" directory)
  string(JSON _file GET "${_entry}" file)
  if(NOT _file MATCHES "\\.(cpp|cc|cxx)$")
    continue()  # C sources (CMake's probes, none of ours)
  endif()
  string(JSON _command ERROR_VARIABLE _no_command GET "${_entry}" command)
  if(_no_command)
    # The other form of an entry: the command already split into "arguments".
    string(JSON _n LENGTH "${_entry}" arguments)
    set(_words "")
    math(EXPR _last "${_n} - 1")
    foreach(_k RANGE ${_last})
      string(JSON _word GET "${_entry}" arguments ${_k})
      list(APPEND _words "${_word}")
    endforeach()
  else()
    separate_arguments(_words UNIX_COMMAND "${_command}")
  endif()

  # The flags: after the compiler (a launcher such as ccache may come first), without the
  # output (-o x), the compile-only -c, the dependency files (-MD, -MT x, -MF x) and the source.
  list(FIND _words "${COMPILER}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "CheckClangSyntax: ${_file}: the command does not run ${COMPILER}")
  endif()
  math(EXPR _at "${_at} + 1")
  list(SUBLIST _words ${_at} -1 _words)
  set(_flags "")
  set(_skip_next FALSE)
  foreach(_word IN LISTS _words)
    if(_skip_next)
      set(_skip_next FALSE)
    elseif(_word MATCHES "^-(o|MT|MF|MQ)$")
      set(_skip_next TRUE)
    elseif(_word MATCHES "^-(c|MD|MMD)$" OR _word STREQUAL _file)
    else()
      list(APPEND _flags "${_word}")
    endif()
  endforeach()

  set(_pch "")
  if(PRECOMPILE)
    # The flags that must match between a precompiled header and its user: all but the paths.
    string(REGEX REPLACE "(^|;)-(I|isystem);?[^;]*" "" _key "${_flags}")
    string(MD5 _key "${_key}")
    if(NOT DEFINED _pch_${_key})
      set(_pch_${_key} "${_work}/${_key}.pch")
      execute_process(COMMAND "${CLANG}" ${_flags} -x c++-header "${_work}/precompile.hpp"
                              -o "${_pch_${_key}}"
                      WORKING_DIRECTORY "${_dir}" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(NOT _rc EQUAL 0)
        set(_pch_${_key} "")  # the header is not on these paths: such units parse it themselves
      endif()
    endif()
    if(_pch_${_key})
      set(_pch -include-pch "${_pch_${_key}}")
    endif()
  endif()

  execute_process(
    COMMAND "${CLANG}" ${_flags} ${_pch} -fsyntax-only -Werror -Wc++20-extensions -Wc++2b-extensions
            "${_file}"
    WORKING_DIRECTORY "${_dir}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  math(EXPR _checked "${_checked} + 1")
  if(NOT _rc EQUAL 0)
    string(REGEX MATCH "[^\n]*error:[^\n]*" _first "${_err}")
    if(NOT _first)
      set(_first "clang++ exited with ${_rc}: ${_err}")
    endif()
    math(EXPR _failed "${_failed} + 1")
    string(APPEND _report "\n  ${_first}")  # not a list: clang's messages hold semicolons
  endif()
endwhile()
file(REMOVE_RECURSE "${_work}")  # some 16 MB a precompiled header, 100 MB a shard

if(_failed)
  message(FATAL_ERROR "${_failed} of ${_checked} translation units rejected by ${CLANG} "
                      "(shard ${SHARD} of ${SHARDS}):${_report}")
endif()
message(STATUS "${_checked} translation units accepted by ${CLANG} (shard ${SHARD} of ${SHARDS})")
