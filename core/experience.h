// The experience schema: which columns a transition has, their dtypes and shapes.
//
// Replay stores one preallocated array per column and the wire carries one raw
// frame per column, so every decoder checks frame sizes against this schema
// before touching memory. The schema of a run follows from its env's spaces.
#ifndef FERRY_CORE_EXPERIENCE_H_
#define FERRY_CORE_EXPERIENCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::core {

enum class DType : uint8_t { kFloat32 = 1, kInt32 = 2, kInt64 = 3, kUint8 = 4 };

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);

struct ColumnSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int> shape;  // Per row; {} is a scalar.

  size_t elements() const;
  size_t row_bytes() const { return elements() * DTypeSize(dtype); }
  bool operator==(const ColumnSpec&) const = default;
};

struct Schema {
  std::vector<ColumnSpec> columns;

  size_t row_bytes() const;
  int Find(const std::string& name) const;  // Column index, or -1.
  // A stable 64-bit fingerprint: snapshots and messages from another schema are refused.
  uint64_t Fingerprint() const;
  std::string ToString() const;
  bool operator==(const Schema&) const = default;
};

// Column order of an n-step DQN transition (the indices are fixed):
//   obs[obs_dim] f32, action i32 (discrete) or f32[action_dim], reward f32,
//   discount f32 (gamma^k, 0 after termination), next_obs[obs_dim] f32,
//   policy_version i64.
enum TransitionColumn : int {
  kObs = 0, kAction, kReward, kDiscount, kNextObs, kPolicyVersion, kNumTransitionColumns
};
Schema TransitionSchema(int obs_dim, bool discrete_actions, int action_dim);

}  // namespace ferry::core

#endif  // FERRY_CORE_EXPERIENCE_H_
