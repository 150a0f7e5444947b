file(REMOVE_RECURSE
  "libssq.a"
  "libssq.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/ssq_static.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
