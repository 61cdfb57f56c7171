#pragma once
// Small text helpers of the commands' tables: printf into a string, thousands separators.

#include <string>

namespace hybrid3d::app {

// printf into a string (one table row or line).
std::string line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// 9438244 -> "9,438,244".
std::string thousands(long long n);

}  // namespace hybrid3d::app
