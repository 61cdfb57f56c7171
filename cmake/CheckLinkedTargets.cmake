# Every target links only hybrid3d libraries this configuration builds.
#
# An option that leaves a library out (HYBRID3D_ENABLE_DECKS=OFF: no hybrid3d_deck) must leave
# out every link to it too. CMake takes a plain name that is not a target for a system library
# (-lhybrid3d_deck), so such a link is only found by the linker, late in a full build. This check
# finds it at configure time, naming the target, its folder, the library and the option.
#
#   hybrid3d_optional_library(NAME OPTION)  where an option may leave library NAME out
#   hybrid3d_check_linked_targets()         at the end of the top-level CMakeLists.txt: stops
#                                           the configure when a target links a name that starts
#                                           with "hybrid3d" and is no target here
# The test link_names.fails_on_a_removed_library configures a planted project that breaks it.
include_guard(GLOBAL)

function(hybrid3d_optional_library name option)
  set_property(GLOBAL APPEND PROPERTY HYBRID3D_OPTIONAL_LIBRARIES "${name}=${option}")
endfunction()

# The targets of `dir` and of every folder below it.
function(_hybrid3d_targets_below dir out_var)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _hybrid3d_targets_below("${sub}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out_var} "${targets}" PARENT_SCOPE)
endfunction()

# The option that leaves `name` out, as set here, or what else it may be.
function(_hybrid3d_option_of name out_var)
  get_property(optional GLOBAL PROPERTY HYBRID3D_OPTIONAL_LIBRARIES)
  set(option "")
  foreach(entry IN LISTS optional)
    if(entry MATCHES "^${name}=(.*)$")
      set(option "${CMAKE_MATCH_1}=${${CMAKE_MATCH_1}}")
    endif()
  endforeach()
  if(option STREQUAL "")
    set(option "no option declares it: a misspelt name?")
  endif()
  set(${out_var} "${option}" PARENT_SCOPE)
endfunction()

function(hybrid3d_check_linked_targets)
  _hybrid3d_targets_below("${CMAKE_SOURCE_DIR}" targets)
  set(problems "")
  set(count 0)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    set(items "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${target} LINK_LIBRARIES)
      if(direct)
        list(APPEND items ${direct})
      endif()
    endif()
    get_target_property(interface ${target} INTERFACE_LINK_LIBRARIES)
    if(interface)
      list(APPEND items ${interface})
    endif()
    foreach(item IN LISTS items)
      # PRIVATE links of a static library reach its interface as $<LINK_ONLY:name>.
      string(REGEX REPLACE "^\\$<LINK_ONLY:([^>]*)>$" "\\1" item "${item}")
      if(item MATCHES "^hybrid3d" AND NOT TARGET "${item}")
        _hybrid3d_option_of("${item}" option)
        get_target_property(folder ${target} SOURCE_DIR)
        file(RELATIVE_PATH folder "${CMAKE_SOURCE_DIR}" "${folder}")
        string(APPEND problems "\n  ${folder}: ${target} links ${item}, which this "
                               "configuration does not build (${option})")
        math(EXPR count "${count} + 1")
      endif()
    endforeach()
  endforeach()
  if(count GREATER 0)
    message(FATAL_ERROR "${count} link(s) to a library an option left out; link it only where "
                        "that option is on:${problems}")
  endif()
endfunction()
