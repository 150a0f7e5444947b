# Empty compiler generated dependencies file for ssq_static.
# This may be replaced when dependencies are built.
