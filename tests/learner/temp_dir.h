// An empty directory for one learner test: ferry-<name>-<pid> under the system's temp dir,
// whatever an earlier run left there removed first.
#ifndef FERRY_TESTS_LEARNER_TEMP_DIR_H_
#define FERRY_TESTS_LEARNER_TEMP_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <string>

namespace ferry::learner::testing {

inline std::filesystem::path FreshTempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ferry-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ferry::learner::testing

#endif  // FERRY_TESTS_LEARNER_TEMP_DIR_H_
