#include "cli/paramserver_role.h"

#include <zmq.hpp>

#include "core/cpu_affinity.h"
#include "core/curve.h"
#include "core/log.h"
#include "core/topology.h"
#include "paramserver/server.h"

namespace ferry::cli {

Status ServeParamServer(const core::Config& config, const std::string& upstream,
                        const std::atomic<bool>& stop) {
  core::SetLogName("paramserver");
  paramserver::ServerOptions options;
  options.endpoint = core::ParamServerBindEndpoint(config);
  options.broadcast_endpoint = core::BroadcastBindEndpoint(config);
  options.chunk_bytes = static_cast<uint64_t>(config.network.weights_chunk_bytes);
  if (!upstream.empty()) {
    const size_t comma = upstream.find(',');
    options.upstream_endpoint = upstream.substr(0, comma);
    options.upstream_broadcast_endpoint =
        comma == std::string::npos ? "" : upstream.substr(comma + 1);
    if (options.upstream_endpoint.empty() || options.upstream_broadcast_endpoint.empty() ||
        options.upstream_broadcast_endpoint.find(',') != std::string::npos) {
      return InvalidArgument(
          "--upstream needs FETCH,BROADCAST, the upstream paramserver's two endpoints (e.g. "
          "tcp://10.0.0.1:5540,tcp://10.0.0.1:5541); got '" +
          upstream + "'");
    }
  }
  zmq::context_t context(1);
  auto authenticator =
      core::SecureServerRole(config.security, context, /*also_client=*/!upstream.empty());
  if (!authenticator.ok()) return authenticator.status();
  paramserver::ParamServer server(context, options);
  FERRY_RETURN_IF_ERROR(server.Bind());
  core::Log("serving %s, broadcasting on %s%s%s", options.endpoint.c_str(),
            options.broadcast_endpoint.c_str(), upstream.empty() ? "" : ", relaying ",
            upstream.c_str());
  FERRY_RETURN_IF_ERROR(core::MoveToRunCpus());  // Started (core/cpu_affinity.h).
  server.Serve(stop);
  core::Log("stopped at version %lld", static_cast<long long>(server.latest_version()));
  return Status::Ok();
}

}  // namespace ferry::cli
