
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/dv/dump.c" "CMakeFiles/ssq_objs.dir/src/dv/dump.c.o" "gcc" "CMakeFiles/ssq_objs.dir/src/dv/dump.c.o.d"
  "/work/main/src/dv/queue_init.c" "CMakeFiles/ssq_objs.dir/src/dv/queue_init.c.o" "gcc" "CMakeFiles/ssq_objs.dir/src/dv/queue_init.c.o.d"
  "/work/main/src/dv/wr_strerror.c" "CMakeFiles/ssq_objs.dir/src/dv/wr_strerror.c.o" "gcc" "CMakeFiles/ssq_objs.dir/src/dv/wr_strerror.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
