file(REMOVE_RECURSE
  "libssq.a"
)
