# Empty dependencies file for ssq_objs.
# This may be replaced when dependencies are built.
