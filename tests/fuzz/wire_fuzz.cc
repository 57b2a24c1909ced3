// libFuzzer target: arbitrary bytes through every decoder a ferry process runs
// on what it receives: core::Decode (as frames, fuzz_input.h) and core::Unpack
// (as one PUB/SUB frame), then each replay metadata struct, an Error's text and
// an InspectReply (what `ferry inspect` decodes from a live shard).
#include <cstddef>
#include <cstdint>
#include <zmq.hpp>

#include "core/wire.h"
#include "replay/inspect.h"
#include "replay/protocol.h"
#include "tests/fuzz/fuzz_input.h"

namespace ferry::fuzz {
namespace {

template <typename T>
void TryMeta(const core::Message& m) {
  T meta;
  (void)core::DecodeMeta(m, &meta);
}

void DecodeAll(const core::Message& m) {
  TryMeta<replay::InsertMeta>(m);
  TryMeta<replay::InsertAckMeta>(m);
  TryMeta<replay::SampleRequestMeta>(m);
  TryMeta<replay::SampleReplyMeta>(m);
  TryMeta<replay::UpdatePrioritiesMeta>(m);
  TryMeta<replay::StatsMeta>(m);
  TryMeta<replay::InspectRequestMeta>(m);
  (void)core::ErrorText(m);
  (void)replay::DecodeInspectReply(m, "fuzz");
}

}  // namespace
}  // namespace ferry::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry;
  Result<core::Message> framed = core::Decode(fuzz::FramesOf(data, size));
  if (framed.ok()) fuzz::DecodeAll(*framed);
  Result<core::Message> packed = core::Unpack(zmq::message_t(data, size));
  if (packed.ok()) fuzz::DecodeAll(*packed);
  return 0;
}
