#pragma once
/// \file
/// Kernel labels made once. Kokkos takes a kernel's label as a std::string, so a label given as
/// a literal (or built with +) becomes a heap string at every launch: an allocation inside the
/// step loop for every kernel, which the design rules out after the first step (docs/design.md
/// section 9; StepAllocationTest counts them). kernelLabel keeps one copy of each label and hands
/// out that copy: the first launch of a label allocates, later ones only look it up (no
/// allocation: the lookup compares views).

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace hybrid3d::Impl {

/// The interned copy of `base` followed by `suffix`.
inline const std::string& kernelLabel(std::string_view base, std::string_view suffix = {}) {
  static std::mutex mutex;  // kernels may be launched from the loader's thread too
  static std::set<std::string, std::less<>> labels;
  char joined[256];
  std::string spill;  // only for a label longer than the buffer
  std::string_view key;
  if (base.size() + suffix.size() <= sizeof(joined)) {
    std::memcpy(joined, base.data(), base.size());
    std::memcpy(joined + base.size(), suffix.data(), suffix.size());
    key = std::string_view(joined, base.size() + suffix.size());
  } else {
    spill.append(base).append(suffix);
    key = spill;
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = labels.find(key);
  if (it == labels.end()) it = labels.emplace(key).first;
  return *it;
}

/// The label of a View the library allocates: "hybrid3d::" then `what` (whose it is and its
/// role, "conv1/weight", "conv2/halo send"), so that a Kokkos tool tells the library's memory
/// from the caller's (unit_tests/train/LabelTest.cpp checks every label of a run). Set-up only:
/// it builds a string.
inline std::string viewLabel(std::string_view what) { return "hybrid3d::" + std::string(what); }

}  // namespace hybrid3d::Impl
