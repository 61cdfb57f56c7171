#pragma once
// What a machine file's header says of the node it was measured on (Linux /proc).

#include <cstddef>
#include <string>

namespace hybrid3d::app::calibrate {

// /proc/cpuinfo's first "model name" ("unknown" when there is none, as on some ARM machines).
std::string cpuModel();
// Logical CPUs the node has online.
int cpuCount();
// /proc/meminfo's MemTotal in bytes, 0 when unknown.
std::size_t memTotalBytes();

}  // namespace hybrid3d::app::calibrate
