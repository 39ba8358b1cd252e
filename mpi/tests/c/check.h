/* The C tests' checks: CHECK(cond) prints the rank (the including file's `me`), the line
 * and the condition, and exits with status 1; OK(call) checks that an MPI call
 * returned MPI_SUCCESS. */
#ifndef STEADFAST_TEST_CHECK_H
#define STEADFAST_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "rank %d: check failed at line %d: %s\n", me, __LINE__,     \
                    #cond);                                                            \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#define OK(call) CHECK((call) == MPI_SUCCESS)

#endif
