// ferry-actor: one actor process, `ferry actor`, without LibTorch and MPI: its network runs on
// models::FastMlp, so it starts in milliseconds where loading LibTorch costs about 0.5 s of CPU
// (cli/lean_server.h). `ferry run` starts every actor so.
//   usage: ferry-actor --config CONFIG --id I [--set key.path=value]...
#include <string>

#include "actors/actor.h"
#include "cli/lean_server.h"
#include "core/blas_kernels.h"
#include "core/curve.h"
#include "core/log.h"

int main(int argc, char** argv) {
  using ferry::Status;
  ferry::core::WarnIfBlasIsGeneric("ferry-actor");
  return ferry::cli::LeanServerMain(
      argc, argv, "ferry-actor", "--id", "--id I",
      [](const ferry::core::Config& config, const std::string& value,
         const std::atomic<bool>& stop) -> Status {
        const ferry::Result<int> id = ferry::cli::ParseIndex("--id", value, config.actors.count);
        if (!id.ok()) return id.status();
        ferry::core::SetLogName("actor-" + std::to_string(*id));
        FERRY_RETURN_IF_ERROR(ferry::core::InstallSocketSecurity(config.security, false, true));
        return ferry::actors::RunActor(config, *id, stop);
      });
}
