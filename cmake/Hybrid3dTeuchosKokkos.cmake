# Refuses a Teuchos that brings its own Kokkos beside the one hybrid3d is built with.
#
# Why two Kokkos runtimes appear: Trilinos's Teuchos core library links Trilinos's Kokkos core
# (Debian 12: libtrilinos_teuchoscore.so NEEDs libtrilinos_kokkoscore.so.13.2, Kokkos 3.4, for
# the profiling regions of Teuchos::Time / StackedTimer and Kokkos::finalize_all in
# ~GlobalMPISession), and TeuchosConfig.cmake lists trilinos_kokkoscore in Teuchos_LIBRARIES.
# A program built against another Kokkos (4.x) that links that Teuchos therefore loads both
# Kokkos libraries. Kokkos's symbols carry no version (no inline version namespace, no ELF symbol
# versions), so every name the two define alike binds to whichever the dynamic loader meets first,
# including the calls each library makes into itself from its static initialisers: whether that
# crashes depends on the two versions and on how each was linked (seen: std::bad_alloc in
# SharedAllocationRecord::get_label at start-up). No Debian Teuchos library is free of Kokkos, so
# the only safe mix is none: the deck front end needs a Teuchos built on hybrid3d's own Kokkos
# (a Trilinos built with that Kokkos), or no decks (HYBRID3D_ENABLE_DECKS=OFF).
include_guard(GLOBAL)

# The Kokkos core library files that the given targets or library names link, followed through
# INTERFACE_LINK_LIBRARIES, as real paths (every imported configuration).
function(hybrid3d_kokkos_core_files out)
  set(_todo ${ARGN})
  set(_seen)
  set(_files)
  while(_todo)
    list(POP_FRONT _todo _item)
    if(_item IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen "${_item}")
    if(TARGET "${_item}")
      get_target_property(_alias "${_item}" ALIASED_TARGET)
      if(_alias)
        list(APPEND _todo "${_alias}")
        continue()
      endif()
      set(_locs)
      get_target_property(_imported "${_item}" IMPORTED)
      get_target_property(_type "${_item}" TYPE)
      if(_imported AND NOT _type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(_configs "${_item}" IMPORTED_CONFIGURATIONS)
        foreach(_c IN LISTS _configs)
          string(TOUPPER "${_c}" _c)
          get_target_property(_l "${_item}" IMPORTED_LOCATION_${_c})
          list(APPEND _locs "${_l}")
        endforeach()
        get_target_property(_l "${_item}" IMPORTED_LOCATION)
        list(APPEND _locs "${_l}")
      endif()
      foreach(_l IN LISTS _locs)
        get_filename_component(_name "${_l}" NAME)
        if(_l AND _name MATCHES "kokkoscore")
          get_filename_component(_real "${_l}" REALPATH)
          list(APPEND _files "${_real}")
        endif()
      endforeach()
      get_target_property(_links "${_item}" INTERFACE_LINK_LIBRARIES)
      if(_links)
        list(APPEND _todo ${_links})
      endif()
    elseif(IS_ABSOLUTE "${_item}" AND "${_item}" MATCHES "kokkoscore[^/]*$")
      get_filename_component(_real "${_item}" REALPATH)
      list(APPEND _files "${_real}")
    endif()
  endwhile()
  list(REMOVE_DUPLICATES _files)
  set(${out} "${_files}" PARENT_SCOPE)
endfunction()

# Stops the configuration when TEUCHOS_LIBS link a Kokkos core that KOKKOS_LIBS do not.
#   hybrid3d_refuse_teuchos_kokkos_mix(KOKKOS_LIBS <targets...> TEUCHOS_LIBS <targets...>
#                                      [RESULT <var>])
# With RESULT the verdict (empty when no mix, else the message) is returned instead.
function(hybrid3d_refuse_teuchos_kokkos_mix)
  cmake_parse_arguments(A "" "RESULT" "KOKKOS_LIBS;TEUCHOS_LIBS" ${ARGN})
  hybrid3d_kokkos_core_files(_ours ${A_KOKKOS_LIBS})
  hybrid3d_kokkos_core_files(_theirs ${A_TEUCHOS_LIBS})
  set(_foreign ${_theirs})
  if(_ours)
    list(REMOVE_ITEM _foreign ${_ours})
  endif()
  set(_message "")
  if(_foreign)
    string(JOIN ", " _f ${_foreign})
    string(JOIN ", " _o ${_ours})
    string(CONCAT _message "hybrid3d: Teuchos (${Teuchos_DIR}) links another Kokkos (${_f}) "
                  "than hybrid3d's (${_o}, Kokkos_DIR=${Kokkos_DIR}): two Kokkos runtimes in "
                  "one program clash. Use a Teuchos from a Trilinos built with this Kokkos "
                  "(-DTeuchos_ROOT=...) or configure with -DHYBRID3D_ENABLE_DECKS=OFF.")
  endif()
  if(A_RESULT)
    set(${A_RESULT} "${_message}" PARENT_SCOPE)
  elseif(_message)
    message(FATAL_ERROR "${_message}")
  endif()
endfunction()
