// This process's place in MPI_COMM_WORLD, for the MPI test suites.
#ifndef FERRY_TESTS_MPI_WORLD_H_
#define FERRY_TESTS_MPI_WORLD_H_

#include <mpi.h>

namespace ferry::testing {

inline int Rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int Ranks() {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return ranks;
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_MPI_WORLD_H_
