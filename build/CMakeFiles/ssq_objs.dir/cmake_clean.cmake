file(REMOVE_RECURSE
  "CMakeFiles/ssq_objs.dir/src/dv/dump.c.o"
  "CMakeFiles/ssq_objs.dir/src/dv/dump.c.o.d"
  "CMakeFiles/ssq_objs.dir/src/dv/queue_init.c.o"
  "CMakeFiles/ssq_objs.dir/src/dv/queue_init.c.o.d"
  "CMakeFiles/ssq_objs.dir/src/dv/wr_strerror.c.o"
  "CMakeFiles/ssq_objs.dir/src/dv/wr_strerror.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/ssq_objs.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
