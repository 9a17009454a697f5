"""mantis_fast: fast, exact perception-action kernels for computer-use agents on Linux/X11."""
