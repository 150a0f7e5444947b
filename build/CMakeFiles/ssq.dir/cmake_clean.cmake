file(REMOVE_RECURSE
  "libssq.pdb"
  "libssq.so"
  "libssq.so.0"
  "libssq.so.0.1.0"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/ssq.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
