/* OpenMP's default team size, and 1 when the kernels were built without OpenMP: the one place
   the kernels ask, so a build without -fopenmp needs no #ifdef anywhere else. */
#ifndef MANTIS_OMP_H
#define MANTIS_OMP_H

#ifdef _OPENMP
#include <omp.h>
static inline int mantis_omp_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int mantis_omp_max_threads(void) { return 1; }
#endif

#endif /* MANTIS_OMP_H */
