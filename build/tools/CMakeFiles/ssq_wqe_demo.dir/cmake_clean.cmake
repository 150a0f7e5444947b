file(REMOVE_RECURSE
  "CMakeFiles/ssq_wqe_demo.dir/ssq_wqe_demo.c.o"
  "CMakeFiles/ssq_wqe_demo.dir/ssq_wqe_demo.c.o.d"
  "ssq_wqe_demo"
  "ssq_wqe_demo.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/ssq_wqe_demo.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
