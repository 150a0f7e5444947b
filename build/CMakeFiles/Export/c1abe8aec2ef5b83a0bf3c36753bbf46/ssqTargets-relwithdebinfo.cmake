#----------------------------------------------------------------
# Generated CMake target import file for configuration "RelWithDebInfo".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "ssq::ssq" for configuration "RelWithDebInfo"
set_property(TARGET ssq::ssq APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(ssq::ssq PROPERTIES
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libssq.so.0.1.0"
  IMPORTED_SONAME_RELWITHDEBINFO "libssq.so.0"
  )

list(APPEND _cmake_import_check_targets ssq::ssq )
list(APPEND _cmake_import_check_files_for_ssq::ssq "${_IMPORT_PREFIX}/lib/libssq.so.0.1.0" )

# Import target "ssq::ssq_static" for configuration "RelWithDebInfo"
set_property(TARGET ssq::ssq_static APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(ssq::ssq_static PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELWITHDEBINFO "C"
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libssq.a"
  )

list(APPEND _cmake_import_check_targets ssq::ssq_static )
list(APPEND _cmake_import_check_files_for_ssq::ssq_static "${_IMPORT_PREFIX}/lib/libssq.a" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
