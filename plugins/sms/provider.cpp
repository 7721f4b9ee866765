#include "provider.h"

namespace svc::plugins::sms {

CarrierEvents::~CarrierEvents() = default;
SmsProvider::~SmsProvider() = default;

}  // namespace svc::plugins::sms
