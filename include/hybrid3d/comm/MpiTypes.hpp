#pragma once
/// \file
/// The MPI datatype of a C++ scalar, so templated code can talk to MPI.

#include <cstdint>

#include <mpi.h>

#include <hybrid3d/core/Scalar16.hpp>

namespace hybrid3d {

template <class T>
MPI_Datatype mpiType();
template <>
inline MPI_Datatype mpiType<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype mpiType<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype mpiType<int>() {
  return MPI_INT;
}
template <>
inline MPI_Datatype mpiType<std::int64_t>() {
  return MPI_INT64_T;
}
/// The 16-bit storage types only travel (halos, redistributions): every sum is taken in float.
template <>
inline MPI_Datatype mpiType<bfloat16>() {
  return MPI_UINT16_T;
}
template <>
inline MPI_Datatype mpiType<float16>() {
  return MPI_UINT16_T;
}
template <>
inline MPI_Datatype mpiType<unsigned char>() {
  return MPI_UNSIGNED_CHAR;
}

}  // namespace hybrid3d
