# Empty compiler generated dependencies file for ssq.
# This may be replaced when dependencies are built.
