# Stands for a Kokkos other than the one hybrid3d was built with: a consumer that names this one
# (-DKokkos_DIR=...) must be stopped by hybrid3d's package configuration, naming both.
set(Kokkos_VERSION 0.0.0)
