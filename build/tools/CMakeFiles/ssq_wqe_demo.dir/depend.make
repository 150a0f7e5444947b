# Empty dependencies file for ssq_wqe_demo.
# This may be replaced when dependencies are built.
