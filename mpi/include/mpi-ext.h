/*
 * mpi-ext.h of libsteadfast-mpi: the feature macros by which programs written for Open
 * MPI's ULFM (and MPICH's) test for the fault-tolerance extension. The MPIX_ functions
 * and error classes themselves are declared in mpi.h, as MPICH does, so programs that
 * include only mpi.h compile too.
 */
#ifndef STEADFAST_MPI_EXT_H
#define STEADFAST_MPI_EXT_H

#include <mpi.h>

/* Open MPI's name for "the ULFM extension is compiled in". */
#define OMPI_HAVE_MPI_EXT_FTMPI 1
/* The ULFM proposal's feature macro. */
#define MPIX_FAULT_TOLERANCE 1
/* Open MPI's macros for the ULFM functions added after the first release (all
 * declared in mpi.h): programs test them before calling. */
#define OMPI_HAVE_MPIX_COMM_ISHRINK 1
#define OMPI_HAVE_MPIX_COMM_GET_FAILED 1
#define OMPI_HAVE_MPIX_COMM_ACK_FAILED 1
/* Restart in place: MPIX_Is_restored_rank, MPIX_Comm_(i)restart_rank, MPIX_Comm_save,
 * MPIX_Comm_rejoin (declared in mpi.h). */
#define STEADFAST_MPIX_RESTART 1

#endif /* STEADFAST_MPI_EXT_H */
