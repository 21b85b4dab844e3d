// Byte counts for people: "512 B", "1.5 KiB", "12.0 MiB", "2.9 GiB" (binary units).
#pragma once

#include <cstdint>
#include <string>

namespace qmlx {

std::string human_bytes(uint64_t bytes);

}  // namespace qmlx
