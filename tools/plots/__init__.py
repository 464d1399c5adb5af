"""relpos's figures (matplotlib), one module per kind of figure; tools/plot.py is the
command line."""
