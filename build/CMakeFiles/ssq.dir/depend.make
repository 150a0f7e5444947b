# Empty dependencies file for ssq.
# This may be replaced when dependencies are built.
