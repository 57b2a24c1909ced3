// ferry-paramserver: the parameter server, `ferry paramserver`, without LibTorch and MPI
// (cli/paramserver_role.h).
//   usage: ferry-paramserver --config CONFIG [--upstream FETCH,BROADCAST] [--set key.path=value]...
#include <string>

#include "cli/lean_server.h"
#include "cli/paramserver_role.h"

int main(int argc, char** argv) {
  return ferry::cli::LeanServerMain(argc, argv, "ferry-paramserver", "--upstream",
                                    "[--upstream FETCH,BROADCAST]", ferry::cli::ServeParamServer);
}
