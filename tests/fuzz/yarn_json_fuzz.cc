// Fuzz target: the YARN reservation JSON decoders of the RM's REST edge and
// morpheusctl (src/rm/http/yarn_json.h): parseYarnSubmit, parseYarnReservationId,
// and the encoders they feed (yarnDefinitionJson, yarnListJson, yarnErrorJson).
//
// Properties: a decoded definition re-encodes to JSON that decodes to the same
// message (the list/update round trip of README's reservation JSON); every
// error and every encoded reply serialises (dump() throws on invalid UTF-8).
#include <google/protobuf/util/message_differencer.h>

#include "fuzz_util.h"
#include "rm/http/yarn_json.h"

using namespace morpheus;

namespace {

// dump() throws (an uncaught exception: a crash) on a string it cannot encode.
void checkSerialises(const nlohmann::json& j) { FUZZ_CHECK(!j.dump().empty(), "empty JSON text"); }

void checkRoundTrip(const v1::ReservationDefinition& def) {
  nlohmann::json encoded = rm::yarnDefinitionJson(def);
  auto again = rm::parseYarnDefinition(nlohmann::json::parse(encoded.dump()), "definition");
  FUZZ_CHECK(again.isOk(), "re-encoded definition rejected: " + again.status().toString() +
                               "\n  json: " + encoded.dump());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(def, *again),
             "round trip changed the definition\n  before: " + def.ShortDebugString() +
                 "\n  after:  " + again->ShortDebugString());
}

void checkListEncodes(const v1::SubmitReservationRequest& req) {
  v1::ListReservationsResponse list;
  auto* r = list.add_reservations();
  r->set_reservation_id(req.reservation_id());
  r->set_user(req.user());
  r->set_queue(req.queue());
  *r->mutable_definition() = req.definition();
  checkSerialises(rm::yarnListJson(list, true));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(fuzz::asText(data, size));
  auto submit = rm::parseYarnSubmit(body);
  if (submit.isOk()) {
    checkRoundTrip(submit->definition());
    checkListEncodes(*submit);
  } else {
    checkSerialises(rm::yarnErrorJson(submit.status()));
  }
  auto id = rm::parseYarnReservationId(body);
  if (id.isOk()) {
    FUZZ_CHECK(!id->empty(), "empty reservation id accepted");
  } else {
    checkSerialises(rm::yarnErrorJson(id.status()));
  }
  return 0;
}
