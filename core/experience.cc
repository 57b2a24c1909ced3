#include "core/experience.h"

#include <sstream>

namespace ferry::core {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kUint8: return 1;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUint8: return "uint8";
  }
  return "unknown";
}

size_t ColumnSpec::elements() const {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t Schema::row_bytes() const {
  size_t n = 0;
  for (const auto& c : columns) n += c.row_bytes();
  return n;
}

int Schema::Find(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint64_t Schema::Fingerprint() const {
  // FNV-1a over the textual form: stable across compilers and machines.
  uint64_t h = 1469598103934665603ull;
  for (char ch : ToString()) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

std::string Schema::ToString() const {
  std::ostringstream out;
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& c = columns[i];
    if (i) out << ", ";
    out << c.name << ":" << DTypeName(c.dtype) << "[";
    for (size_t d = 0; d < c.shape.size(); ++d) out << (d ? "," : "") << c.shape[d];
    out << "]";
  }
  return out.str();
}

Schema TransitionSchema(int obs_dim, bool discrete_actions, int action_dim) {
  Schema s;
  s.columns = {
      {"obs", DType::kFloat32, {obs_dim}},
      discrete_actions ? ColumnSpec{"action", DType::kInt32, {}}
                       : ColumnSpec{"action", DType::kFloat32, {action_dim}},
      {"reward", DType::kFloat32, {}},
      {"discount", DType::kFloat32, {}},
      {"next_obs", DType::kFloat32, {obs_dim}},
      {"policy_version", DType::kInt64, {}},
  };
  return s;
}

}  // namespace ferry::core
