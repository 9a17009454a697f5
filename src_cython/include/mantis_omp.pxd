# The shared OpenMP helper (mantis_omp.h), cimported by every kernel that sizes a thread team.

cdef extern from "mantis_omp.h":
    int mantis_omp_max_threads() noexcept nogil
